"""What the capability map (issue 37) adds to ``ecc-lab ecc``: its time against ``run_ecc``'s.

Usage::

    python benchmarks/capability_map_time.py                     # dcrouter and 1,000 models
    python benchmarks/capability_map_time.py --skip-synthetic     # dcrouter only
    python benchmarks/capability_map_time.py --queries 2000 --models 1000

For each dataset it times, in this one process (the CPU may be shared, so both numbers are taken
under the same load), :func:`ecc_lib.protocol.results.run_ecc` with the paper's protocol and the
default methods (what ``ecc-lab ecc`` runs, ECC-CV included), then
:meth:`~ecc_lib.protocol.results.ECCResult.capability_map` on its result (the grouping ECC-CV
chose, ``--boot`` bootstrap draws per group), and prints the ratio map / run_ecc. The target of
issue 37: the map adds at most 20% to ``ecc-lab ecc``.

Datasets:

* **dcrouter** (bundled), embedded with the default embedder through the cache;
* **synthetic**: the 1,000-model leaderboard of ``benchmarks/scale_models.py`` (``--true-k``
  latent groups, each with its own BT profile, binary scores, ``--dim``-dimensional embeddings
  around one centre per group), as long outcomes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _time(function):
    start, cpu = time.perf_counter(), time.process_time()
    out = function()
    return out, time.perf_counter() - start, time.process_time() - cpu


def measure(name: str, queries, outcomes, embeddings, *, n_boot: int) -> dict:
    """``run_ecc`` then the capability map on its result; wall and CPU seconds of each."""
    from ecc_lib.protocol.results import run_ecc
    from ecc_lib.protocol.settings import Protocol

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result, ecc_s, ecc_cpu = _time(
            lambda: run_ecc(queries, outcomes, embeddings, protocol=Protocol())
        )
        cmap, map_s, map_cpu = _time(lambda: result.capability_map(n_boot=n_boot))
    held = cmap.held_out
    return {
        "dataset": name,
        "queries": int(result.data.comparisons.n_queries),
        "models": len(cmap.models),
        "grouping": cmap.method_detail,
        "groups": len(cmap.groups),
        "n_boot": n_boot,
        "run_ecc_s": ecc_s,
        "run_ecc_cpu_s": ecc_cpu,
        "map_s": map_s,
        "map_cpu_s": map_cpu,
        "ratio": map_s / ecc_s,
        "ratio_cpu": map_cpu / ecc_cpu,
        "held_out": held["estimate"],
        "held_out_ci95": held["ci95"],
    }


def dcrouter(n_boot: int) -> dict:
    from ecc_lib.embed.encode import embed_texts
    from ecc_lib.runs import provenance

    queries, outcomes = provenance.load_dataset("dcrouter")
    embeddings = embed_texts(queries["text"].tolist(), model_name="minilm", show_progress=False)
    return measure("dcrouter", queries, outcomes, embeddings, n_boot=n_boot)


def synthetic(args: argparse.Namespace) -> dict:
    from scale_models import make_scores

    scores, x, _ = make_scores(args.queries, args.models, args.dim, args.true_k, args.seed)
    ids = np.array([f"s{i}" for i in range(args.queries)])
    models = np.array([f"m{j}" for j in range(args.models)])
    queries = pd.DataFrame(
        {"query_id": ids, "text": [f"synthetic query {i}" for i in range(args.queries)]}
    )
    outcomes = pd.DataFrame(
        {
            "query_id": np.repeat(ids, args.models),
            "model": np.tile(models, args.queries),
            "score": scores.ravel(),
        }
    )
    del scores
    name = f"synthetic {args.queries} x {args.models}"
    return measure(name, queries, outcomes, x, n_boot=args.boot)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boot", type=int, default=200, help="bootstrap draws per group")
    parser.add_argument("--queries", type=int, default=20_000, help="synthetic queries")
    parser.add_argument("--models", type=int, default=1000, help="synthetic models")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--true-k", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-dcrouter", action="store_true")
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--json", metavar="OUT.json", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    rows = []
    if not args.skip_dcrouter:
        rows.append(dcrouter(args.boot))
    if not args.skip_synthetic:
        rows.append(synthetic(args))
    header = (
        f"{'dataset':<26} {'queries':>8} {'models':>7} {'groups':>7} {'run_ecc s':>10} "
        f"{'map s':>7} {'map/ecc':>8} {'cpu ratio':>10}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['dataset']:<26} {r['queries']:>8} {r['models']:>7} {r['groups']:>7} "
            f"{r['run_ecc_s']:>10.1f} {r['map_s']:>7.2f} {100 * r['ratio']:>7.1f}% "
            f"{100 * r['ratio_cpu']:>9.1f}%"
        )
        low, high = r["held_out_ci95"]
        print(
            f"  grouping: {r['grouping']}; held-out value {r['held_out']:+.4f} "
            f"[{low:+.4f}, {high:+.4f}] (mean score, each group's best minus the global best)"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as stream:
            json.dump(rows, stream, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
