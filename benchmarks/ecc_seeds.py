"""Time of the multi-seed ECC protocol: S protocol seeds x every method on a bundled dataset.

Usage::

    python benchmarks/ecc_seeds.py                        # dcrouter, 5 seeds, with and without routing
    python benchmarks/ecc_seeds.py --dataset dcrouter --seeds 5 --repeats 2

Each protocol seed redraws the pairs, the split and the EM starts, then fits the global BT model,
ECC, the embedding-only, comparison-only and human-label baselines and scores them with the
leak-aware reading (issue 10's target: 5 seeds x all methods on dcrouter in <= 15 s on a 2-core
machine). The table gives wall time and process CPU time (the machine may be shared: CPU time is
the load-independent number), per seed and in total, for the protocol alone and with the routing
experiment. Embeddings come from the shipped cache and are loaded before the clock starts.
"""

from __future__ import annotations

import argparse
import os
import time

from ecc_lib.ecc.estimator import ECC
from ecc_lib.embed.encode import embed_texts
from ecc_lib.protocol.seeds import run_seeds
from ecc_lib.protocol.settings import Protocol
from ecc_lib.runs import provenance


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="dcrouter")
    parser.add_argument("--seeds", type=int, default=5, help="number of protocol seeds")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1, help="timed repeats (best counts)")
    parser.add_argument("--k", type=int, default=30)
    args = parser.parse_args()

    queries, outcomes = provenance.load_dataset(args.dataset)
    embeddings = embed_texts(queries["text"].astype(str).tolist(), show_progress=False)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    print(
        f"{args.dataset}: {len(queries)} queries, {outcomes['model'].nunique()} models; "
        f"{len(seeds)} seeds {seeds}, K = {args.k}; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'run':<22} {'wall s':>8} {'CPU s':>8} {'wall/seed':>10} {'CPU/seed':>9}  ECC gain")
    for routing in (False, True):
        best = None
        for _ in range(args.repeats):
            wall, cpu = time.perf_counter(), time.process_time()
            multi = run_seeds(
                queries,
                outcomes,
                embeddings,
                protocol=Protocol(seeds=tuple(seeds)),
                estimator=ECC(n_clusters=args.k),
                routing=routing,
            )
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if best is None or cpu < best[1]:
                best = (wall, cpu, multi)
        wall, cpu, multi = best
        summary = multi.summary()
        name = "protocol + routing" if routing else "protocol"
        gain = f"{summary['gain_mean']['ecc']:.2f} +- {summary['gain_sd']['ecc']:.2f}"
        print(
            f"{name:<22} {wall:>8.2f} {cpu:>8.2f} {wall / len(seeds):>10.2f} "
            f"{cpu / len(seeds):>9.2f}  {gain}"
        )


if __name__ == "__main__":
    main()
