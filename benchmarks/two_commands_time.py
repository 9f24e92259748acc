"""Time the README's two commands from a fresh clone: ``make test``, then ``make run``.

Clones the current commit into a temporary folder, runs ``make test`` (which builds the venv) and
then ``make run`` there, and writes ``benchmarks/results/two_commands.json`` (seconds, passed test
count, commit, cores), which ``scripts/update_readme.py`` turns into the README's sentence.
Takes 10-20 minutes on 2 cores.

Usage: python benchmarks/two_commands_time.py
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "two_commands.json"


def timed(command: list[str], cwd: Path) -> tuple[float, str]:
    """Run ``command`` in ``cwd``; its wall seconds and its output (raises on failure)."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise SystemExit(f"{' '.join(command)} failed with exit code {done.returncode}")
    return time.perf_counter() - start, done.stdout


def main() -> int:
    """Clone, time both commands, write the result file."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        test_s, test_out = timed(["make", "test"], clone)
        run_s, _ = timed(["make", "run"], clone)
    passed = re.findall(r"(\d+) passed", test_out)
    result = {
        "commit": commit,
        "make_test_s": round(test_s, 1),
        "make_run_s": round(run_s, 1),
        "n_passed": int(passed[-1]) if passed else None,
        "cpus": os.cpu_count(),
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
