"""Count the code lines of a Python tree, and its longest functions.

A line counts when it holds code: it is not blank, not a comment only, and not part of a docstring
or another string statement (a bare string expression; a string assigned to a name counts). A
function's size is the number of such lines from its ``def`` line to its last line, nested
functions included.

Run from the repository root::

    python scripts/count_code_lines.py                  # ecc_lib/
    python scripts/count_code_lines.py ecc_lib/report   # one package
    python scripts/count_code_lines.py --over 80        # every function over 80 code lines
    python scripts/count_code_lines.py --json
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


def code_lines(source: str) -> set[int]:
    """The numbers (1-based) of the lines of ``source`` that hold code."""
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in _NOT_CODE:
            lines.update(range(token.start[0], token.end[0] + 1))
    for node in ast.walk(ast.parse(source)):
        is_string_statement = (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )
        if is_string_statement:
            lines.difference_update(range(node.lineno, node.end_lineno + 1))
    return lines


def functions(source: str, lines: set[int]) -> list[tuple[str, int, int]]:
    """``(qualified name, first line, code lines)`` of every function in ``source``."""
    out: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                size = len(lines & set(range(child.lineno, child.end_lineno + 1)))
                out.append((name, first, size))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return out


def count(paths: list[Path]) -> dict:
    """Code lines per file and the functions of every ``.py`` file under ``paths``."""
    files: dict[str, int] = {}
    funcs: list[dict] = []
    for base in paths:
        for path in sorted([base] if base.is_file() else base.rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            lines = code_lines(source)
            try:
                shown = path.resolve().relative_to(ROOT).as_posix()
            except ValueError:
                shown = path.as_posix()
            files[shown] = len(lines)
            funcs += [
                {"function": f"{shown}:{name}", "line": line, "lines": size}
                for name, line, size in functions(source, lines)
            ]
    funcs.sort(key=lambda f: -f["lines"])
    return {
        "code_lines": sum(files.values()),
        "files": len(files),
        "longest_function": funcs[0] if funcs else None,
        "functions": funcs,
        "per_file": files,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[ROOT / "ecc_lib"])
    parser.add_argument("--over", type=int, default=100, help="list functions over this many lines")
    parser.add_argument("--json", action="store_true", help="print the whole count as JSON")
    args = parser.parse_args(argv)
    report = count(args.paths)
    if args.json:
        report["functions"] = [f for f in report["functions"] if f["lines"] > args.over]
        print(json.dumps(report, indent=2))
        return 0
    over = [f for f in report["functions"] if f["lines"] > args.over]
    print(f"{report['code_lines']} code lines in {report['files']} files")
    print(f"{len(over)} functions over {args.over} code lines")
    for f in over:
        print(f"  {f['lines']:5d}  {f['function']} (line {f['line']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
