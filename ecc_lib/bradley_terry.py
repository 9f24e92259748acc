"""Bradley-Terry (BT) capability profiles: likelihood, batched Newton fits, bootstrap intervals.

Model: each model ``m`` has a score ``theta_m`` and ``P(w beats l) = sigmoid(theta_w - theta_l)``.
Data enter as (weighted) win counts ``wins[w, l]`` = how often ``w`` beat ``l``; a tie adds 0.5 to
both directions (ECC, Wu, Silwal & Zhang 2026, arXiv 2605.17110, section 3; ``DESIGN.md`` section 3).

Fits minimise the negative log-likelihood plus an L2 prior,

    f(theta) = - sum_{w,l} wins[w, l] * log sigmoid(theta_w - theta_l) + 0.5 * alpha * ||theta||^2,

which is the objective of an L2-penalised logistic regression without intercept on the design
``e_w - e_l`` (``C = 1 / alpha`` in scikit-learn), as in the authors' code. The likelihood is invariant
to adding a constant to every score; the prior removes that freedom, and at the optimum the scores
sum to zero (the gradient of the likelihood is orthogonal to the all-ones vector). With ``alpha = 0``
the scores are centred explicitly.

Several profiles are fitted at once: ``wins`` of shape ``(K, M, M)`` gives ``K`` independent fits
solved by one batched Newton iteration on ``M x M`` Hessians (with a per-profile backtracking line
search, so every step decreases every profile's objective).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import expit
from scipy.stats import rankdata

from ecc_lib.comparisons import Comparisons

logger = logging.getLogger(__name__)

DEFAULT_ALPHA = 1.0
NEWTON_MAX_ITER = 100
NEWTON_TOL = 1e-10
PRECISION = 1e-13
LINE_SEARCH_STEPS = 40
ARMIJO = 1e-4


# --------------------------------------------------------------------------------------------------
# counts


def win_counts(
    comparisons: Comparisons,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Weighted win counts of a set of comparisons.

    Parameters
    ----------
    comparisons : Comparisons
    weights : ndarray, shape (n_comparisons,), optional
        Weight of each comparison (default 1).

    Returns
    -------
    ndarray, shape (n_models, n_models)
        ``wins[w, l]`` = total weight of comparisons that ``w`` won against ``l``; a tie adds half
        its weight to both directions.
    """
    m = comparisons.n_models
    a, b, y = comparisons.model_a, comparisons.model_b, comparisons.y
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != y.shape:
        raise ValueError(f"weights must have shape {y.shape}, got {w.shape}")
    flat = np.concatenate([b * m + a, a * m + b])
    vals = np.concatenate([w * y, w * (1.0 - y)])
    return np.bincount(flat, weights=vals, minlength=m * m).reshape(m, m)


def count_matrix(
    comparisons: Comparisons,
    normalize: bool = False,
    dtype: type = np.float64,
) -> sp.csr_matrix:
    """Per-query win counts as a sparse ``(n_queries, M*M)`` matrix.

    Column ``w * M + l`` holds how often ``w`` beat ``l`` on the query (ties add 0.5 to both
    directions). With ``normalize=True`` each row is divided by the query's number of comparisons
    ``N_q``, so that ``count_matrix(c, normalize=True) @ log_p`` is the per-comparison average
    log-likelihood (the ECC evidence ``l_qk``). Queries without comparisons give empty rows.

    Parameters
    ----------
    comparisons : Comparisons
        Pairwise outcomes.
    normalize : bool, default False
        Divide each row by the query's number of comparisons.
    dtype : type, default float64
        Dtype of the values.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n_queries, M * M)
    """
    m = comparisons.n_models
    q, a, b, y = comparisons.query, comparisons.model_a, comparisons.model_b, comparisons.y
    rows = np.concatenate([q, q])
    cols = np.concatenate([b * m + a, a * m + b])
    vals = np.concatenate([y, 1.0 - y])
    keep = vals != 0
    if normalize:
        n_q = np.bincount(q, minlength=comparisons.n_queries).astype(float)
        vals = vals / n_q[rows]
    matrix = sp.csr_matrix(
        (vals[keep].astype(dtype), (rows[keep], cols[keep])),
        shape=(comparisons.n_queries, m * m),
    )
    matrix.sum_duplicates()
    matrix.sort_indices()
    return matrix


# --------------------------------------------------------------------------------------------------
# likelihood


def log_sigmoid(x: np.ndarray) -> np.ndarray:
    """Numerically stable ``log(sigmoid(x))``.

    Parameters
    ----------
    x : ndarray
        Logits.

    Returns
    -------
    ndarray
    """
    return -np.logaddexp(0.0, -x)


def _differences(theta: np.ndarray) -> np.ndarray:
    return theta[..., :, None] - theta[..., None, :]


def bt_log_likelihood(theta: np.ndarray, wins: np.ndarray) -> np.ndarray | float:
    """Log-likelihood ``sum_{w,l} wins[w, l] log sigmoid(theta_w - theta_l)``.

    ``theta`` of shape ``(M,)`` with ``wins`` ``(M, M)`` gives a float; ``(K, M)`` with
    ``(K, M, M)`` gives one value per profile. The diagonal of ``wins`` is ignored.

    Parameters
    ----------
    theta : ndarray, shape (M,) or (K, M)
        BT scores.
    wins : ndarray, shape (M, M) or (K, M, M)
        ``wins[w, l]``: (weighted) wins of ``w`` over ``l``.

    Returns
    -------
    float or ndarray of shape (K,)
    """
    theta = np.asarray(theta, dtype=float)
    wins = _offdiag(np.asarray(wins, dtype=float))
    value = (wins * log_sigmoid(_differences(theta))).sum(axis=(-2, -1))
    return float(value) if np.ndim(value) == 0 else value


def bt_log_likelihood_grad(theta: np.ndarray, wins: np.ndarray) -> np.ndarray:
    """Gradient of :func:`bt_log_likelihood` with respect to ``theta`` (same shape as ``theta``).

    ``d/d theta_i = sum_l wins[i, l] (1 - p_il) - sum_w wins[w, i] (1 - p_wi)`` with
    ``p_wl = sigmoid(theta_w - theta_l)``.

    Parameters
    ----------
    theta, wins : ndarray
        As in :func:`bt_log_likelihood`.

    Returns
    -------
    ndarray
        Same shape as ``theta``.
    """
    theta = np.asarray(theta, dtype=float)
    wins = _offdiag(np.asarray(wins, dtype=float))
    a = wins * expit(-_differences(theta))
    return a.sum(axis=-1) - a.sum(axis=-2)


def bt_objective(theta: np.ndarray, wins: np.ndarray, alpha: float = DEFAULT_ALPHA):
    """Penalised negative log-likelihood ``-loglik + 0.5 * alpha * ||theta||^2`` (per profile).

    Parameters
    ----------
    theta, wins : ndarray
        As in :func:`bt_log_likelihood`.
    alpha : float, default 1.0
        Prior precision.

    Returns
    -------
    float or ndarray of shape (K,)
    """
    theta = np.asarray(theta, dtype=float)
    return -bt_log_likelihood(theta, wins) + 0.5 * alpha * (theta**2).sum(axis=-1)


def bt_objective_grad(theta: np.ndarray, wins: np.ndarray, alpha: float = DEFAULT_ALPHA):
    """Gradient of :func:`bt_objective`.

    Parameters
    ----------
    theta, wins : ndarray
        As in :func:`bt_log_likelihood`.
    alpha : float, default 1.0
        Prior precision.

    Returns
    -------
    ndarray
        Same shape as ``theta``.
    """
    theta = np.asarray(theta, dtype=float)
    return -bt_log_likelihood_grad(theta, wins) + alpha * theta


def _offdiag(wins: np.ndarray) -> np.ndarray:
    m = wins.shape[-1]
    if wins.shape[-2:] != (m, m):
        raise ValueError(f"wins must end in a square (M, M) block, got shape {wins.shape}")
    if np.any(np.diagonal(wins, axis1=-2, axis2=-1) != 0):
        wins = wins * (1.0 - np.eye(m))
    return wins


# --------------------------------------------------------------------------------------------------
# fitting


def fit_bt_counts(
    wins: np.ndarray,
    alpha: float = DEFAULT_ALPHA,
    theta0: np.ndarray | None = None,
    max_iter: int = NEWTON_MAX_ITER,
    tol: float = NEWTON_TOL,
) -> np.ndarray:
    """Fit BT scores to win counts, one or ``K`` weighted profiles at once.

    Parameters
    ----------
    wins : ndarray, shape (M, M) or (K, M, M)
        ``wins[..., w, l]`` = (weighted) number of times ``w`` beat ``l``; non-negative.
    alpha : float, default 1.0
        Precision of the Gaussian prior (L2 penalty ``0.5 * alpha * ||theta||^2``). ``0`` gives the
        maximum-likelihood fit, centred; it diverges when a model never loses or never wins.
    theta0 : ndarray, shape (M,) or (K, M), optional
        Starting scores (warm start); default zeros.
    max_iter : int, default 100
        Newton iterations at most.
    tol : float, default 1e-10
        Stop a profile when its Newton step is below ``tol`` in every coordinate.

    Returns
    -------
    ndarray, shape (M,) or (K, M)
        Scores; with ``alpha > 0`` they sum to zero at the optimum.
    """
    wins = np.asarray(wins, dtype=float)
    single = wins.ndim == 2
    if single:
        wins = wins[None]
    if wins.ndim != 3 or wins.shape[1] != wins.shape[2]:
        raise ValueError(f"wins must have shape (M, M) or (K, M, M), got {wins.shape}")
    if np.any(wins < 0) or not np.all(np.isfinite(wins)):
        raise ValueError("wins must be finite and non-negative")
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    k, m, _ = wins.shape
    wins = _offdiag(wins)
    if theta0 is None:
        theta = np.zeros((k, m))
    else:
        theta = np.array(theta0, dtype=float).reshape(k, m)
        if alpha == 0:
            theta -= theta.mean(axis=1, keepdims=True)
    theta, converged = _newton(wins, alpha, theta, max_iter, tol)
    if not converged:
        logger.warning("fit_bt_counts: Newton did not converge in %d iterations", max_iter)
    return theta[0] if single else theta


def _newton(
    wins: np.ndarray, alpha: float, theta: np.ndarray, max_iter: int, tol: float
) -> tuple[np.ndarray, bool]:
    """Batched damped Newton on ``K`` independent profiles; returns (theta, converged).

    A profile stops when its Newton step is below ``tol`` in every coordinate. Steps are accepted by
    an Armijo backtracking search, except in the float-precision regime (predicted decrease below
    ``PRECISION * (1 + |f|)``) where the full Newton step is taken.
    """
    k, m, _ = wins.shape
    sym = wins + np.swapaxes(wins, 1, 2)
    eye = np.eye(m)
    gauge = np.full((m, m), 1.0 / m) if alpha == 0 else 0.0
    value = bt_objective(theta, wins, alpha)
    active = np.ones(k, dtype=bool)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        th, wn, sy = theta[idx], wins[idx], sym[idx]
        p = expit(_differences(th))
        a = wn * (1.0 - p)
        grad = -(a.sum(axis=2) - a.sum(axis=1)) + alpha * th
        s = sy * p * (1.0 - p)
        hess = -s + (s.sum(axis=2)[:, :, None] + alpha) * eye + gauge
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        decrement = (grad * step).sum(axis=1)
        base = value[idx]
        tiny = decrement / 2.0 <= PRECISION * (1.0 + np.abs(base))
        t = np.ones(len(idx))
        new_theta = th.copy()
        new_value = base.copy()
        pending = np.ones(len(idx), dtype=bool)
        for ls in range(LINE_SEARCH_STEPS):
            where = np.flatnonzero(pending)
            cand = th[where] - t[where, None] * step[where]
            cand_value = bt_objective(cand, wn[where], alpha)
            ok = cand_value <= base[where] - ARMIJO * t[where] * decrement[where]
            if ls == 0:
                ok |= tiny[where]
            new_theta[where[ok]] = cand[ok]
            new_value[where[ok]] = cand_value[ok]
            pending[where[ok]] = False
            if not pending.any():
                break
            t[pending] *= 0.5
        if alpha == 0:
            new_theta -= new_theta.mean(axis=1, keepdims=True)
        theta[idx] = new_theta
        value[idx] = new_value
        # converged: tiny step; stalled: no step decreased the objective (float precision)
        done = (np.abs(step).max(axis=1) <= tol) | pending
        active[idx[done]] = False
        if not active.any():
            break
    return theta, not active.any()


def fit_bt_pairwise(
    comparisons: Comparisons,
    weights: np.ndarray | None = None,
    alpha: float = DEFAULT_ALPHA,
    max_iter: int = NEWTON_MAX_ITER,
    tol: float = NEWTON_TOL,
) -> np.ndarray:
    """Fit one BT profile to a set of pairwise comparisons.

    Parameters
    ----------
    comparisons : Comparisons
    weights : ndarray, shape (n_comparisons,), optional
        Per-comparison weights (ECC uses ``r_qk / N_q``).
    alpha : float, default 1.0
        L2 prior precision, see :func:`fit_bt_counts`.

    Returns
    -------
    ndarray, shape (n_models,)
        Scores aligned to ``comparisons.models``.
    """
    if comparisons.n_models < 2:
        raise ValueError(f"a BT fit needs at least 2 models, got {comparisons.n_models}")
    if len(comparisons) == 0:
        raise ValueError("a BT fit needs at least one comparison, got none")
    return fit_bt_counts(win_counts(comparisons, weights), alpha=alpha, max_iter=max_iter, tol=tol)


def win_probability(theta: np.ndarray) -> np.ndarray:
    """``P[..., i, j] = P(i beats j) = sigmoid(theta_i - theta_j)``.

    Parameters
    ----------
    theta : ndarray, shape (..., M)
        BT scores.

    Returns
    -------
    ndarray, shape (..., M, M)
    """
    return expit(_differences(np.asarray(theta, dtype=float)))


def score_ranks(theta: np.ndarray) -> np.ndarray:
    """Rank of each model (1 = highest score; ties share their average rank), along the last axis.

    Parameters
    ----------
    theta : ndarray, shape (..., M)
        Scores.

    Returns
    -------
    ndarray
        Same shape, float ranks.
    """
    return rankdata(-np.asarray(theta, dtype=float), method="average", axis=-1)


# --------------------------------------------------------------------------------------------------
# bootstrap


@dataclass(frozen=True)
class BTBootstrap:
    """Bootstrap summary of a BT fit.

    Attributes
    ----------
    models : tuple of str
    scores : ndarray, shape (M,)
        Scores fitted on the full data.
    score_low, score_high : ndarray, shape (M,)
        Percentile interval of each score.
    ranks : ndarray, shape (M,)
        Rank of each model on the full data (1 = best).
    rank_low, rank_high : ndarray, shape (M,)
        Percentile interval of each rank (``rank_low`` is the better end).
    replicates : ndarray, shape (n_boot, M)
        Bootstrap scores.
    confidence : float
    unit : str
    """

    models: tuple[str, ...]
    scores: np.ndarray
    score_low: np.ndarray
    score_high: np.ndarray
    ranks: np.ndarray
    rank_low: np.ndarray
    rank_high: np.ndarray
    replicates: np.ndarray
    confidence: float
    unit: str

    def to_frame(self) -> pd.DataFrame:
        """One row per model, best first.

        Returns
        -------
        DataFrame
        """
        frame = pd.DataFrame(
            {
                "model": list(self.models),
                "score": self.scores,
                "score_low": self.score_low,
                "score_high": self.score_high,
                "rank": self.ranks,
                "rank_low": self.rank_low,
                "rank_high": self.rank_high,
            }
        )
        return frame.sort_values("score", ascending=False).reset_index(drop=True)


def bootstrap_bt(
    comparisons: Comparisons,
    n_boot: int = 1000,
    confidence: float = 0.95,
    unit: str = "query",
    alpha: float = DEFAULT_ALPHA,
    weights: np.ndarray | None = None,
    random_state: int | np.random.Generator | None = 0,
    batch_size: int = 256,
) -> BTBootstrap:
    """Percentile bootstrap intervals for BT scores and ranks.

    Parameters
    ----------
    comparisons : Comparisons
    n_boot : int, default 1000
    confidence : float, default 0.95
    unit : {"query", "comparison"}
        Resample whole queries (default; comparisons of one query are dependent) or single
        comparisons, with replacement.
    alpha : float
        L2 prior precision of each fit.
    weights : ndarray, shape (n_comparisons,), optional
        Per-comparison weights, carried along with their comparison.
    random_state : int or Generator
    batch_size : int
        Replicates fitted together in one batched Newton solve.

    Returns
    -------
    BTBootstrap
    """
    if unit not in ("query", "comparison"):
        raise ValueError(f"unit must be 'query' or 'comparison', got {unit!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    theta = fit_bt_pairwise(comparisons, weights=weights, alpha=alpha)
    rng = np.random.default_rng(random_state)
    m = comparisons.n_models
    w = np.ones(len(comparisons)) if weights is None else np.asarray(weights, dtype=float)
    a, b, y = comparisons.model_a, comparisons.model_b, comparisons.y
    # one row per resampling unit, M*M columns of win counts
    if unit == "query":
        units = comparisons.query
        n_units = comparisons.n_queries
    else:
        units = np.arange(len(comparisons))
        n_units = len(comparisons)
    rows = np.concatenate([units, units])
    cols = np.concatenate([b * m + a, a * m + b])
    vals = np.concatenate([w * y, w * (1.0 - y)])
    unit_counts = sp.csr_matrix((vals, (rows, cols)), shape=(n_units, m * m))
    unit_counts_t = unit_counts.T.tocsr()
    replicates = np.empty((n_boot, m))
    for start in range(0, n_boot, batch_size):
        size = min(batch_size, n_boot - start)
        draws = rng.integers(0, n_units, size=(size, n_units))
        flat = (np.arange(size)[:, None] * n_units + draws).ravel()
        multiplicity = np.bincount(flat, minlength=size * n_units).reshape(size, n_units)
        wins = np.asarray(unit_counts_t @ multiplicity.T.astype(float)).T.reshape(size, m, m)
        replicates[start : start + size] = fit_bt_counts(
            wins, alpha=alpha, theta0=np.broadcast_to(theta, (size, m))
        )
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(replicates, [tail, 1.0 - tail], axis=0)
    rank_reps = score_ranks(replicates)
    rank_low, rank_high = np.quantile(rank_reps, [tail, 1.0 - tail], axis=0)
    return BTBootstrap(
        models=comparisons.models,
        scores=theta,
        score_low=low,
        score_high=high,
        ranks=score_ranks(theta),
        rank_low=rank_low,
        rank_high=rank_high,
        replicates=replicates,
        confidence=confidence,
        unit=unit,
    )
