"""Evidence-calibrated clustering (ECC) as a scikit-learn-style estimator, and its EM engine.

ECC (Wu, Silwal & Zhang 2026, "Capturing LLM Capabilities via Evidence-Calibrated Query Clustering",
arXiv 2605.17110; restated precisely in ``DESIGN.md`` section 3) groups queries by the capability
they demand. Cluster ``k`` has a unit centroid ``c_k`` and Bradley-Terry scores ``theta_k`` over
the ``M`` models. With ``l_qk`` the per-comparison average log-likelihood of query ``q``'s
comparisons under profile ``k`` (the *evidence*) and ``cos_qk = e_q . c_k``:

    r_qk = softmax_k((l_qk + lam * cos_qk) / T)                                         (E-step)
    theta_k = argmin sum_q (r_qk / N_q) sum_{q's comparisons} -log P_k + 0.5 ||theta_k||^2
    c_k = normalise(sum_q r_qk e_q)                                                     (M-step)

The recorded objective is

    J = sum_q T * logsumexp_k((l_qk + lam * cos_qk) / T) - 0.5 * alpha * sum_k ||theta_k||^2,

(``alpha = 1`` is the BT prior of the M-step). It is provably non-decreasing: with
``G(r, Theta) = sum_q [sum_k r_qk (l_qk + lam cos_qk) + T H(r_q)] - 0.5 alpha sum_k ||theta_k||^2``,
the E-step maximises ``G`` over ``r`` (Gibbs variational principle, giving ``G = J``), the centroid
update maximises it over ``c`` exactly, and the Newton BT fit (warm-started, with a line search)
never increases the penalised BT loss, i.e. never decreases ``G``. The logsumexp term alone (without
the prior) is *not* monotone, because the M-step trades likelihood against the prior.

Speed: with binary outcomes a comparison's log-likelihood depends only on (winner, loser), so the
data enter through a sparse ``(n_queries, U)`` matrix ``C`` of win counts divided by ``N_q``, one
column per ordered (winner, loser) pair that occurs in the data (``U <= 2 x comparisons``, never
``M^2``; :func:`ecc_lib.bradley_terry.pair_counts`). The evidence is ``C @ log P`` (``U x K``), the
M-step statistics are ``C^T R`` and ``R^T X``, and the ``K`` BT fits are one batched solve on the
observed pairs (:func:`ecc_lib.bradley_terry.fit_bt_pairs`: dense Newton for up to 128 models,
Newton-CG with Hessian-vector products above).
The E-step runs over blocks of rows so that the dense float32 products ``X @ C^T`` and ``R^T X``,
the sparse products and the softmax of a block share the cache; nothing loops over pairs or
queries in Python.

The baselines (global BT, embedding-only, comparison-only, human labels) share this module's
inference interface and EM engine; they are in :mod:`ecc_lib.ecc.baselines`.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import inspect
import logging
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import expit, log_softmax
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import ThreadpoolController

from ecc_lib.bradley_terry import (
    DEFAULT_ALPHA,
    PairCounts,
    fit_bt_pairs,
    log_sigmoid,
    pair_counts,
    pair_log_probs,
    win_probability,
)
from ecc_lib.data.comparisons import Comparisons, _cpu_count

logger = logging.getLogger(__name__)

MODES = ("both", "embedding", "probe")
BLOCK_ROWS = 8192
MIN_BLOCK_ROWS = 512
KL_TOL = 1e-3
CENTROID_TOL = 1e-4
OBJECTIVE_TOL = 1e-4
OBJECTIVE_PATIENCE = 5
MISSING_LABEL = "<missing>"
_PROB_CLIP = 1e-12


# --------------------------------------------------------------------------------------------------
# input checks and small helpers


def _check_comparisons(comparisons: Comparisons, what: str) -> None:
    if not isinstance(comparisons, Comparisons):
        raise TypeError(f"{what} must be a Comparisons object, got {type(comparisons).__name__}")
    if comparisons.n_models < 2:
        raise ValueError(
            f"{what} hold {comparisons.n_models} model(s) {list(comparisons.models)}; at least 2 "
            "models are needed to compare models"
        )
    if len(comparisons) == 0:
        raise ValueError(f"{what} hold no comparisons: nothing to fit (were all pairs ties?)")


def check_mode(mode: str) -> None:
    """Raise a one-line ``ValueError`` unless ``mode`` is an inference mode of :data:`MODES`.

    Parameters
    ----------
    mode : str
        ``"both"``, ``"embedding"`` or ``"probe"``.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")


def _check_embeddings(embeddings, n_rows: int | None, dtype, what: str = "embeddings"):
    x = np.asarray(embeddings)
    if x.ndim != 2:
        raise ValueError(f"{what} must be a 2-D array (n_queries, dim), got shape {x.shape}")
    if n_rows is not None and x.shape[0] != n_rows:
        raise ValueError(
            f"{what} have {x.shape[0]} row(s) but the comparisons refer to {n_rows} queries; pass "
            "one embedding row per query, in the order of comparisons.query_ids"
        )
    x = np.ascontiguousarray(x, dtype=dtype)
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what} hold NaN or infinite values")
    norms = np.sqrt(np.einsum("ij,ij->i", x, x, dtype=np.float64))  # no (n, d) temporary
    if np.any(norms == 0):
        bad = int(np.flatnonzero(norms == 0)[0])
        raise ValueError(f"{what} row {bad} is all zeros; embeddings must have non-zero norm")
    if np.abs(norms - 1.0).max() > 1e-3:
        x = x / norms[:, None].astype(dtype)
    return x


_CONTROLLER: ThreadpoolController | None = None


def _blas_controller() -> ThreadpoolController:
    """One threadpoolctl controller per process (finding the BLAS libraries takes ~0.1 s)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


def _block_rows(n_rows: int, n_jobs: int) -> int:
    """Rows per block: at most ``BLOCK_ROWS``, small enough to give every thread two blocks."""
    wanted = -(-n_rows // (2 * n_jobs))
    return int(min(BLOCK_ROWS, max(MIN_BLOCK_ROWS, wanted)))


def _n_jobs(n_jobs: int | None, upper: int) -> int:
    """Threads to use: ``n_jobs`` (negative counts back from the CPUs available), at most ``upper``."""
    if n_jobs is None or n_jobs < 1:
        available = _cpu_count()
        n_jobs = available if n_jobs is None else max(1, available + 1 + n_jobs)
    return int(max(1, min(n_jobs, upper)))


def _normalise_rows(a: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    return a / np.maximum(norms, np.finfo(float).tiny)


def log_prob_table(theta: np.ndarray) -> np.ndarray:
    """``log P_k(w beats l)`` as a ``(M*M, K)`` table, row ``w * M + l`` (diagonal rows are
    ``log(1/2)`` and never used).

    Parameters
    ----------
    theta : ndarray, shape (K, M)
        Bradley-Terry strengths of the ``M`` models in each of the ``K`` profiles.

    Returns
    -------
    ndarray, shape (M*M, K)
        ``log sigmoid(theta[k, w] - theta[k, l])`` in row ``w * M + l``, column ``k``.
    """
    k, m = theta.shape
    return log_sigmoid(theta[:, :, None] - theta[:, None, :]).reshape(k, m * m).T


def comparison_nll(p_b_wins: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Negative log-likelihood of each outcome ``y`` (1 = b won, 0 = a won, 0.5 = tie) given the
    predicted probability that ``b`` wins (clipped to ``[1e-12, 1 - 1e-12]``).

    Parameters
    ----------
    p_b_wins : array-like of float
        Predicted probability that ``b`` wins, per comparison.
    y : array-like of float
        Observed outcome per comparison (same shape).

    Returns
    -------
    ndarray of float
        ``-(y log p + (1 - y) log(1 - p))`` elementwise.
    """
    p = np.clip(np.asarray(p_b_wins, dtype=float), _PROB_CLIP, 1.0 - _PROB_CLIP)
    y = np.asarray(y, dtype=float)
    return -(y * np.log(p) + (1.0 - y) * np.log1p(-p))


def evidence(theta: np.ndarray, comparisons: Comparisons) -> np.ndarray:
    """ECC evidence ``l_qk``: per-comparison average log-likelihood of each query's comparisons
    under each profile; zero for queries without comparisons. Shape ``(n_queries, K)``.

    Parameters
    ----------
    theta : ndarray, shape (K, M)
        Bradley-Terry strengths of the ``M`` models in each of the ``K`` profiles.
    comparisons : Comparisons
        The queries' pairwise comparisons.

    Returns
    -------
    ndarray, shape (n_queries, K)
        The evidence ``l_qk``.
    """
    c = pair_counts(comparisons, normalize=True)
    return np.asarray(c.matrix @ pair_log_probs(theta, c.winner, c.loser))


def _fit_profiles(
    comparisons: Comparisons, resp: np.ndarray, alpha: float, theta0=None, dtype=np.float64
) -> np.ndarray:
    """BT profiles of the soft assignment ``resp`` (n_queries, K): comparison weights
    ``r_qk / N_q``, fitted on the observed pairs (:func:`ecc_lib.bradley_terry.fit_bt_pairs`)."""
    counts = pair_counts(comparisons, normalize=True, dtype=dtype)
    wins = np.asarray(counts.matrix.T @ resp, dtype=float)
    return fit_bt_pairs(
        counts.winner, counts.loser, wins.T, counts.n_models, alpha=float(alpha), theta0=theta0
    )


def labels_to_str(labels, n: int) -> np.ndarray:
    """Labels as an object array of str; missing values (None, NaN, NA) become ``"<missing>"``.

    Parameters
    ----------
    labels : array-like, shape (n,)
        Category per query (any values; missing ones allowed).
    n : int
        Expected number of labels.

    Returns
    -------
    ndarray of object (str), shape (n,)
    """
    arr = np.asarray(labels, dtype=object)
    if arr.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), got {arr.shape}")
    series = pd.Series(arr, dtype=object)
    missing = series.isna().to_numpy()
    out = series.astype(str).to_numpy(dtype=object)
    out[missing] = MISSING_LABEL
    return out


def _log_missing_labels(labels: np.ndarray, who: str) -> None:
    """Log how many queries have no label (:func:`labels_to_str` made them ``"<missing>"``)."""
    n_missing = int((labels == MISSING_LABEL).sum())
    if n_missing:
        logger.info(
            "%s: %d queries without a label form the category %r", who, n_missing, MISSING_LABEL
        )


def _with_defaults(init, **defaults):
    """``init`` (an estimator's ``__init__``) with other defaults for some of its parameters.

    scikit-learn reads an estimator's parameters from the signature of its ``__init__``
    (``get_params``, ``clone``); the returned function carries ``init``'s signature with the new
    defaults, so a subclass that only changes defaults does not repeat the parameter list.

    Parameters
    ----------
    init : callable
        The ``__init__`` to wrap (it takes ``self`` first).
    **defaults
        New default value by parameter name.

    Returns
    -------
    callable
        An ``__init__`` with the new defaults.
    """
    signature = inspect.signature(init)
    unknown = sorted(set(defaults) - set(signature.parameters))
    if unknown:
        raise TypeError(f"{init.__qualname__} has no parameter(s) {unknown}")
    signature = signature.replace(
        parameters=[
            p.replace(default=defaults[p.name]) if p.name in defaults else p
            for p in signature.parameters.values()
        ]
    )

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        init(*bound.args, **bound.kwargs)

    __init__.__signature__ = signature
    return __init__


# --------------------------------------------------------------------------------------------------
# the EM engine (shared by ECC, ComparisonOnlyECC and EmbeddingClusters)


@dataclass
class _EMRun:
    theta: np.ndarray
    centroids: np.ndarray
    responsibilities: np.ndarray
    objective: float
    history: list[float] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)
    step_cpu_seconds: list[float] = field(default_factory=list)
    converged: bool = False
    n_iter: int = 0


def _blocks(counts: sp.csr_matrix, block_rows: int) -> list[tuple[int, int, sp.csr_matrix]]:
    n = counts.shape[0]
    return [
        (i, min(i + block_rows, n), counts[i : i + block_rows]) for i in range(0, n, block_rows)
    ]


def _block_statistics(xb: np.ndarray, cb: sp.csr_matrix, rb: np.ndarray):
    """M-step statistics of one block of queries: weighted win counts per observed pair
    ``C_b^T R_b`` (n_pairs, K) and centroid sums ``X_b^T R_b`` (d, K)."""
    return cb.T @ rb, xb.T @ rb


def _scores(xb, cb, table, cen, log_prior=None):
    """Scaled scores ``(l + lam cos) / T`` of a block, shifted by their row maximum.

    ``log_prior`` (optional, ``(n_b, K)``) is added after the division by the temperature (a
    per-query log prior over clusters, see :class:`ecc_lib.ecc.label_informed.LabelInformedECC`)."""
    s = xb @ cen
    if table is not None:
        s += cb @ table
    if log_prior is not None:
        s += log_prior
    shift = s.max(axis=1)
    s -= shift[:, None]
    return s, shift


def _softmax_into(s: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Row softmax of shifted scores ``s`` written into ``out``; returns ``log sum exp(s)``."""
    np.exp(s, out=out)
    total = np.einsum("ij->i", out)
    log_total = np.log(total)
    out *= (1.0 / total)[:, None]
    return log_total


def _softmax_rows(xb, cb, table, cen, out: np.ndarray) -> np.ndarray:
    """Responsibilities of a block written into ``out``; returns their ``sum_k r log r``
    (what :func:`_block_e_step` leaves behind, recomputed from the same parameters)."""
    s, _ = _scores(xb, cb, table, cen)
    log_total = _softmax_into(s, out)
    return np.einsum("ij,ij->i", out, s) - log_total


def _block_e_step(
    xb: np.ndarray,
    cb: sp.csr_matrix,
    table: np.ndarray | None,
    cen: np.ndarray,
    old_resp: np.ndarray,
    old_neg_entropy: np.ndarray,
    out_resp: np.ndarray,
    out_neg_entropy: np.ndarray,
    log_prior: np.ndarray | None = None,
):
    """E-step of one block of queries; the maths shared by the in-memory and the Dask fits.

    Parameters
    ----------
    xb : ndarray (n_b, d)
        Unit embeddings of the block.
    cb : csr_matrix (n_b, n_pairs)
        Normalised win counts of the block over the observed pairs.
    table : ndarray (n_pairs, K) or None
        ``log P_k(w beats l) / T`` per observed pair (None: no evidence term).
    cen : ndarray (d, K)
        Centroids times ``lam / T``, transposed.
    old_resp, old_neg_entropy : ndarray
        Responsibilities before the step and their ``sum_k r log r`` per row.
    out_resp, out_neg_entropy : ndarray
        Where the new values go (may be ``old_resp`` / ``old_neg_entropy`` themselves: the old
        values are read before they are overwritten).
    log_prior : ndarray (n_b, K), optional
        Added to the scaled scores (see :func:`_scores`).

    Returns
    -------
    lse : float
        Sum over the block of ``logsumexp_k`` of the scaled scores.
    kl : float
        Sum over the block of ``KL(r_old || r_new)``.
    wins, sums : ndarray
        :func:`_block_statistics` of the new responsibilities.
    """
    s, shift = _scores(xb, cb, table, cen, log_prior)
    cross = np.einsum("ij,ij->i", old_resp, s)
    rb = out_resp
    log_total = _softmax_into(s, rb)
    new_neg_entropy = np.einsum("ij,ij->i", rb, s) - log_total
    # KL(old || new) = sum_k r_old (log r_old - log r_new), log r_new = s - log_total
    kl = float(np.sum(old_neg_entropy - cross + log_total, dtype=np.float64))
    out_neg_entropy[:] = new_neg_entropy
    lse = float(np.sum(shift, dtype=np.float64) + np.sum(log_total, dtype=np.float64))
    wins, sums = _block_statistics(xb, cb, rb)
    return lse, kl, wins, sums


def _neg_entropy(resp: np.ndarray) -> np.ndarray:
    """``sum_k r_qk log r_qk`` per row (0 log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        logr = np.where(resp > 0, np.log(resp), 0.0)
    return np.einsum("ij,ij->i", resp, logr)


def _sum_statistics(parts, n_pairs: int, dim: int, k: int):
    """Add up per-block ``(lse, kl, wins, sums)`` (or ``(wins, sums)``) tuples."""
    wins = np.zeros((n_pairs, k))
    sums_t = np.zeros((dim, k))
    scalars = None
    for part in parts:
        *head, w, s = part
        wins += w
        sums_t += s
        scalars = list(head) if scalars is None else [a + b for a, b in zip(scalars, head)]
    return (*(scalars or []), wins, sums_t)


class _LocalData:
    """In-memory queries for :func:`_run_em`: blocks of rows processed on a thread pool (NumPy,
    BLAS and scipy.sparse release the GIL); each block writes its own rows of ``resp``."""

    def __init__(self, x: np.ndarray, blocks, resp: np.ndarray, pool):
        self.x = x
        self.blocks = blocks
        self.resp = resp
        self.pool = pool
        self.neg_entropy = _neg_entropy(resp).astype(resp.dtype)
        self.n_pairs = blocks[0][2].shape[1]

    def statistics(self):
        x, resp = self.x, self.resp
        parts = self.pool.map(
            lambda b: _block_statistics(x[b[0] : b[1]], b[2], resp[b[0] : b[1]]), self.blocks
        )
        return _sum_statistics(parts, self.n_pairs, x.shape[1], resp.shape[1])

    def e_step(self, table, cen, log_prior=None):
        x, resp, ne = self.x, self.resp, self.neg_entropy

        def work(block):
            i0, i1, cb = block
            prior = None if log_prior is None else log_prior[i0:i1]
            return _block_e_step(
                x[i0:i1], cb, table, cen, resp[i0:i1], ne[i0:i1], resp[i0:i1], ne[i0:i1], prior
            )

        return _sum_statistics(
            self.pool.map(work, self.blocks), self.n_pairs, x.shape[1], resp.shape[1]
        )

    def responsibilities(self):
        return self.resp


@dataclass(frozen=True)
class DataBackend:
    """Where else than in memory an ECC-family fit can run (registered by the backend's module).

    Attributes
    ----------
    name : str
        The backend (``"dask"``).
    claims : callable
        ``claims(embeddings) -> bool``: whether this fit runs on the backend (for Dask: inside
        ``ecc_lib.distributed.use_dask`` or on a dask array).
    fit : callable
        ``fit(estimator, embeddings, comparisons) -> estimator``: the fit on the backend.
    """

    name: str
    claims: Callable[[object], bool]
    fit: Callable


_DATA_BACKENDS: dict[str, DataBackend] = {}
_BACKEND_MODULES = {"dask": "ecc_lib.distributed"}
"""Module that registers the backend for arrays of a package (imported only when such an array
is passed, like a plug-in: this module never imports it otherwise)."""


def register_data_backend(name: str, claims: Callable[[object], bool], fit: Callable) -> None:
    """Register a data backend of the EM engine (see :class:`DataBackend`); a name registered
    again replaces the earlier one.

    Parameters
    ----------
    name : str
    claims : callable
        ``claims(embeddings) -> bool``.
    fit : callable
        ``fit(estimator, embeddings, comparisons) -> estimator``.
    """
    _DATA_BACKENDS[str(name)] = DataBackend(str(name), claims, fit)


_BACKENDS_OFF: contextvars.ContextVar[bool] = contextvars.ContextVar("_BACKENDS_OFF", default=False)


@contextlib.contextmanager
def in_memory_fits() -> Iterator[None]:
    """Run the ECC-family fits inside the block in memory, even where a data backend would claim
    them (inside ``ecc_lib.distributed.use_dask``).

    For estimators whose fit is not partitioned (``LabelInformedECC``): their fit is the in-memory
    one, while the rest of a ``--scheduler`` run stays on the backend.

    Yields
    ------
    None
    """
    token = _BACKENDS_OFF.set(True)
    try:
        yield
    finally:
        _BACKENDS_OFF.reset(token)


def _backend_array(embeddings) -> bool:
    """Whether ``embeddings`` is an array of a package with a backend module (a dask array)."""
    return type(embeddings).__module__.partition(".")[0] in _BACKEND_MODULES


def _data_backend(embeddings) -> DataBackend | None:
    """The registered backend that claims this fit, or None (in memory).

    Nothing is imported for in-memory arrays; an array of a package with a backend module (a dask
    array) imports that module, which registers itself."""
    if _BACKENDS_OFF.get() and not _backend_array(embeddings):
        return None
    package = type(embeddings).__module__.partition(".")[0]
    if package in _BACKEND_MODULES and package not in _DATA_BACKENDS:
        importlib.import_module(_BACKEND_MODULES[package])
    return next((b for b in _DATA_BACKENDS.values() if b.claims(embeddings)), None)


def _dask_requested(embeddings) -> bool:
    """Whether a fit runs on a registered backend (Dask partitions) rather than in memory."""
    return _data_backend(embeddings) is not None


def _run_em(
    data,
    pairs: PairCounts,
    *,
    n_queries: int,
    lam: float,
    temperature: float,
    alpha: float,
    max_iter: int,
    tol: float,
    centroid_tol: float,
    objective_tol: float,
    patience: int,
    use_evidence: bool,
    dtype,
    prior_update=None,
) -> _EMRun:
    """The EM loop, whatever holds the queries.

    ``data`` runs the per-block maths (:class:`_LocalData` in memory, or the Dask partitions of
    :mod:`ecc_lib.distributed`): ``statistics()`` gives the sufficient statistics of the starting
    responsibilities, ``e_step(table, cen)`` runs one E-step and returns ``(lse, kl, wins,
    sums)`` summed over all queries, ``responsibilities()`` the final ones. The M-step here only
    sees those sums: ``wins`` (n_pairs, K) feed the batched BT fit, ``sums`` (d, K) the centroids.
    ``prior_update`` (optional, in-memory data only) maps the current responsibilities to an
    ``(n, K)`` log prior added to the next E-step's scores (an M-step of a per-query prior).
    """
    wins, sums = data.statistics()
    k = wins.shape[1]
    m = pairs.n_models
    theta = np.zeros((k, m))
    centroids = None
    run = _EMRun(theta, np.zeros((k, sums.shape[0])), None, -np.inf)
    small = 0
    for it in range(1, max_iter + 1):
        start, start_cpu = time.perf_counter(), time.process_time()
        # without evidence the profiles do not feed the E-step: they are fitted once, after
        if use_evidence:
            theta = fit_bt_pairs(pairs.winner, pairs.loser, wins.T, m, alpha=alpha, theta0=theta)
        new_centroids = _normalise_rows(sums.T)
        shift = (
            np.inf
            if centroids is None
            else float(np.linalg.norm(new_centroids - centroids, axis=1).max())
        )
        centroids = new_centroids
        table = (
            (pair_log_probs(theta, pairs.winner, pairs.loser) / temperature).astype(dtype)
            if use_evidence
            else None
        )
        cen = np.ascontiguousarray((centroids * (lam / temperature)).T, dtype=dtype)
        if prior_update is None:
            lse_sum, kl_sum, wins, sums = data.e_step(table, cen)
        else:
            log_prior = prior_update(data.responsibilities())
            lse_sum, kl_sum, wins, sums = data.e_step(table, cen, log_prior)
        objective = temperature * lse_sum
        if use_evidence:
            objective -= 0.5 * alpha * float(np.sum(theta**2))
        run.step_seconds.append(time.perf_counter() - start)
        run.step_cpu_seconds.append(time.process_time() - start_cpu)
        previous = run.history[-1] if run.history else None
        run.history.append(objective)
        run.n_iter = it
        mean_kl = kl_sum / n_queries
        if mean_kl < tol and shift < centroid_tol:
            run.converged = True
            break
        if previous is not None:
            change = abs(objective - previous) / max(abs(previous), np.finfo(float).tiny)
            small = small + 1 if change < objective_tol else 0
            if small >= patience:
                run.converged = True
                break
    run.theta = theta
    run.centroids = centroids
    run.responsibilities = data.responsibilities()
    run.objective = run.history[-1]
    return run


# --------------------------------------------------------------------------------------------------
# shared inference interface


class _ProfileMixture(BaseEstimator):
    """Inference shared by every clustering: responsibilities, win probabilities, rankings."""

    def _check_fitted(self) -> None:
        """Raise :class:`~sklearn.exceptions.NotFittedError` before ``fit`` (an
        ``AttributeError``, so ``hasattr(ECC(), "n_clusters_")`` is False)."""
        check_is_fitted(self, "theta_")

    def _n_rows(self, embeddings, probe, labels) -> int:
        if embeddings is not None:
            return int(np.shape(embeddings)[0])
        if probe is not None:
            return probe.n_queries
        if labels is not None:
            return len(labels)
        raise ValueError("pass embeddings, a probe or labels to say which queries to predict")

    def _check_probe(self, probe: Comparisons, n: int) -> None:
        if not isinstance(probe, Comparisons):
            raise TypeError(f"probe must be a Comparisons object, got {type(probe).__name__}")
        if tuple(probe.models) != tuple(self.models_):
            raise ValueError(
                f"probe models {list(probe.models)} differ from the fitted models "
                f"{list(self.models_)}"
            )
        if probe.n_queries != n:
            raise ValueError(
                f"probe refers to {probe.n_queries} queries but embeddings have {n} rows"
            )

    def _mixture_responsibilities(self, embeddings, probe, mode, log_prior=None) -> np.ndarray:
        """``softmax((l^probe + lam cos) / T)``, each term used when the mode and inputs allow."""
        check_mode(mode)
        use_emb = mode in ("both", "embedding") and embeddings is not None
        use_probe = mode in ("both", "probe") and probe is not None
        if mode == "embedding" and embeddings is None:
            raise ValueError("mode='embedding' needs embeddings")
        if mode == "probe" and probe is None:
            raise ValueError("mode='probe' needs a probe (Comparisons of the new queries)")
        if mode == "both" and not (use_emb or use_probe):
            raise ValueError("mode='both' needs embeddings and/or a probe")
        n = self._n_rows(embeddings, probe, None)
        k = self.theta_.shape[0]
        score = np.zeros((n, k))
        if use_emb and self.centroids_ is not None:
            x = _check_embeddings(embeddings, None, np.float32)
            if x.shape[1] != self.centroids_.shape[1]:
                raise ValueError(
                    f"embeddings have dimension {x.shape[1]}, the model was fitted on "
                    f"{self.centroids_.shape[1]}"
                )
            score += self.lam * (x @ self.centroids_.T.astype(np.float32)).astype(float)
        if use_probe:
            self._check_probe(probe, n)
            score += evidence(self.theta_, probe)
        score /= self.temperature
        if log_prior is not None:
            score += log_prior
        return np.exp(log_softmax(score, axis=1))

    def predict_responsibilities(
        self,
        embeddings: np.ndarray | None = None,
        probe: Comparisons | None = None,
        mode: str = "both",
        labels=None,
    ) -> np.ndarray:
        """Soft cluster memberships of new queries.

        Parameters
        ----------
        embeddings : ndarray, shape (n, d), optional
            Unit embeddings of the new queries.
        probe : Comparisons, optional
            A few comparisons per new query (the probe), with ``probe.query`` indexing the rows of
            ``embeddings`` and the fitted model order.
        mode : {"both", "embedding", "probe"}
            ``r_q = softmax((l_q^probe + lam cos(e_q, c_k)) / T)``; ``"embedding"`` drops the
            evidence, ``"probe"`` drops the cosine term.
        labels : array-like, optional
            Human categories (used by :class:`~ecc_lib.ecc.baselines.HumanLabelClusters` only).

        Returns
        -------
        ndarray, shape (n, n_clusters)
            Rows sum to one.
        """
        self._check_fitted()
        return self._mixture_responsibilities(embeddings, probe, mode)

    def _resolve(self, responsibilities, embeddings, probe, mode, labels) -> np.ndarray:
        if responsibilities is not None:
            r = np.asarray(responsibilities, dtype=float)
            if r.ndim != 2 or r.shape[1] != self.theta_.shape[0]:
                raise ValueError(
                    f"responsibilities must have shape (n, {self.theta_.shape[0]}), got {r.shape}"
                )
            return r
        return self.predict_responsibilities(embeddings, probe, mode, labels)

    def predict_proba(
        self,
        comparisons: Comparisons,
        embeddings: np.ndarray | None = None,
        probe: Comparisons | None = None,
        mode: str = "both",
        labels=None,
        responsibilities: np.ndarray | None = None,
    ) -> np.ndarray:
        """Probability that ``model_b`` beats ``model_a`` for each row of ``comparisons``:
        ``sum_k r_qk sigmoid(theta_kb - theta_ka)``.

        ``comparisons.query`` indexes the new queries (rows of ``embeddings`` / ``responsibilities``).
        """
        self._check_fitted()
        r = self._resolve(responsibilities, embeddings, probe, mode, labels)
        if comparisons.n_queries != r.shape[0]:
            raise ValueError(
                f"comparisons refer to {comparisons.n_queries} queries, responsibilities have "
                f"{r.shape[0]} rows"
            )
        if tuple(comparisons.models) != tuple(self.models_):
            raise ValueError("comparisons use a different model list than the fitted one")
        diff = self.theta_[:, comparisons.model_b] - self.theta_[:, comparisons.model_a]
        return np.einsum("nk,kn->n", r[comparisons.query], expit(diff))

    def nll(self, comparisons: Comparisons, **kwargs) -> float:
        """Mean negative log-likelihood of ``comparisons`` (keyword arguments as
        :meth:`predict_proba`)."""
        p = self.predict_proba(comparisons, **kwargs)
        return float(comparison_nll(p, comparisons.y).mean())

    def win_matrix(self, responsibilities: np.ndarray) -> np.ndarray:
        """``P[q, i, j] = sum_k r_qk sigmoid(theta_ki - theta_kj)``: probability that model ``i``
        beats model ``j`` on query ``q``. Shape ``(n, M, M)``."""
        self._check_fitted()
        r = self._resolve(responsibilities, None, None, "both", None)
        return np.einsum("qk,kij->qij", r, win_probability(self.theta_))

    def routing_scores(
        self,
        embeddings: np.ndarray | None = None,
        probe: Comparisons | None = None,
        mode: str = "both",
        labels=None,
        responsibilities: np.ndarray | None = None,
    ) -> np.ndarray:
        """``sum_k r_qk (theta_km - mean_m' theta_km')``, shape ``(n, M)``."""
        self._check_fitted()
        r = self._resolve(responsibilities, embeddings, probe, mode, labels)
        centred = self.theta_ - self.theta_.mean(axis=1, keepdims=True)
        return r @ centred

    def rank_models(self, *args, **kwargs) -> np.ndarray:
        """Model indices per query, best first (by :meth:`routing_scores`), shape ``(n, M)``."""
        scores = self.routing_scores(*args, **kwargs)
        return np.argsort(-scores, axis=1, kind="stable")

    def route(self, *args, **kwargs) -> np.ndarray:
        """Name of the chosen model per query: ``argmax_m`` of :meth:`routing_scores`."""
        scores = self.routing_scores(*args, **kwargs)
        return np.asarray(self.models_, dtype=object)[np.argmax(scores, axis=1)]

    @property
    def n_clusters_(self) -> int:
        """Number of profiles."""
        self._check_fitted()
        return int(self.theta_.shape[0])


# --------------------------------------------------------------------------------------------------
# ECC


class ECC(_ProfileMixture):
    """Evidence-calibrated clustering of queries with Bradley-Terry capability profiles.

    A scikit-learn estimator (``get_params``/``set_params``, ``clone``) with one difference from
    the usual ``fit(X, y)``: :meth:`fit` takes the query embeddings and a
    :class:`~ecc_lib.data.comparisons.Comparisons` object (the pairwise outcomes of each query, built
    by :func:`~ecc_lib.data.comparisons.make_comparisons`), not a target vector, because the evidence
    is a variable number of comparisons per query. The scikit-learn checks that feed ``fit``
    arrays (``check_estimator``'s fitting checks) therefore do not apply; the parameter, clone
    and unfitted checks pass (``tests/test_estimator_checks.py``). Before ``fit`` every method
    raises :class:`~sklearn.exceptions.NotFittedError`.

    Parameters
    ----------
    n_clusters : int, default 30
    lam : float, default 3.0
        Weight of the cosine (embedding) term against the comparison evidence.
    temperature : float, default 0.1
    max_iter : int, default 100
        EM steps at most per initialisation.
    tol : float, default 1e-3
        Stop when the mean KL(r_old || r_new) is below ``tol`` and the largest centroid shift is
        below ``centroid_tol``; or when the relative objective change stays below
        ``objective_tol`` for ``patience`` consecutive steps.
    n_init : int, default 1
        Restarts from independent Dirichlet(1) responsibilities; the best objective wins.
    alpha : float, default 1.0
        BT prior precision (``0.5 * alpha * ||theta_k||^2``).
    centroid_tol, objective_tol : float
    patience : int
    dtype : {"float32", "float64"}
        Precision of embeddings, responsibilities and evidence (BT fits are always float64).
    n_jobs : int, optional
        Threads that process blocks of queries (default: the CPUs available). BLAS runs
        single-threaded inside each block.
    random_state : int, Generator or None

    Attributes
    ----------
    theta_ : ndarray (K, M)
        BT scores per cluster.
    centroids_ : ndarray (K, d)
    responsibilities_ : ndarray (n_queries, K)
        In the precision of ``dtype``.
    objective_ : float
        Final objective (see module docstring; includes the BT prior term).
    objective_history_ : list of float
        Objective after every EM step of the chosen initialisation; non-decreasing up to float
        rounding.
    converged_ : bool
    n_iter_ : int
    step_seconds_, step_cpu_seconds_ : list of float
        Wall and process CPU time (all threads) of each EM step of the chosen initialisation.
    models_ : tuple of str
    n_features_in_ : int
    """

    _use_evidence = True

    def __init__(
        self,
        n_clusters: int = 30,
        lam: float = 3.0,
        temperature: float = 0.1,
        max_iter: int = 100,
        tol: float = KL_TOL,
        n_init: int = 1,
        alpha: float = DEFAULT_ALPHA,
        centroid_tol: float = CENTROID_TOL,
        objective_tol: float = OBJECTIVE_TOL,
        patience: int = OBJECTIVE_PATIENCE,
        dtype: str = "float32",
        n_jobs: int | None = None,
        random_state=None,
    ):
        self.n_clusters = n_clusters
        self.lam = lam
        self.temperature = temperature
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.alpha = alpha
        self.centroid_tol = centroid_tol
        self.objective_tol = objective_tol
        self.patience = patience
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _validate_params(self) -> None:
        if int(self.n_clusters) < 1:
            raise ValueError(f"n_clusters must be >= 1, got {self.n_clusters}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if self.lam < 0:
            raise ValueError(f"lam must be >= 0, got {self.lam}")
        if int(self.max_iter) < 1 or int(self.n_init) < 1:
            raise ValueError("max_iter and n_init must be >= 1")
        if np.dtype(self.dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise ValueError(f"dtype must be float32 or float64, got {self.dtype}")

    def fit(self, embeddings: np.ndarray, comparisons: Comparisons, labels=None) -> ECC:
        """Fit clusters and profiles.

        Parameters
        ----------
        embeddings : ndarray, shape (n_queries, d)
            One unit embedding per query, aligned to ``comparisons.query_ids`` (rows are
            normalised if they are not unit length).
        comparisons : Comparisons
            Training comparisons; ties count half in each direction.
        labels : ignored
            Present for a common signature with :class:`~ecc_lib.ecc.baselines.HumanLabelClusters`.

        Returns
        -------
        self
        """
        backend = _data_backend(embeddings)
        if backend is not None:
            return backend.fit(self, embeddings, comparisons)
        self._validate_params()
        _check_comparisons(comparisons, "comparisons")
        dtype = np.dtype(self.dtype)
        x = _check_embeddings(embeddings, comparisons.n_queries, dtype)
        counts = pair_counts(comparisons, normalize=True, dtype=dtype)
        n_jobs = _n_jobs(self.n_jobs, x.shape[0])
        blocks = _blocks(counts.matrix, _block_rows(x.shape[0], n_jobs))
        n_jobs = min(n_jobs, len(blocks))
        rng = np.random.default_rng(self.random_state)
        k = int(self.n_clusters)
        best = None
        limit = _blas_controller().limit(limits=1, user_api="blas")
        with ThreadPoolExecutor(n_jobs) as pool, limit:
            for _ in range(int(self.n_init)):
                resp = rng.dirichlet(np.ones(k), size=x.shape[0]).astype(dtype)
                run = _run_em(
                    _LocalData(x, blocks, resp, pool),
                    counts,
                    n_queries=x.shape[0],
                    **self._em_params(dtype),
                    prior_update=self._prior_update(labels, x.shape[0], dtype),
                )
                if best is None or run.objective > best.objective:
                    best = run
        self._store(best, comparisons, x)
        if not best.converged:
            warnings.warn(
                f"{type(self).__name__} did not converge in {self.max_iter} EM steps; increase "
                "max_iter or tol",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _em_params(self, dtype) -> dict:
        """Keyword arguments of :func:`_run_em` taken from the estimator's parameters."""
        return dict(
            lam=float(self.lam),
            temperature=float(self.temperature),
            alpha=float(self.alpha),
            max_iter=int(self.max_iter),
            tol=float(self.tol),
            centroid_tol=float(self.centroid_tol),
            objective_tol=float(self.objective_tol),
            patience=int(self.patience),
            use_evidence=self._use_evidence,
            dtype=dtype,
        )

    def _prior_update(self, labels, n_rows: int, dtype):
        """Hook for subclasses: a callable ``resp -> (n, K) log prior`` re-estimated at every
        M-step, or None (plain ECC, no prior)."""
        return None

    def _store(self, run: _EMRun, comparisons: Comparisons, x: np.ndarray) -> None:
        self.theta_ = run.theta
        self.centroids_ = run.centroids
        self.responsibilities_ = run.responsibilities
        self.objective_ = float(run.objective)
        self.objective_history_ = list(run.history)
        self.converged_ = bool(run.converged)
        self.n_iter_ = int(run.n_iter)
        self.step_seconds_ = list(run.step_seconds)
        self.step_cpu_seconds_ = list(run.step_cpu_seconds)
        self.models_ = tuple(comparisons.models)
        self.n_features_in_ = int(x.shape[1])

    def evidence(self, comparisons: Comparisons) -> np.ndarray:
        """Evidence ``l_qk`` of ``comparisons`` under the fitted profiles, ``(n_queries, K)``.

        Parameters
        ----------
        comparisons : Comparisons
            Comparisons of the queries, in the fitted model order.

        Returns
        -------
        ndarray, shape (n_queries, n_clusters)
        """
        self._check_fitted()
        return evidence(self.theta_, comparisons)


__all__ = [
    "BLOCK_ROWS",
    "CENTROID_TOL",
    "DataBackend",
    "ECC",
    "KL_TOL",
    "MIN_BLOCK_ROWS",
    "MISSING_LABEL",
    "MODES",
    "OBJECTIVE_PATIENCE",
    "OBJECTIVE_TOL",
    "check_mode",
    "comparison_nll",
    "evidence",
    "labels_to_str",
    "log_prob_table",
    "register_data_backend",
]
