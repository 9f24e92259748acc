"""``ecc-lab datasets``: list the bundled datasets with their counts."""

from __future__ import annotations

import argparse

from ecc_lib.cli.subcommand import Subcommand, write_json


def _arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``ecc-lab datasets``."""
    parser.add_argument("--json", metavar="OUT.json", help="also write the summary as JSON")
    parser.add_argument(
        "--scores", action="store_true", help="print the mean score of each model too"
    )


def dataset_summaries() -> dict[str, dict]:
    """Summary of every bundled dataset (see :func:`ecc_lib.data.schema.summarise`).

    Returns
    -------
    dict of str to dict
        Dataset name to its counts and description.
    """
    from ecc_lib.data.schema import summarise
    from ecc_lib.data.sources import BUNDLED_DATASETS, BUNDLED_DESCRIPTIONS, load_bundled

    summaries = {}
    for name in BUNDLED_DATASETS:
        summary = summarise(*load_bundled(name))
        summary["description"] = BUNDLED_DESCRIPTIONS[name]
        summaries[name] = summary
    return summaries


def format_summaries(summaries: dict[str, dict], *, scores: bool = False) -> str:
    """A plain-text table of :func:`dataset_summaries`.

    Parameters
    ----------
    summaries : dict of str to dict
        The output of :func:`dataset_summaries`.
    scores : bool, default False
        Also list the mean score per model.

    Returns
    -------
    str
    """
    header = f"{'dataset':<10} {'queries':>8} {'models':>7} {'observations':>13} {'categories':>11} {'variants':>9} {'decodes':>8}"
    lines = [header, "-" * len(header)]
    for name, s in summaries.items():
        lines.append(
            f"{name:<10} {s['n_queries']:>8,} {s['n_models']:>7} {s['n_observations']:>13,} "
            f"{s['n_categories']:>11} {s['n_variants']:>9} {s['n_decodes']:>8}"
        )
    if scores:
        for name, s in summaries.items():
            lines.append("")
            lines.append(f"{name}: {s['description']}")
            lines.append("  mean score per model:")
            for model, value in sorted(s["mean_score"].items(), key=lambda kv: -kv[1]):
                lines.append(f"    {model:<40} {value:.3f}")
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    """Handler of ``ecc-lab datasets``: print the table, optionally write JSON."""
    summaries = dataset_summaries()
    print(format_summaries(summaries, scores=args.scores))
    if args.json:
        write_json(args.json, summaries, sort_keys=True)
    return 0


SUBCOMMANDS = (
    Subcommand(
        "datasets",
        help="list the bundled datasets with their counts",
        description="List the bundled datasets: queries, models, observations, categories and the "
        "mean score of each model.",
        add_arguments=_arguments,
        handler=_run,
    ),
)


__all__: list[str] = []
