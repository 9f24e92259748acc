"""Time of ``ecc-lab bench``: per dataset, the loading and embedding (through the cache), the checks,
each protocol seed (every method, the routing experiment, the paired readings) and the flip readings.

Usage::

    python benchmarks/bench_time.py                               # dcrouter re2 mmlu2, 3 seeds
    python benchmarks/bench_time.py --datasets dcrouter --seeds 5

Runs the bench in a fresh temporary folder (nothing cached), so every stage is computed. Wall time and
process CPU time per seed (the machine may be shared: CPU time is the load-independent number); a
dataset that fails a check or to which the protocol does not apply has no seed rows.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from ecc_lib.bench import BenchSettings, run_bench


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["dcrouter", "re2", "mmlu2"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--k", type=int, default=30)
    args = parser.parse_args()
    settings = BenchSettings(n_clusters=args.k, n_seeds=args.seeds)
    print(
        f"bench of {args.datasets}, {args.seeds} seeds {settings.seeds}, K = {args.k}; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory() as out:
        wall = time.perf_counter()
        result = run_bench(args.datasets, settings=settings, out_dir=out, show_progress=False)
        wall = time.perf_counter() - wall
    print(f"{'dataset':<10} {'stage':<22} {'wall s':>8} {'CPU s':>8}")
    for label, entry in result.datasets.items():
        timing = entry.get("timing", {})
        print(
            f"{label:<10} {'load + embed':<22} {timing.get('prepare_seconds', float('nan')):>8.2f}"
        )
        print(
            f"{label:<10} {'checks (all)':<22} {timing.get('checks_seconds', float('nan')):>8.2f}"
        )
        for name, seconds in timing.get("check_seconds", {}).items():
            print(f"{label:<10} {'  ' + name:<22} {seconds:>8.3f}")
        seeds = entry.get("seeds", [])
        for seed, w, c in zip(
            seeds, entry.get("seed_seconds", []), entry.get("seed_cpu_seconds", []), strict=False
        ):
            print(f"{label:<10} {f'seed {seed}':<22} {w:>8.2f} {c:>8.2f}")
        if "flips_seconds" in timing:
            print(f"{label:<10} {'flip readings':<22} {timing['flips_seconds']:>8.2f}")
        status = entry.get("status")
        if status != "done":
            print(f"{label:<10} {status}: {result.left_out.get(label, '')[:90]}")
        print(f"{label:<10} {'total':<22} {entry.get('seconds', float('nan')):>8.2f}")
    print(f"{'all':<10} {'total':<22} {wall:>8.2f}")


if __name__ == "__main__":
    main()
