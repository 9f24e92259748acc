"""Time the main job (``ecc-lab run`` on the bundled data, what ``make run`` does once installed).

Runs the pipeline into a temporary run folder, prints a table (wall time of the whole command and
seconds per notebook from ``run.json``) and writes ``benchmarks/results/make_run.json``, the file
the README's and the guide's stated times are checked against (``tests/test_docs.py``).

Usage: python benchmarks/make_run_time.py [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "make_run.json"


def time_run() -> dict:
    """One ``ecc-lab run`` into a fresh temporary folder: wall seconds and per-notebook seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "ecc_lib", "run", "--out", str(out), "--no-progress"],
            check=True,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - start
        record = json.loads((out / "run.json").read_text())
    return {"wall_s": round(wall, 1), "notebooks_s": record["durations_s"]}


def main() -> int:
    """Time the main job ``--repeats`` times and record the median."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    runs = [time_run() for _ in range(args.repeats)]
    wall = statistics.median(r["wall_s"] for r in runs)
    names = list(runs[0]["notebooks_s"])
    per_notebook = {
        n: round(statistics.median(r["notebooks_s"][n] for r in runs), 1) for n in names
    }
    print(f"{'step':24s} {'seconds':>8s}")
    for name, seconds in per_notebook.items():
        print(f"{name:24s} {seconds:8.1f}")
    print(f"{'ecc-lab run (wall)':24s} {wall:8.1f}")
    result = {
        "what": "ecc-lab run on the bundled data (make run once installed), median over repeats",
        "repeats": args.repeats,
        "wall_s": wall,
        "notebooks_s": per_notebook,
        "cpus": os.cpu_count(),
        "load_average_at_end": round(os.getloadavg()[0], 1),
        "python": platform.python_version(),
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
