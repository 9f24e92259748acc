"""Single-shot winners of DARS (``docs/design.md`` section 4): the probability that each model is
a query's winner on one sampled answer per (query, model), exact for binary scores
(:func:`winner_probabilities_exact`) and seeded Monte Carlo otherwise
(:func:`single_shot_winners`), and the flip-rate readings of those probabilities (pairwise,
strict, change over R draws) beside their chance levels. The per-subset summaries are in
:mod:`ecc_lib.dars.label_instability`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ecc_lib import defaults
from ecc_lib.dars.distributions import argmax_sets
from ecc_lib.data.observations import RepeatedObservations, repeated_observations

logger = logging.getLogger(__name__)
DEFAULT_N_DRAWS = defaults.N_DRAWS
"""Monte Carlo draw pairs per query for the flip rate."""
FLIP_METHODS = ("auto", "exact", "monte_carlo")
_MC_CHUNK_ELEMENTS = 1 << 18


# --------------------------------------------------------------------------------------------
# Winner probabilities: exact (binary scores) and Monte Carlo
# --------------------------------------------------------------------------------------------


def _leave_one_out_product(values: np.ndarray, axis: int = 1) -> np.ndarray:
    """Product over ``axis`` of all entries but one, for each entry (prefix x suffix products)."""
    values = np.moveaxis(values, axis, -1)
    ones = np.ones(values.shape[:-1] + (1,))
    prefix = np.concatenate([ones, np.cumprod(values[..., :-1], axis=-1)], axis=-1)
    suffix = np.concatenate(
        [np.cumprod(values[..., ::-1][..., :-1], axis=-1)[..., ::-1], ones], axis=-1
    )
    return np.moveaxis(prefix * suffix, -1, axis)


def winner_probabilities_exact(p: np.ndarray) -> np.ndarray:
    """Exact single-shot winner probabilities for binary scores.

    Parameters
    ----------
    p : ndarray, shape (n_queries, n_models)
        Success probability of each model on each query (share of its observations scored 1).

    Returns
    -------
    ndarray, shape (n_queries, n_models)
        ``P(winner = m)`` where each model independently succeeds with ``p_m``, the winner is
        uniform among the successful models, or uniform among all models when none succeeds.

    Notes
    -----
    With ``X_m`` the number of successes among the other models,
    ``P(m wins) = p_m E[1 / (1 + X_m)] + P(no success) / M``. Since ``1 / (1 + k)`` is the integral
    of ``t^k`` over [0, 1], ``E[1 / (1 + X_m)] = int_0^1 prod_{j != m} (1 - p_j + p_j t) dt``, the
    integral of a polynomial of degree M - 1, which Gauss-Legendre quadrature with ``ceil(M / 2)``
    nodes computes exactly. Cost O(M^2) per query, vectorised over queries. The quadrature nodes lie
    strictly inside (0, 1), and the leave-one-out products use prefix and suffix products (no
    division), so ``p = 1`` is handled exactly.
    """
    p = np.asarray(p, dtype=float)
    if p.ndim != 2:
        raise ValueError(f"p must be 2-D (queries x models), got shape {p.shape}")
    if np.any((p < 0) | (p > 1)) or np.isnan(p).any():
        raise ValueError("success probabilities must lie in [0, 1]")
    n_models = p.shape[1]
    n_nodes = max(1, (n_models + 1) // 2)
    nodes, weights = np.polynomial.legendre.leggauss(n_nodes)
    t = (nodes + 1.0) / 2.0
    w = weights / 2.0
    factors = 1.0 - p[:, :, None] + p[:, :, None] * t[None, None, :]  # (Q, M, n)
    others = _leave_one_out_product(factors, axis=1)
    expected_share = others @ w  # (Q, M): E[1 / (1 + X_m)]
    all_fail = np.prod(1.0 - p, axis=1, keepdims=True)
    return p * expected_share + all_fail / n_models


def tied_top_probability_exact(p: np.ndarray) -> np.ndarray:
    """Probability that the single-shot top score is shared by two or more models (binary scores).

    Equals ``1 - P(exactly one success)``: with no success every model ties at 0.

    Parameters
    ----------
    p : ndarray, shape (..., n_models)
        Success probability of each model (binary scores).

    Returns
    -------
    ndarray, shape (...)
    """
    p = np.asarray(p, dtype=float)
    exactly_one = (p * _leave_one_out_product(1.0 - p, axis=1)).sum(axis=1)
    return 1.0 - exactly_one


def flip_probability(winner_probabilities: np.ndarray) -> np.ndarray:
    """``P(winner1 != winner2) = 1 - sum_m P(winner = m)^2`` for two independent draws.

    Parameters
    ----------
    winner_probabilities : ndarray, shape (..., n_models)
        ``P(winner = m)`` of one draw.

    Returns
    -------
    ndarray, shape (...)
        Clipped at 0 against rounding.
    """
    w = np.asarray(winner_probabilities, float)
    return np.clip(1.0 - np.sum(w * w, axis=-1), 0.0, None)


def change_probability(winner_probabilities: np.ndarray, n_draws: int) -> np.ndarray:
    """Probability that ``n_draws`` independent single-shot draws do not all name the same winner.

    Parameters
    ----------
    winner_probabilities : ndarray, shape (..., n_models)
        ``w_m = P(winner = m)``.
    n_draws : int
        Number of draws ``R`` (at least 1; ``R = 2`` is the pairwise flip rate).

    Returns
    -------
    ndarray, shape (...)
        ``1 - sum_m w_m^R``.
    """
    if int(n_draws) < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws}")
    w = np.asarray(winner_probabilities, float)
    return np.clip(1.0 - np.sum(w ** int(n_draws), axis=-1), 0.0, 1.0)


def strict_flip_probability_exact(p: np.ndarray) -> np.ndarray:
    """Probability that two single-shot draws have disjoint sets of top-scoring models (binary).

    Parameters
    ----------
    p : ndarray, shape (n_queries, n_models)
        Success probability of each model on each query.

    Returns
    -------
    ndarray, shape (n_queries,)
        ``prod_m (1 - p_m^2) - 2 z + z^2`` with ``z = prod_m (1 - p_m)``.

    Notes
    -----
    With binary scores the top set of a draw is its set of successful models, or every model when
    none succeeds (all tie at 0), which meets any other top set. So the top sets are disjoint
    exactly when both draws have a success and no model succeeds in both:
    ``P(no model succeeds twice) = prod_m (1 - p_m^2)``, minus the cases where a draw has no
    success (``2 z - z^2``, inclusion-exclusion).
    """
    p = np.asarray(p, dtype=float)
    z = np.prod(1.0 - p, axis=1)
    return np.clip(np.prod(1.0 - p * p, axis=1) - 2.0 * z + z * z, 0.0, 1.0)


def chance_flip_rates(n_models: int, change_draws: int) -> dict[str, float]:
    """The three flip-rate readings for ``n_models`` identical models with every score tied.

    Parameters
    ----------
    n_models : int
        Pool size ``M``.
    change_draws : int
        ``R`` of the change reading.

    Returns
    -------
    dict
        ``{"pairwise": 1 - 1/M, "strict": 0, "change": 1 - M^(1 - R)}``: every draw's winner is
        uniform over the pool, and every top set is the whole pool, so two never are disjoint.
    """
    if n_models < 1 or change_draws < 1:
        raise ValueError(
            f"need n_models >= 1 and change_draws >= 1, got {n_models}, {change_draws}"
        )
    uniform = np.full(n_models, 1.0 / n_models)
    return {
        "pairwise": float(flip_probability(uniform)),
        "strict": 0.0,
        "change": float(change_probability(uniform, change_draws)),
    }


def default_change_draws(count: np.ndarray) -> int:
    """Default ``R`` of the change reading: observations per (query, model) pair (the median).

    Parameters
    ----------
    count : ndarray of int
        Observations per pair.

    Returns
    -------
    int
        The median count, rounded to the nearest integer, at least 2.
    """
    count = np.asarray(count)
    if count.size == 0:
        raise ValueError("no (query, model) pair to count observations of")
    return max(2, int(np.rint(np.median(count))))


@dataclass(frozen=True)
class SingleShotWinners:
    """Per-query single-shot winner statistics.

    Attributes
    ----------
    winner_probabilities : ndarray, shape (n_queries, n_models)
        ``P(winner = m)`` (exact) or the share of draws won (Monte Carlo).
    flip : ndarray, shape (n_queries,)
        Pairwise reading: ``P(winner1 != winner2)``.
    strict : ndarray, shape (n_queries,)
        Strict reading: probability that two draws' sets of top-scoring models are disjoint.
    change : ndarray, shape (n_queries,)
        Change reading: probability that ``change_draws`` draws do not all name the same winner.
    change_draws : int
        ``R`` of the change reading.
    tied_top : ndarray, shape (n_queries,)
        Probability that the top drawn score is tied.
    disagreement : ndarray, shape (n_queries,) or None
        Probability that the single-shot winner is not among the argmax-U models (when a utility
        matrix was given).
    method : str
        ``"exact"`` or ``"monte_carlo"``.
    n_draws : int or None
        Draw pairs per query (Monte Carlo only).
    """

    winner_probabilities: np.ndarray
    flip: np.ndarray
    strict: np.ndarray
    change: np.ndarray
    change_draws: int
    tied_top: np.ndarray
    disagreement: np.ndarray | None
    method: str
    n_draws: int | None


def single_shot_winners(
    outcomes: pd.DataFrame | RepeatedObservations,
    utilities: np.ndarray | None = None,
    *,
    method: str = "auto",
    n_draws: int = DEFAULT_N_DRAWS,
    random_state: int | np.random.Generator | None = 0,
    change_draws: int | None = None,
) -> SingleShotWinners:
    """The three flip-rate readings, tied-top probability and disagreement with ``argmax U``.

    A single-shot draw takes one observation per model, uniformly among that pair's observations;
    its winner is the model with the highest drawn score, ties broken uniformly at random, and its
    top set is every model sharing that score. The winner uses scores only (as in the paper's flip
    rate), so with costs and ``lambda > 0`` the disagreement with ``argmax U`` also counts
    cost-driven differences.

    Parameters
    ----------
    outcomes : DataFrame or RepeatedObservations
    utilities : ndarray, shape (n_queries, n_models), optional
        DARS utilities; the disagreement is ``P(winner not in argmax U)`` (a tie in U counts every
        tied model as a correct label).
    method : {"auto", "exact", "monte_carlo"}
        ``"exact"`` needs binary scores (closed form per query); ``"auto"`` uses it when scores are
        binary and Monte Carlo otherwise.
    n_draws : int, default 1000
        Monte Carlo draw pairs per query (at least 1000 recommended; ``2 n_draws`` draws in all).
    random_state : int or Generator, optional
        Seed of the Monte Carlo draws.
    change_draws : int, optional
        ``R`` of the change reading; default :func:`default_change_draws` of the observations.

    Returns
    -------
    SingleShotWinners

    Notes
    -----
    Monte Carlo estimates ``w_m`` by the share of ``2 n_draws`` draws won; the pairwise and change
    readings use the unbiased U-statistic ``sum_m c_m (c_m - 1) ... (c_m - R + 1) / (n (n - 1) ...
    (n - R + 1))`` of ``sum_m w_m^R`` (``c_m`` wins in ``n`` draws), so the change reading with
    ``R = 2`` equals the pairwise one; the strict reading compares the top sets of the first and
    second ``n_draws`` draws pairwise.
    """
    if method not in FLIP_METHODS:
        raise ValueError(f"method must be one of {FLIP_METHODS}, got {method!r}")
    obs = repeated_observations(outcomes)
    if change_draws is None:
        change_draws = default_change_draws(obs.count)
    change_draws = int(change_draws)
    if change_draws < 1:
        raise ValueError(f"change_draws must be >= 1, got {change_draws}")
    if utilities is not None:
        utilities = np.asarray(utilities, float)
        if utilities.shape != obs.count.shape:
            raise ValueError(f"utilities must have shape {obs.count.shape}, got {utilities.shape}")
    binary = obs.is_binary
    if method == "exact" and not binary:
        raise ValueError("the exact flip rate needs binary scores (0 or 1); use 'monte_carlo'")
    if method == "auto":
        method = "exact" if binary else "monte_carlo"
    if method == "exact":
        q, m = obs.count.shape
        p = np.bincount(obs.pair, weights=obs.score, minlength=q * m).reshape(q, m) / obs.count
        probs = winner_probabilities_exact(p)
        disagreement = None
        if utilities is not None:
            disagreement = np.clip(1.0 - (probs * argmax_sets(utilities)).sum(axis=1), 0.0, 1.0)
        return SingleShotWinners(
            winner_probabilities=probs,
            flip=flip_probability(probs),
            strict=strict_flip_probability_exact(p),
            change=change_probability(probs, change_draws),
            change_draws=change_draws,
            tied_top=tied_top_probability_exact(p),
            disagreement=disagreement,
            method="exact",
            n_draws=None,
        )
    return _single_shot_winners_monte_carlo(obs, utilities, n_draws, random_state, change_draws)


def _monte_carlo_winners(
    score: np.ndarray,
    start: np.ndarray,
    count: np.ndarray,
    draws: int,
    rng: np.random.Generator,
    index_dtype: type = np.int32,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Single-shot winners of ``2 draws`` independent draws for each query of a chunk.

    Loops over models (not queries): for model ``m`` one observation per (query, draw) is drawn
    uniformly from the pair's slice; a running maximum keeps the winner, and a model that ties the
    current top replaces the winner with probability ``1 / (number tied so far)`` (reservoir
    sampling), so ties are broken uniformly at random. The tie-break uniform is the fractional
    part of ``u * count`` of the same draw (uniform and independent of the drawn index), so each
    (query, draw, model) costs one random number. Scores are compared as given (float64).

    Draw ``k`` and draw ``draws + k`` form a pair whose top sets are compared as the models go by:
    when a draw's top score rises its top set restarts at the current model, so the two sets
    share a model exactly when the current model is in both after a restart, or when they shared
    one before and no restart happened.

    Returns
    -------
    winner : ndarray of int16, shape (n_queries, 2 draws)
    n_top : ndarray of int16, shape (n_queries, 2 draws)
        How many models share the top drawn score.
    shared : ndarray of bool, shape (n_queries, draws)
        Whether the top sets of draws ``k`` and ``draws + k`` share a model.
    """
    n_queries, n_models = count.shape
    total = 2 * draws
    best = np.full((n_queries, total), -np.inf, dtype=np.float64)
    winner = np.zeros((n_queries, total), dtype=np.int16)
    n_top = np.zeros((n_queries, total), dtype=np.int16)
    shared = np.zeros((n_queries, draws), dtype=bool)
    for m in range(n_models):
        scaled = rng.random((n_queries, total))
        scaled *= count[:, m : m + 1]
        # float64 rounding can give u * count == count: clip to the pair's last observation
        index = np.minimum(
            scaled.astype(index_dtype), (count[:, m : m + 1] - 1).astype(index_dtype)
        )
        # the fractional part is uniform on [0, 1) and independent of the index: it breaks ties
        scaled -= index
        index += start[:, m : m + 1].astype(index_dtype)
        drawn = score[index]
        above = drawn > best
        equal = drawn == best
        in_top = above | equal
        both_top = in_top[:, :draws] & in_top[:, draws:]
        restart = above[:, :draws] | above[:, draws:]
        shared = np.where(restart, both_top, shared | both_top)
        n_top += equal
        np.copyto(n_top, 1, where=above)
        np.maximum(best, drawn, out=best)
        equal &= scaled * n_top < 1.0
        equal |= above
        np.copyto(winner, m, where=equal)
    return winner, n_top, shared


def _power_sum_unbiased(wins: np.ndarray, n: int, power: int) -> np.ndarray:
    """Unbiased estimate of ``sum_m w_m^power`` from win counts over ``n`` draws (falling
    factorials: ``prod_{i < power} (c_m - i) / (n - i)``)."""
    if power > n:
        raise ValueError(
            f"change_draws ({power}) exceeds the Monte Carlo draws ({n}); raise n_draws"
        )
    term = np.ones(wins.shape)
    for i in range(power):  # loop over the power (a handful), not over queries or models
        term *= np.clip(wins - i, 0.0, None) / (n - i)
    return term.sum(axis=-1)


def _single_shot_winners_monte_carlo(
    obs: RepeatedObservations,
    utilities: np.ndarray | None,
    n_draws: int,
    random_state: int | np.random.Generator | None,
    change_draws: int,
) -> SingleShotWinners:
    if n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws}")
    if max(2, change_draws) > 2 * n_draws:
        raise ValueError(
            f"change_draws ({change_draws}) exceeds the {2 * n_draws} Monte Carlo draws per query; "
            "raise n_draws"
        )
    rng = np.random.default_rng(random_state)
    n_queries, n_models = obs.count.shape
    targets = argmax_sets(utilities) if utilities is not None else None
    strict = np.empty(n_queries)
    tied = np.empty(n_queries)
    wins = np.zeros((n_queries, n_models))
    disagree = np.empty(n_queries) if targets is not None else None
    draws = 2 * n_draws
    chunk = max(1, _MC_CHUNK_ELEMENTS // draws)
    score = np.asarray(obs.score, dtype=np.float64)
    index_dtype = np.int32 if obs.n_observations < 2**31 else np.int64
    for lo in range(0, n_queries, chunk):
        hi = min(n_queries, lo + chunk)
        winner, n_top, shared = _monte_carlo_winners(
            score, obs.start[lo:hi], obs.count[lo:hi], n_draws, rng, index_dtype
        )
        strict[lo:hi] = 1.0 - shared.mean(axis=1)
        tied[lo:hi] = (n_top >= 2).mean(axis=1)
        rows = np.repeat(np.arange(hi - lo), draws)
        wins[lo:hi] = np.bincount(
            rows * n_models + winner.reshape(-1), minlength=(hi - lo) * n_models
        ).reshape(hi - lo, n_models)
        if targets is not None:
            hit = np.take_along_axis(targets[lo:hi], winner.astype(np.int64), axis=1)
            disagree[lo:hi] = 1.0 - hit.mean(axis=1)
    flip = np.clip(1.0 - _power_sum_unbiased(wins, draws, 2), 0.0, 1.0)
    change = np.clip(1.0 - _power_sum_unbiased(wins, draws, change_draws), 0.0, 1.0)
    return SingleShotWinners(
        winner_probabilities=wins / draws,
        flip=flip,
        strict=strict,
        change=change,
        change_draws=int(change_draws),
        tied_top=tied,
        disagreement=disagree,
        method="monte_carlo",
        n_draws=int(n_draws),
    )


__all__ = [
    "single_shot_winners",
]
