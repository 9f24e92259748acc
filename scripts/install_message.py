"""What ``make install`` (and so ``make run`` and ``make test`` on a fresh machine) installs, and
how long that usually takes: printed before the install starts, so a first run is never silent.

The packages come from ``pyproject.toml`` (the core dependencies and the extras ``[all,dev]``);
the time from ``benchmarks/results/two_commands.json`` (``benchmarks/two_commands_time.py``
measures ``make install`` in a fresh clone with empty package caches). Standard library only: it
runs with the system Python before the virtual environment exists.

Usage: python3 scripts/install_message.py [--torch SPEC] [--installer auto|uv|pip]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "two_commands.json"
EXTRAS = ("all", "dev")


def _name(requirement: str) -> str:
    """``"numpy>=1.26"`` -> ``"numpy"``; ``"ecc_lib[embed,plot]"`` -> ``"ecc_lib[embed,plot]"``."""
    return re.split(r"[<>=!~; ]", requirement.strip(), maxsplit=1)[0]


def packages(pyproject: Path = ROOT / "pyproject.toml") -> tuple[list[str], list[str]]:
    """The core dependencies and the packages of the extras ``[all,dev]`` (the extras that
    ``all`` names expanded), by name, in file order.

    Parameters
    ----------
    pyproject : Path

    Returns
    -------
    core, extras : list of str
    """
    import tomllib

    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    optional = project.get("optional-dependencies", {})
    core = [_name(r) for r in project.get("dependencies", [])]
    seen: dict[str, None] = {}
    todo = list(EXTRAS)
    while todo:
        extra = todo.pop(0)
        for requirement in optional.get(extra, []):
            nested = re.fullmatch(r"ecc[_-]lib\[([^\]]+)\]", _name(requirement))
            if nested:
                todo[:0] = [e.strip() for e in nested.group(1).split(",")]
            else:
                seen.setdefault(_name(requirement), None)
    return core, [n for n in seen if n not in core]


def usual_time(result: Path = RESULT) -> str:
    """How long the install took when last measured, as words (or that it is not measured).

    Parameters
    ----------
    result : Path
        ``benchmarks/results/two_commands.json``.

    Returns
    -------
    str
    """
    try:
        record = json.loads(result.read_text(encoding="utf-8"))
        seconds = float(record["install_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return (
            "The install time is not measured in this checkout yet "
            "(python3 benchmarks/two_commands_time.py)."
        )
    minutes, rest = divmod(int(round(seconds)), 60)
    took = f"{minutes} min {rest} s" if minutes else f"{rest} s"
    return (
        f"It usually takes about {took} on a fresh {record.get('cpus', '?')}-core machine "
        f"(with {record.get('installer', 'pip')}, empty package caches; measured at commit "
        f"{record.get('commit', '?')}, benchmarks/results/two_commands.json)."
    )


def message(*, torch: str = "torch", installer: str = "auto") -> str:
    """The lines printed before ``make install`` starts.

    Parameters
    ----------
    torch : str
        The torch requirement the Makefile installs first (``TORCH_SPEC``).
    installer : {"auto", "uv", "pip"}
        ``INSTALLER`` of the Makefile.

    Returns
    -------
    str
    """
    how = {
        "auto": "uv (from the package index, into the venv) where it works, else pip",
        "uv": "uv",
        "pip": "pip",
    }.get(installer, installer)
    try:
        core, extras = packages()
        listed = (
            f"  - ecc_lib and its core: {', '.join(core)}\n"
            f"  - the extras [{','.join(EXTRAS)}]: {', '.join(extras)}\n"
        )
    except (ImportError, OSError, KeyError, ValueError):  # Python < 3.11 has no tomllib
        listed = f"  - ecc_lib with the extras [{','.join(EXTRAS)}] (see pyproject.toml)\n"
    return (
        "make install: setting up .venv once (again only when pyproject.toml changes):\n"
        f"  - {torch}, CPU build, with pip\n"
        + listed
        + f"  with their dependencies, by {how}; then a Jupyter kernel.\n  "
        + usual_time()
    )


def main(argv: list[str] | None = None) -> int:
    """Print :func:`message`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", default="torch", help="the torch requirement installed first")
    parser.add_argument("--installer", default="auto", choices=("auto", "uv", "pip"))
    args = parser.parse_args(argv)
    print(message(torch=args.torch, installer=args.installer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
