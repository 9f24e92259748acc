"""The routing experiment: every router family on single-shot and DARS targets, one table.

Protocol (DARS, Lai et al. 2026, arXiv 2606.06924, section 4; ``docs/design.md`` section 4):
queries are split into train and test (80/20, seed 42); routers learn from the training queries'
targets, either DARS distributions (all observations) or single-shot draws (one observation per
pair, repeated over ``n_runs`` seeds and reported as mean +- std), and are scored on the test
queries (:mod:`~ecc_lib.routing_evaluation.held_out`) beside the best fixed model, a random model
and the per-query oracle, with cost-quality curves (:mod:`~ecc_lib.routing_evaluation.curves`),
paired intervals (:mod:`~ecc_lib.routing_evaluation.paired`) and a headline
(:mod:`~ecc_lib.routing_evaluation.summary`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from ecc_lib import defaults
from ecc_lib.dars.distributions import (
    DEFAULT_BETA,
    DEFAULT_LAMBDA,
    CapabilityDistributions,
    RepeatedObservations,
    capability_distributions,
    repeated_observations,
    single_shot_distributions,
)
from ecc_lib.data.observations import rescale_cost
from ecc_lib.data.splits import split_queries
from ecc_lib.routers import make_router, router_families
from ecc_lib.routing_evaluation import held_out
from ecc_lib.routing_evaluation.curves import (
    DEFAULT_LAMBDA_GRID,
    check_lambdas,
    cost_quality_curve,
    curve_of_choices,
    pareto_area,
    pareto_area_replicates,
)
from ecc_lib.routing_evaluation.paired import paired_differences
from ecc_lib.routing_evaluation.summary import routing_headline
from ecc_lib.routing_evaluation.table import RoutingTable
from ecc_lib.stats import (
    DEFAULT_N_BOOT,
    bootstrap_indices,
    bootstrap_mean_ci,
    seed_query_interval,
)


def _align_embeddings(
    embeddings: np.ndarray, embedding_ids: Sequence[str] | None, query_ids: np.ndarray
) -> np.ndarray:
    embeddings = np.asarray(embeddings)
    if embedding_ids is None:
        if len(embeddings) != len(query_ids):
            raise ValueError(
                f"{len(embeddings)} embeddings for {len(query_ids)} queries; pass embedding_ids"
            )
        return embeddings
    position = pd.Index(np.asarray(embedding_ids, dtype=str)).get_indexer(query_ids.astype(str))
    if np.any(position < 0):
        missing = query_ids[position < 0]
        raise ValueError(f"{len(missing)} queries have no embedding; first: {missing[0]!r}")
    return embeddings[position]


def routing_table(
    outcomes: pd.DataFrame | RepeatedObservations,
    embeddings: np.ndarray,
    *,
    embedding_ids: Sequence[str] | None = None,
    routers: Sequence[str] | None = None,
    router_kwargs: dict[str, dict] | None = None,
    n_runs: int = 10,
    cost_weight: float = DEFAULT_LAMBDA,
    beta: float = DEFAULT_BETA,
    test_size: float = defaults.TEST_SIZE,
    split_seed: int = defaults.SEED,
    random_state: int = 0,
    n_boot: int = DEFAULT_N_BOOT,
    lambdas: Sequence[float] = DEFAULT_LAMBDA_GRID,
    progress: Callable[[str], None] | None = None,
    refit_curves: bool = False,
) -> RoutingTable:
    """Every router family trained on single-shot targets (``n_runs`` seeded draws) and on DARS
    targets, beside the best fixed model, a random model and the per-query oracle.

    Parameters
    ----------
    outcomes : DataFrame or RepeatedObservations
    embeddings : ndarray, shape (n, d)
        Query features; aligned to ``embedding_ids`` (or to the outcome queries in order of first
        appearance when ``embedding_ids`` is None).
    routers : sequence of str, optional
        Family names (see :func:`ecc_lib.routers.router_families`); default all available.
    router_kwargs : dict, optional
        Extra constructor arguments per family name.
    n_runs : int, default 10
        Single-shot repetitions (draw seed and router seed ``random_state + run``). DARS targets
        are deterministic and are fitted once (router seed ``random_state``).
    cost_weight, beta : float
        Utility weights for routing and for the utility metric.
    test_size, split_seed : float, int
        Query split (:func:`ecc_lib.data.splits.split_queries`).
    random_state : int
    n_boot : int
    lambdas : sequence of float
        Cost weights of the cost-quality curves.
    progress : callable, optional
        Called with a short message before each fit.
    refit_curves : bool, default False
        Also draw cost-quality curves for routers that learn the utility at one cost weight
        (ECC, softmax ranking) by refitting them at every weight
        (:func:`~ecc_lib.routing_evaluation.curves.cost_quality_curve` with ``refit_on``);
        without it only routers that predict the components get curves, at no extra fit.

    Returns
    -------
    RoutingTable
    """
    lambdas = check_lambdas(lambdas)  # before any fit (issue 36)
    obs = repeated_observations(outcomes)
    x_all = _align_embeddings(embeddings, embedding_ids, obs.query_ids).astype(float)
    train_mask, test_mask = split_queries(
        obs.n_queries, test_size=test_size, random_state=split_seed
    )
    # the cost scale comes from the training queries only (issue 23)
    train_obs = rescale_cost(obs.select_queries(train_mask))
    test_obs = rescale_cost(obs.select_queries(test_mask), train_obs)
    x_train, x_test = x_all[train_mask], x_all[test_mask]
    truth = held_out.held_out_truth(test_obs)
    dars_train = capability_distributions(train_obs)
    names = list(router_families()) if routers is None else list(routers)
    router_kwargs = router_kwargs or {}

    fixed = held_out.best_fixed_model(dars_train, cost_weight=cost_weight, beta=beta)
    per_query, curves = _reference_arms(truth, dars_train, fixed, cost_weight, beta, lambdas)

    for name in names:
        kwargs = {"cost_weight": cost_weight, "beta": beta, **router_kwargs.get(name, {})}
        plans = [("DARS", 0, dars_train)] + [("single-shot", run, None) for run in range(n_runs)]
        for supervision, run, targets in plans:
            if targets is None:
                targets = single_shot_distributions(train_obs, random_state=random_state + run)
            if progress is not None:
                progress(f"{name} / {supervision} / run {run}")
            router = make_router(name, random_state=random_state + run, **kwargs)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*[Cc]onverge.*")
                router.fit(x_train, targets)
            choice = router.route(x_test, cost_weight=cost_weight, beta=beta)
            per_query.setdefault((name, supervision), []).append(
                held_out.evaluate_choices(choice, truth, cost_weight=cost_weight, beta=beta)
            )
            if router.fitted_target_ == "components":
                curve = cost_quality_curve(router, x_test, truth, lambdas=lambdas, beta=beta)
            elif refit_curves:  # a router that learns U at one cost weight: refit at each weight
                curve = cost_quality_curve(
                    router, x_test, truth, lambdas=lambdas, beta=beta, refit_on=(x_train, targets)
                )
            else:
                continue
            curves.append(_labelled(curve, name, supervision, run))

    curves_frame, fronts = _curves_frame(curves)
    run_rows, table_rows = _summaries(per_query, curves_frame, n_boot, random_state, fronts)
    info = {
        "n_queries": obs.n_queries,
        "n_models": obs.n_models,
        "n_observations": obs.n_observations,
        "n_train": int(train_mask.sum()),
        "n_test": int(test_mask.sum()),
        "lambda": cost_weight,
        "beta": beta,
        "n_runs": n_runs,
        "best_fixed_model": obs.models[fixed],
        "cost_available": obs.cost_available,
        "cost_scale": list(train_obs.cost_scale),  # (low, high) of training pair mean costs
        "has_rewrites": obs.has_rewrites,
        "has_decodes": obs.has_decodes,
        "observations_per_pair_median": float(np.median(obs.count)),
        "routers": names,
    }
    paired, versus_fixed = paired_differences(
        per_query, names, n_boot=n_boot, random_state=random_state
    )
    result = RoutingTable(
        table=_sorted_table(table_rows, names),
        runs=pd.DataFrame(run_rows),
        curves=curves_frame,
        info=info,
        paired=paired,
        versus_fixed=versus_fixed,
    )
    headline = routing_headline(result)
    info["no_router_beats_best_fixed"] = headline["no_router_beats_best_fixed"]
    info["headline"] = headline["sentence"]
    return result


def _reference_arms(
    truth: held_out.HeldOut,
    dars_train: CapabilityDistributions,
    fixed: int,
    cost_weight: float,
    beta: float,
    lambdas: Sequence[float],
) -> tuple[dict, list[pd.DataFrame]]:
    """The references' per-query metrics (oracle, best fixed model, random) and cost-quality
    curves (best fixed model and oracle at every cost weight)."""
    n_test = len(truth.query_ids)
    weights = {"cost_weight": cost_weight, "beta": beta}
    per_query: dict[tuple[str, str], list[dict[str, np.ndarray]]] = {
        ("Oracle", "reference"): [
            held_out.evaluate_choices(held_out.oracle_choices(truth, **weights), truth, **weights)
        ],
        ("Best fixed model", "reference"): [
            held_out.evaluate_choices(np.full(n_test, fixed), truth, **weights)
        ],
        ("Random", "reference"): [held_out.expected_random_metrics(truth, **weights)],
    }
    reference_choices = {
        "Best fixed model": [
            np.full(n_test, held_out.best_fixed_model(dars_train, cost_weight=lam, beta=beta))
            for lam in lambdas
        ],
        "Oracle": [held_out.oracle_choices(truth, cost_weight=lam, beta=beta) for lam in lambdas],
    }
    curves = [
        _labelled(
            curve_of_choices(choices, truth, lambdas=lambdas, beta=beta), label, "reference", 0
        )
        for label, choices in reference_choices.items()
    ]
    return per_query, curves


def _curves_frame(curves: list[pd.DataFrame]) -> tuple[pd.DataFrame, dict]:
    """The curves in one frame, and per (router, supervision, run) the per-query values of its
    curve (taken out of the curves' ``attrs``, which do not concatenate)."""
    fronts = {
        (c["router"].iloc[0], c["supervision"].iloc[0], int(c["run"].iloc[0])): c.attrs["per_query"]
        for c in curves
        if len(c) and "per_query" in c.attrs
    }
    for c in curves:  # arrays in attrs do not concatenate
        c.attrs = {}
    return pd.concat(curves, ignore_index=True), fronts


def _sorted_table(table_rows: list[dict], names: Sequence[str]) -> pd.DataFrame:
    """The summary rows, references first (oracle, best fixed, random), then the families in
    ``names`` order, single-shot before DARS."""
    table = pd.DataFrame(table_rows)
    reference = table["router"].map({"Oracle": 0, "Best fixed model": 1, "Random": 2}).fillna(3)
    family = table["router"].map({n: i for i, n in enumerate(names)}).fillna(-1)
    supervision = table["supervision"].map({"reference": 0, "single-shot": 1, "DARS": 2})
    order = np.lexsort((supervision, family, reference))  # stable, the last key first
    return table.iloc[order].reset_index(drop=True)


def _labelled(curve: pd.DataFrame, router: str, supervision: str, run: int) -> pd.DataFrame:
    """``curve`` with leading ``router, supervision, run`` columns."""
    for column, value in (("run", run), ("supervision", supervision), ("router", router)):
        curve.insert(0, column, value)
    return curve


def _summaries(
    per_query: dict[tuple[str, str], list[dict[str, np.ndarray]]],
    curves: pd.DataFrame,
    n_boot: int,
    random_state: int,
    fronts: dict | None = None,
) -> tuple[list[dict], list[dict]]:
    """Mean metrics per fitted run, and per (router, supervision) their mean, standard deviation
    over runs and bootstrap interval of the run-averaged per-query values."""
    oracle_u = float(np.nanmean(per_query[("Oracle", "reference")][0]["utility"]))
    fixed_u = float(np.nanmean(per_query[("Best fixed model", "reference")][0]["utility"]))
    areas = {
        key: pareto_area(sel["cost"].to_numpy(), sel["score"].to_numpy())
        for key, sel in curves.groupby(["router", "supervision", "run"])
    }
    run_rows, table_rows = [], []
    for (name, supervision), runs in per_query.items():
        rows = []
        for run_index, metrics in enumerate(runs):
            row = {"router": name, "supervision": supervision, "run": run_index}
            for key, values in metrics.items():
                row[key] = float(np.nanmean(values)) if np.isfinite(values).any() else np.nan
            row["gap_closed"] = held_out.gap_closed(row["utility"], fixed_u, oracle_u)
            row["pareto_area"] = areas.get((name, supervision, run_index), np.nan)
            rows.append(row)
        run_rows.extend(rows)
        summary = {"router": name, "supervision": supervision, "n_runs": len(runs)}
        for key in (*held_out.METRICS, "gap_closed", "pareto_area"):
            run_means = np.array([r[key] for r in rows], float)
            ok = bool(np.isfinite(run_means).all())
            summary[key] = float(np.mean(run_means)) if ok else np.nan
            summary[f"{key}_std"] = (
                float(np.std(run_means, ddof=1)) if ok and len(rows) > 1 else np.nan
            )
            if key == "pareto_area" and ok:
                # the one interval (issue 35): a bootstrap over test queries, the runs' replicates
                # averaged on shared resamples (:func:`ecc_lib.stats.seed_query_interval`)
                parts = [(fronts or {}).get((name, supervision, i)) for i in range(len(rows))]
                if all(p is not None for p in parts):
                    index = bootstrap_indices(
                        parts[0]["cost"].shape[1], n_boot=n_boot, random_state=random_state
                    )
                    reps = [pareto_area_replicates(p["cost"], p["score"], index) for p in parts]
                    _, ci, _ = seed_query_interval(list(run_means), reps)
                    summary["pareto_area_ci_low"], summary["pareto_area_ci_high"] = ci
            if key in held_out.METRICS:
                averaged = np.mean([m[key] for m in runs], axis=0)
                _, low, high = bootstrap_mean_ci(averaged, n_boot=n_boot, random_state=random_state)
                summary[f"{key}_ci_low"], summary[f"{key}_ci_high"] = low, high
        table_rows.append(summary)
    return run_rows, table_rows


__all__ = [
    "routing_table",
]
