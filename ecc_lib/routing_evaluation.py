"""Routing evaluation: held-out quality, cost and utility of routers; cost-quality curves.

Protocol (DARS, Lai et al. 2026, arXiv 2606.06924, section 4; ``shared/DESIGN.md`` section 4):
queries are split into train and test (80/20, seed 42); routers learn from the training queries'
targets, either DARS distributions (all observations) or single-shot draws (one observation per
pair, repeated over ``n_runs`` seeds and reported as mean +- std); on each test query the chosen
model is scored with the held-out observations of that query:

- ``score``: its mean score over all observations; ``score_rewrite`` over rewrite observations
  (``decode_id == 0``) and ``score_decode`` over decode observations (``variant_id == 0``) when the
  data hold rewrites or decodes;
- ``decode_instability``: the standard deviation of its decode observations (when there are
  repeated decodes);
- ``cost``: its mean normalised cost; ``utility``: ``mu_q - lambda mu_c - beta sigma_q``.

References: the best fixed model (highest mean training utility), a uniformly random model (its
expectation, computed exactly) and the per-query oracle (``argmax`` of held-out utility). The gap
closed is ``(U_router - U_fixed) / (U_oracle - U_fixed)``. Sweeping ``lambda`` gives a cost-quality
curve; its Pareto front and the area under the front summarise it.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ecc_lib.comparisons import split_queries
from ecc_lib.dars import (
    DEFAULT_BETA,
    DEFAULT_LAMBDA,
    CapabilityDistributions,
    RepeatedObservations,
    capability_distributions,
    repeated_observations,
    single_shot_distributions,
)
from ecc_lib.metrics import DEFAULT_N_BOOT, bootstrap_mean_ci
from ecc_lib.routers import Router, make_router, router_families

logger = logging.getLogger(__name__)

DEFAULT_LAMBDA_GRID: tuple[float, ...] = (0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 2.0, 5.0)
"""Cost weights swept for the cost-quality curve."""
METRICS = ("score", "score_rewrite", "score_decode", "decode_instability", "cost", "utility")


@dataclass(frozen=True)
class HeldOut:
    """Held-out truth of the test queries, every matrix aligned to ``query_ids``.

    Attributes
    ----------
    query_ids : ndarray of str
    both : CapabilityDistributions
        All observations.
    rewrites, decodes : CapabilityDistributions or None
        Rewrite observations (``decode_id == 0``) and decode observations (``variant_id == 0``),
        present when the data hold rewrites (``variant_id > 0``) or decodes (``decode_id > 0``);
        rows of queries missing from a subset are NaN.
    """

    query_ids: np.ndarray
    both: CapabilityDistributions
    rewrites: CapabilityDistributions | None
    decodes: CapabilityDistributions | None


def _align(dist: CapabilityDistributions, query_ids: np.ndarray) -> CapabilityDistributions:
    """Rows of ``dist`` re-ordered to ``query_ids``; NaN rows where a query is missing."""
    position = pd.Index(dist.query_ids).get_indexer(query_ids)
    found = position >= 0

    def take(a: np.ndarray) -> np.ndarray:
        out = np.full((len(query_ids), a.shape[1]), np.nan)
        out[found] = a[position[found]]
        return out

    return CapabilityDistributions(
        query_ids=np.asarray(query_ids),
        models=dist.models,
        n_obs=np.where(found[:, None], dist.n_obs[np.maximum(position, 0)], 0),
        mu_q=take(dist.mu_q),
        sigma_q=take(dist.sigma_q),
        mu_c=take(dist.mu_c),
        cost_available=dist.cost_available,
        kind=dist.kind,
        subset=dist.subset,
    )


def held_out_truth(test: RepeatedObservations) -> HeldOut:
    """Capability distributions of the test queries, overall and per observation subset.

    Parameters
    ----------
    test : RepeatedObservations
        Observations of the test queries.

    Returns
    -------
    HeldOut
        All observations, and the rewrite / decode subsets where the data hold them.
    """
    both = capability_distributions(test)
    rewrites = decodes = None
    if test.has_rewrites:
        rewrites = _align(capability_distributions(test, subset="input"), both.query_ids)
    if test.has_decodes:
        decodes = _align(capability_distributions(test, subset="output"), both.query_ids)
    return HeldOut(query_ids=both.query_ids, both=both, rewrites=rewrites, decodes=decodes)


def evaluate_choices(
    choice: np.ndarray,
    truth: HeldOut,
    cost_weight: float = DEFAULT_LAMBDA,
    beta: float = DEFAULT_BETA,
) -> dict[str, np.ndarray]:
    """Per-query metrics of the chosen models (one model index per test query).

    Parameters
    ----------
    choice : ndarray of int, shape (n_test,)
        Index of the chosen model per test query.
    truth : HeldOut
        Held-out truth (:func:`held_out_truth`).
    cost_weight, beta : float
        Utility weights of ``U = mu_q - cost_weight mu_c - beta sigma_q``.

    Returns
    -------
    dict
        ``score, score_rewrite, score_decode, decode_instability, cost, utility``, each of shape
        (n_test,); a metric that does not apply (no rewrites, no repeated decodes) is all NaN.
    """
    choice = np.asarray(choice, dtype=np.int64)
    n = len(truth.query_ids)
    if choice.shape != (n,):
        raise ValueError(f"choice must have shape ({n},), got {choice.shape}")
    rows = np.arange(n)
    both = truth.both
    nan = np.full(n, np.nan)
    out = {
        "score": both.mu_q[rows, choice],
        "score_rewrite": truth.rewrites.mu_q[rows, choice] if truth.rewrites else nan,
        "score_decode": truth.decodes.mu_q[rows, choice] if truth.decodes else nan,
        "decode_instability": nan,
        "cost": both.mu_c[rows, choice],
        "utility": both.utility(cost_weight, beta)[rows, choice],
    }
    if truth.decodes is not None:
        repeated = truth.decodes.n_obs[rows, choice] >= 2
        out["decode_instability"] = np.where(repeated, truth.decodes.sigma_q[rows, choice], np.nan)
    return out


def expected_random_metrics(
    truth: HeldOut, cost_weight: float = DEFAULT_LAMBDA, beta: float = DEFAULT_BETA
) -> dict[str, np.ndarray]:
    """Per-query metrics of a uniformly random choice, as exact expectations over models.

    Parameters
    ----------
    truth : HeldOut
        Held-out truth.
    cost_weight, beta : float
        Utility weights of ``U = mu_q - cost_weight mu_c - beta sigma_q``.

    Returns
    -------
    dict
        The metrics of :func:`evaluate_choices`, averaged over the models.
    """
    per_model = [
        evaluate_choices(np.full(len(truth.query_ids), m), truth, cost_weight, beta)
        for m in range(truth.both.n_models)
    ]
    return {key: np.mean([pm[key] for pm in per_model], axis=0) for key in METRICS}


def oracle_choices(
    truth: HeldOut, cost_weight: float = DEFAULT_LAMBDA, beta: float = DEFAULT_BETA
) -> np.ndarray:
    """Per-query oracle: ``argmax`` of the held-out utility.

    Parameters
    ----------
    truth : HeldOut
        Held-out truth.
    cost_weight, beta : float
        Utility weights of ``U = mu_q - cost_weight mu_c - beta sigma_q``.

    Returns
    -------
    ndarray of int, shape (n_test,)
    """
    return np.argmax(truth.both.utility(cost_weight, beta), axis=1)


def best_fixed_model(
    train: CapabilityDistributions, cost_weight: float = DEFAULT_LAMBDA, beta: float = DEFAULT_BETA
) -> int:
    """Index of the model with the highest mean training utility.

    Parameters
    ----------
    train : CapabilityDistributions
        Training targets.
    cost_weight, beta : float
        Utility weights of ``U = mu_q - cost_weight mu_c - beta sigma_q``.

    Returns
    -------
    int
    """
    return int(np.argmax(train.utility(cost_weight, beta).mean(axis=0)))


def gap_closed(value: float, fixed: float, oracle: float) -> float:
    """``(value - fixed) / (oracle - fixed)``: 0 at the best fixed model, 1 at the oracle.

    Parameters
    ----------
    value, fixed, oracle : float
        Mean utility of a router, of the best fixed model and of the oracle.

    Returns
    -------
    float
        NaN when the oracle does no better than the best fixed model.
    """
    span = oracle - fixed
    return float((value - fixed) / span) if abs(span) > 1e-12 else float("nan")


def pareto_front(cost: np.ndarray, quality: np.ndarray) -> np.ndarray:
    """Points that no other point dominates.

    A point is dominated when another has lower or equal cost and higher or equal quality, one of
    them strictly.

    Parameters
    ----------
    cost, quality : ndarray, shape (n,)
        Coordinates of the points.

    Returns
    -------
    ndarray of bool, shape (n,)
        True on the front.
    """
    cost = np.asarray(cost, float)
    quality = np.asarray(quality, float)
    le_cost = cost[None, :] <= cost[:, None]
    ge_quality = quality[None, :] >= quality[:, None]
    strict = (cost[None, :] < cost[:, None]) | (quality[None, :] > quality[:, None])
    return ~np.any(le_cost & ge_quality & strict, axis=1)


def pareto_area(
    cost: np.ndarray, quality: np.ndarray, cost_range: tuple[float, float] = (0.0, 1.0)
) -> float:
    """Area under the Pareto front over ``cost_range``.

    The front is read as a step function: at budget ``c`` the best quality of a point with
    ``cost <= c`` (0 below the cheapest point). Its integral over ``cost_range`` (normalised by the
    range's width) is the mean best quality over budgets, in [0, 1] for scores in [0, 1].

    Parameters
    ----------
    cost, quality : ndarray, shape (n,)
        Coordinates of the points (non-finite points are ignored).
    cost_range : (float, float), default (0, 1)
        Budgets integrated over.

    Returns
    -------
    float
        NaN without finite points.
    """
    cost = np.asarray(cost, float)
    quality = np.asarray(quality, float)
    keep = np.isfinite(cost) & np.isfinite(quality)
    cost, quality = cost[keep], quality[keep]
    low, high = cost_range
    if high <= low:
        raise ValueError(f"cost_range must be increasing, got {cost_range}")
    if len(cost) == 0:
        return float("nan")
    order = np.argsort(cost, kind="stable")
    cost = np.clip(cost[order], low, high)
    best = np.maximum.accumulate(quality[order])
    edges = np.append(cost, high)
    return float(np.sum(best * np.diff(edges)) / (high - low))


def cost_quality_curve(
    router: Router,
    query_embeddings: np.ndarray,
    truth: HeldOut,
    lambdas: Sequence[float] = DEFAULT_LAMBDA_GRID,
    beta: float = DEFAULT_BETA,
) -> pd.DataFrame:
    """Mean held-out cost and score of a router routing at each cost weight.

    The router must be fitted with ``target="components"``, so one prediction serves every weight.

    Parameters
    ----------
    router : Router
        A fitted router.
    query_embeddings : ndarray, shape (n_test, n_features)
        Features of the test queries, aligned to ``truth``.
    truth : HeldOut
        Held-out truth.
    lambdas : sequence of float
        Cost weights swept.
    beta : float
        Weight of the score spread.

    Returns
    -------
    DataFrame
        ``lambda, cost, score, utility, on_front`` (``utility`` at that lambda).
    """
    rows = []
    for lam in lambdas:
        choice = router.route(query_embeddings, cost_weight=lam, beta=beta)
        metrics = evaluate_choices(choice, truth, lam, beta)
        rows.append(
            {
                "lambda": float(lam),
                "cost": float(np.nanmean(metrics["cost"])),
                "score": float(np.nanmean(metrics["score"])),
                "utility": float(np.nanmean(metrics["utility"])),
            }
        )
    frame = pd.DataFrame(rows)
    frame["on_front"] = pareto_front(frame["cost"].to_numpy(), frame["score"].to_numpy())
    return frame


# --------------------------------------------------------------------------------------------
# The routing table
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoutingTable:
    """Result of :func:`routing_table`.

    Attributes
    ----------
    table : DataFrame
        One row per (router, supervision): ``router, supervision, n_runs`` and for each metric its
        mean over runs, ``<metric>_std`` over runs and ``<metric>_ci_low/high`` (bootstrap over test
        queries of the run-averaged per-query values); ``gap_closed``; ``pareto_area``.
    runs : DataFrame
        One row per fitted run with the mean metrics.
    curves : DataFrame
        Cost-quality points ``router, supervision, run, lambda, cost, score, utility, on_front``.
    info : dict
        Split sizes, lambda, beta, dataset facts.
    """

    table: pd.DataFrame
    runs: pd.DataFrame
    curves: pd.DataFrame
    info: dict


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
    embedding_ids: Sequence[str] | None = None,
    routers: Sequence[str] | None = None,
    router_kwargs: dict[str, dict] | None = None,
    n_runs: int = 10,
    cost_weight: float = DEFAULT_LAMBDA,
    beta: float = DEFAULT_BETA,
    test_size: float = 0.2,
    split_seed: int = 42,
    random_state: int = 0,
    n_boot: int = DEFAULT_N_BOOT,
    lambdas: Sequence[float] = DEFAULT_LAMBDA_GRID,
    progress: Callable[[str], None] | None = None,
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
        Query split (:func:`ecc_lib.comparisons.split_queries`).
    random_state : int
    n_boot : int
    lambdas : sequence of float
        Cost weights of the cost-quality curves.
    progress : callable, optional
        Called with a short message before each fit.

    Returns
    -------
    RoutingTable
    """
    obs = repeated_observations(outcomes)
    x_all = _align_embeddings(embeddings, embedding_ids, obs.query_ids).astype(float)
    train_mask, test_mask = split_queries(obs.n_queries, test_size, split_seed)
    train_obs = obs.select_queries(train_mask)
    test_obs = obs.select_queries(test_mask)
    x_train, x_test = x_all[train_mask], x_all[test_mask]
    truth = held_out_truth(test_obs)
    dars_train = capability_distributions(train_obs)
    families = router_families()
    names = list(families) if routers is None else list(routers)
    router_kwargs = router_kwargs or {}

    fixed = best_fixed_model(dars_train, cost_weight, beta)
    per_query: dict[tuple[str, str], list[dict[str, np.ndarray]]] = {}
    curves: list[pd.DataFrame] = []

    n_test = len(truth.query_ids)
    per_query[("Oracle", "reference")] = [
        evaluate_choices(oracle_choices(truth, cost_weight, beta), truth, cost_weight, beta)
    ]
    per_query[("Best fixed model", "reference")] = [
        evaluate_choices(np.full(n_test, fixed), truth, cost_weight, beta)
    ]
    per_query[("Random", "reference")] = [expected_random_metrics(truth, cost_weight, beta)]
    fixed_curve = []
    for lam in lambdas:
        choice = np.full(n_test, best_fixed_model(dars_train, lam, beta))
        m = evaluate_choices(choice, truth, lam, beta)
        fixed_curve.append(
            {
                "lambda": float(lam),
                "cost": float(np.nanmean(m["cost"])),
                "score": float(np.nanmean(m["score"])),
                "utility": float(np.nanmean(m["utility"])),
            }
        )
    oracle_curve = []
    for lam in lambdas:
        m = evaluate_choices(oracle_choices(truth, lam, beta), truth, lam, beta)
        oracle_curve.append(
            {
                "lambda": float(lam),
                "cost": float(np.nanmean(m["cost"])),
                "score": float(np.nanmean(m["score"])),
                "utility": float(np.nanmean(m["utility"])),
            }
        )
    for label, points in (("Best fixed model", fixed_curve), ("Oracle", oracle_curve)):
        frame = pd.DataFrame(points)
        frame["on_front"] = pareto_front(frame["cost"].to_numpy(), frame["score"].to_numpy())
        frame.insert(0, "run", 0)
        frame.insert(0, "supervision", "reference")
        frame.insert(0, "router", label)
        curves.append(frame)

    for name in names:
        if name not in families:
            raise ValueError(f"unknown router {name!r}; choose from {sorted(families)}")
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
                evaluate_choices(choice, truth, cost_weight, beta)
            )
            if router.fitted_target_ == "components":
                curve = cost_quality_curve(router, x_test, truth, lambdas, beta)
                curve.insert(0, "run", run)
                curve.insert(0, "supervision", supervision)
                curve.insert(0, "router", name)
                curves.append(curve)

    curves_frame = pd.concat(curves, ignore_index=True)
    oracle_u = float(np.nanmean(per_query[("Oracle", "reference")][0]["utility"]))
    fixed_u = float(np.nanmean(per_query[("Best fixed model", "reference")][0]["utility"]))
    run_rows, table_rows = [], []
    for (name, supervision), runs in per_query.items():
        rows = []
        for run_index, metrics in enumerate(runs):
            row = {"router": name, "supervision": supervision, "run": run_index}
            for key, values in metrics.items():
                row[key] = float(np.nanmean(values)) if np.isfinite(values).any() else np.nan
            row["gap_closed"] = gap_closed(row["utility"], fixed_u, oracle_u)
            sel = curves_frame[
                (curves_frame["router"] == name)
                & (curves_frame["supervision"] == supervision)
                & (curves_frame["run"] == run_index)
            ]
            row["pareto_area"] = (
                pareto_area(sel["cost"].to_numpy(), sel["score"].to_numpy()) if len(sel) else np.nan
            )
            rows.append(row)
        run_rows.extend(rows)
        summary = {"router": name, "supervision": supervision, "n_runs": len(runs)}
        for key in (*METRICS, "gap_closed", "pareto_area"):
            run_means = np.array([r[key] for r in rows], float)
            ok = bool(np.isfinite(run_means).all())
            summary[key] = float(np.mean(run_means)) if ok else np.nan
            summary[f"{key}_std"] = (
                float(np.std(run_means, ddof=1)) if ok and len(rows) > 1 else np.nan
            )
            if key in METRICS:
                averaged = np.mean([m[key] for m in runs], axis=0)
                _, low, high = bootstrap_mean_ci(averaged, n_boot, random_state)
                summary[f"{key}_ci_low"], summary[f"{key}_ci_high"] = low, high
        table_rows.append(summary)

    order = {"reference": 0, "single-shot": 1, "DARS": 2}
    table = pd.DataFrame(table_rows)
    ref_order = {"Oracle": 0, "Best fixed model": 1, "Random": 2}
    table["_ref"] = table["router"].map(ref_order).fillna(3)
    table["_fam"] = table["router"].map({n: i for i, n in enumerate(names)}).fillna(-1)
    table["_sup"] = table["supervision"].map(order)
    table = (
        table.sort_values(["_ref", "_fam", "_sup"]).drop(columns=["_ref", "_fam", "_sup"])
    ).reset_index(drop=True)
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
        "has_rewrites": obs.has_rewrites,
        "has_decodes": obs.has_decodes,
        "observations_per_pair_median": float(np.median(obs.count)),
        "routers": names,
    }
    return RoutingTable(table=table, runs=pd.DataFrame(run_rows), curves=curves_frame, info=info)


def format_routing_table(
    result: RoutingTable | pd.DataFrame,
    metrics: Sequence[str] = ("score", "score_rewrite", "score_decode", "cost", "utility"),
    digits: int = 3,
    intervals: bool = False,
) -> pd.DataFrame:
    """Readable table: ``mean +- std`` over runs where there are several runs, NaN shown as ``-``.

    Parameters
    ----------
    result : RoutingTable or DataFrame
        A :func:`routing_table` result or its ``table``.
    metrics : sequence of str
        Metric columns to show (``gap_closed`` and ``pareto_area`` are always added when present).
    digits : int, default 3
        Decimals.
    intervals : bool, default False
        Append the 95% bootstrap interval ``[low, high]`` of each metric that has one.

    Returns
    -------
    DataFrame
        ``router, supervision, n_runs`` and one text column per metric.
    """
    table = result.table if isinstance(result, RoutingTable) else result
    out = table[["router", "supervision", "n_runs"]].copy()
    columns = list(metrics) + ["gap_closed", "pareto_area"]
    nan = pd.Series(np.nan, index=table.index)

    def fmt(mean: float, sd: float, low: float, high: float) -> str:
        if not np.isfinite(mean):
            return "-"
        text = f"{mean:.{digits}f}"
        if np.isfinite(sd):
            text += f" ± {sd:.{digits}f}"
        if intervals and np.isfinite(low) and np.isfinite(high):
            text += f" [{low:.{digits}f}, {high:.{digits}f}]"
        return text

    for key in columns:
        if key not in table or table[key].isna().all():
            continue
        out[key] = [
            fmt(m, s, lo, hi)
            for m, s, lo, hi in zip(
                table[key],
                table.get(f"{key}_std", nan),
                table.get(f"{key}_ci_low", nan),
                table.get(f"{key}_ci_high", nan),
                strict=True,
            )
        ]
    return out
