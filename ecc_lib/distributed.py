"""ECC on partitioned data with Dask: the E-step per partition, the M-step on reduced statistics.

Both EM steps are sums over queries (``DESIGN.md`` section 5): the E-step of a partition needs
only its own embeddings and comparisons plus the current profiles and centroids, and the M-step
needs only the sums over partitions of ``C_p^T R_p`` (weighted win counts per observed pair) and
``X_p^T R_p`` (centroid sums). So a fit sends the profiles (as a ``log P / T`` table over the
observed pairs) and scaled centroids to every partition, runs
:func:`ecc_lib.ecc._block_e_step` there (the same function the in-memory fit runs on its
blocks), adds the statistics up in a tree, and runs the M-step of :func:`ecc_lib.ecc._run_em` on
the client. The EM loop, the BT fit and the stopping rule are the in-memory ones.

Tasks are pure functions of a partition and the parameters: a partition's responsibilities before
the step (needed for the KL stopping test) are recomputed from the previous parameters, or from
the seeded Dirichlet start, instead of being kept on a worker. A worker that dies mid-fit is
therefore survived: the scheduler reruns its tasks elsewhere (reloading the partition from its
source); when a task keeps failing, the fit raises a :class:`RuntimeError` that says so.

Usage::

    from ecc_lib.distributed import dask_client, use_dask
    with dask_client("local") as client, use_dask(client):
        ECC(random_state=0).fit(embeddings, comparisons)   # runs partitioned

DARS statistics (distributions, labels, the three flip readings) come from one
``dask.dataframe`` group-by over partitioned outcomes: :func:`dars_statistics`.

Or pass a ``dask.array`` of embeddings (for example over a memory-mapped ``.npy`` file) to
:func:`fit_partitioned`; its row chunks are the partitions and are read from disk at every step.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ecc_lib.bradley_terry import PairCounts, pair_counts
from ecc_lib.comparisons import Comparisons
from ecc_lib.ecc import (
    ECC,
    _block_e_step,
    _block_statistics,
    _check_comparisons,
    _check_embeddings,
    _neg_entropy,
    _run_em,
    _softmax_rows,
)

logger = logging.getLogger(__name__)

DEFAULT_PARTITION_ROWS = 50_000

_ACTIVE: contextvars.ContextVar[dict | None] = contextvars.ContextVar("ecc_dask", default=None)


# --------------------------------------------------------------------------------------------------
# scheduler and backend selection


@contextlib.contextmanager
def dask_client(scheduler: str, n_workers: int = 2, threads_per_worker: int = 1) -> Iterator:
    """A ``distributed.Client`` for ``scheduler``: ``"local"`` starts a ``LocalCluster`` of
    ``n_workers`` worker processes (closed on exit); anything else is a scheduler address such as
    ``tcp://10.0.0.5:8786`` (the cluster is left running).

    Parameters
    ----------
    scheduler : str
        ``"local"`` or a scheduler address.
    n_workers, threads_per_worker : int
        Size of the local cluster (ignored for an address).

    Yields
    ------
    distributed.Client
    """
    from distributed import Client, LocalCluster

    if not scheduler:
        raise ValueError("scheduler must be 'local' or a scheduler address, got an empty string")
    if scheduler == "local":
        with (
            LocalCluster(
                n_workers=n_workers,
                threads_per_worker=threads_per_worker,
                processes=True,
                dashboard_address=":0",
            ) as cluster,
            Client(cluster) as client,
        ):
            yield client
    else:
        try:
            client = Client(scheduler, timeout="20s")
        except OSError as error:
            raise RuntimeError(
                f"cannot reach the Dask scheduler at {scheduler!r} ({error}); start one with "
                "`dask scheduler` and workers with `dask worker ADDRESS`"
            ) from error
        with client:
            yield client


@contextlib.contextmanager
def use_dask(client=None, partition_rows: int | None = None) -> Iterator[None]:
    """Run every ECC-family fit inside the block on Dask partitions.

    Parameters
    ----------
    client : distributed.Client, optional
        Where to run (default: the current default Dask scheduler).
    partition_rows : int, optional
        Queries per partition for in-memory inputs (default: an even split into twice as many
        partitions as workers, at most ``DEFAULT_PARTITION_ROWS`` rows each).

    Yields
    ------
    None
        The settings hold until the block exits.
    """
    token = _ACTIVE.set({"client": client, "partition_rows": partition_rows})
    try:
        yield
    finally:
        _ACTIVE.reset(token)


@contextlib.contextmanager
def scheduler_context(scheduler: str = "", partition_rows: int | None = None) -> Iterator:
    """Run the ECC-family fits of the block on ``scheduler``, or in memory when it is empty.

    The one switch behind ``--scheduler`` and the notebooks' ``scheduler`` parameter:
    ``""`` changes nothing, ``"local"`` starts a local cluster for the block, anything else is
    the address of a running scheduler (:func:`dask_client`); inside the block every ECC fit runs
    on Dask partitions (:func:`use_dask`).

    Parameters
    ----------
    scheduler : str
        ``""`` (in memory), ``"local"`` or a scheduler address such as ``tcp://10.0.0.5:8786``.
    partition_rows : int, optional
        Queries per partition (see :func:`use_dask`).

    Yields
    ------
    distributed.Client or None
        The client, or ``None`` in memory.
    """
    if not scheduler:
        yield None
        return
    with dask_client(scheduler) as client, use_dask(client, partition_rows):
        yield client


def active(embeddings=None) -> bool:
    """Whether an ECC fit should run partitioned: inside :func:`use_dask`, or on a dask array.

    Parameters
    ----------
    embeddings : array-like, optional
        The fit's embeddings (a dask array makes the answer True).

    Returns
    -------
    bool
    """
    return _ACTIVE.get() is not None or _is_dask_array(embeddings)


def _is_dask_array(x) -> bool:
    return type(x).__module__.startswith("dask.array")


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
        return resp, _neg_entropy(resp).astype(dtype)
    _, table, cen = spec
    resp = np.empty((xb.shape[0], cen.shape[1]), dtype=dtype)
    neg_entropy = _softmax_rows(xb, cb, table, cen, resp)
    return resp, neg_entropy


def _partition_statistics(xb, cb, spec, dtype):
    resp, _ = _responsibilities(xb, cb, spec, dtype)
    return _block_statistics(xb, cb, resp)


def _partition_e_step(xb, cb, previous, table, cen, dtype):
    old_resp, old_neg_entropy = _responsibilities(xb, cb, previous, dtype)
    new_resp = np.empty_like(old_resp)
    new_neg_entropy = np.empty_like(old_neg_entropy)
    return _block_e_step(xb, cb, table, cen, old_resp, old_neg_entropy, new_resp, new_neg_entropy)


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
    """Partitioned queries for :func:`ecc_lib.ecc._run_em` (same interface as its in-memory
    ``_LocalData``): each call builds one task per partition plus a tree reduction."""

    def __init__(self, partitions, n_pairs, dim, k, init_states, dtype, client):
        self.partitions = partitions
        self.n_pairs = n_pairs
        self.dim = dim
        self.k = k
        self.dtype = dtype
        self.client = client
        self.specs = [("init", state, k) for state in init_states]

    def _compute(self, obj):
        import dask

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
        from dask import delayed

        task = delayed(_partition_statistics, pure=True)
        parts = [
            task(p.x, p.counts, spec, self.dtype) for p, spec in zip(self.partitions, self.specs)
        ]
        wins, sums = self._compute(_tree_sum(parts, delayed))
        return np.asarray(wins, dtype=float), np.asarray(sums, dtype=float)

    def e_step(self, table, cen):
        from dask import delayed

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
        import dask.array as da
        from dask import delayed

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
    return _check_embeddings(xb, None, dtype, what="embeddings partition")


def partitions_from_arrays(
    embeddings,
    counts: PairCounts,
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
    import dask
    from dask import delayed

    n = counts.matrix.shape[0]
    if int(np.shape(embeddings)[0]) != n:
        raise ValueError(
            f"embeddings have {np.shape(embeddings)[0]} row(s) but the comparisons refer to {n} "
            "queries; pass one embedding row per query, in the order of comparisons.query_ids"
        )
    normalise = delayed(_normalise_block, pure=True)
    if _is_dask_array(embeddings):
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
    if persist and not _is_dask_array(embeddings):
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

    settings = _ACTIVE.get() or {}
    client = client if client is not None else settings.get("client")
    if partition_rows is None:
        partition_rows = settings.get("partition_rows")
    estimator._validate_params()
    dtype = np.dtype(estimator.dtype)
    in_memory = partitions is None and not _is_dask_array(embeddings)
    if partitions is None:
        _check_comparisons(comparisons, "comparisons")
        pairs = pair_counts(comparisons, normalize=True, dtype=dtype)
        if partition_rows is None and in_memory:
            n_workers = len(client.scheduler_info()["workers"]) if client is not None else 2
            partition_rows = max(
                1, min(DEFAULT_PARTITION_ROWS, -(-len(embeddings) // (2 * n_workers)))
            )
        partitions = partitions_from_arrays(
            embeddings, pairs, partition_rows, dtype=dtype, client=client
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
        run = _run_em(data, pairs, n_queries=n_queries, **estimator._em_params(dtype))
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


# --------------------------------------------------------------------------------------------------
# DARS statistics as dask.dataframe group-bys


@dataclass(frozen=True)
class DarsStatistics:
    """DARS targets, labels and the three flip readings computed from partitioned outcomes.

    Attributes
    ----------
    distributions : ecc_lib.dars.CapabilityDistributions
        Queries in sorted ``query_id`` order, models sorted by name.
    utility : ndarray (n_queries, n_models)
    labels : dict
        Share of queries whose ``argmax U`` is each model (:func:`ecc_lib.dars.label_shares`).
    flip_rates : dict or None
        Per-query means with bootstrap 95 % intervals of the pairwise, strict and change readings
        (exact for binary scores; ``None`` for other scores), with the chance level; over queries
        where every model has an observation.
    """

    distributions: object
    utility: np.ndarray
    labels: dict
    flip_rates: dict | None


def dars_statistics(
    outcomes,
    cost_weight: float | None = None,
    beta: float | None = None,
    change_draws: int | None = None,
    client=None,
    n_boot: int = 1000,
    random_state: int | None = 0,
) -> DarsStatistics:
    """DARS distributions, labels and flip readings with one Dask group-by over the outcomes.

    The group-by on ``(query_id, model)`` reduces each partition to sums (count, sum and sum of
    squares of the score, sum and count of the cost, count of binary scores); everything after it
    is a ``queries x models`` table and reuses the in-memory functions (:mod:`ecc_lib.dars`,
    :mod:`ecc_lib.dars_diagnostics`).

    Parameters
    ----------
    outcomes : dask.dataframe.DataFrame or pandas.DataFrame
        Long outcomes with ``query_id, model, score`` and optional ``cost`` (e.g.
        ``dd.read_parquet(folder)`` over many Parquet partitions).
    cost_weight, beta : float, optional
        Utility weights (default: the DARS defaults).
    change_draws : int, optional
        ``R`` of the change reading (default: the median observations per pair, at least 2).
    client : distributed.Client, optional
    n_boot : int
    random_state : int, optional
        Seed of the bootstrap intervals.

    Returns
    -------
    DarsStatistics
    """
    import dask.dataframe as dd
    import pandas as pd

    from ecc_lib.dars import DEFAULT_BETA, DEFAULT_LAMBDA, CapabilityDistributions, label_shares
    from ecc_lib.dars_diagnostics import (
        chance_flip_rates,
        change_probability,
        default_change_draws,
        flip_probability,
        strict_flip_probability_exact,
        winner_probabilities_exact,
    )
    from ecc_lib.metrics import bootstrap_ci
    from ecc_lib.observations import _normalise_cost

    cost_weight = DEFAULT_LAMBDA if cost_weight is None else cost_weight
    beta = DEFAULT_BETA if beta is None else beta
    if isinstance(outcomes, pd.DataFrame):
        outcomes = dd.from_pandas(outcomes, npartitions=4)
    missing = [c for c in ("query_id", "model", "score") if c not in outcomes.columns]
    if missing:
        raise ValueError(f"outcomes are missing column(s) {missing}")
    has_cost = "cost" in outcomes.columns
    frame = outcomes[["query_id", "model", "score"] + (["cost"] if has_cost else [])]
    frame = frame.assign(
        query_id=frame["query_id"].astype(str),
        model=frame["model"].astype(str),
        score2=frame["score"] * frame["score"],
        binary=frame["score"].isin([0.0, 1.0]).astype("int64"),
    )
    aggregations = {"score": ["count", "sum"], "score2": "sum", "binary": "sum"}
    if has_cost:
        aggregations["cost"] = ["count", "sum"]
    grouped = frame.groupby(["query_id", "model"]).agg(aggregations)
    table = client.compute(grouped).result() if client is not None else grouped.compute()
    table.columns = ["_".join(c) if isinstance(c, tuple) else c for c in table.columns]
    table = table.reset_index()
    query_ids = np.sort(table["query_id"].unique()).astype(str)
    models = tuple(sorted(table["model"].unique()))
    qi = pd.Index(query_ids).get_indexer(table["query_id"])
    mi = pd.Index(models).get_indexer(table["model"])
    shape = (len(query_ids), len(models))

    def dense(column, fill=0.0):
        out = np.full(shape, fill, dtype=float)
        out[qi, mi] = table[column].to_numpy(dtype=float)
        return out

    n_obs = dense("score_count")
    with np.errstate(invalid="ignore", divide="ignore"):
        mu_q = np.where(n_obs > 0, dense("score_sum") / n_obs, np.nan)
        ss = np.maximum(dense("score2_sum") - n_obs * mu_q * mu_q, 0.0)
        sigma_q = np.where(n_obs > 1, np.sqrt(ss / np.maximum(n_obs - 1.0, 1.0)), 0.0)
        if has_cost:
            cost_mean = dense("cost_sum") / dense("cost_count")  # NaN without cost
    if has_cost:
        normalised, cost_available, _ = _normalise_cost(
            np.arange(cost_mean.size), cost_mean.reshape(-1), *shape, models
        )
        mu_c = np.where(n_obs > 0, normalised.reshape(shape), np.nan)
    else:
        mu_c, cost_available = np.where(n_obs > 0, 0.0, np.nan), False
    dist = CapabilityDistributions(
        query_ids=query_ids,
        models=models,
        n_obs=n_obs.astype(np.int64),
        mu_q=mu_q,
        sigma_q=sigma_q,
        mu_c=mu_c if cost_available else np.where(n_obs > 0, 0.0, np.nan),
        cost_available=cost_available,
    )
    u = dist.utility(cost_weight, beta)
    complete = (n_obs > 0).all(axis=1)
    labels = label_shares(u[complete], models) if complete.any() else {}
    flip = None
    binary = int(table["binary_sum"].sum()) == int(table["score_count"].sum())
    if binary and complete.any():
        r = change_draws or default_change_draws(n_obs[n_obs > 0])
        p = mu_q[complete]
        w = winner_probabilities_exact(p)
        readings = {
            "pairwise": flip_probability(w),
            "strict": strict_flip_probability_exact(p),
            "change": change_probability(w, r),
        }
        flip = {"change_draws": int(r), "n_queries": int(complete.sum())}
        chance = chance_flip_rates(len(models), r)
        for name, values in readings.items():
            estimate, low, high = bootstrap_ci(values, n_boot=n_boot, random_state=random_state)
            flip[name] = {"mean": estimate, "ci95": [low, high], "chance": chance[name]}
    elif not binary:
        logger.info("dars_statistics: scores are not binary, so no exact flip readings")
    return DarsStatistics(dist, u, labels, flip)


def flip_rate_agreement(stats: DarsStatistics, summary: dict):
    """The Dask flip readings beside the in-memory ones, and their differences.

    Parameters
    ----------
    stats : DarsStatistics
        From :func:`dars_statistics`.
    summary : dict
        ``summary`` of the in-memory :func:`ecc_lib.dars_diagnostics.label_instability` result on
        the same observations (the side that pools rewrites and decodes when both exist).

    Returns
    -------
    pandas.DataFrame
        One row per reading (pairwise, strict, change): ``in_memory``, ``dask`` and
        ``difference`` (dask minus in memory); empty when the scores are not binary (Dask gives
        exact readings only for binary scores).
    """
    import pandas as pd

    keys = {
        "pairwise": "winner_flip_rate",
        "strict": "winner_flip_rate_strict",
        "change": "winner_change_rate",
    }
    columns = ["reading", "in_memory", "dask", "difference"]
    if not stats.flip_rates:
        return pd.DataFrame(columns=columns)
    rows = []
    for reading, key in keys.items():
        here, there = summary.get(key), stats.flip_rates[reading]["mean"]
        difference = None if here is None else float(there) - float(here)
        rows.append((reading, here, there, difference))
    return pd.DataFrame(rows, columns=columns)
