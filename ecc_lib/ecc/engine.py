"""The EM engine shared by ECC, ComparisonOnlyECC, EmbeddingClusters and ECC-CV, over a data
backend.

:func:`run_em` is the EM loop whatever holds the queries: the per-block maths
(:func:`block_e_step`, :func:`block_statistics`) runs on :class:`LocalData` (blocks of rows on a
thread pool) or on a registered data backend (:mod:`ecc_lib.ecc.backends`; the Dask partitions
of :mod:`ecc_lib.distributed`). :func:`fit_profiles` fits the Bradley-Terry profiles of a soft
assignment. See :mod:`ecc_lib.ecc.estimator` for the model and its objective.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from ecc_lib.bradley_terry import PairCounts, fit_bt_pairs, pair_counts, pair_log_probs
from ecc_lib.data.comparisons import Comparisons, available_cpus

BLOCK_ROWS = 8192
"""Most rows of one E-step block."""
MIN_BLOCK_ROWS = 512
"""Fewest rows of one E-step block (unless the data have fewer)."""
MIN_BLOCKS = 4
"""E-step blocks of data of ``MIN_BLOCKS * MIN_BLOCK_ROWS`` rows or more (more for data over
``MIN_BLOCKS * BLOCK_ROWS`` rows)."""


_CONTROLLER: ThreadpoolController | None = None


def blas_controller() -> ThreadpoolController:
    """One threadpoolctl controller per process (finding the BLAS libraries takes ~0.1 s).

    Returns
    -------
    ThreadpoolController
    """
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


def block_rows(n_rows: int) -> int:
    """Rows per block: a ``1 / MIN_BLOCKS`` share of the rows, within ``[MIN_BLOCK_ROWS,
    BLOCK_ROWS]``.

    The blocks depend on the rows only, never on the threads: the E-step sums its blocks in
    order, so a fit gives the same numbers with any ``n_jobs`` and on any machine (the blocks of a
    two-CPU machine's default before issue 34).

    Parameters
    ----------
    n_rows : int
        Rows of the data.

    Returns
    -------
    int
    """
    wanted = -(-n_rows // MIN_BLOCKS)
    return int(min(BLOCK_ROWS, max(MIN_BLOCK_ROWS, wanted)))


def resolve_n_jobs(n_jobs: int | None, upper: int) -> int:
    """Threads to use: ``n_jobs`` (negative counts back from the CPUs available), at most ``upper``.

    Parameters
    ----------
    n_jobs : int or None
        Requested threads (None: every CPU available; -1: all, -2: all but one ...).
    upper : int
        The most threads worth using (the rows of the data).

    Returns
    -------
    int
        At least 1.
    """
    if n_jobs is None or n_jobs < 1:
        available = available_cpus()
        n_jobs = available if n_jobs is None else max(1, available + 1 + n_jobs)
    return int(max(1, min(n_jobs, upper)))


class InlinePool:
    """A stand-in for a one-thread ``ThreadPoolExecutor``: ``map`` runs in the calling thread.

    With one block (or one thread) a pool only adds a hand-off per block and E-step; the blocks,
    their order and so the results are the same.
    """

    def map(self, fn, items):
        """``[fn(item) for item in items]``, eagerly, in order.

        Parameters
        ----------
        fn : callable
        items : iterable

        Returns
        -------
        list
            ``fn`` of each item.
        """
        return [fn(item) for item in items]

    def __enter__(self) -> InlinePool:
        return self

    def __exit__(self, *exc) -> None:
        return None


def executor(n_jobs: int):
    """A thread pool of ``n_jobs`` threads, or an :class:`InlinePool` for one.

    Parameters
    ----------
    n_jobs : int
        Threads.

    Returns
    -------
    ThreadPoolExecutor or InlinePool
        A context manager with ``map``.
    """
    return ThreadPoolExecutor(n_jobs) if n_jobs > 1 else InlinePool()


def normalise_rows(a: np.ndarray) -> np.ndarray:
    """Rows of ``a`` scaled to unit norm (an all-zero row stays zero).

    Parameters
    ----------
    a : ndarray (n, d)

    Returns
    -------
    ndarray (n, d)
    """
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    return a / np.maximum(norms, np.finfo(float).tiny)


def fit_profiles(
    comparisons: Comparisons, resp: np.ndarray, alpha: float, *, theta0=None, dtype=np.float64
) -> np.ndarray:
    """BT profiles of the soft assignment ``resp`` (n_queries, K): comparison weights
    ``r_qk / N_q``, fitted on the observed pairs (:func:`ecc_lib.bradley_terry.fit_bt_pairs`).

    Parameters
    ----------
    comparisons : Comparisons
        The training comparisons.
    resp : ndarray (n_queries, K)
        Soft assignment of the queries to the profiles.
    alpha : float
        Ridge strength of the BT prior.
    theta0 : ndarray (K, M), optional
        Warm start.
    dtype : dtype, default float64
        Of the normalised counts.

    Returns
    -------
    ndarray (K, M)
        The BT strengths of each profile.
    """
    counts = pair_counts(comparisons, normalize=True, dtype=dtype)
    wins = np.asarray(counts.matrix.T @ resp, dtype=float)
    return fit_bt_pairs(
        counts.winner, counts.loser, wins.T, counts.n_models, alpha=float(alpha), theta0=theta0
    )


# --------------------------------------------------------------------------------------------------
# the EM engine (shared by ECC, ComparisonOnlyECC and EmbeddingClusters)


@dataclass
class EMRun:
    """What :func:`run_em` returns: the fitted parameters, the objective and its history, timings
    per step, and whether and after how many steps the loop converged.

    Parameters
    ----------
    theta : ndarray (K, M)
        BT strengths of the profiles.
    centroids : ndarray (K, d)
        Unit centroids.
    responsibilities : ndarray (n, K)
        Final responsibilities.
    objective : float
        Final objective.
    history : list of float
        Objective after each step.
    step_seconds, step_cpu_seconds : list of float
        Wall and CPU time of each step.
    converged : bool
        Whether a stopping rule fired before ``max_iter``.
    n_iter : int
        Steps run.
    """

    theta: np.ndarray
    centroids: np.ndarray
    responsibilities: np.ndarray
    objective: float
    history: list[float] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)
    step_cpu_seconds: list[float] = field(default_factory=list)
    converged: bool = False
    n_iter: int = 0


def row_blocks(counts: sp.csr_matrix, block_rows: int) -> list[tuple[int, int, sp.csr_matrix]]:
    """``(start, stop, rows of counts)`` for consecutive blocks of ``block_rows`` rows.

    Parameters
    ----------
    counts : csr_matrix (n, n_pairs)
        Normalised win counts.
    block_rows : int
        Rows per block.

    Returns
    -------
    list of (int, int, csr_matrix)
    """
    n = counts.shape[0]
    return [
        (i, min(i + block_rows, n), counts[i : i + block_rows]) for i in range(0, n, block_rows)
    ]


def block_statistics(xb: np.ndarray, cb: sp.csr_matrix, rb: np.ndarray, cb_t=None):
    """M-step statistics of one block of queries: weighted win counts per observed pair
    ``C_b^T R_b`` (n_pairs, K) and centroid sums ``X_b^T R_b`` (d, K).

    Parameters
    ----------
    xb : ndarray (n_b, d)
        Unit embeddings of the block.
    cb : csr_matrix (n_b, n_pairs)
        Normalised win counts of the block.
    rb : ndarray (n_b, K)
        Responsibilities of the block.
    cb_t : csc_matrix (n_pairs, n_b), optional
        ``cb.T``, made once per fit (a transpose per E-step costs more than its product on small
        blocks; the same matrix, so the same numbers).

    Returns
    -------
    wins : ndarray (n_pairs, K)
    sums : ndarray (d, K)
    """
    return (cb.T if cb_t is None else cb_t) @ rb, xb.T @ rb


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


def softmax_rows(xb, cb, table, cen, out: np.ndarray) -> np.ndarray:
    """Responsibilities of a block written into ``out``; returns their ``sum_k r log r``
    (what :func:`block_e_step` leaves behind, recomputed from the same parameters).

    Parameters
    ----------
    xb : ndarray (n_b, d)
        Unit embeddings of the block.
    cb : csr_matrix (n_b, n_pairs)
        Normalised win counts of the block.
    table : ndarray (n_pairs, K) or None
        ``log P_k(w beats l) / T`` per observed pair (None: no evidence term).
    cen : ndarray (d, K)
        Centroids times ``lam / T``, transposed.
    out : ndarray (n_b, K)
        Where the responsibilities go.

    Returns
    -------
    ndarray (n_b,)
        ``sum_k r log r`` per row.
    """
    s, _ = _scores(xb, cb, table, cen)
    log_total = _softmax_into(s, out)
    return np.einsum("ij,ij->i", out, s) - log_total


def block_e_step(
    xb: np.ndarray,
    cb: sp.csr_matrix,
    table: np.ndarray | None,
    cen: np.ndarray,
    old_resp: np.ndarray,
    old_neg_entropy: np.ndarray,
    out_resp: np.ndarray,
    out_neg_entropy: np.ndarray,
    *,
    log_prior: np.ndarray | None = None,
    cb_t=None,
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
    cb_t : csc_matrix, optional
        ``cb.T`` (see :func:`block_statistics`).

    Returns
    -------
    lse : float
        Sum over the block of ``logsumexp_k`` of the scaled scores.
    kl : float
        Sum over the block of ``KL(r_old || r_new)``.
    wins, sums : ndarray
        :func:`block_statistics` of the new responsibilities.
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
    wins, sums = block_statistics(xb, cb, rb, cb_t)
    return lse, kl, wins, sums


def neg_entropy(resp: np.ndarray) -> np.ndarray:
    """``sum_k r_qk log r_qk`` per row (0 log 0 = 0).

    Parameters
    ----------
    resp : ndarray (n, K)

    Returns
    -------
    ndarray (n,)
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        logr = np.where(resp > 0, np.log(resp), 0.0)
    return np.einsum("ij,ij->i", resp, logr)


def _sum_statistics(parts, n_pairs: int, dim: int, k: int):
    """Add up per-block ``(lse, kl, wins, sums)`` (or ``(wins, sums)``) tuples (in float64; the
    first block's arrays are copied rather than added to zeros, the same numbers)."""
    wins = sums_t = scalars = None
    for part in parts:
        *head, w, s = part
        if wins is None:
            wins, sums_t = np.array(w, dtype=np.float64), np.array(s, dtype=np.float64)
            scalars = list(head)
            continue
        wins += w
        sums_t += s
        scalars = [a + b for a, b in zip(scalars, head)]
    if wins is None:
        wins, sums_t, scalars = np.zeros((n_pairs, k)), np.zeros((dim, k)), []
    return (*scalars, wins, sums_t)


class LocalData:
    """In-memory queries for :func:`run_em`: blocks of rows processed on a thread pool (NumPy,
    BLAS and scipy.sparse release the GIL); each block writes its own rows of ``resp``.

    Parameters
    ----------
    x : ndarray (n, d)
        Unit embeddings.
    blocks : list of (int, int, csr_matrix)
        :func:`row_blocks` of the normalised win counts.
    resp : ndarray (n, K)
        Starting responsibilities (updated in place).
    pool : concurrent.futures.Executor
        Runs the blocks.
    """

    def __init__(self, x: np.ndarray, blocks, resp: np.ndarray, pool):
        self.x = x
        self.blocks = blocks
        self.resp = resp
        self.pool = pool
        self.neg_entropy = neg_entropy(resp).astype(resp.dtype)
        self.n_pairs = blocks[0][2].shape[1]
        self.transposed = [cb.T for _, _, cb in blocks]  # once per fit, read by every E-step

    def statistics(self):
        """Sufficient statistics ``(wins, sums)`` of the current responsibilities, summed over
        the blocks.

        Returns
        -------
        wins : ndarray (n_pairs, K)
        sums : ndarray (d, K)
        """
        x, resp = self.x, self.resp

        def work(item):
            (i0, i1, cb), cb_t = item
            return block_statistics(x[i0:i1], cb, resp[i0:i1], cb_t)

        return self._sum_over_blocks(work)

    def _sum_over_blocks(self, work):
        """``work((start, stop, counts), counts.T)`` of every block on the pool, summed."""
        parts = self.pool.map(work, list(zip(self.blocks, self.transposed)))
        return _sum_statistics(parts, self.n_pairs, self.x.shape[1], self.resp.shape[1])

    def e_step(self, table, cen, log_prior=None):
        """One E-step over every block (see :func:`block_e_step`).

        Parameters
        ----------
        table : ndarray (n_pairs, K) or None
            ``log P / T`` per observed pair.
        cen : ndarray (d, K)
            Scaled centroids, transposed.
        log_prior : ndarray (n, K), optional
            Added to the scores.

        Returns
        -------
        tuple
            ``(lse, kl, wins, sums)`` summed over the queries.
        """
        x, resp, ne = self.x, self.resp, self.neg_entropy

        def work(item):
            (i0, i1, cb), cb_t = item
            prior = None if log_prior is None else log_prior[i0:i1]
            return block_e_step(
                x[i0:i1],
                cb,
                table,
                cen,
                resp[i0:i1],
                ne[i0:i1],
                resp[i0:i1],
                ne[i0:i1],
                log_prior=prior,
                cb_t=cb_t,
            )

        return self._sum_over_blocks(work)

    def responsibilities(self):
        """The current responsibilities.

        Returns
        -------
        ndarray (n, K)
        """
        return self.resp


def run_em(
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
) -> EMRun:
    """The EM loop, whatever holds the queries.

    ``data`` runs the per-block maths (:class:`LocalData` in memory, or the Dask partitions of
    :mod:`ecc_lib.distributed`): ``statistics()`` gives the sufficient statistics of the starting
    responsibilities, ``e_step(table, cen)`` runs one E-step and returns ``(lse, kl, wins,
    sums)`` summed over all queries, ``responsibilities()`` the final ones. The M-step here only
    sees those sums: ``wins`` (n_pairs, K) feed the batched BT fit, ``sums`` (d, K) the centroids.
    ``prior_update`` (optional, in-memory data only) maps the current responsibilities to an
    ``(n, K)`` log prior added to the next E-step's scores (an M-step of a per-query prior).

    Parameters
    ----------
    data : LocalData or a backend's partitioned data
        The queries, with ``statistics``, ``e_step`` and ``responsibilities``.
    pairs : PairCounts
        The observed (winner, loser) pairs.
    n_queries : int
        Queries in ``data`` (the KL stopping rule averages over them).
    lam, temperature, alpha : float
        ECC's embedding weight, temperature and BT ridge strength.
    max_iter : int
        Most EM steps.
    tol, centroid_tol, objective_tol : float
        Stopping rules: mean KL of the responsibilities with centroid shift, relative objective
        change.
    patience : int
        Steps of small objective change before stopping.
    use_evidence : bool
        Whether the profiles feed the E-step (False: fitted once, after).
    dtype : dtype
        Of the E-step products.
    prior_update : callable, optional
        Current responsibilities -> ``(n, K)`` log prior for the next E-step.

    Returns
    -------
    EMRun
    """
    wins, sums = data.statistics()
    k = wins.shape[1]
    m = pairs.n_models
    theta = np.zeros((k, m))
    centroids = None
    run = EMRun(theta, np.zeros((k, sums.shape[0])), None, -np.inf)
    small = 0
    for it in range(1, max_iter + 1):
        start, start_cpu = time.perf_counter(), time.process_time()
        # without evidence the profiles do not feed the E-step: they are fitted once, after
        if use_evidence:
            theta = fit_bt_pairs(pairs.winner, pairs.loser, wins.T, m, alpha=alpha, theta0=theta)
        new_centroids = normalise_rows(sums.T)
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


__all__ = [
    "fit_profiles",
    "normalise_rows",
]
