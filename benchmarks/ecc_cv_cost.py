"""Search cost of ``ecc_cv``: its whole fit (cross-validation + refit) over one ECC fit.

Usage::

    python benchmarks/ecc_cv_cost.py                      # dcrouter, seeds 0-4, best of 3
    python benchmarks/ecc_cv_cost.py --dataset dcrouter --seeds 2 --repeats 5
    python benchmarks/ecc_cv_cost.py --dataset scale:1000 --seeds 1 --repeats 1   # 1,000 models

Per protocol seed (pairs and split redrawn) the training queries are fitted with the paper's ECC
(K = 30, T = 0.1, lam = 3) and with ``ECCCV`` over its default grid (plus the paper's point, as in
the protocol); each is timed ``--repeats`` times, the two in turn, and the fastest counts (the
machine may be shared), in wall and in process CPU seconds, in the same process, so the ratio is
robust to the machine's load. Issue 34's target: at most 3. ``scale:M`` is the synthetic data of
``benchmarks/scale_models.py`` (20,000 queries, ``M`` models, 7 pairs per query; no categories),
all queries training. Embeddings come from the shipped cache and are loaded before the clock
starts.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from ecc_lib.ecc.cv import FIT_MEMO
from ecc_lib.ecc.cv_grid import describe_params
from ecc_lib.protocol.methods import make_methods

TARGET = 3.0


def _best_times(makers: dict, x, train, labels, repeats: int) -> dict:
    """Fastest ``(wall, cpu, model)`` per maker; each repeat times every maker in turn, so a
    change of the machine's speed during the run reaches both sides of the ratio alike."""
    best = {name: (np.inf, np.inf, None) for name in makers}
    for _ in range(repeats):
        for name, make in makers.items():
            FIT_MEMO.clear()  # a standalone search: nothing read from an earlier one
            model = make()
            wall, cpu = time.perf_counter(), time.process_time()
            model.fit(x, train, labels=labels)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if wall < best[name][0]:
                best[name] = (wall, cpu, model)
    return best


def _training_sets(name: str, n_seeds: int):
    """``(seed, x_train, train, labels_train)`` per seed."""
    if name.startswith("scale:"):
        sys.path.insert(0, str(Path(__file__).parent))
        from scale_models import make_scores

        from ecc_lib.data.comparisons import sample_pairs

        n_models = int(name.split(":", 1)[1])
        for seed in range(n_seeds):
            scores, x, _ = make_scores(20_000, n_models, 384, 30, seed)
            ids = np.arange(len(x)).astype(str)
            models = tuple(f"m{j}" for j in range(n_models))
            train = sample_pairs(scores, ids, models, n_pairs=7, min_pairs=2, random_state=seed)
            yield seed, x[np.asarray(train.query_ids, dtype=np.int64)], train, None
        return
    from ecc_lib.embed.encode import embed_texts
    from ecc_lib.protocol.data import prepare_protocol
    from ecc_lib.runs import provenance

    queries, outcomes = provenance.load_dataset(name)
    embeddings = embed_texts(queries["text"].astype(str).tolist(), show_progress=False)
    for seed in range(n_seeds):
        data = prepare_protocol(queries, outcomes, embeddings, random_state=seed)
        yield seed, data.x_train, data.train, data.labels_train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="dcrouter")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{args.dataset}: best of {args.repeats}; {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    print(
        f"{'seed':>4} {'ECC s':>7} {'ecc_cv s':>9} {'ratio':>6} {'CPU ratio':>9} {'cands':>5}  chosen"
    )
    ratios, cpu_ratios = [], []
    for seed, x, train, labels in _training_sets(args.dataset, args.seeds):

        def one(name, seed=seed):
            return lambda: make_methods(random_state=seed, methods=(name,))[name]

        best = _best_times({n: one(n) for n in ("ecc", "ecc_cv")}, x, train, labels, args.repeats)
        (ecc_wall, ecc_cpu, _), (cv_wall, cv_cpu, model) = best["ecc"], best["ecc_cv"]
        ratios.append(cv_wall / ecc_wall)
        cpu_ratios.append(cv_cpu / ecc_cpu)
        print(
            f"{seed:>4} {ecc_wall:7.3f} {cv_wall:9.3f} {ratios[-1]:6.1f} {cpu_ratios[-1]:9.1f} "
            f"{len(model.cv_results_):>5}  {describe_params(model.best_params_)} "
            f"(search {model.search_seconds_:.2f} s, refit {model.refit_seconds_:.2f} s, "
            f"{len(model.resources_)} halving rounds)",
            flush=True,
        )
    verdict = "meets" if np.max(ratios) <= TARGET else "misses"
    print(
        f"mean ratio {np.mean(ratios):.1f} (wall), {np.mean(cpu_ratios):.1f} (CPU); "
        f"max {np.max(ratios):.1f} (wall): {verdict} the target of {TARGET:g}"
    )


if __name__ == "__main__":
    main()
