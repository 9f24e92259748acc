"""``ecc-lab dars``: DARS labels and single-shot label-instability diagnostics of an outcomes file.

Contract::

    ecc-lab dars --outcomes FILE [--lambda 0.05] [--beta 0.2] [--draws 1000] [--seed 0]
                 [--change-draws R] [--json OUT.json]

reads a generic long CSV/Parquet (``query_id,model,score[,cost,variant_id,decode_id,
observation_type]``), prints a table and optionally writes a JSON summary.

The winner flip rate has three readings (``docs/design.md`` section 4), each with ``_ci95``:
``winner_flip_rate`` (pairwise: two draws name different winners), ``winner_flip_rate_strict``
(the two draws' top sets are disjoint) and ``winner_change_rate`` (the winner is not the same in
all of ``winner_change_rate_r`` draws); ``flip_rate_chance`` holds the same three statistics for
identical models with every score tied.
"""

from __future__ import annotations

import argparse

from ecc_lib import defaults as D
from ecc_lib.cli.subcommand import Subcommand, add_scheduler_option, write_json


def _arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``ecc-lab dars``."""
    parser.add_argument(
        "--outcomes",
        required=True,
        metavar="FILE",
        help="long outcomes table (.csv or .parquet): query_id, model, score "
        "[, cost, variant_id, decode_id, observation_type]",
    )
    parser.add_argument(
        "--lambda",
        dest="cost_weight",
        type=float,
        default=D.COST_WEIGHT,
        help=f"cost weight lambda of the utility (default {D.COST_WEIGHT:g})",
    )
    parser.add_argument(
        "--beta",
        type=float,
        default=D.BETA,
        help=f"risk weight beta of the utility (default {D.BETA:g})",
    )
    parser.add_argument(
        "--draws",
        type=int,
        default=D.N_DRAWS,
        help=f"Monte Carlo draw pairs per query when scores are not binary (default {D.N_DRAWS})",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the Monte Carlo draws and bootstrap"
    )
    parser.add_argument(
        "--change-draws",
        type=int,
        default=None,
        metavar="R",
        help="draws R of the winner change rate (default: observations per (query, model) pair, "
        "the median when they differ)",
    )
    parser.add_argument("--json", metavar="OUT.json", help="also write the summary as JSON")
    add_scheduler_option(
        parser, "also compute the distributions, labels and flip readings as group-bys"
    )


def dars_summary(
    outcomes,
    *,
    cost_weight: float = D.COST_WEIGHT,
    beta: float = D.BETA,
    draws: int = D.N_DRAWS,
    seed: int = 0,
    source: str | None = None,
    validate: bool = True,
    change_draws: int | None = None,
) -> dict:
    """The JSON summary written by ``ecc-lab dars``: :meth:`ecc_lib.protocol.results.DARSResult.to_dict`
    of :func:`ecc_lib.protocol.results.run_dars`.

    Parameters
    ----------
    outcomes : DataFrame or RepeatedObservations
        Long outcomes.
    cost_weight, beta : float
        Utility weights.
    draws : int
        Monte Carlo draw pairs per query (non-binary scores).
    seed : int
        Seed of the Monte Carlo draws and the bootstrap.
    source : str, optional
        File name for error messages.
    validate : bool
        Validate the outcomes table first.
    change_draws : int, optional
        ``R`` of the winner change rate; default the median observations per pair.

    Returns
    -------
    dict
        Top-level keys describe all observations; ``subsets`` holds ``input`` / ``output`` /
        ``both``, ``None`` where not applicable.
    """
    from ecc_lib.protocol.results import run_dars

    return run_dars(
        outcomes,
        cost_weight=cost_weight,
        beta=beta,
        n_draws=draws,
        seed=seed,
        change_draws=change_draws,
        source=source,
        validate=validate,
    ).to_dict()


def format_summary(summary: dict) -> str:
    """A plain-text report of :func:`dars_summary`.

    Parameters
    ----------
    summary : dict
        The output of :func:`dars_summary`.

    Returns
    -------
    str
    """

    def show(value, interval=None) -> str:
        if value is None:
            return "n/a"
        text = f"{value:.3f}"
        if interval and None not in interval:
            text += f" [{interval[0]:.3f}, {interval[1]:.3f}]"
        return text

    lines = [
        f"queries {summary['n_queries']:,}  models {summary['n_models']}  "
        f"observations {summary['n_observations']:,}  lambda {summary['lambda']}  "
        f"beta {summary['beta']}",
    ]
    if summary.get("cost_note"):
        lines.append(summary["cost_note"])
    rows = (
        ("flip rate: pairwise", "winner_flip_rate"),
        ("flip rate: strict", "winner_flip_rate_strict"),
        ("winner change over R draws", "winner_change_rate"),
        ("tied top share", "tied_top_share"),
        ("disagreement with argmax U", "single_vs_distribution_disagreement"),
        ("unstable pair share", "unstable_pair_share"),
        ("mean sigma_q", "mean_sigma"),
    )
    header = f"{'diagnostic (95% CI)':<28}" + "".join(
        f"{name:>26}" for name in ("input (rewrites)", "output (decodes)", "both")
    )
    lines += ["", header, "-" * len(header)]
    subsets = summary["subsets"]
    for label, key in rows:
        cells = [
            "n/a" if s is None else show(s[key], s.get(f"{key}_ci95"))
            for s in (subsets.get(name) for name in ("input", "output", "both"))
        ]
        lines.append(f"{label:<28}" + "".join(f"{c:>26}" for c in cells))
    methods = [f"{name}: {s['flip_rate_method']}" for name, s in subsets.items() if s is not None]
    lines.append("flip rate method: " + (", ".join(methods) if methods else "n/a"))
    chance = summary.get("flip_rate_chance")
    if chance:
        lines.append(
            f"chance (identical models, all tied): pairwise {chance['pairwise']:.3f}, strict "
            f"{chance['strict']:.3f}, change over R = {summary['winner_change_rate_r']} draws "
            f"{chance['change']:.3f}"
        )
    lines += ["", f"{'model':<40}{'mean score':>12}{'argmax U share':>16}"]
    for model, share in sorted(summary["labels"].items(), key=lambda kv: -kv[1]):
        lines.append(f"{model:<40}{summary['mean_mu_q'][model]:>12.3f}{share:>16.3f}")
    return "\n".join(lines)


def _dask_summary(outcomes, args: argparse.Namespace) -> dict:
    """Labels and flip readings from the Dask group-bys (``--scheduler``), printed and returned."""
    from ecc_lib.distributed import dars_statistics
    from ecc_lib.distributed.scheduler import dask_client

    with dask_client(args.scheduler) as client:
        stats = dars_statistics(
            outcomes,
            cost_weight=args.cost_weight,
            beta=args.beta,
            change_draws=args.change_draws,
            client=client,
            random_state=args.seed,
        )
    print(f"\nDask group-bys ({args.scheduler}): {stats.distributions.n_queries} queries")
    for name, cell in (stats.flip_rates or {}).items():
        if isinstance(cell, dict):
            low, high = cell["ci95"]
            print(
                f"  {name:<9} {cell['mean']:.3f} [{low:.3f}, {high:.3f}] chance {cell['chance']:.3f}"
            )
    return {"labels": stats.labels, "flip_rates": stats.flip_rates}


INCOMPLETE_REASON = "not answered by every model (DARS compares every model on each query)"
"""Reason of ``data_policy.left_out`` for the queries :func:`dars_summary` leaves out."""


def _count_incomplete_queries(report, outcomes, n_dropped: int) -> None:
    """Count the queries DARS leaves out (``n_dropped_queries``) in the data policy's report too,
    with their reason, examples and a note, so that ``data_policy.n_left_out`` agrees (issue 36)."""
    if not n_dropped:
        return
    models_per_query = outcomes.groupby(outcomes["query_id"].astype(str), sort=False)[
        "model"
    ].nunique()
    lacking = models_per_query.index[models_per_query.to_numpy() < report.n_models]
    report.left_out[INCOMPLETE_REASON] = int(n_dropped)
    report.left_out_examples[INCOMPLETE_REASON] = [str(q) for q in lacking[:5]]
    report.n_queries = int(report.n_queries - n_dropped)
    note = (
        f"{n_dropped} of {report.n_input_queries} queries were left out: {n_dropped} "
        f"{INCOMPLETE_REASON}; first: "
        + ", ".join(map(repr, report.left_out_examples[INCOMPLETE_REASON]))
    )
    report.notes.append(note)
    print(f"note: {note}")


def _run(args: argparse.Namespace) -> int:
    """Handler of ``ecc-lab dars``."""
    from ecc_lib.data.policy import apply_data_policy
    from ecc_lib.data.protocol_policy import check_utility_weights
    from ecc_lib.data.tables import read_outcomes
    from ecc_lib.serialization import to_jsonable

    check_utility_weights(args.cost_weight, args.beta)
    if args.seed < 0:
        raise ValueError(f"--seed must be a whole number >= 0, got {args.seed}")
    for flag, value in (("--draws", args.draws), ("--change-draws", args.change_draws)):
        if value is not None and value < 1:
            raise ValueError(f"{flag} must be >= 1, got {value}")
    outcomes = read_outcomes(args.outcomes)
    _, outcomes, report = apply_data_policy(None, outcomes, dataset=str(args.outcomes))
    for note in report.notes:
        print(f"note: {note}")
    summary = dars_summary(
        outcomes,
        cost_weight=args.cost_weight,
        beta=args.beta,
        draws=args.draws,
        seed=args.seed,
        source=str(args.outcomes),
        validate=False,  # read_outcomes has validated the table
        change_draws=args.change_draws,
    )
    _count_incomplete_queries(report, outcomes, summary["n_dropped_queries"])
    summary["data_policy"] = to_jsonable(report.to_dict())
    print(format_summary(summary))
    if getattr(args, "scheduler", None):
        summary["dask"] = _dask_summary(outcomes, args)
    if args.json:
        write_json(args.json, summary)
        print(f"\nwrote {args.json}")
    return 0


SUBCOMMANDS = (
    Subcommand(
        "dars",
        help="DARS labels and single-shot label-instability diagnostics",
        description="Summarise repeated outcomes per (query, model): mean score, spread and "
        "normalised cost; label each query with argmax U = mu_q - lambda mu_c - beta sigma_q; "
        "measure how unstable single-shot labels are (winner flip rate, tied top scores, "
        "disagreement with the DARS label), for rewrites, decodes and all observations, with "
        "bootstrap 95%% intervals over queries.",
        add_arguments=_arguments,
        handler=_run,
    ),
)


__all__: list[str] = []
