"""Cost-quality curves of routers and references, their Pareto front and the area under it.

Sweeping the cost weight ``lambda`` of the utility gives one routing choice per weight; its mean
held-out cost and score are a point of the curve (:mod:`~ecc_lib.routing_evaluation.held_out`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn.base import clone

from ecc_lib import defaults
from ecc_lib.dars.distributions import DEFAULT_BETA, CapabilityDistributions
from ecc_lib.routers import Router
from ecc_lib.routing_evaluation.held_out import HeldOut, evaluate_choices

DEFAULT_LAMBDA_GRID: tuple[float, ...] = (0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 2.0, 5.0)
"""Cost weights swept for the cost-quality curve."""


MAX_COST_WEIGHT = 1e6
"""Largest cost weight a curve sweeps: beyond it every choice is the cheapest model (issue 36:
``1e308`` was taken)."""


def check_lambdas(lambdas: Sequence[float]) -> list[float]:
    """The cost weights of a curve as floats, each finite in ``[0, MAX_COST_WEIGHT]``.

    Parameters
    ----------
    lambdas : sequence of float

    Returns
    -------
    list of float

    Raises
    ------
    ValueError
        No weight, or one that is not a number, NaN, negative or above :data:`MAX_COST_WEIGHT`.
    """
    values = list(lambdas)
    if not values:
        raise ValueError("lambdas must hold at least one cost weight")
    out = []
    for value in values:
        try:
            number = float(value) if not isinstance(value, bool) else math.nan
        except (TypeError, ValueError):
            number = math.nan
        if not (math.isfinite(number) and 0.0 <= number <= MAX_COST_WEIGHT):
            raise ValueError(
                f"lambdas must be finite cost weights in [0, {MAX_COST_WEIGHT:g}], got {value!r} "
                f"in {values!r}"
            )
        out.append(number)
    return out


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


def pareto_area(cost: np.ndarray, quality: np.ndarray) -> float:
    """Area under the Pareto front over the normalised cost range [0, 1].

    The front is read as a step function: at budget ``c`` the best quality of a point with
    ``cost <= c`` (0 below the cheapest point). Its integral over the budgets [0, 1] (costs
    clipped to it) is the mean best quality over budgets, in [0, 1] for scores in [0, 1].

    Parameters
    ----------
    cost, quality : ndarray, shape (n,)
        Coordinates of the points (non-finite points are ignored).

    Returns
    -------
    float
        NaN without finite points.
    """
    cost = np.asarray(cost, float)
    quality = np.asarray(quality, float)
    keep = np.isfinite(cost) & np.isfinite(quality)
    if not keep.any():
        return float("nan")
    return float(_front_areas(cost[keep][None], quality[keep][None])[0])


def pareto_area_ci(
    cost: np.ndarray,
    quality: np.ndarray,
    *,
    n_boot: int = defaults.N_BOOT,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[float, list[float]]:
    """:func:`pareto_area` with its interval: a bootstrap over test queries (issue 35).

    Each replicate resamples the per-query ``(cost, quality)`` rows (one column per test query,
    the same resample for every point of the curve), recomputes each point's mean cost and mean
    quality, the front and its area. The interval is the percentile interval of the replicates
    (:func:`ecc_lib.stats.seed_query_interval` with one split), in the area's unit.

    Parameters
    ----------
    cost, quality : ndarray, shape (n_points, n_queries)
        Per point of the curve (a cost weight) the routed model's cost and quality on each test
        query.
    n_boot : int, default 1000
    confidence : float, default 0.95
    random_state : int, Generator or None, default 0

    Returns
    -------
    area : float
        :func:`pareto_area` of the points' means.
    ci : list of float
        ``[low, high]``.
    """
    from ecc_lib.stats import bootstrap_indices, seed_query_interval

    cost = np.atleast_2d(np.asarray(cost, float))
    quality = np.atleast_2d(np.asarray(quality, float))
    if cost.shape != quality.shape:
        raise ValueError(f"cost and quality need one shape, got {cost.shape} and {quality.shape}")
    area = pareto_area(np.nanmean(cost, axis=1), np.nanmean(quality, axis=1))
    index = bootstrap_indices(cost.shape[1], n_boot=n_boot, random_state=random_state)
    replicates = pareto_area_replicates(cost, quality, index)
    _, ci, _ = seed_query_interval([area], [replicates], confidence=confidence)
    return area, ci


def pareto_area_replicates(cost: np.ndarray, quality: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Bootstrap replicates of :func:`pareto_area` over resampled test queries.

    Parameters
    ----------
    cost, quality : ndarray, shape (n_points, n_queries)
        As :func:`pareto_area_ci`.
    index : ndarray of int, shape (n_boot, n_queries)
        Resampled query indices (:func:`ecc_lib.stats.bootstrap_indices`).

    Returns
    -------
    ndarray, shape (n_boot,)
    """
    cost = np.atleast_2d(np.asarray(cost, float))
    quality = np.atleast_2d(np.asarray(quality, float))
    with np.errstate(invalid="ignore"):
        c = np.nanmean(cost[:, index], axis=2).T  # (n_boot, n_points)
        q = np.nanmean(quality[:, index], axis=2).T
    bad = ~(np.isfinite(c) & np.isfinite(q))
    c = np.where(bad, np.inf, c)  # a point without a value never enters the front
    q = np.where(bad, -np.inf, q)
    return _front_areas(c, q)


def _front_areas(c: np.ndarray, q: np.ndarray) -> np.ndarray:
    """:func:`pareto_area` of each row of points ``(c, q)``, shape (n_rows, n_points); a point of
    cost ``inf`` and quality ``-inf`` never enters the front."""
    order = np.argsort(c, axis=1, kind="stable")
    c_sorted = np.clip(np.take_along_axis(c, order, axis=1), 0.0, 1.0)
    best = np.maximum.accumulate(np.take_along_axis(q, order, axis=1), axis=1)
    best = np.where(np.isfinite(best), best, 0.0)
    edges = np.concatenate([c_sorted, np.ones((len(c), 1))], axis=1)
    return np.sum(best * np.diff(edges, axis=1), axis=1)


def curve_of_choices(
    choices: Sequence[np.ndarray],
    truth: HeldOut,
    *,
    lambdas: Sequence[float],
    beta: float = DEFAULT_BETA,
) -> pd.DataFrame:
    """Mean held-out cost, score and utility of one routing choice per cost weight.

    The one curve builder: of routers (:func:`cost_quality_curve`) and of references (a fixed
    model, the oracle) alike.

    Parameters
    ----------
    choices : sequence of ndarray of int, each shape (n_test,)
        The chosen model per test query, one array per cost weight.
    truth : HeldOut
        Held-out truth (:func:`~ecc_lib.routing_evaluation.held_out.held_out_truth`).
    lambdas : sequence of float
        The cost weight of each choice (also the weight of its utility).
    beta : float
        Weight of the score spread in the utility.

    Returns
    -------
    DataFrame
        ``lambda, cost, score, utility, on_front`` (``on_front``: on the Pareto front of cost
        and score, :func:`pareto_front`); ``attrs["per_query"]`` holds the per-query ``cost``
        and ``score`` arrays, shape (n_lambdas, n_test), for :func:`pareto_area_ci`.
    """
    lambdas = check_lambdas(lambdas)
    rows, per_cost, per_score = [], [], []
    for choice, lam in zip(choices, lambdas, strict=True):
        metrics = evaluate_choices(choice, truth, cost_weight=lam, beta=beta)
        per_cost.append(np.asarray(metrics["cost"], float))
        per_score.append(np.asarray(metrics["score"], float))
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
    # the per-query values, for the area's interval (pareto_area_ci); attrs are not saved
    frame.attrs["per_query"] = {"cost": np.vstack(per_cost), "score": np.vstack(per_score)}
    return frame


def cost_quality_curve(
    router: Router,
    query_embeddings: np.ndarray,
    truth: HeldOut,
    *,
    lambdas: Sequence[float] = DEFAULT_LAMBDA_GRID,
    beta: float = DEFAULT_BETA,
    refit_on: tuple[np.ndarray, CapabilityDistributions] | None = None,
) -> pd.DataFrame:
    """Mean held-out cost and score of a router routing at each cost weight.

    A router fitted with ``target="components"`` routes at every weight from one prediction. A
    router that learns the utility at one cost weight (ECC, softmax ranking) cannot re-weight cost
    after fitting: with ``refit_on``, a clone is fitted at every weight on that training data and
    routes the test queries with that weight.

    Parameters
    ----------
    router : Router
        A fitted router; with ``refit_on``, fitted or not (its parameters are kept except
        ``cost_weight``).
    query_embeddings : ndarray, shape (n_test, n_features)
        Features of the test queries, aligned to ``truth``.
    truth : HeldOut
        Held-out truth.
    lambdas : sequence of float
        Cost weights swept.
    beta : float
        Weight of the score spread.
    refit_on : (ndarray, CapabilityDistributions), optional
        Training embeddings (n_train, n_features) and targets (single-shot or DARS) to refit
        the router on at every weight.

    Returns
    -------
    DataFrame
        ``lambda, cost, score, utility, on_front`` (:func:`curve_of_choices`).
    """
    lambdas = check_lambdas(lambdas)
    choices = []
    for lam in lambdas:
        fitted = router
        if refit_on is not None:
            fitted = clone(router).set_params(cost_weight=float(lam))
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*[Cc]onverge.*")
                fitted.fit(*refit_on)
        choices.append(fitted.route(query_embeddings, cost_weight=lam, beta=beta))
    return curve_of_choices(choices, truth, lambdas=lambdas, beta=beta)


__all__: list[str] = []
