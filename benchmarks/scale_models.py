"""Many models on one machine: pair sampling and ECC fit time and peak memory versus M.

Usage::

    python benchmarks/scale_models.py                        # 20,000 queries; 10, 100, 1,000 models
    python benchmarks/scale_models.py --models 10 100 --queries 5000 --max-iter 20

For each number of models it generates synthetic leaderboard data in a fresh subprocess (so that
the peak resident memory of one configuration does not leak into the next): ``--true-k`` latent
capability groups, each with its own BT profile over the models, binary scores per (query, model)
drawn from the profile of the query's group, and ``--dim``-dimensional unit embeddings around one
centre per group. It then times

* **sampling**: :func:`ecc_lib.data.comparisons.sample_pairs` (``--pairs`` non-tie pairs per query,
  uniform without replacement) on the dense score matrix, and
* **ECC fit**: :class:`ecc_lib.ecc.estimator.ECC` with ``K = --k`` to convergence (or ``--max-iter``),

and reports the number of observed ordered pairs (the EM's count columns), the EM steps, the mean
time of one step (and of its BT M-step), and the peak resident memory of the subprocess (maximum
RSS, data generation included). Targets of issue 12 at 20,000 queries x 1,000 models x 7 pairs,
K = 30: sampling <= 2 s, ECC fit <= 60 s, peak memory <= 4 GB. With ``--methods default`` it
also fits every default method of ``ecc-lab ecc`` (no labels: the global BT, ECC, embedding-only,
comparison-only, the tuned-prior baselines and ECC-CV) on the same data and prints their wall
times, their sum and ECC-CV's time over ECC's (issue 34: the sum under 60 s at 1,000 models).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import warnings

import numpy as np
from scipy.special import expit


def make_scores(n: int, n_models: int, dim: int, true_k: int, seed: int):
    """Binary scores (n, M), unit float32 embeddings (n, dim) and the latent group of each query."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, true_k, n)
    theta = rng.normal(scale=1.5, size=(true_k, n_models))
    difficulty = rng.normal(scale=1.0, size=n)
    p = expit(theta[group] - difficulty[:, None])
    scores = (rng.random((n, n_models), dtype=np.float32) < p).astype(np.float64)
    del p
    centres = rng.standard_normal((true_k, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    x = rng.standard_normal((n, dim), dtype=np.float32) * np.float32(1.0 / np.sqrt(dim))
    x += centres[group]
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return scores, x, group


def run_one(args: argparse.Namespace, n_models: int) -> dict:
    """One configuration, in this process; returns the measured numbers."""
    from ecc_lib import bradley_terry
    from ecc_lib.data.comparisons import sample_pairs
    from ecc_lib.ecc.estimator import ECC

    scores, x, _ = make_scores(args.queries, n_models, args.dim, args.true_k, args.seed)
    query_ids = np.arange(args.queries).astype(str)
    models = tuple(f"m{j}" for j in range(n_models))
    start, cpu = time.perf_counter(), time.process_time()
    comparisons = sample_pairs(
        scores, query_ids, models, n_pairs=args.pairs, min_pairs=2, random_state=args.seed
    )
    sampling = time.perf_counter() - start
    sampling_cpu = time.process_time() - cpu
    del scores
    x = x[np.asarray(comparisons.query_ids, dtype=np.int64)]
    n_pairs = int(len(bradley_terry.observed_pair_codes(comparisons)))

    bt_seconds = []
    fit_bt_pairs = bradley_terry.fit_bt_pairs

    def timed_bt(*a, **kw):
        t0 = time.perf_counter()
        out = fit_bt_pairs(*a, **kw)
        bt_seconds.append(time.perf_counter() - t0)
        return out

    import ecc_lib.ecc.engine as ecc_module

    ecc_module.fit_bt_pairs = timed_bt
    model = ECC(n_clusters=args.k, max_iter=args.max_iter, random_state=args.seed)
    start, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(x, comparisons)
    fit = time.perf_counter() - start
    fit_cpu = time.process_time() - cpu
    methods = {}
    if args.methods == "default":  # issue 34: every default method of ecc-lab ecc (no labels)
        from ecc_lib.protocol.methods import default_methods, make_methods

        ecc_module.fit_bt_pairs = fit_bt_pairs
        built = make_methods(methods=default_methods(False), random_state=args.seed)
        for name, estimator in built.items():
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                estimator.fit(x, comparisons)
            methods[name] = time.perf_counter() - t0
    return {
        "models": n_models,
        "queries": int(comparisons.n_queries),
        "comparisons": int(len(comparisons)),
        "observed_pairs": n_pairs,
        "sampling_s": sampling,
        "sampling_cpu_s": sampling_cpu,
        "fit_s": fit,
        "fit_cpu_s": fit_cpu,
        "em_steps": int(model.n_iter_),
        "converged": bool(model.converged_),
        "step_s": float(np.mean(model.step_seconds_)),
        "bt_step_s": float(np.mean(bt_seconds)),
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
        "method_s": methods,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--k", type=int, default=30)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--true-k", type=int, default=30)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--methods",
        choices=("ecc", "default"),
        default="ecc",
        help="ecc: the ECC fit alone; default: also every default method of ecc-lab ecc",
    )
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child process: one size
    parser.add_argument("--json", metavar="OUT.json", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(run_one(args, args.one)))
        return 0
    rows = []
    for m in args.models:
        child = [
            sys.executable,
            __file__,
            "--one",
            str(m),
            "--queries",
            str(args.queries),
            "--pairs",
            str(args.pairs),
            "--k",
            str(args.k),
            "--dim",
            str(args.dim),
            "--true-k",
            str(args.true_k),
            "--max-iter",
            str(args.max_iter),
            "--seed",
            str(args.seed),
            "--methods",
            args.methods,
        ]
        out = subprocess.run(child, check=True, capture_output=True, text=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    header = (
        f"{'models':>7} {'queries':>8} {'pairs obs':>10} {'sample s':>9} {'fit s':>7} "
        f"{'fit cpu s':>9} {'steps':>6} {'step s':>7} {'BT s':>6} {'peak GB':>8}"
    )
    print(
        f"{args.queries} queries, {args.pairs} pairs per query, K = {args.k}, d = {args.dim} "
        f"(max {args.max_iter} EM steps)"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['models']:>7} {r['queries']:>8} {r['observed_pairs']:>10} "
            f"{r['sampling_s']:>9.2f} {r['fit_s']:>7.1f} {r['fit_cpu_s']:>9.1f} "
            f"{r['em_steps']:>6} {r['step_s']:>7.3f} {r['bt_step_s']:>6.3f} "
            f"{r['peak_rss_gb']:>8.2f}"
        )
    for r in rows:
        if r["method_s"]:
            total = sum(r["method_s"].values())
            parts = ", ".join(f"{m} {v:.1f}" for m, v in r["method_s"].items())
            ratio = r["method_s"]["ecc_cv"] / r["method_s"]["ecc"]
            print(
                f"{r['models']} models, default methods: {total:.1f} s in all ({parts}); "
                f"ecc_cv / ecc = {ratio:.2f}"
            )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as stream:
            json.dump(rows, stream, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
