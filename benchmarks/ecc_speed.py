"""ECC fit speed and memory versus the number of queries, and against a loop-based reference.

Usage (defaults are the issue's sizes; use small ones for a quick look)::

    python benchmarks/ecc_speed.py                                  # 10k, 100k, 1M queries
    python benchmarks/ecc_speed.py --sizes 2000 20000 --reference-size 1000 --steps 3

For each size it generates synthetic data (``--models`` models, ``--pairs`` non-tie pairs per
query, ``--dim``-dimensional unit embeddings, ``--k`` clusters), fits :class:`ecc_lib.ecc.estimator.ECC` for
``--steps`` EM steps (no early stop), and reports the fit time, the time of one EM step, the peak
memory traced during the fit, and the ratio of one EM step to the two dense float32 products every
step needs (embeddings x centroids and responsibilities x embeddings), timed in the same run (best
of three, with the default BLAS threads and with one thread; the faster counts).

The reference implementation (kept here, not in the library) runs the same EM the way the
authors' code does: a Python loop over pairs for the evidence and one scikit-learn
``LogisticRegression`` per cluster per step for the BT profiles. Both start from the same Dirichlet
draw and follow the same stopping rule; the benchmark reports their per-step speed ratio and the
training NLL each reaches.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import tracemalloc
import warnings

import numpy as np
from scipy.special import expit, log_softmax, logsumexp
from threadpoolctl import threadpool_limits

from ecc_lib.data.comparisons import Comparisons
from ecc_lib.ecc.estimator import CENTROID_TOL, ECC, KL_TOL, OBJECTIVE_PATIENCE, OBJECTIVE_TOL

# --------------------------------------------------------------------------------------------------
# synthetic data at scale


def make_data(n: int, n_models: int, n_pairs: int, dim: int, n_true: int, seed: int):
    """Embeddings around ``n_true`` centres, each centre with its own BT profile; ``n_pairs``
    distinct pairs per query with Bernoulli outcomes. Vectorised, float32 embeddings."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_true, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    cluster = rng.integers(0, n_true, n)
    x = rng.standard_normal((n, dim), dtype=np.float32)
    x *= np.float32(1.0 / np.sqrt(dim))
    x += centres[cluster]
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    theta = rng.normal(scale=1.5, size=(n_true, n_models))
    ia, ib = np.triu_indices(n_models, k=1)
    n_pairs = min(n_pairs, len(ia))
    chosen = np.empty((n, n_pairs), dtype=np.int64)
    step = 200_000
    for start in range(0, n, step):  # chunks only bound the memory of the random keys
        keys = rng.random((min(step, n - start), len(ia)), dtype=np.float32)
        chosen[start : start + step] = np.argpartition(keys, n_pairs - 1, axis=1)[:, :n_pairs]
    query = np.repeat(np.arange(n), n_pairs)
    a, b = ia[chosen.ravel()], ib[chosen.ravel()]
    p = expit(theta[cluster[query], b] - theta[cluster[query], a])
    y = (rng.random(len(p)) < p).astype(float)
    comparisons = Comparisons(
        query=query,
        model_a=a.astype(np.int64),
        model_b=b.astype(np.int64),
        y=y,
        query_ids=np.arange(n).astype(str),
        models=tuple(f"m{i}" for i in range(n_models)),
    )
    return x, comparisons


# --------------------------------------------------------------------------------------------------
# timing helpers


def best_of(function, repeat: int = 3) -> float:
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def dense_products_seconds(x: np.ndarray, centroids: np.ndarray, resp: np.ndarray) -> dict:
    """Time of ``X @ C^T`` plus ``R^T @ X`` (float32): wall time (best of two) with the default
    BLAS threads and with one thread, and the process CPU time of the one-thread run."""
    c = np.ascontiguousarray(centroids, dtype=np.float32)
    r = np.ascontiguousarray(resp, dtype=np.float32)
    out = {}
    for label, limit in (("default", None), ("one", 1)):
        with threadpool_limits(limits=limit, user_api="blas"):
            out[label] = best_of(lambda: x @ c.T, 2) + best_of(lambda: r.T @ x, 2)
            if limit == 1:
                start = time.process_time()
                _ = x @ c.T
                _ = r.T @ x
                out["cpu"] = time.process_time() - start
    out["best"] = min(out["default"], out["one"])
    return out


def training_nll(theta: np.ndarray, resp: np.ndarray, comparisons: Comparisons) -> float:
    """Mean NLL of the training comparisons under the fitted mixture."""
    p = np.einsum(
        "nk,kn->n",
        resp[comparisons.query].astype(float),
        expit(theta[:, comparisons.model_b] - theta[:, comparisons.model_a]),
    )
    p = np.clip(p, 1e-12, 1 - 1e-12)
    y = comparisons.y
    return float(-(y * np.log(p) + (1 - y) * np.log1p(-p)).mean())


# --------------------------------------------------------------------------------------------------
# the loop-based reference (the authors' style): Python loop over pairs, one sklearn LR per cluster


def reference_em(
    x: np.ndarray,
    comparisons: Comparisons,
    n_clusters: int,
    lam: float,
    temperature: float,
    max_iter: int,
    random_state: int,
):
    from sklearn.linear_model import LogisticRegression

    n, m = comparisons.n_queries, comparisons.n_models
    rng = np.random.default_rng(random_state)
    resp = rng.dirichlet(np.ones(n_clusters), size=n)
    x = x.astype(np.float64)
    n_q = np.bincount(comparisons.query, minlength=n).astype(float)
    design = np.zeros((len(comparisons), m))
    rows = np.arange(len(comparisons))
    design[rows, comparisons.model_b] = 1.0
    design[rows, comparisons.model_a] = -1.0
    labels = comparisons.y.astype(int)
    pairs = list(
        zip(
            comparisons.query.tolist(),
            comparisons.model_a.tolist(),
            comparisons.model_b.tolist(),
            comparisons.y.tolist(),
            strict=True,
        )
    )
    theta = np.zeros((n_clusters, m))
    centroids = None
    history, step_seconds = [], []
    log_r = np.log(np.maximum(resp, 1e-300))
    small, converged = 0, False
    for _ in range(max_iter):
        start = time.perf_counter()
        # M-step: one logistic regression per cluster, weights r_qk / N_q
        for k in range(n_clusters):
            weights = resp[comparisons.query, k] / n_q[comparisons.query]
            model = LogisticRegression(C=1.0, fit_intercept=False, tol=1e-6, max_iter=1000)
            model.fit(design, labels, sample_weight=weights)
            theta[k] = model.coef_[0]
        sums = resp.T @ x
        new_centroids = sums / np.linalg.norm(sums, axis=1, keepdims=True)
        shift = (
            np.inf
            if centroids is None
            else float(np.linalg.norm(new_centroids - centroids, axis=1).max())
        )
        centroids = new_centroids
        # E-step: evidence by a Python loop over pairs
        ev = np.zeros((n, n_clusters))
        for q, a, b, y in pairs:
            d = theta[:, b] - theta[:, a]
            ev[q] += y * -np.logaddexp(0.0, -d) + (1.0 - y) * -np.logaddexp(0.0, d)
        ev /= np.maximum(n_q, 1.0)[:, None]
        score = (ev + lam * x @ centroids.T) / temperature
        new_log_r = log_softmax(score, axis=1)
        kl = float((resp * (log_r - new_log_r)).sum(axis=1).mean())
        resp, log_r = np.exp(new_log_r), new_log_r
        objective = temperature * logsumexp(score, axis=1).sum() - 0.5 * np.sum(theta**2)
        step_seconds.append(time.perf_counter() - start)
        previous = history[-1] if history else None
        history.append(objective)
        if kl < KL_TOL and shift < CENTROID_TOL:
            converged = True
            break
        if previous is not None:
            small = small + 1 if abs(objective - previous) / abs(previous) < OBJECTIVE_TOL else 0
            if small >= OBJECTIVE_PATIENCE:
                converged = True
                break
    return theta, resp, history, step_seconds, converged


# --------------------------------------------------------------------------------------------------


def run_size(n: int, args) -> dict:
    start = time.perf_counter()
    x, comparisons = make_data(n, args.models, args.pairs, args.dim, args.k, args.seed)
    generate = time.perf_counter() - start

    def ecc(max_iter: int) -> ECC:
        return ECC(
            n_clusters=args.k,
            max_iter=max_iter,
            tol=0.0,
            objective_tol=0.0,
            n_jobs=args.n_jobs,
            random_state=args.seed,
        )

    model = ecc(args.steps)
    tracemalloc.start()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(x, comparisons)
    fit = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # the machine may be shared: alternate dense-product timings and EM steps, compare per round
    wall_ratios, cpu_ratios, dense_walls, step_walls = [], [], [], []
    for _ in range(args.rounds):
        dense = dense_products_seconds(x, model.centroids_, model.responsibilities_)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            probe = ecc(2).fit(x, comparisons)
        step_wall = float(np.mean(probe.step_seconds_))
        step_cpu = float(np.mean(probe.step_cpu_seconds_))
        wall_ratios.append(step_wall / dense["best"])
        cpu_ratios.append(step_cpu / dense["cpu"])
        dense_walls.append(dense["best"])
        step_walls.append(step_wall)
    return {
        "n_queries": n,
        "generate_s": generate,
        "fit_s": fit,
        "steps": int(model.n_iter_),
        "step_median_s": float(np.median(model.step_seconds_)),
        "round_step_s": step_walls,
        "round_dense_s": dense_walls,
        "ratio_wall_rounds": wall_ratios,
        "ratio_cpu_rounds": cpu_ratios,
        "ratio_wall": float(np.median(wall_ratios)),
        "ratio_cpu": float(np.median(cpu_ratios)),
        "dense_s": float(np.median(dense_walls)),
        "peak_fit_mb": peak / 2**20,
        "embeddings_mb": x.nbytes / 2**20,
    }


def run_reference(args) -> dict:
    n = args.reference_size
    x, comparisons = make_data(n, args.models, args.pairs, args.dim, args.k, args.seed)
    model = ECC(
        n_clusters=args.k,
        max_iter=args.reference_max_iter,
        dtype="float64",
        n_jobs=args.n_jobs,
        random_state=args.seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model.fit(x, comparisons)
        fast_fit = time.perf_counter() - start
    start = time.perf_counter()
    theta, resp, history, step_seconds, converged = reference_em(
        x, comparisons, args.k, 3.0, 0.1, args.reference_max_iter, args.seed
    )
    slow_fit = time.perf_counter() - start
    fast_nll = training_nll(model.theta_, model.responsibilities_, comparisons)
    slow_nll = training_nll(theta, resp, comparisons)
    fast_step = float(np.median(model.step_seconds_))
    slow_step = float(np.median(step_seconds))
    return {
        "n_queries": n,
        "ecc_fit_s": fast_fit,
        "reference_fit_s": slow_fit,
        "ecc_steps": int(model.n_iter_),
        "reference_steps": len(history),
        "ecc_step_s": fast_step,
        "reference_step_s": slow_step,
        "speedup_per_step": slow_step / fast_step,
        "speedup_fit": slow_fit / fast_fit,
        "ecc_nll": fast_nll,
        "reference_nll": slow_nll,
        "nll_rel_diff": abs(fast_nll - slow_nll) / slow_nll,
        "ecc_objective": model.objective_,
        "reference_objective": float(history[-1]),
        "ecc_converged": bool(model.converged_),
        "reference_converged": bool(converged),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=30)
    parser.add_argument("--steps", type=int, default=5, help="EM steps of the timed fit")
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternations of dense products and EM steps"
    )
    parser.add_argument("--reference-size", type=int, default=5000)
    parser.add_argument("--reference-max-iter", type=int, default=100)
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the results as JSON")
    args = parser.parse_args(argv)

    print(
        f"ECC speed: {args.models} models, {args.pairs} pairs/query, d={args.dim}, K={args.k}, "
        f"{args.steps} EM steps per size"
    )
    header = (
        f"| {'queries':>9} | {'fit s':>7} | {'step s':>7} | {'dense s':>7} | "
        f"{'step/dense wall':>15} | {'step/dense CPU':>14} | {'peak MB':>8} |"
    )
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    sizes = []
    for n in args.sizes:
        row = run_size(n, args)
        sizes.append(row)
        print(
            f"| {n:>9,} | {row['fit_s']:>7.2f} | {row['step_median_s']:>7.3f} | "
            f"{row['dense_s']:>7.3f} | {row['ratio_wall']:>15.2f} | {row['ratio_cpu']:>14.2f} | "
            f"{row['peak_fit_mb']:>8.0f} |",
            flush=True,
        )
    print(
        f"fit s: {args.steps} EM steps plus setup; step s: median EM step of that fit; dense s: "
        "X @ C^T + R^T @ X (float32, faster of default / one BLAS thread); step/dense: median over "
        f"{args.rounds} rounds that alternate the dense products and a 2-step fit (wall: elapsed "
        "time; CPU: process CPU time, one-thread products); peak MB: traced during the fit"
    )
    result = {"sizes": sizes, "args": vars(args)}
    if not args.skip_reference:
        ref = run_reference(args)
        result["reference"] = ref
        print(
            f"\nreference (Python loop over pairs + one LogisticRegression per cluster per step), "
            f"{ref['n_queries']:,} queries:"
        )
        print(
            f"  per step: ECC {ref['ecc_step_s']:.4f} s, reference {ref['reference_step_s']:.3f} s "
            f"-> {ref['speedup_per_step']:.0f}x; whole fit: ECC {ref['ecc_fit_s']:.2f} s "
            f"({ref['ecc_steps']} steps), reference {ref['reference_fit_s']:.1f} s "
            f"({ref['reference_steps']} steps) -> {ref['speedup_fit']:.0f}x"
        )
        print(
            f"  training NLL: ECC {ref['ecc_nll']:.5f}, reference {ref['reference_nll']:.5f} "
            f"(relative difference {100 * ref['nll_rel_diff']:.3f}%)"
        )
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nprocess peak RSS: {usage:.0f} MB")
    result["peak_rss_mb"] = usage
    if args.json:
        with open(args.json, "w", encoding="utf-8") as stream:
            json.dump(result, stream, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
