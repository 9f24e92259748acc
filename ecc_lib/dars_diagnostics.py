"""DARS label-instability diagnostics: winner probabilities, flip rates, per-subset summaries.

How unstable is a label learned from one sampled answer per (query, model)? (Lai, Hu, Chen, Li, Ye
2026, arXiv 2606.06924; ``shared/DESIGN.md`` section 4.) The single-shot winner of a query is the
model with the highest drawn score, ties broken uniformly at random. From the probability ``w_m``
that model ``m`` is that winner we report the winner flip rate and its companions, exactly for
binary scores and by seeded Monte Carlo otherwise, with bootstrap intervals over queries.

The distributions, utility and labels these diagnostics compare against are in :mod:`ecc_lib.dars`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ecc_lib.dars import (
    DEFAULT_BETA,
    DEFAULT_LAMBDA,
    RepeatedObservations,
    argmax_sets,
    capability_distributions,
    label_shares,
    observation_subsets,
    repeated_observations,
)
from ecc_lib.metrics import DEFAULT_N_BOOT, bootstrap_mean_ci

logger = logging.getLogger(__name__)
DEFAULT_N_DRAWS = 1000
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


@dataclass(frozen=True)
class SingleShotWinners:
    """Per-query single-shot winner statistics.

    Attributes
    ----------
    winner_probabilities : ndarray, shape (n_queries, n_models)
        ``P(winner = m)`` (exact) or the share of draws won (Monte Carlo).
    flip : ndarray, shape (n_queries,)
        ``P(winner1 != winner2)``.
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
    tied_top: np.ndarray
    disagreement: np.ndarray | None
    method: str
    n_draws: int | None


def single_shot_winners(
    outcomes: pd.DataFrame | RepeatedObservations,
    utilities: np.ndarray | None = None,
    method: str = "auto",
    n_draws: int = DEFAULT_N_DRAWS,
    random_state: int | np.random.Generator | None = 0,
) -> SingleShotWinners:
    """Winner flip probability, tied-top probability and disagreement with ``argmax U`` per query.

    A single-shot draw takes one observation per model, uniformly among that pair's observations;
    its winner is the model with the highest drawn score, ties broken uniformly at random. The
    winner uses scores only (as in the paper's flip rate), so with costs and ``lambda > 0`` the
    disagreement with ``argmax U`` also counts cost-driven differences.

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
        Monte Carlo draw pairs per query (at least 1000 recommended).
    random_state : int or Generator, optional
        Seed of the Monte Carlo draws.

    Returns
    -------
    SingleShotWinners
        Per-query winner, flip and tie probabilities and the method used.
    """
    if method not in FLIP_METHODS:
        raise ValueError(f"method must be one of {FLIP_METHODS}, got {method!r}")
    obs = repeated_observations(outcomes)
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
            tied_top=tied_top_probability_exact(p),
            disagreement=disagreement,
            method="exact",
            n_draws=None,
        )
    return _single_shot_winners_monte_carlo(obs, utilities, n_draws, random_state)


def _monte_carlo_winners(
    score: np.ndarray,
    start: np.ndarray,
    count: np.ndarray,
    draws: int,
    rng: np.random.Generator,
    index_dtype: type = np.int32,
) -> tuple[np.ndarray, np.ndarray]:
    """Single-shot winners of ``draws`` independent draws for each query of a chunk.

    Loops over models (not queries): for model ``m`` one observation per (query, draw) is drawn
    uniformly from the pair's slice; a running maximum keeps the winner, and a model that ties the
    current top replaces the winner with probability ``1 / (number tied so far)`` (reservoir
    sampling), so ties are broken uniformly at random. The tie-break uniform is the fractional
    part of ``u * count`` of the same draw (uniform and independent of the drawn index), so each
    (query, draw, model) costs one random number.

    Returns
    -------
    winner : ndarray of int16, shape (n_queries, draws)
    n_top : ndarray of int16, shape (n_queries, draws)
        How many models share the top drawn score.
    """
    n_queries, n_models = count.shape
    best = np.full((n_queries, draws), -np.inf, dtype=np.float32)
    winner = np.zeros((n_queries, draws), dtype=np.int16)
    n_top = np.zeros((n_queries, draws), dtype=np.int16)
    for m in range(n_models):
        scaled = rng.random((n_queries, draws), dtype=np.float32)
        scaled *= count[:, m : m + 1].astype(np.float32)
        # floor(u * count) < count for float32 u < 1 and count < 2**24 (round to nearest)
        index = scaled.astype(index_dtype)
        # the fractional part is uniform on [0, 1) and independent of the index: it breaks ties
        scaled -= index
        index += start[:, m : m + 1].astype(index_dtype)
        drawn = score[index]
        above = drawn > best
        equal = drawn == best
        n_top += equal
        np.copyto(n_top, 1, where=above)
        np.maximum(best, drawn, out=best)
        equal &= scaled * n_top < 1.0
        equal |= above
        np.copyto(winner, m, where=equal)
    return winner, n_top


def _single_shot_winners_monte_carlo(
    obs: RepeatedObservations,
    utilities: np.ndarray | None,
    n_draws: int,
    random_state: int | np.random.Generator | None,
) -> SingleShotWinners:
    if n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws}")
    rng = np.random.default_rng(random_state)
    n_queries, n_models = obs.count.shape
    targets = argmax_sets(utilities) if utilities is not None else None
    flip = np.empty(n_queries)
    tied = np.empty(n_queries)
    wins = np.zeros((n_queries, n_models))
    disagree = np.empty(n_queries) if targets is not None else None
    draws = 2 * n_draws
    chunk = max(1, _MC_CHUNK_ELEMENTS // draws)
    score = obs.score.astype(np.float32)
    index_dtype = np.int32 if obs.n_observations < 2**31 else np.int64
    for lo in range(0, n_queries, chunk):
        hi = min(n_queries, lo + chunk)
        winner, n_top = _monte_carlo_winners(
            score, obs.start[lo:hi], obs.count[lo:hi], draws, rng, index_dtype
        )
        flip[lo:hi] = (winner[:, :n_draws] != winner[:, n_draws:]).mean(axis=1)
        tied[lo:hi] = (n_top >= 2).mean(axis=1)
        rows = np.repeat(np.arange(hi - lo), draws)
        counts = np.bincount(
            rows * n_models + winner.reshape(-1), minlength=(hi - lo) * n_models
        ).reshape(hi - lo, n_models)
        wins[lo:hi] = counts / draws
        if targets is not None:
            hit = np.take_along_axis(targets[lo:hi], winner.astype(np.int64), axis=1)
            disagree[lo:hi] = 1.0 - hit.mean(axis=1)
    return SingleShotWinners(
        winner_probabilities=wins,
        flip=flip,
        tied_top=tied,
        disagreement=disagree,
        method="monte_carlo",
        n_draws=int(n_draws),
    )


# --------------------------------------------------------------------------------------------
# Diagnostics
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SubsetDiagnostics:
    """Label-instability diagnostics of one observation subset.

    Attributes
    ----------
    subset : str
    per_query : DataFrame
        One row per query: ``query_id, flip, tied_top, disagreement, unstable_pair_share,
        mean_sigma`` (the last two NaN for a query with no repeated pair).
    summary : dict
        Means over queries with 95 % bootstrap intervals (``*_ci95``), counts, the flip-rate
        method, the label shares, and ``None`` for anything that does not apply.
    """

    subset: str
    per_query: pd.DataFrame
    summary: dict


def subset_diagnostics(
    obs: RepeatedObservations,
    cost_weight: float = DEFAULT_LAMBDA,
    beta: float = DEFAULT_BETA,
    method: str = "auto",
    n_draws: int = DEFAULT_N_DRAWS,
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | None = 0,
) -> SubsetDiagnostics:
    """Diagnostics of one subset of observations (see :func:`label_instability`).

    Parameters
    ----------
    obs : RepeatedObservations
        One subset of the observations.
    cost_weight : float, default 0.05
        Cost weight lambda of the utility ``U = mu_q - lambda mu_c - beta sigma_q``.
    beta : float, default 0.2
        Weight of the score spread in the utility.
    method : {"auto", "exact", "monte_carlo"}
        Flip-rate computation (see :func:`single_shot_winners`).
    n_draws : int
        Monte Carlo draw pairs per query.
    n_boot : int
        Bootstrap resamples of queries for the 95% intervals.
    random_state : int or None, default 0
        Seed of draws and bootstraps.

    Returns
    -------
    SubsetDiagnostics
        Per-query values and their summary with intervals.
    """
    dist = capability_distributions(obs, subset=obs.subset)
    u = dist.utility(cost_weight, beta)
    winners = single_shot_winners(obs, u, method=method, n_draws=n_draws, random_state=random_state)
    q, m = obs.count.shape
    repeated = obs.count >= 2
    low = np.full(q * m, np.inf)
    high = np.full(q * m, -np.inf)
    np.minimum.at(low, obs.pair, obs.score)
    np.maximum.at(high, obs.pair, obs.score)
    disagree = (high > low).reshape(q, m) & repeated
    n_repeated = repeated.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        unstable_share = np.where(n_repeated > 0, disagree.sum(axis=1) / n_repeated, np.nan)
        mean_sigma = np.where(
            n_repeated > 0, (dist.sigma_q * repeated).sum(axis=1) / n_repeated, np.nan
        )
    per_query = pd.DataFrame(
        {
            "query_id": obs.query_ids,
            "flip": winners.flip,
            "tied_top": winners.tied_top,
            "disagreement": winners.disagreement,
            "unstable_pair_share": unstable_share,
            "mean_sigma": mean_sigma,
        }
    )
    summary: dict = {
        "subset": obs.subset,
        "n_queries": obs.n_queries,
        "n_models": obs.n_models,
        "n_observations": obs.n_observations,
        "observations_per_pair": {
            "min": int(obs.count.min()),
            "median": float(np.median(obs.count)),
            "max": int(obs.count.max()),
        },
        "n_dropped_queries": len(obs.dropped_query_ids),
        "flip_rate_method": winners.method,
        "flip_rate_draws": winners.n_draws,
    }
    for key, column in (
        ("winner_flip_rate", "flip"),
        ("tied_top_share", "tied_top"),
        ("single_vs_distribution_disagreement", "disagreement"),
        ("unstable_pair_share", "unstable_pair_share"),
        ("mean_sigma", "mean_sigma"),
    ):
        estimate, low, high = bootstrap_mean_ci(
            per_query[column].to_numpy(float), n_boot=n_boot, random_state=random_state
        )
        interval = [low, high]
        summary[key] = estimate
        summary[f"{key}_ci95"] = interval
    summary["labels"] = label_shares(u, obs.models)
    return SubsetDiagnostics(subset=obs.subset, per_query=per_query, summary=summary)


def label_instability(
    outcomes: pd.DataFrame | RepeatedObservations,
    cost_weight: float = DEFAULT_LAMBDA,
    beta: float = DEFAULT_BETA,
    method: str = "auto",
    n_draws: int = DEFAULT_N_DRAWS,
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | None = 0,
) -> dict[str, SubsetDiagnostics | None]:
    """Single-shot label-instability diagnostics, split by observation subset.

    For each subset (``"input"``: rewrites only, ``"output"``: decodes only, ``"both"``) reports,
    as means over queries with percentile-bootstrap 95 % intervals over queries
    (:func:`ecc_lib.metrics.bootstrap_ci`):

    - outcome instability: share of (query, model) pairs whose observations disagree, and mean
      ``sigma_q`` (both over pairs with two or more observations);
    - winner flip rate (DARS paper, section 4): the mean over queries of ``P(winner1 != winner2)``
      for two independent single-shot draws; exact (closed form) for binary scores, Monte Carlo
      (``n_draws`` seeded draw pairs) otherwise, named in ``flip_rate_method``;
    - share of single-shot draws whose top score is tied;
    - disagreement of the single-shot winner with ``argmax U`` at ``cost_weight``, ``beta``.

    Parameters
    ----------
    outcomes : DataFrame or RepeatedObservations
        Repeated observations of every (query, model) pair.
    cost_weight : float, default 0.05
        Cost weight lambda of the utility ``U = mu_q - lambda mu_c - beta sigma_q``.
    beta : float, default 0.2
        Weight of the score spread in the utility.
    method : {"auto", "exact", "monte_carlo"}
        Flip-rate computation (see :func:`single_shot_winners`).
    n_draws : int
        Monte Carlo draw pairs per query.
    n_boot : int
        Bootstrap resamples of queries for the 95% intervals.
    random_state : int or None, default 0
        Seed of draws and bootstraps.

    Returns
    -------
    dict
        ``{"input": ..., "output": ..., "both": ...}`` with a :class:`SubsetDiagnostics`, or
        ``None`` for a subset where no (query, model) pair has two observations.
    """
    obs = repeated_observations(outcomes)
    out: dict[str, SubsetDiagnostics | None] = {}
    for name, part in observation_subsets(obs).items():
        out[name] = (
            None
            if part is None
            else subset_diagnostics(part, cost_weight, beta, method, n_draws, n_boot, random_state)
        )
    return out
