"""Time the README's two commands on a fresh machine: ``make install``, ``make run``, ``make test``.

Clones the current commit into a temporary folder and, with empty pip and uv caches there (what a
fresh machine has; pip's configured local wheels, such as the CPU torch, still count), times
``make install`` (the venv: torch with pip, the rest with uv or pip, see the Makefile), then
``make run`` and ``make test`` on that venv. A fresh ``make run`` is the install plus the main job,
and so is a fresh ``make test``: both make the venv first. Writes
``benchmarks/results/two_commands.json`` (seconds, the installer, passed test count, commit,
cores), which ``scripts/update_readme.py`` turns into the README's sentence and
``scripts/install_message.py`` into what ``make install`` says first. Takes 10-20 minutes on 2
cores.

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
FORMAT = 2
"""2: ``install_s`` measured on its own, ``make_run_s`` and ``make_test_s`` on the installed venv
(format 1 timed ``make test`` with the install, then ``make run`` without)."""


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    """Run ``command`` in ``cwd``; its wall seconds and its output (raises on failure)."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    if done.returncode:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise SystemExit(f"{' '.join(command)} failed with exit code {done.returncode}")
    return time.perf_counter() - start, done.stdout + done.stderr


def installer_of(output: str) -> str:
    """Which installer ``make install`` used for ``ecc_lib[all,dev]`` (its own words)."""
    return "uv" if "installed with uv" in output else "pip"


def record(
    *,
    commit: str,
    install_s: float,
    run_s: float,
    test_s: float,
    installer: str,
    passed: int | None,
) -> dict:
    """The result file's content.

    Parameters
    ----------
    commit : str
    install_s, run_s, test_s : float
        Wall seconds of ``make install`` and of ``make run`` and ``make test`` once installed.
    installer : str
    passed : int or None
        Passed tests of ``make test``.

    Returns
    -------
    dict
    """
    return {
        "format": FORMAT,
        "commit": commit,
        "cpus": os.cpu_count(),
        "installer": installer,
        "install_s": round(install_s, 1),
        "make_run_s": round(run_s, 1),
        "make_test_s": round(test_s, 1),
        "make_run_fresh_s": round(install_s + run_s, 1),
        "make_test_fresh_s": round(install_s + test_s, 1),
        "n_passed": passed,
    }


def main() -> int:
    """Clone, time the install and both commands, write the result file."""
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
        env = {
            **os.environ,
            "PIP_CACHE_DIR": str(Path(tmp) / "pip-cache"),
            "UV_CACHE_DIR": str(Path(tmp) / "uv-cache"),
        }
        install_s, install_out = timed(["make", "install"], clone, env)
        print(install_out, flush=True)  # what make install said while it ran
        run_s, _ = timed(["make", "run"], clone, env)
        test_s, test_out = timed(["make", "test"], clone, env)
    passed = re.findall(r"(\d+) passed", test_out)
    result = record(
        commit=commit,
        install_s=install_s,
        run_s=run_s,
        test_s=test_s,
        installer=installer_of(install_out),
        passed=int(passed[-1]) if passed else None,
    )
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
