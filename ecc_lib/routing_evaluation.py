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

DARS against single-shot is a paired difference on the same test queries (per family: DARS minus
the mean over the single-shot runs) with a bootstrap interval that resamples the test queries and
the single-shot runs jointly; so is every router against the best fixed model, and when no
router's interval lies above the best fixed model the result says so (``no_router_beats_best_fixed``).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

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
from ecc_lib.metrics import DEFAULT_N_BOOT, bootstrap_indices, bootstrap_mean_ci
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


def refitted_cost_quality_curve(
    router: Router,
    train_embeddings: np.ndarray,
    targets: CapabilityDistributions,
    query_embeddings: np.ndarray,
    truth: HeldOut,
    lambdas: Sequence[float] = DEFAULT_LAMBDA_GRID,
    beta: float = DEFAULT_BETA,
) -> pd.DataFrame:
    """Cost-quality curve of a router that learns the utility at one cost weight (e.g. ECC).

    Such a router cannot re-weight cost after fitting, so a clone is fitted at every weight on
    the same training data and routes the test queries with that weight.

    Parameters
    ----------
    router : Router
        A router (fitted or not); its parameters are kept except ``cost_weight``.
    train_embeddings : ndarray, shape (n_train, n_features)
        Features of the training queries.
    targets : CapabilityDistributions
        Training targets (single-shot or DARS).
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
        ``lambda, cost, score, utility, on_front`` as :func:`cost_quality_curve`.
    """
    from sklearn.base import clone

    choices = []
    for lam in lambdas:
        refitted = clone(router).set_params(cost_weight=float(lam))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Cc]onverge.*")
            refitted.fit(train_embeddings, targets)
        choices.append(refitted.route(query_embeddings, cost_weight=lam, beta=beta))
    return _curve_frame(choices, truth, lambdas, beta)


def _curve_frame(
    choices: Sequence[np.ndarray], truth: HeldOut, lambdas: Sequence[float], beta: float
) -> pd.DataFrame:
    """Mean held-out cost, score and utility of one routing choice per cost weight."""
    rows = []
    for choice, lam in zip(choices, lambdas, strict=True):
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
    choices = [router.route(query_embeddings, cost_weight=lam, beta=beta) for lam in lambdas]
    return _curve_frame(choices, truth, lambdas, beta)


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
        Split sizes, lambda, beta, dataset facts; ``no_router_beats_best_fixed`` and
        ``headline`` (one sentence, see :func:`routing_headline`).
    paired : DataFrame
        DARS minus single-shot per family on the same test queries, with joint bootstrap
        intervals over test queries and single-shot runs (see :func:`paired_differences`).
    versus_fixed : DataFrame
        Every (router, supervision) minus the best fixed model, with intervals.
    """

    table: pd.DataFrame
    runs: pd.DataFrame
    curves: pd.DataFrame
    info: dict
    paired: pd.DataFrame = field(default_factory=pd.DataFrame)
    versus_fixed: pd.DataFrame = field(default_factory=pd.DataFrame)


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
        Query split (:func:`ecc_lib.comparisons.split_queries`).
    random_state : int
    n_boot : int
    lambdas : sequence of float
        Cost weights of the cost-quality curves.
    progress : callable, optional
        Called with a short message before each fit.
    refit_curves : bool, default False
        Also draw cost-quality curves for routers that learn the utility at one cost weight
        (ECC, softmax ranking) by refitting them at every weight
        (:func:`refitted_cost_quality_curve`); without it only routers that predict the
        components get curves, at no extra fit.

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
            elif refit_curves:  # a router that learns U at one cost weight: refit at each weight
                curve = refitted_cost_quality_curve(
                    router, x_train, targets, x_test, truth, lambdas, beta
                )
            else:
                continue
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
    paired, versus_fixed = paired_differences(per_query, names, n_boot, random_state)
    result = RoutingTable(
        table=table,
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


# --------------------------------------------------------------------------------------------
# Paired differences: DARS minus single-shot, and every router against the best fixed model
# --------------------------------------------------------------------------------------------

PAIRED_METRICS = ("score", "utility")
"""Metrics of the paired DARS-minus-single-shot comparison."""


def joint_bootstrap_weights(
    n_queries: int,
    n_runs: int,
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Resampling weights of test queries and of single-shot runs, drawn jointly.

    Each bootstrap replicate resamples the test queries with replacement and, independently, the
    ``n_runs`` single-shot draws with replacement; a replicate of a run-averaged mean is then
    ``run_weights[b] @ values @ query_weights[b]`` for ``values`` of shape (n_runs, n_queries).
    The interval so covers both the test-query sample and the randomness of the single-shot
    labels (DARS, Lai et al. 2026, section 4 repeats the single-shot baseline over draws).

    Parameters
    ----------
    n_queries : int
        Test queries.
    n_runs : int
        Single-shot runs (at least 1).
    n_boot : int, default 1000
        Replicates.
    random_state : int or Generator, optional
        Seed (the query indices come first from the stream, then the run indices).

    Returns
    -------
    query_weights : ndarray, shape (n_boot, n_queries)
        Share of each query in each replicate (rows sum to 1).
    run_weights : ndarray, shape (n_boot, n_runs)
        Share of each run in each replicate (rows sum to 1).
    """
    rng = np.random.default_rng(random_state)

    def shares(n_units: int) -> np.ndarray:
        index = bootstrap_indices(n_units, n_boot, rng)
        flat = index + n_units * np.arange(n_boot)[:, None]
        counts = np.bincount(flat.ravel(), minlength=n_boot * n_units)
        return counts.reshape(n_boot, n_units) / n_units

    return shares(n_queries), shares(n_runs)


def _replicates(values: np.ndarray, query_w: np.ndarray, run_w: np.ndarray | None) -> np.ndarray:
    """Bootstrap replicates of the run-averaged mean over queries of ``values``.

    ``values`` is (n_queries,) for a deterministic arm or (n_runs, n_queries) for single-shot.
    """
    if values.ndim == 1:
        return query_w @ values
    return np.einsum("br,rq,bq->b", run_w, values, query_w)


def _estimate(values: np.ndarray) -> float:
    return float(np.mean(values))


def paired_differences(
    per_query: dict[tuple[str, str], list[dict[str, np.ndarray]]],
    families: Sequence[str],
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | np.random.Generator | None = 0,
    confidence: float = 0.95,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """DARS minus single-shot per router family, and every router against the best fixed model.

    Parameters
    ----------
    per_query : dict
        ``{(router, supervision): [metrics of run 0, run 1, ...]}`` as built by
        :func:`routing_table`: per-query arrays from :func:`evaluate_choices` on the same test
        queries, with the references ``("Oracle", "reference")`` and
        ``("Best fixed model", "reference")``.
    families : sequence of str
        Router families to compare.
    n_boot : int, default 1000
    random_state : int or Generator, optional
        Seed of the joint bootstrap (:func:`joint_bootstrap_weights`); one draw serves every
        family, so families compare on the same replicates.
    confidence : float, default 0.95

    Returns
    -------
    paired : DataFrame
        One row per family with both arms: ``router, n_runs`` and, for ``score`` and
        ``utility``, ``<metric>_dars``, ``<metric>_single_shot``, ``<metric>_diff`` (DARS minus
        single-shot, mean over test queries and runs) with ``<metric>_diff_ci_low/high``; and
        ``gap_closed_dars``, ``gap_closed_single_shot``, ``gap_closed_diff`` with their
        ``_ci_low/high``. Gap closed is ``(U - U_fixed) / (U_oracle - U_fixed)``: 0 at the best
        fixed model, 1 at the per-query oracle (ratio of means, recomputed in each replicate).
    versus_fixed : DataFrame
        One row per (router, supervision): ``utility_minus_fixed`` and ``score_minus_fixed``
        with intervals, and ``beats_best_fixed`` (the utility interval lies above 0).

    Notes
    -----
    Every arm is scored on the same test queries, so the differences are paired per query; a
    single-shot arm's value is the mean over its runs, and each replicate resamples the test
    queries and the single-shot runs jointly, so the intervals cover the test sample and the
    randomness of the single-shot labels.
    """
    oracle = per_query[("Oracle", "reference")][0]
    fixed = per_query[("Best fixed model", "reference")][0]
    arms = {
        key: {m: np.array([run[m] for run in runs], dtype=float) for m in PAIRED_METRICS}
        for key, runs in per_query.items()
        if key[1] != "reference"
    }
    stacked = [fixed[m] for m in PAIRED_METRICS] + [oracle[m] for m in PAIRED_METRICS]
    stacked += [a[m].reshape(-1, a[m].shape[-1]) for a in arms.values() for m in PAIRED_METRICS]
    finite = np.all(np.isfinite(np.vstack(stacked)), axis=0)
    if not finite.all():
        logger.info(
            "%d of %d test queries left out of the paired differences: a metric is undefined",
            int((~finite).sum()),
            len(finite),
        )
    if not finite.any():
        raise ValueError("no test query has every paired metric defined")
    n_runs = max((a["utility"].shape[0] for a in arms.values()), default=1)
    query_w, run_w = joint_bootstrap_weights(int(finite.sum()), n_runs, n_boot, random_state)
    tail = (1.0 - confidence) / 2.0

    def interval(replicates: np.ndarray) -> tuple[float, float]:
        ok = replicates[np.isfinite(replicates)]
        if len(ok) == 0:
            return float("nan"), float("nan")
        low, high = np.quantile(ok, [tail, 1.0 - tail])
        return float(low), float(high)

    def arm(values: np.ndarray) -> tuple[float, np.ndarray]:
        """Point estimate and replicates of an arm (one run: deterministic; several: joint)."""
        values = values[..., finite]
        if values.shape[0] == 1:
            return _estimate(values[0]), _replicates(values[0], query_w, None)
        if values.shape[0] != n_runs:
            raise ValueError(f"every single-shot arm needs {n_runs} runs, got {values.shape[0]}")
        return _estimate(values), _replicates(values, query_w, run_w)

    fixed_u, fixed_u_rep = arm(fixed["utility"][None])
    oracle_u, oracle_u_rep = arm(oracle["utility"][None])
    span, span_rep = oracle_u - fixed_u, oracle_u_rep - fixed_u_rep
    with np.errstate(invalid="ignore", divide="ignore"):
        span_rep = np.where(np.abs(span_rep) > 1e-12, span_rep, np.nan)

    def gap(value: float, replicates: np.ndarray) -> tuple[float, np.ndarray]:
        point = (value - fixed_u) / span if abs(span) > 1e-12 else float("nan")
        return point, (replicates - fixed_u_rep) / span_rep

    paired_rows = []
    for name in families:
        if (name, "DARS") not in arms or (name, "single-shot") not in arms:
            continue
        row: dict = {"router": name, "n_runs": int(arms[(name, "single-shot")]["utility"].shape[0])}
        for metric in PAIRED_METRICS:
            d_value, d_rep = arm(arms[(name, "DARS")][metric])
            s_value, s_rep = arm(arms[(name, "single-shot")][metric])
            row[f"{metric}_dars"] = d_value
            row[f"{metric}_single_shot"] = s_value
            row[f"{metric}_diff"] = d_value - s_value
            row[f"{metric}_diff_ci_low"], row[f"{metric}_diff_ci_high"] = interval(d_rep - s_rep)
            if metric == "utility":
                g_dars, g_dars_rep = gap(d_value, d_rep)
                g_ss, g_ss_rep = gap(s_value, s_rep)
                for label, value, rep in (
                    ("gap_closed_dars", g_dars, g_dars_rep),
                    ("gap_closed_single_shot", g_ss, g_ss_rep),
                    ("gap_closed_diff", g_dars - g_ss, g_dars_rep - g_ss_rep),
                ):
                    row[label] = value
                    row[f"{label}_ci_low"], row[f"{label}_ci_high"] = interval(rep)
        paired_rows.append(row)

    fixed_score, fixed_score_rep = arm(fixed["score"][None])
    versus_rows = []
    for (name, supervision), values in arms.items():
        row = {"router": name, "supervision": supervision}
        for metric, ref, ref_rep in (
            ("utility", fixed_u, fixed_u_rep),
            ("score", fixed_score, fixed_score_rep),
        ):
            value, rep = arm(values[metric])
            row[f"{metric}_minus_fixed"] = value - ref
            low, high = interval(rep - ref_rep)
            row[f"{metric}_minus_fixed_ci_low"], row[f"{metric}_minus_fixed_ci_high"] = low, high
        row["beats_best_fixed"] = bool(row["utility_minus_fixed_ci_low"] > 0)
        versus_rows.append(row)
    paired_columns = ["router", "n_runs"]
    for metric in PAIRED_METRICS:
        paired_columns += [f"{metric}_dars", f"{metric}_single_shot", f"{metric}_diff"]
        paired_columns += [f"{metric}_diff_ci_low", f"{metric}_diff_ci_high"]
    for label in ("gap_closed_dars", "gap_closed_single_shot", "gap_closed_diff"):
        paired_columns += [label, f"{label}_ci_low", f"{label}_ci_high"]
    return (
        pd.DataFrame(paired_rows, columns=paired_columns),
        pd.DataFrame(versus_rows),
    )


def routing_headline(result: RoutingTable) -> dict:
    """Whether any router beats the best fixed model, as metrics and one plain sentence.

    Parameters
    ----------
    result : RoutingTable

    Returns
    -------
    dict
        ``no_router_beats_best_fixed`` (bool: no router's 95 % interval of held-out utility
        minus the best fixed model's lies above 0), ``n_routers_beating_best_fixed``,
        ``best_router`` (the router and supervision with the highest held-out utility),
        ``best_router_utility_minus_fixed`` with ``_ci95``, and ``sentence``.
    """
    versus = result.versus_fixed
    fixed_name = result.info.get("best_fixed_model", "the best fixed model")
    if versus is None or len(versus) == 0:
        return {
            "no_router_beats_best_fixed": None,
            "n_routers_beating_best_fixed": 0,
            "best_router": None,
            "best_router_utility_minus_fixed": None,
            "best_router_utility_minus_fixed_ci95": None,
            "sentence": "No learned router was evaluated.",
        }
    best = versus.loc[versus["utility_minus_fixed"].idxmax()]
    beating = versus[versus["beats_best_fixed"]]
    label = f"{best['router']} ({best['supervision']})"
    diff = float(best["utility_minus_fixed"])
    ci = [float(best["utility_minus_fixed_ci_low"]), float(best["utility_minus_fixed_ci_high"])]
    if len(beating) == 0:
        sentence = (
            f"No router beats the best fixed model ({fixed_name}) on held-out utility: the best, "
            f"{label}, is {diff:+.3f} from it (95% CI [{ci[0]:+.3f}, {ci[1]:+.3f}])"
        )
        if ci[0] == ci[1] == 0.0:
            sentence += ", matching its utility on every test query"
        sentence += "."
    else:
        names = [f"{r.router} ({r.supervision})" for r in beating.itertuples()]
        listed = f": {', '.join(names)}" if len(names) <= 4 else ""
        sentence = (
            f"{len(beating)} of {len(versus)} routers beat the best fixed model ({fixed_name}) "
            f"on held-out utility (95% CI above 0){listed}; the best, {label}, by {diff:+.3f} "
            f"(95% CI [{ci[0]:+.3f}, {ci[1]:+.3f}])."
        )
    return {
        "no_router_beats_best_fixed": bool(len(beating) == 0),
        "n_routers_beating_best_fixed": int(len(beating)),
        "best_router": label,
        "best_router_utility_minus_fixed": diff,
        "best_router_utility_minus_fixed_ci95": ci,
        "sentence": sentence,
    }


def format_paired_differences(paired: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """Readable DARS-minus-single-shot table: ``value [low, high]`` per column.

    Parameters
    ----------
    paired : DataFrame
        ``RoutingTable.paired`` (see :func:`paired_differences`).
    digits : int, default 3

    Returns
    -------
    DataFrame
        ``router, n_runs, score: DARS - single-shot, utility: DARS - single-shot, gap closed
        (DARS), gap closed (single-shot), gap closed: DARS - single-shot``.
    """

    def cell(row: pd.Series, key: str) -> str:
        value = row[key]
        if not np.isfinite(value):
            return "-"
        return (
            f"{value:+.{digits}f} [{row[key + '_ci_low']:+.{digits}f}, "
            f"{row[key + '_ci_high']:+.{digits}f}]"
        )

    columns = {
        "score: DARS - single-shot": "score_diff",
        "utility: DARS - single-shot": "utility_diff",
        "gap closed (DARS)": "gap_closed_dars",
        "gap closed (single-shot)": "gap_closed_single_shot",
        "gap closed: DARS - single-shot": "gap_closed_diff",
    }
    out = paired[["router", "n_runs"]].copy()
    for title, key in columns.items():
        out[title] = [cell(row, key) for _, row in paired.iterrows()]
    return out


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
