"""The held-out report of a deployed router: quality, cost and share per model on the test queries,
beside the best fixed model and the per-query oracle (the references of
:mod:`~ecc_lib.routing_evaluation.held_out`)."""

from __future__ import annotations

from functools import partial

import numpy as np

from ecc_lib.routers.deploy import DeployedRouter, TrainingSplit
from ecc_lib.routing_evaluation import held_out
from ecc_lib.stats import DEFAULT_N_BOOT, bootstrap_mean_ci


def deployed_report(
    deployed: DeployedRouter,
    split: TrainingSplit,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | None = 0,
) -> dict:
    """Held-out quality, cost, utility and model shares of a router at its operating point.

    Parameters
    ----------
    deployed : DeployedRouter
        The router (at its current operating point).
    split : TrainingSplit
        The parts of :func:`ecc_lib.routers.deploy.train_deployed`; the test part is scored.
    n_boot : int, default 1000
        Bootstrap replicates of the intervals (over test queries).
    random_state : int, optional
        Seed of the bootstrap.

    Returns
    -------
    dict
        ``n_test``, ``cost_weight``, ``beta`` and ``rows``: for ``router``, ``best_fixed_model``
        and ``oracle``, ``quality``, ``cost`` (dataset's units) and ``utility`` as
        ``[estimate, low, high]`` (95 % percentile bootstrap) and ``share`` per model; the best
        fixed model is the one with the highest mean training utility, the oracle the per-query
        ``argmax`` of the held-out utility, both at the router's operating cost weight.
    """
    truth = held_out.held_out_truth(split.test)
    lam, beta = float(deployed.cost_weight), deployed.beta
    n = len(truth.query_ids)
    choices = {
        "router": deployed.choose(split.x_test),
        "best_fixed_model": np.full(
            n, held_out.best_fixed_model(split.train_targets, cost_weight=lam, beta=beta)
        ),
        "oracle": held_out.oracle_choices(truth, cost_weight=lam, beta=beta),
    }
    models = deployed.models
    ci = partial(bootstrap_mean_ci, n_boot=n_boot, random_state=random_state)
    rows = {}
    for name, choice in choices.items():
        metrics = held_out.evaluate_choices(choice, truth, cost_weight=lam, beta=beta)
        share = np.bincount(choice, minlength=len(models)) / max(n, 1)
        rows[name] = {
            "quality": list(ci(metrics["score"])),
            "cost": list(ci(deployed.raw_cost(metrics["cost"]))),
            "utility": list(ci(metrics["utility"])),
            "share": {m: float(s) for m, s in zip(models, share, strict=True)},
        }
    return {"n_test": n, "cost_weight": lam, "beta": beta, "rows": rows}


def format_report(report: dict) -> str:
    """The report of :func:`deployed_report` as a plain-text table.

    Parameters
    ----------
    report : dict

    Returns
    -------
    str
    """

    def cell(v: list) -> str:
        return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"

    lines = [
        f"held-out report: {report['n_test']} test queries, lambda {report['cost_weight']:.4g}, "
        f"beta {report['beta']:g} (95% bootstrap intervals)",
        f"{'':<18}{'quality':>24}{'cost':>24}{'utility':>24}",
    ]
    for name, row in report["rows"].items():
        lines.append(
            f"{name:<18}{cell(row['quality']):>24}{cell(row['cost']):>24}{cell(row['utility']):>24}"
        )
    lines.append("share per model:")
    models = list(next(iter(report["rows"].values()))["share"])
    width = max(len(m) for m in models) + 2
    lines.append(f"{'':<{width}}" + "".join(f"{name:>18}" for name in report["rows"]))
    for m in models:
        lines.append(
            f"{m:<{width}}"
            + "".join(f"{row['share'][m]:>18.3f}" for row in report["rows"].values())
        )
    return "\n".join(lines)


__all__: list[str] = []
