"""Bradley-Terry (BT) capability profiles: likelihood, batched Newton fits, bootstrap intervals.

Model: each model ``m`` has a score ``theta_m`` and ``P(w beats l) = sigmoid(theta_w - theta_l)``.
Data enter as (weighted) win counts ``wins[w, l]`` = how often ``w`` beat ``l``; a tie adds 0.5 to
both directions (ECC, Wu, Silwal & Zhang 2026, arXiv 2605.17110, section 3; ``docs/design.md`` section 3).

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

import contextlib
import contextvars
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import expit
from scipy.stats import rankdata

from ecc_lib import defaults
from ecc_lib.data.comparisons import Comparisons, available_cpus

logger = logging.getLogger(__name__)

DEFAULT_ALPHA = 1.0
NEWTON_MAX_ITER = 100
NEWTON_TOL = 1e-10
PRECISION = 1e-13
LINE_SEARCH_STEPS = 40
ARMIJO = 1e-4
CG_FORCING = 1e-3
"""Relative residual of the conjugate-gradient solve in each Newton-CG step (at most sqrt|g|)."""
DENSE_NEWTON_MAX_MODELS = 128
"""Up to this many models :func:`fit_bt_pairs` solves dense ``M x M`` Newton systems; above it,
Newton-CG on the observed pairs."""


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
    m, y = comparisons.n_models, comparisons.y
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != y.shape:
        raise ValueError(f"weights must have shape {y.shape}, got {w.shape}")
    _, flat, vals = _directed(comparisons, w)
    return np.bincount(flat, weights=vals, minlength=m * m).reshape(m, m)


def count_matrix(
    comparisons: Comparisons,
    *,
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
    # every ordered pair a column (the pair counts over all M * M codes)
    m = comparisons.n_models
    return _pair_counts(comparisons, normalize, dtype, np.arange(m * m)).matrix


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
    """Gradient of :func:`bt_objective`, ``-grad loglik + alpha * theta``.

    Parameters
    ----------
    theta, wins, alpha
        As in :func:`bt_objective`.

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
    *,
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
    theta = _fit_checked_counts(_offdiag(wins), alpha, theta0, max_iter, tol)
    return theta[0] if single else theta


def _fit_checked_counts(wins, alpha, theta0, max_iter, tol) -> np.ndarray:
    """:func:`fit_bt_counts` of checked, off-diagonal ``(K, M, M)`` float64 counts."""
    k, m, _ = wins.shape
    if theta0 is None:
        theta = np.zeros((k, m))
    else:
        theta = np.array(theta0, dtype=float).reshape(k, m)
        if alpha == 0:
            theta -= theta.mean(axis=1, keepdims=True)
    theta, converged = _newton(wins, alpha, theta, max_iter, tol)
    if not converged:
        logger.warning("fit_bt_counts: Newton did not converge in %d iterations", max_iter)
    return theta


def _nll_of_differences(
    diff: np.ndarray, theta: np.ndarray, wins: np.ndarray, half_alpha: float
) -> np.ndarray:
    """:func:`bt_objective` per profile without its input checks (``wins`` already off-diagonal,
    float64, ``(K, M, M)``; the same arithmetic, so the same numbers), given ``diff =
    _differences(theta)`` and ``half_alpha = alpha / 2`` (the Newton loop reuses the differences
    of an accepted step for its next gradient)."""
    return -(wins * log_sigmoid(diff)).sum(axis=(-2, -1)) + half_alpha * (theta**2).sum(axis=-1)


def _newton(
    wins: np.ndarray, alpha: float, theta: np.ndarray, max_iter: int, tol: float
) -> tuple[np.ndarray, bool]:
    """Batched damped Newton on ``K`` independent profiles; returns (theta, converged).

    A profile stops when its Newton step is below ``tol`` in every coordinate. Steps are accepted by
    an Armijo backtracking search, except in the float-precision regime (predicted decrease below
    ``PRECISION * (1 + |f|)``) where the full Newton step is taken. A profile whose last step is
    taken in that regime is not evaluated (its objective is never read again).

    Each profile's arithmetic is its own (elementwise operations, reductions within a profile, one
    small solve each), so the loop may batch them as it likes: while every profile is active the
    arrays are used in place, and the usual iteration, where every full step passes the Armijo
    test, tries them all at once and hands its differences on to the next gradient; other
    iterations backtrack per profile. The same numbers either way.
    """
    k, m, _ = wins.shape
    sym = wins + np.swapaxes(wins, 1, 2)
    gauge = np.full((m, m), 1.0 / m) if alpha == 0 else None
    half_alpha = 0.5 * alpha
    diff = _differences(theta)
    value = _nll_of_differences(diff, theta, wins, half_alpha)
    active = np.ones(k, dtype=bool)
    n_active = k
    for _ in range(max_iter):
        full = n_active == k
        if full:
            idx, th, wn, sy, base = None, theta, wins, sym, value
            d = _differences(th) if diff is None else diff
        else:
            idx = np.flatnonzero(active)
            th, wn, sy, base = theta[idx], wins[idx], sym[idx], value[idx]
            d = _differences(th)
        diff = None
        n = len(th)
        p = expit(d)
        q = 1.0 - p
        a = wn * q
        grad = -(a.sum(axis=2) - a.sum(axis=1)) + alpha * th
        s = sy * p
        s *= q
        hess = np.negative(s)  # off the diagonal; the diagonal of s is 0 (no self-pairs)
        hess.reshape(n, m * m)[:, :: m + 1] += s.sum(axis=2) + alpha
        if gauge is not None:
            hess += gauge
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        decrement = (grad * step).sum(axis=1)
        tiny = decrement / 2.0 <= PRECISION * (1.0 + np.abs(base))
        small = np.abs(step).max(axis=1) <= tol
        # the last step of a profile in the float-precision regime is accepted unevaluated
        last = tiny & small
        t = np.ones(n)
        new_theta = None
        if not last.any():  # first the full step of every profile at once (t = 1)
            cand = th - step
            cand_diff = _differences(cand)
            cand_value = _nll_of_differences(cand_diff, cand, wn, half_alpha)
            ok = cand_value <= base - ARMIJO * decrement
            ok |= tiny
            if ok.all():  # the usual case
                new_theta, new_value, pending = cand, cand_value, ~ok
                diff = cand_diff if full and alpha != 0 else None
            else:
                new_theta, new_value = th.copy(), np.array(base, copy=True)
                new_theta[ok] = cand[ok]
                new_value[ok] = cand_value[ok]
                pending = ~ok
                t[pending] *= 0.5
            first = 1
        else:
            new_theta, new_value = th.copy(), np.array(base, copy=True)
            new_theta[last] = th[last] - step[last]
            pending = ~last
            first = 0
        for ls in range(first, LINE_SEARCH_STEPS):
            if not pending.any():
                break
            where = np.flatnonzero(pending)
            cand = th[where] - t[where, None] * step[where]
            cand_value = _nll_of_differences(_differences(cand), cand, wn[where], half_alpha)
            ok = cand_value <= base[where] - ARMIJO * t[where] * decrement[where]
            if ls == 0:
                ok |= tiny[where]
            new_theta[where[ok]] = cand[ok]
            new_value[where[ok]] = cand_value[ok]
            pending[where[ok]] = False
            t[pending] *= 0.5
        if alpha == 0:
            new_theta -= new_theta.mean(axis=1, keepdims=True)
        if full:
            theta[...] = new_theta
            value = new_value
        else:
            theta[idx] = new_theta
            value[idx] = new_value
        # converged: tiny step; stalled: no step decreased the objective (float precision)
        done = small | pending
        if done.any():
            active[done if full else idx[done]] = False
            n_active = int(active.sum())
            if n_active == 0:
                break
    return theta, n_active == 0


def fit_bt_pairwise(
    comparisons: Comparisons,
    weights: np.ndarray | None = None,
    *,
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
# counts over the observed pairs (nothing of size M^2 per query or per profile)


@dataclass(frozen=True)
class PairCounts:
    """Per-query win counts over the ordered (winner, loser) pairs that occur in the data.

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix, shape (n_queries, n_pairs)
        Column ``u`` holds how often ``winner[u]`` beat ``loser[u]`` on the query (ties add 0.5 to
        both directions), divided by the query's number of comparisons when normalised.
    winner, loser : ndarray of int64, shape (n_pairs,)
        Model indices of each column, sorted by ``winner * M + loser``.
    n_models : int
    """

    matrix: sp.csr_matrix
    winner: np.ndarray
    loser: np.ndarray
    n_models: int

    @property
    def n_pairs(self) -> int:
        """Number of observed ordered pairs (columns)."""
        return int(len(self.winner))

    @property
    def codes(self) -> np.ndarray:
        """``winner * M + loser`` of each column (sorted)."""
        return self.winner * self.n_models + self.loser


def _directed(
    comparisons: Comparisons, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, ordered-pair codes ``w * M + l`` and values of the win counts, both directions of
    every comparison (``y`` to "b beat a", ``1 - y`` to "a beat b"; times ``weights`` if given)."""
    m = comparisons.n_models
    q, a, b, y = comparisons.query, comparisons.model_a, comparisons.model_b, comparisons.y
    rows = np.concatenate([q, q])
    codes = np.concatenate([b * m + a, a * m + b])
    if weights is None:
        return rows, codes, np.concatenate([y, 1.0 - y])
    return rows, codes, np.concatenate([weights * y, weights * (1.0 - y)])


def _nonzero_directed(comparisons: Comparisons) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_directed` of the non-zero win counts."""
    rows, codes, vals = _directed(comparisons)
    keep = vals != 0
    return rows[keep], codes[keep], vals[keep]


def observed_pair_codes(comparisons: Comparisons) -> np.ndarray:
    """Sorted unique codes ``winner * M + loser`` of the ordered pairs with a non-zero count.

    Parameters
    ----------
    comparisons : Comparisons
        The pairwise comparisons (``M`` is their number of models).

    Returns
    -------
    ndarray of int
        Sorted unique codes of the observed ordered (winner, loser) pairs.
    """
    return np.unique(_nonzero_directed(comparisons)[1])


_PAIR_COUNTS_MEMO: contextvars.ContextVar = contextvars.ContextVar("pair_counts_memo", default=None)


@contextlib.contextmanager
def reuse_pair_counts():
    """Within the block, :func:`pair_counts` of one ``Comparisons`` object (same settings, no
    ``codes``) is computed once and then read back: for a search that fits many candidates on the
    same comparisons (:class:`ecc_lib.ecc.cv.ECCCV`). The comparisons must not change within the
    block (nothing in the package writes to them); the counts are the same numbers.

    Yields
    ------
    None
    """
    token = _PAIR_COUNTS_MEMO.set({})
    try:
        yield
    finally:
        _PAIR_COUNTS_MEMO.reset(token)


def pair_counts(
    comparisons: Comparisons,
    *,
    normalize: bool = False,
    dtype: type = np.float64,
    codes: np.ndarray | None = None,
) -> PairCounts:
    """Per-query win counts with one column per observed ordered pair.

    The same numbers as :func:`count_matrix`, with the columns that are empty for every query
    removed: the matrix has ``n_pairs <= 2 * len(comparisons)`` columns instead of ``M^2``, so
    the EM's statistics (``C^T R``, ``n_pairs x K``) and evidence tables stay small for any
    number of models.

    Parameters
    ----------
    comparisons : Comparisons
    normalize : bool, default False
        Divide each row by the query's number of comparisons ``N_q``.
    dtype : type
        Value type of the matrix.
    codes : ndarray, optional
        Sorted ordered-pair codes ``w * M + l`` defining the columns (for example the union over
        the partitions of a distributed fit, :func:`observed_pair_codes`); every pair of
        ``comparisons`` must be among them. Default: the pairs of ``comparisons``.

    Returns
    -------
    PairCounts
    """
    memo = _PAIR_COUNTS_MEMO.get() if codes is None else None
    if memo is not None:
        key = (id(comparisons), bool(normalize), np.dtype(dtype).str)
        hit = memo.get(key)
        if hit is not None and hit[0] is comparisons:
            return hit[1]
        memo[key] = (comparisons, _pair_counts(comparisons, normalize, dtype, None))
        return memo[key][1]
    return _pair_counts(comparisons, normalize, dtype, codes)


def _pair_counts(comparisons: Comparisons, normalize: bool, dtype, codes) -> PairCounts:
    m = comparisons.n_models
    rows, pair_code, vals = _nonzero_directed(comparisons)
    if codes is None:
        codes = np.unique(pair_code)
    codes = np.asarray(codes, dtype=np.int64)
    cols = np.searchsorted(codes, pair_code)
    if len(pair_code) and (
        cols.max() >= len(codes) or np.any(codes[np.minimum(cols, len(codes) - 1)] != pair_code)
    ):
        raise ValueError("pair_counts: comparisons hold a (winner, loser) pair missing from codes")
    if normalize:
        n_q = np.bincount(comparisons.query, minlength=comparisons.n_queries).astype(float)
        vals = vals / n_q[rows]
    matrix = sp.csr_matrix(
        (vals.astype(dtype), (rows, cols)), shape=(comparisons.n_queries, len(codes))
    )
    matrix.sum_duplicates()
    matrix.sort_indices()
    return PairCounts(matrix, codes // m, codes % m, m)


def pair_log_probs(theta: np.ndarray, winner: np.ndarray, loser: np.ndarray) -> np.ndarray:
    """``log P_k(winner beats loser)`` for each pair, shape ``(n_pairs, K)``.

    ``theta`` has shape ``(K, M)``; the ECC evidence of a count matrix ``C`` over these pairs is
    ``C @ pair_log_probs(theta, winner, loser)``.

    Parameters
    ----------
    theta : ndarray, shape (K, M)
        Bradley-Terry strengths of the ``M`` models in each of the ``K`` clusters.
    winner, loser : ndarray of int, shape (n_pairs,)
        Model indices of the winner and the loser of each pair.

    Returns
    -------
    ndarray, shape (n_pairs, K)
        ``log sigmoid(theta[k, winner] - theta[k, loser])`` per pair and cluster.
    """
    theta = np.asarray(theta, dtype=float)
    return log_sigmoid(theta[:, winner] - theta[:, loser]).T


# --------------------------------------------------------------------------------------------------
# fits on the observed pairs


def fit_bt_pairs(
    winner: np.ndarray,
    loser: np.ndarray,
    weights: np.ndarray,
    n_models: int,
    *,
    alpha: float = DEFAULT_ALPHA,
    theta0: np.ndarray | None = None,
    max_iter: int = NEWTON_MAX_ITER,
    tol: float = NEWTON_TOL,
    solver: str = "auto",
) -> np.ndarray:
    """Fit ``K`` BT profiles to weighted win counts given per observed ordered pair.

    Parameters
    ----------
    winner, loser : ndarray of int, shape (n_pairs,)
        Model indices of each ordered pair (a pair may appear in both directions).
    weights : ndarray, shape (K, n_pairs) or (n_pairs,)
        ``weights[k, u]`` = (weighted) number of times ``winner[u]`` beat ``loser[u]`` in profile
        ``k``; non-negative.
    n_models : int
    alpha : float, default 1.0
        L2 prior precision, see :func:`fit_bt_counts`.
    theta0 : ndarray, shape (K, M) or (M,), optional
        Warm start.
    max_iter : int, default 100
        Newton iterations at most.
    tol : float, default 1e-10
        Stop a profile when its Newton step is below ``tol`` in every coordinate.
    solver : {"auto", "newton", "newton-cg"}
        ``"newton"``: the batched dense Newton solve of :func:`fit_bt_counts` (``K x M x M``
        Hessians). ``"newton-cg"``: batched truncated Newton whose steps come from preconditioned
        conjugate gradients with Hessian-vector products over the observed pairs, ``O(K x
        n_pairs)`` per product and nothing of size ``M^2``. ``"auto"`` takes the dense solve up to
        ``DENSE_NEWTON_MAX_MODELS`` models.

    Returns
    -------
    ndarray, shape (K, M) or (M,)
        Scores (one row per profile; 1-D when ``weights`` is 1-D).
    """
    if solver not in ("auto", "newton", "newton-cg"):
        raise ValueError(f"solver must be 'auto', 'newton' or 'newton-cg', got {solver!r}")
    winner = np.asarray(winner, dtype=np.int64)
    loser = np.asarray(loser, dtype=np.int64)
    weights = np.asarray(weights, dtype=float)
    single = weights.ndim == 1
    if single:
        weights = weights[None]
    k = weights.shape[0]
    if weights.shape != (k, len(winner)) or loser.shape != winner.shape:
        raise ValueError(
            f"weights must have shape (K, {len(winner)}) to match winner/loser, got {weights.shape}"
        )
    if len(winner) and (
        min(winner.min(), loser.min()) < 0 or max(winner.max(), loser.max()) >= n_models
    ):
        raise ValueError(f"winner/loser hold a model index outside [0, {n_models})")
    if np.any(winner == loser):
        raise ValueError("a pair pits a model against itself")
    if np.any(weights < 0) or not np.all(np.isfinite(weights)):
        raise ValueError("weights must be finite and non-negative")
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    if solver == "auto":
        solver = "newton" if n_models <= DENSE_NEWTON_MAX_MODELS else "newton-cg"
    if solver == "newton":
        wins = np.zeros((k, n_models * n_models))
        codes = winner * n_models + loser
        if np.all(codes[1:] > codes[:-1]):  # distinct pairs (PairCounts): one write each
            wins[:, codes] = weights
        else:
            np.add.at(wins, (slice(None), codes), weights)
        # the weights are checked and no pair pits a model against itself (zero diagonal)
        theta = _fit_checked_counts(
            wins.reshape(k, n_models, n_models), float(alpha), theta0, max_iter, tol
        )
        return theta[0] if single else theta
    if theta0 is None:
        theta = np.zeros((n_models, k))
    else:
        theta = np.array(np.broadcast_to(theta0, (k, n_models)), dtype=float).T.copy()
    if alpha == 0:
        theta -= theta.mean(axis=0, keepdims=True)
    graph = _PairGraph(_pair_structure(winner, loser, n_models), weights)
    n_threads = max(1, min(available_cpus(), k))
    chunks = [slice(c[0], c[-1] + 1) for c in np.array_split(np.arange(k), n_threads)]

    def solve(cols: slice) -> tuple[np.ndarray, bool]:
        return _newton_cg(graph.columns(cols), alpha, theta[:, cols].copy(), max_iter, tol)

    # profiles are independent: chunks of them run on threads (NumPy and scipy.sparse release
    # the GIL), with the same result as one batch
    with ThreadPoolExecutor(n_threads) as pool:
        results = list(pool.map(solve, chunks))
    theta = np.concatenate([r[0] for r in results], axis=1)
    converged = all(r[1] for r in results)
    if not converged:
        logger.warning("fit_bt_pairs: Newton-CG did not converge in %d iterations", max_iter)
    theta = np.ascontiguousarray(theta.T)
    return theta[0] if single else theta


class _PairGraph:
    """Unordered comparison edges ``lo < hi`` and per-profile win weights, layout ``(E, K)``.

    The edge structure depends only on the observed pairs, so it is built once per set of pairs
    (:func:`_pair_structure`, cached) and shared by the EM's successive M-steps.
    """

    def __init__(self, structure: dict, weights: np.ndarray | None = None):
        self.__dict__.update(structure)
        if weights is not None:
            wt = np.ascontiguousarray(weights.T)
            self.n = np.asarray(self.to_edge @ wt)  # total weight of each edge
            self.b = np.asarray(self.to_edge_hi_won @ wt)  # weight of "hi beat lo"

    def columns(self, cols: slice) -> _PairGraph:
        """The same edges with the weights of profiles ``cols`` only (contiguous copies)."""
        part = _PairGraph(self.__dict__)
        part.b = np.ascontiguousarray(self.b[:, cols])
        part.n = np.ascontiguousarray(self.n[:, cols])
        return part

    def evaluate(self, theta, alpha, cols=slice(None)):
        """Penalised NLL per profile and ``p = sigmoid(theta_lo - theta_hi)`` per edge.

        ``-a log p - b log(1 - p) = -n log p + b d`` with ``d = theta_lo - theta_hi``, since
        ``log(1 - p) = log p - d``.
        """
        d = np.asarray(self.d @ theta)
        p = expit(d)
        log_p = np.log(np.maximum(p, np.finfo(float).tiny))
        n, b = self.n[:, cols], self.b[:, cols]
        value = np.einsum("ij,ij->j", b, d) - np.einsum("ij,ij->j", n, log_p)
        value += 0.5 * alpha * np.einsum("ij,ij->j", theta, theta)
        return value, p


_STRUCTURE_CACHE: dict = {}


def _pair_structure(winner: np.ndarray, loser: np.ndarray, n_models: int) -> dict:
    """Edges of the observed pairs and the sparse maps between pairs, edges and models."""
    key = (n_models, winner.tobytes(), loser.tobytes())
    cached = _STRUCTURE_CACHE.get("last")
    if cached is not None and cached[0] == key:
        return cached[1]
    lo, hi = np.minimum(winner, loser), np.maximum(winner, loser)
    edge_codes, edge = np.unique(lo * n_models + hi, return_inverse=True)
    n_edges, n_pairs = len(edge_codes), len(winner)
    lo, hi = edge_codes // n_models, edge_codes % n_models
    ones = np.ones(n_pairs)
    hi_won = winner != np.minimum(winner, loser)
    # incidence D (E x M): +1 at lo, -1 at hi; D^T scatters edge values onto models
    rows = np.concatenate([np.arange(n_edges), np.arange(n_edges)])
    signs = np.concatenate([np.ones(n_edges), -np.ones(n_edges)])
    d = sp.csr_matrix((signs, (rows, np.concatenate([lo, hi]))), shape=(n_edges, n_models))
    dt = d.T.tocsr()
    structure = {
        "lo": lo,
        "hi": hi,
        "d": d,
        "dt": dt,
        "abs_dt": abs(dt),
        "d32": d.astype(np.float32),
        "dt32": dt.astype(np.float32),
        "to_edge": sp.csr_matrix((ones, (edge, np.arange(n_pairs))), shape=(n_edges, n_pairs)),
        "to_edge_hi_won": sp.csr_matrix(
            (ones[hi_won], (edge[hi_won], np.flatnonzero(hi_won))), shape=(n_edges, n_pairs)
        ),
    }
    _STRUCTURE_CACHE["last"] = (key, structure)
    return structure


def _newton_cg(
    graph: _PairGraph, alpha: float, theta: np.ndarray, max_iter: int, tol: float
) -> tuple[np.ndarray, bool]:
    """Batched truncated Newton (Newton-CG) on ``K`` profiles held as columns of ``theta (M, K)``.

    Each step solves ``H s = g`` by Jacobi-preconditioned conjugate gradients (float32
    Hessian-vector products; the gradient and objective stay float64) to a relative residual
    ``min(0.5, sqrt(|g|))`` (superlinear local convergence), then an Armijo backtracking search
    per profile. A profile stops when its step is below ``tol`` in every coordinate or no step
    decreases its objective (float precision).
    """
    m, k = theta.shape
    value, prob = graph.evaluate(theta, alpha)
    active = np.ones(k, dtype=bool)
    max_cg = max(10, 2 * m)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        th = theta[:, idx]
        full = len(idx) == k
        n = graph.n if full else graph.n[:, idx]
        p = prob if full else prob[:, idx]
        # d/d(theta_lo - theta_hi) of -a log p - b log(1 - p) is n p - a = n p - n + b
        grad = graph.dt @ (n * p - n + (graph.b if full else graph.b[:, idx])) + alpha * th
        h = n * p
        h *= 1.0 - p
        precond = graph.abs_dt @ h + alpha
        if alpha == 0:
            grad -= grad.mean(axis=0, keepdims=True)
            precond = np.maximum(precond, np.finfo(float).tiny)
        h = h.astype(np.float32)
        gnorm = np.sqrt((grad**2).sum(axis=0))
        eta = np.minimum(CG_FORCING, np.sqrt(gnorm))
        # preconditioned conjugate gradients, all profiles in lockstep
        step = np.zeros_like(th)
        r = grad.copy()
        z = r / precond
        direction = z.copy()
        rz = (r * z).sum(axis=0)
        solving = gnorm > 0
        for _ in range(max_cg):
            if not solving.any():
                break
            diff = graph.d32 @ direction.astype(np.float32)
            diff *= h
            hd = (graph.dt32 @ diff).astype(float) + alpha * direction
            if alpha == 0:
                hd -= hd.mean(axis=0, keepdims=True)
            curvature = (direction * hd).sum(axis=0)
            positive = solving & (curvature > 0)
            size = np.where(positive, rz / np.where(positive, curvature, 1.0), 0.0)
            solving &= curvature > 0
            step += size * direction
            r -= size * hd
            solving &= np.sqrt((r**2).sum(axis=0)) > eta * gnorm
            z = r / precond
            rz_new = (r * z).sum(axis=0)
            direction = z + np.where(rz > 0, rz_new / np.where(rz > 0, rz, 1.0), 0.0) * direction
            rz = rz_new
        decrement = (grad * step).sum(axis=0)
        base = value[idx]
        tiny = decrement / 2.0 <= PRECISION * (1.0 + np.abs(base))
        t = np.ones(len(idx))
        new_theta = th.copy()
        new_value = base.copy()
        new_prob = None
        pending = np.ones(len(idx), dtype=bool)
        for ls in range(LINE_SEARCH_STEPS):
            where = np.flatnonzero(pending)
            cand = th[:, where] - t[where] * step[:, where]
            cand_value, cand_prob = graph.evaluate(cand, alpha, idx[where])
            ok = cand_value <= base[where] - ARMIJO * t[where] * decrement[where]
            if ls == 0:
                ok |= tiny[where]
            new_theta[:, where[ok]] = cand[:, ok]
            new_value[where[ok]] = cand_value[ok]
            if ls == 0 and ok.all():
                new_prob = cand_prob  # the usual case: every full step accepted, no copies
            else:
                if new_prob is None:
                    new_prob = p.copy()
                new_prob[:, where[ok]] = cand_prob[:, ok]
            pending[where[ok]] = False
            if not pending.any():
                break
            t[pending] *= 0.5
        if alpha == 0:
            shift = new_theta.mean(axis=0, keepdims=True)
            new_theta -= shift  # the likelihood (and p) do not change under a common shift
        theta[:, idx] = new_theta
        value[idx] = new_value
        if len(idx) == k:
            prob = new_prob
        else:
            prob[:, idx] = new_prob
        done = (np.abs(step).max(axis=0) <= tol) | pending
        active[idx[done]] = False
        if not active.any():
            break
    return theta, not active.any()


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
    *,
    n_boot: int = defaults.N_BOOT,
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
    _, cols, vals = _directed(comparisons, w)
    # one row per resampling unit, M*M columns of win counts
    if unit == "query":
        units = comparisons.query
        n_units = comparisons.n_queries
    else:
        units = np.arange(len(comparisons))
        n_units = len(comparisons)
    rows = np.concatenate([units, units])
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


__all__ = [
    "PairCounts",
    "fit_bt_pairs",
    "fit_bt_pairwise",
    "observed_pair_codes",
    "pair_counts",
]
