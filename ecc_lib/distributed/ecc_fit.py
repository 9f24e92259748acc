"""The ECC fit on Dask partitions: the E-step per partition, the M-step on reduced statistics
(see :mod:`ecc_lib.distributed`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ecc_lib._optional import require
from ecc_lib.bradley_terry import PairCounts, pair_counts
from ecc_lib.data.comparisons import Comparisons
from ecc_lib.distributed.scheduler import DEFAULT_PARTITION_ROWS, active_settings, is_dask_array
from ecc_lib.ecc.engine import block_e_step, block_statistics, neg_entropy, run_em, softmax_rows
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.validation import check_comparisons, check_embeddings

# --------------------------------------------------------------------------------------------------
# partitions and the tasks that run on them


@dataclass(frozen=True)
class Partition:
    """One partition of the queries: lazy embeddings and count rows over the global pairs.

    Attributes
    ----------
    n_rows : int
    x : dask.delayed.Delayed
        Unit embeddings of the partition's queries, ``(n_rows, d)``.
    counts : dask.delayed.Delayed
        ``csr_matrix (n_rows, n_pairs)`` of normalised win counts over the fit's pair columns.
    """

    n_rows: int
    x: object
    counts: object


def _init_responsibilities(state: dict, n_rows: int, k: int, dtype) -> np.ndarray:
    """Rows of the seeded Dirichlet(1) start, drawn from a saved bit-generator state."""
    bit_generator = getattr(np.random, state["bit_generator"])()
    bit_generator.state = state
    return np.random.Generator(bit_generator).dirichlet(np.ones(k), size=n_rows).astype(dtype)


def _responsibilities(xb, cb, spec, dtype):
    """A partition's responsibilities and their ``sum r log r`` under ``spec``: ``("init",
    state, k)`` for the Dirichlet start, ``("params", table, cen)`` after an E-step."""
    if spec[0] == "init":
        resp = _init_responsibilities(spec[1], xb.shape[0], spec[2], dtype)
        return resp, neg_entropy(resp).astype(dtype)
    _, table, cen = spec
    resp = np.empty((xb.shape[0], cen.shape[1]), dtype=dtype)
    resp_neg_entropy = softmax_rows(xb, cb, table, cen, resp)
    return resp, resp_neg_entropy


def _partition_statistics(xb, cb, spec, dtype):
    resp, _ = _responsibilities(xb, cb, spec, dtype)
    return block_statistics(xb, cb, resp)


def _partition_e_step(xb, cb, previous, table, cen, dtype):
    old_resp, old_neg_entropy = _responsibilities(xb, cb, previous, dtype)
    new_resp = np.empty_like(old_resp)
    new_neg_entropy = np.empty_like(old_neg_entropy)
    return block_e_step(xb, cb, table, cen, old_resp, old_neg_entropy, new_resp, new_neg_entropy)


def _partition_responsibilities(xb, cb, spec, dtype):
    return _responsibilities(xb, cb, spec, dtype)[0]


def _add(a, b):
    return tuple(x + y for x, y in zip(a, b))


def _tree_sum(parts: list, delayed) -> object:
    """Pairwise sums of delayed statistic tuples, depth ``log2(len(parts))``."""
    add = delayed(_add, pure=True)
    while len(parts) > 1:
        parts = [
            add(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
            for i in range(0, len(parts), 2)
        ]
    return parts[0]


class _DaskData:
    """Partitioned queries for :func:`ecc_lib.ecc.engine.run_em` (same interface as its in-memory
    ``LocalData``): each call builds one task per partition plus a tree reduction."""

    def __init__(self, partitions, n_pairs, dim, k, init_states, dtype, client):
        self.partitions = partitions
        self.n_pairs = n_pairs
        self.dim = dim
        self.k = k
        self.dtype = dtype
        self.client = client
        self.specs = [("init", state, k) for state in init_states]

    def _compute(self, obj):
        dask = require("dask", extra="dask")

        try:
            if self.client is not None:
                return self.client.compute(obj).result()
            return dask.compute(obj)[0]
        except Exception as error:  # noqa: BLE001 - name the distributed failure clearly
            if type(error).__name__ in ("KilledWorker", "FutureCancelledError", "CommClosedError"):
                raise RuntimeError(
                    f"the distributed ECC fit lost its workers: {type(error).__name__}: {error}. "
                    "A partition task failed repeatedly (a worker died each time it ran it); "
                    "check worker memory and logs, or use smaller partitions"
                ) from error
            raise

    def statistics(self):
        delayed = require("dask", extra="dask").delayed

        task = delayed(_partition_statistics, pure=True)
        parts = [
            task(p.x, p.counts, spec, self.dtype) for p, spec in zip(self.partitions, self.specs)
        ]
        wins, sums = self._compute(_tree_sum(parts, delayed))
        return np.asarray(wins, dtype=float), np.asarray(sums, dtype=float)

    def e_step(self, table, cen):
        delayed = require("dask", extra="dask").delayed

        table_d = delayed(table, traverse=False) if table is not None else None
        cen_d = delayed(cen, traverse=False)
        task = delayed(_partition_e_step, pure=True)
        parts = [
            task(p.x, p.counts, spec, table_d, cen_d, self.dtype)
            for p, spec in zip(self.partitions, self.specs)
        ]
        lse, kl, wins, sums = self._compute(_tree_sum(parts, delayed))
        spec = ("params", table, cen)
        self.specs = [spec] * len(self.partitions)
        return float(lse), float(kl), np.asarray(wins, dtype=float), np.asarray(sums, dtype=float)

    def responsibilities(self):
        """Final responsibilities as a dask array (one block per partition)."""
        da = require("dask.array", extra="dask")
        delayed = require("dask", extra="dask").delayed

        task = delayed(_partition_responsibilities, pure=True)
        blocks = [
            da.from_delayed(
                task(p.x, p.counts, spec, self.dtype), shape=(p.n_rows, self.k), dtype=self.dtype
            )
            for p, spec in zip(self.partitions, self.specs)
        ]
        return da.concatenate(blocks, axis=0)


# --------------------------------------------------------------------------------------------------
# building partitions


def _row_bounds(n_rows: int, partition_rows: int) -> list[tuple[int, int]]:
    return [(i, min(i + partition_rows, n_rows)) for i in range(0, n_rows, partition_rows)]


def _normalise_block(xb, dtype):
    return check_embeddings(xb, None, dtype, what="embeddings partition")


def partitions_from_arrays(
    embeddings,
    counts: PairCounts,
    *,
    partition_rows: int | Sequence[int] | None = None,
    dtype=np.float32,
    persist: bool = True,
    client=None,
) -> list[Partition]:
    """Partitions of in-memory or dask-array embeddings and a count matrix.

    Parameters
    ----------
    embeddings : ndarray or dask.array.Array, shape (n_queries, d)
        A dask array keeps its row chunks as partitions (``partition_rows`` is then ignored) and
        is read chunk by chunk at every EM step; a NumPy array is split into partitions.
    counts : PairCounts
        Normalised win counts of every query over the fit's pair columns.
    partition_rows : int or sequence of int, optional
        Rows per partition (one size, or the size of each partition: unequal sizes are allowed).
    dtype : float32 or float64
    persist : bool, default True
        Keep NumPy partitions on the workers between steps (dask arrays are never persisted, so
        that embeddings larger than the cluster's memory stream from disk).
    client : distributed.Client, optional

    Returns
    -------
    list of Partition
    """
    dask = require("dask", extra="dask", purpose="the distributed ECC fit")
    delayed = dask.delayed

    n = counts.matrix.shape[0]
    if int(np.shape(embeddings)[0]) != n:
        raise ValueError(
            f"embeddings have {np.shape(embeddings)[0]} row(s) but the comparisons refer to {n} "
            "queries; pass one embedding row per query, in the order of comparisons.query_ids"
        )
    normalise = delayed(_normalise_block, pure=True)
    if is_dask_array(embeddings):
        x = embeddings.rechunk({1: -1})
        bounds = np.cumsum((0,) + x.chunks[0])
        x_parts = [normalise(block, dtype) for block in x.to_delayed()[:, 0]]
        bounds = list(zip(bounds[:-1], bounds[1:]))
    else:
        x = np.asarray(embeddings)
        if partition_rows is None:
            partition_rows = DEFAULT_PARTITION_ROWS
        if np.ndim(partition_rows) == 0:
            bounds = _row_bounds(n, int(partition_rows))
        else:
            sizes = np.asarray(partition_rows, dtype=np.int64)
            if sizes.sum() != n or np.any(sizes < 1):
                raise ValueError(
                    f"partition_rows {sizes.tolist()} must be positive and add up to {n} queries"
                )
            edges = np.concatenate([[0], np.cumsum(sizes)])
            bounds = list(zip(edges[:-1], edges[1:]))
        x_parts = [normalise(x[i0:i1], dtype) for i0, i1 in bounds]
    c_parts = [delayed(counts.matrix[i0:i1], traverse=False) for i0, i1 in bounds]
    if persist and not is_dask_array(embeddings):
        if client is not None:
            x_parts = client.persist(x_parts)
            c_parts = client.persist(c_parts)
        else:
            x_parts = list(dask.persist(*x_parts))
            c_parts = list(dask.persist(*c_parts))
    return [Partition(int(i1 - i0), xp, cp) for (i0, i1), xp, cp in zip(bounds, x_parts, c_parts)]


# --------------------------------------------------------------------------------------------------
# the fit


def _init_states(rng: np.random.Generator, sizes: Sequence[int], k: int) -> list[dict]:
    """Bit-generator state before each partition's rows of ``rng.dirichlet(ones(k), size=n)``;
    advances ``rng`` exactly as the in-memory fit's single draw does (row by row)."""
    states = []
    for size in sizes:
        states.append(rng.bit_generator.state)
        rng.dirichlet(np.ones(k), size=int(size))
    return states


def fit_partitioned(
    estimator: ECC,
    embeddings,
    comparisons: Comparisons | None = None,
    *,
    partitions: Sequence[Partition] | None = None,
    pairs: PairCounts | None = None,
    client=None,
    partition_rows: int | Sequence[int] | None = None,
    compute_responsibilities: bool | None = None,
) -> ECC:
    """Fit an ECC-family estimator (ECC, ComparisonOnlyECC, EmbeddingClusters) on Dask.

    Same EM, same start (the seeded Dirichlet draw of ``estimator.random_state``), same stopping
    rule and same attributes as ``estimator.fit``; only where the per-query work runs differs.

    Parameters
    ----------
    estimator : ECC
        Unfitted or fitted; its parameters are used and its fitted attributes set.
    embeddings : ndarray or dask.array.Array, shape (n_queries, d)
        Ignored when ``partitions`` are given.
    comparisons : Comparisons, optional
        Training comparisons (needed unless ``partitions`` and ``pairs`` are given).
    partitions : sequence of Partition, optional
        Ready partitions, e.g. built on the workers from files (see
        ``benchmarks/scale_out_of_core.py``); their count matrices use the columns of ``pairs``.
    pairs : PairCounts, optional
        Pair columns (``winner``, ``loser``, ``n_models``) of ``partitions``.
    client : distributed.Client, optional
        Default: the client of :func:`use_dask`, else the current default Dask scheduler.
    partition_rows : int or sequence of int, optional
        See :func:`partitions_from_arrays`.
    compute_responsibilities : bool, optional
        Store ``responsibilities_`` as a NumPy array (default when the inputs were in memory)
        instead of a dask array.

    Returns
    -------
    estimator
    """
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    settings = active_settings() or {}
    client = client if client is not None else settings.get("client")
    if partition_rows is None:
        partition_rows = settings.get("partition_rows")
    estimator._validate_params()
    dtype = np.dtype(estimator.dtype)
    in_memory = partitions is None and not is_dask_array(embeddings)
    if partitions is None:
        check_comparisons(comparisons, "comparisons")
        pairs = pair_counts(comparisons, normalize=True, dtype=dtype)
        if partition_rows is None and in_memory:
            n_workers = len(client.scheduler_info()["workers"]) if client is not None else 2
            partition_rows = max(
                1, min(DEFAULT_PARTITION_ROWS, -(-len(embeddings) // (2 * n_workers)))
            )
        partitions = partitions_from_arrays(
            embeddings, pairs, partition_rows=partition_rows, dtype=dtype, client=client
        )
    elif pairs is None:
        raise ValueError("fit_partitioned with partitions needs pairs (their pair columns)")
    sizes = [p.n_rows for p in partitions]
    n_queries = int(sum(sizes))
    dim = int(np.shape(embeddings)[1]) if embeddings is not None else None
    if dim is None:
        raise ValueError("fit_partitioned needs embeddings (or an array of their shape)")
    rng = np.random.default_rng(estimator.random_state)
    k = int(estimator.n_clusters)
    best = None
    for _ in range(int(estimator.n_init)):
        states = _init_states(rng, sizes, k)
        data = _DaskData(list(partitions), pairs.n_pairs, dim, k, states, dtype, client)
        run = run_em(data, pairs, n_queries=n_queries, **estimator._em_params(dtype))
        if best is None or run.objective > best.objective:
            best, best_data = run, data
    if compute_responsibilities is None:
        compute_responsibilities = in_memory
    if compute_responsibilities:
        best.responsibilities = np.asarray(best_data._compute(best.responsibilities))
    models = (
        comparisons.models
        if comparisons is not None
        else tuple(f"model_{m}" for m in range(pairs.n_models))
    )
    estimator._store(best, SimpleNamespace(models=models), SimpleNamespace(shape=(n_queries, dim)))
    if not best.converged:
        warnings.warn(
            f"{type(estimator).__name__} did not converge in {estimator.max_iter} EM steps; "
            "increase max_iter or tol",
            ConvergenceWarning,
            stacklevel=2,
        )
    return estimator


__all__ = [
    "Partition",
    "fit_partitioned",
]
