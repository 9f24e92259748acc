"""Compare two JSON files, ignoring timings and ids (issue 22's "identical before and after").

Usage::

    python scripts/compare_json.py BEFORE.json AFTER.json [--ignore KEY ...] [--ignore-path A.B]

Prints every difference as a dotted path with both values and exits 1 when there is one, 0 when
the files agree. Ignored by default: keys that hold a timing (``*seconds*``, ``*_time``, ``time``,
``timestamp``, ``duration``, ``elapsed``) and ``provenance.git`` (commit ids). Numbers are compared
exactly (same seed, same numbers; NaN equals NaN); a mapping's key order is ignored, a list's order is not.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

TIMING = re.compile(r"(seconds|^time$|_time$|^timestamp$|duration|elapsed)", re.IGNORECASE)
DEFAULT_IGNORED_PATHS = ("provenance.git",)


def differences(
    before: Any,
    after: Any,
    path: str = "",
    ignore_keys: re.Pattern = TIMING,
    ignore_paths: tuple[str, ...] = DEFAULT_IGNORED_PATHS,
) -> list[str]:
    """Every difference between two JSON values, as ``path: before != after`` lines.

    Parameters
    ----------
    before, after : JSON values
    path : str
        Dotted path of these values (``""`` at the top).
    ignore_keys : compiled regex
        Mapping keys to skip wherever they occur.
    ignore_paths : tuple of str
        Dotted paths to skip.

    Returns
    -------
    list of str
    """
    if path in ignore_paths:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for key in sorted(set(before) | set(after), key=str):
            if ignore_keys.search(str(key)):
                continue
            sub = f"{path}.{key}" if path else str(key)
            if key not in before:
                out.append(f"{sub}: only after")
            elif key not in after:
                out.append(f"{sub}: only before")
            else:
                out += differences(before[key], after[key], sub, ignore_keys, ignore_paths)
        return out
    if isinstance(before, list) and isinstance(after, list):
        if len(before) != len(after):
            return [f"{path}: list of {len(before)} != list of {len(after)}"]
        out = []
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            out += differences(b, a, f"{path}[{i}]", ignore_keys, ignore_paths)
        return out
    if isinstance(before, float) and isinstance(after, float) and before != before:
        return [] if after != after else [f"{path}: nan != {after!r}"]  # NaN equals NaN here
    if type(before) is not type(after) or before != after:
        return [f"{path}: {before!r} != {after!r}"]
    return []


def main(argv: list[str] | None = None) -> int:
    """Command line: compare two files, print the differences."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--ignore", action="append", default=[], help="another key to ignore")
    parser.add_argument(
        "--ignore-path", action="append", default=[], help="another dotted path to ignore"
    )
    args = parser.parse_args(argv)
    pattern = TIMING
    if args.ignore:
        extra = "|".join(f"^{re.escape(k)}$" for k in args.ignore)
        pattern = re.compile(f"{TIMING.pattern}|{extra}", re.IGNORECASE)
    before = json.loads(Path(args.before).read_text(encoding="utf-8"))
    after = json.loads(Path(args.after).read_text(encoding="utf-8"))
    found = differences(
        before, after, ignore_keys=pattern, ignore_paths=(*DEFAULT_IGNORED_PATHS, *args.ignore_path)
    )
    for line in found:
        print(line)
    print(f"{args.before} vs {args.after}: {len(found)} difference(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
