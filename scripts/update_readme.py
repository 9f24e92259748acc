"""Write the README's generated blocks: measured times and the defaults, never typed by hand.

* ``times``: from ``benchmarks/results/two_commands.json`` (``benchmarks/two_commands_time.py``:
  ``make install``, ``make run`` and ``make test`` from a fresh clone with empty package caches,
  so the fresh-machine time includes the install) and ``benchmarks/results/make_run.json``
  (``benchmarks/make_run_time.py``: the main job once installed);
* ``defaults``: ECC's and the protocol's defaults read from the code.

``tests/test_docs.py`` fails while a block differs from what this script writes.

Usage: python scripts/update_readme.py [--check]
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RESULTS = ROOT / "benchmarks" / "results"


def minutes_seconds(seconds: float) -> str:
    """``95.4`` -> ``"1 min 35 s"``; under a minute ``"48 s"``."""
    seconds = int(round(seconds))
    minutes, rest = divmod(seconds, 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def times_block() -> str:
    """The measured times of the two commands: from a fresh machine (the install included) and
    once installed."""
    fresh_file, main_file = RESULTS / "two_commands.json", RESULTS / "make_run.json"
    if not fresh_file.exists() or not main_file.exists():
        return (
            "Not measured in this checkout yet: `python benchmarks/two_commands_time.py` and "
            "`python benchmarks/make_run_time.py` record the times, and this script writes them here."
        )
    fresh = json.loads(fresh_file.read_text())
    main_job = json.loads(main_file.read_text())
    notebooks = main_job["notebooks_s"]
    slowest = sorted(notebooks, key=notebooks.get, reverse=True)[:2]
    slow_text = " and ".join(f"{name} {notebooks[name]:.0f} s" for name in slowest)
    installed = (
        f"Once installed, the main job takes {minutes_seconds(main_job['wall_s'])} (slowest "
        f"notebooks: {slow_text}; `benchmarks/make_run_time.py`)."
    )
    if "install_s" not in fresh:  # format 1: make test built the venv, make run came after it
        return (
            f"Measured on a {fresh['cpus']}-core machine from a fresh clone (`{fresh['commit']}`): "
            f"`make test` {minutes_seconds(fresh['make_test_s'])} (building the venv included; "
            f"{fresh['n_passed']} tests), then `make run` {minutes_seconds(fresh['make_run_s'])} "
            "on that venv; `make run` first on a fresh machine also installs (not measured at "
            f"this commit: `python benchmarks/two_commands_time.py`). {installed}"
        )
    return (
        f"Measured on a fresh {fresh['cpus']}-core machine (a fresh clone of `{fresh['commit']}`, "
        f"empty package caches): `make run` {minutes_seconds(fresh['make_run_fresh_s'])}, of "
        f"which installing the venv {minutes_seconds(fresh['install_s'])} (with "
        f"{fresh['installer']}; `make run` says what it installs first) and the main job "
        f"{minutes_seconds(fresh['make_run_s'])}; then `make test` "
        f"{minutes_seconds(fresh['make_test_s'])} on that venv ({fresh['n_passed']} tests; "
        f"{minutes_seconds(fresh['make_test_fresh_s'])} when it comes first and installs). "
        f"{installed}"
    )


def defaults_block() -> str:
    """ECC's and the protocol's defaults, read from the code."""
    from ecc_lib.dars.distributions import DEFAULT_BETA, DEFAULT_LAMBDA
    from ecc_lib.ecc.estimator import ECC
    from ecc_lib.protocol.settings import Protocol

    params = inspect.signature(ECC).parameters
    k, lam, t = (params[name].default for name in ("n_clusters", "lam", "temperature"))
    p = Protocol()
    probes = f"{p.n_probes} comparison{'s' if p.n_probes != 1 else ''}"
    return (
        f"Defaults are the authors': ECC with K = {k} clusters, lam = {lam:g}, T = {t:g}; the "
        f"protocol draws {p.n_pairs} non-tie pairs per query, splits {1 - p.test_size:.0%} / "
        f"{p.test_size:.0%} by query (seed {p.seeds[0]}) and reveals {probes} of each test "
        f"query as its probe; DARS utility U = mu_q - {DEFAULT_LAMBDA:g} mu_c - "
        f"{DEFAULT_BETA:g} sigma_q."
    )


BLOCKS = {"times": times_block, "defaults": defaults_block}


def render(text: str) -> str:
    """``text`` with every generated block rewritten."""
    for name, make in BLOCKS.items():
        pattern = re.compile(
            rf"(<!-- BEGIN generated: {name} [^\n]*-->\n)(.*?)(<!-- END generated: {name} -->)",
            re.DOTALL,
        )
        if not pattern.search(text):
            raise ValueError(f"README.md has no generated block {name!r}")
        body = make()
        text = pattern.sub(lambda m, body=body: m.group(1) + body + "\n" + m.group(3), text)
    return text


def main() -> int:
    """Rewrite the README (or, with ``--check``, exit 1 when it is stale)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check, write nothing")
    args = parser.parse_args()
    current = README.read_text(encoding="utf-8")
    wanted = render(current)
    if args.check:
        if wanted != current:
            print("README.md is stale: run python scripts/update_readme.py")
            return 1
        return 0
    README.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
