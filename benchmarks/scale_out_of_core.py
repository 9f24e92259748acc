"""Out-of-core ECC on Dask: time per EM step and worker memory, embeddings read from disk.

Usage::

    python benchmarks/scale_out_of_core.py --sizes 1000000 5000000      # the issue's sizes
    python benchmarks/scale_out_of_core.py --sizes 200000 --steps 2     # a quick look

For each size it writes ``n`` synthetic unit embeddings (``--dim``, float32) to a ``.npy`` file in
``--workdir`` in chunks (never the whole matrix in memory), plus each query's latent group. A
``LocalCluster`` of ``--workers`` processes with a ``--memory-limit`` each then fits
:class:`ecc_lib.ecc.estimator.ECC` through :func:`ecc_lib.distributed.fit_partitioned`:

* the embeddings of a partition are read from the memory-mapped file by the task that needs them,
  at every EM step (nothing holds the whole matrix);
* each partition's comparisons (``--pairs`` distinct pairs per query among ``--models`` models,
  Bernoulli outcomes from the BT profile of the query's group) are generated once on a worker from
  a per-partition seed and kept there as a sparse count matrix over all ordered pairs.

It reports the time of each EM step (``--steps`` steps, no early stop), the peak resident memory
of every worker process, and the size of the embeddings on disk. Files are deleted afterwards
unless ``--keep`` is given.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
import warnings

import numpy as np
from scipy.special import expit

CHUNK_ROWS = 250_000


def write_embeddings(path: str, n: int, dim: int, true_k: int, seed: int) -> None:
    """Unit embeddings around ``true_k`` centres, written chunk by chunk, and the groups."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((true_k, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    x = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, dim))
    groups = np.lib.format.open_memmap(path + ".groups.npy", mode="w+", dtype=np.int16, shape=(n,))
    for start in range(0, n, CHUNK_ROWS):
        stop = min(start + CHUNK_ROWS, n)
        chunk_rng = np.random.default_rng([seed, start])
        g = chunk_rng.integers(0, true_k, stop - start)
        block = chunk_rng.standard_normal((stop - start, dim), dtype=np.float32)
        block *= np.float32(1.0 / np.sqrt(dim))
        block += centres[g]
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        x[start:stop] = block
        groups[start:stop] = g
    x.flush()
    groups.flush()
    del x, groups


def load_rows(path: str, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` of a ``.npy`` file, read through a memory map."""
    x = np.load(path, mmap_mode="r")
    return np.array(x[start:stop])


def partition_counts(path, start, stop, n_models, n_pairs, true_k, seed):
    """Normalised win counts of one partition's synthetic comparisons over all ordered pairs."""
    from ecc_lib.bradley_terry import pair_counts
    from ecc_lib.data.comparisons import Comparisons

    groups = np.load(path + ".groups.npy", mmap_mode="r")[start:stop].astype(np.int64)
    theta = np.random.default_rng(seed).normal(scale=1.5, size=(true_k, n_models))
    rng = np.random.default_rng([seed, start])
    n = stop - start
    a = rng.integers(0, n_models, (n, n_pairs))
    b = (a + rng.integers(1, n_models, (n, n_pairs))) % n_models
    q = np.repeat(np.arange(n), n_pairs)
    a, b = a.ravel(), b.ravel()
    y = (rng.random(len(q)) < expit(theta[groups[q], b] - theta[groups[q], a])).astype(float)
    comparisons = Comparisons(
        query=q,
        model_a=a,
        model_b=b,
        y=y,
        query_ids=np.arange(n).astype(str),
        models=tuple(map(str, range(n_models))),
    )
    return pair_counts(comparisons, normalize=True, dtype=np.float32, codes=all_codes(n_models))


def all_codes(n_models: int) -> np.ndarray:
    w, lo = np.divmod(np.arange(n_models * n_models), n_models)
    return (w * n_models + lo)[w != lo]


def _peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def run_size(args: argparse.Namespace, n: int, client) -> dict:
    from dask import delayed

    from ecc_lib.bradley_terry import PairCounts
    from ecc_lib.distributed import Partition, fit_partitioned
    from ecc_lib.ecc.estimator import ECC

    path = os.path.join(args.workdir, f"embeddings_{n}.npy")
    start = time.perf_counter()
    write_embeddings(path, n, args.dim, args.true_k, args.seed)
    write_s = time.perf_counter() - start
    bounds = [(i, min(i + args.partition_rows, n)) for i in range(0, n, args.partition_rows)]
    counts = [
        delayed(partition_counts)(
            path, i0, i1, args.models, args.pairs, args.true_k, args.seed
        ).matrix
        for i0, i1 in bounds
    ]
    counts = client.persist(counts)
    partitions = [
        Partition(i1 - i0, delayed(load_rows)(path, i0, i1), cp)
        for (i0, i1), cp in zip(bounds, counts)
    ]
    codes = all_codes(args.models)
    pairs = PairCounts(None, codes // args.models, codes % args.models, args.models)
    model = ECC(n_clusters=args.k, max_iter=args.steps, tol=0.0, objective_tol=0.0)
    model.set_params(random_state=args.seed)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_partitioned(
            model,
            np.empty((0, args.dim), np.float32),
            partitions=partitions,
            pairs=pairs,
            client=client,
        )
    fit_s = time.perf_counter() - start
    peaks = client.run(_peak_rss_gb)
    del counts, partitions
    if not args.keep:
        os.remove(path)
        os.remove(path + ".groups.npy")
    return {
        "queries": n,
        "disk_gb": n * args.dim * 4 / 1e9,
        "write_s": write_s,
        "fit_s": fit_s,
        "steps": model.n_iter_,
        "step_s": model.step_seconds_,
        "worker_peak_gb": max(peaks.values()),
    }


def main(argv: list[str] | None = None) -> int:
    from distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--k", type=int, default=30)
    parser.add_argument("--true-k", type=int, default=30)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--partition-rows", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--workdir", default=None, help="folder for the .npy files (default: tmp)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    own_dir = args.workdir is None
    if own_dir:
        args.workdir = tempfile.mkdtemp(prefix="ecc_out_of_core_")
    os.makedirs(args.workdir, exist_ok=True)
    rows = []
    try:
        with (
            LocalCluster(
                n_workers=args.workers,
                threads_per_worker=1,
                processes=True,
                memory_limit=args.memory_limit,
                dashboard_address=":0",
            ) as cluster,
            Client(cluster) as client,
        ):
            for n in args.sizes:
                rows.append(run_size(args, n, client))
                r = rows[-1]
                print(f"done {n}: steps {np.round(r['step_s'], 1)}", flush=True)
    finally:
        if own_dir and not args.keep:
            shutil.rmtree(args.workdir, ignore_errors=True)
    print(
        f"\nECC on Dask: {args.workers} workers x 1 thread, memory limit {args.memory_limit} each; "
        f"d = {args.dim}, K = {args.k}, {args.models} models, {args.pairs} pairs per query, "
        f"{args.partition_rows} rows per partition; embeddings memory-mapped from disk"
    )
    header = (
        f"{'queries':>10} {'disk GB':>8} {'write s':>8} {'steps':>6} {'first s':>8} "
        f"{'mean s':>8} {'s / 1M q':>9} {'worker peak GB':>15}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        later = r["step_s"][1:] or r["step_s"]
        mean = float(np.mean(later))
        print(
            f"{r['queries']:>10} {r['disk_gb']:>8.2f} {r['write_s']:>8.1f} {r['steps']:>6} "
            f"{r['step_s'][0]:>8.1f} {mean:>8.1f} {mean / (r['queries'] / 1e6):>9.1f} "
            f"{r['worker_peak_gb']:>15.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
