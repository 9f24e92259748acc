"""Count the public names of ecc_lib, module by module, without importing it.

A module's public names are the names in its ``__all__`` when it has one, else its top-level names
that do not start with an underscore (functions, classes, assignments and imports, as
``from module import *`` would give them). Totals are sums over modules (a name re-exported by a
package ``__init__`` counts in both). Two narrower counts: ``without_imports`` leaves out, in
modules without ``__all__``, the names bound by import statements (``np``, ``Path``, helpers
imported from elsewhere); ``defined`` counts only the public names a module defines itself (def,
class, assignment), so that no name counts twice.

Run from the repository root::

    python scripts/count_public_names.py                # the working tree
    python scripts/count_public_names.py --rev main     # a git revision
    python scripts/count_public_names.py --per-module   # one line per module
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "ecc_lib"


@dataclass(frozen=True)
class ModuleNames:
    """The public names of one module."""

    module: str
    public: tuple[str, ...]
    without_imports: tuple[str, ...]
    defined: tuple[str, ...]
    has_all: bool


def _literal_names(node: ast.expr, literals: dict[str, ast.expr]) -> list[str] | None:
    """String elements of a list/tuple literal (``*NAME`` of a top-level literal expanded; a dict
    contributes its keys); None when not static."""
    if isinstance(node, ast.Dict):
        keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
        return keys if len(keys) == len(node.keys) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal_names(node.left, literals), _literal_names(node.right, literals)
        return None if left is None or right is None else left + right
    if not isinstance(node, ast.List | ast.Tuple):
        return None
    names: list[str] = []
    for element in node.elts:
        if isinstance(element, ast.Constant) and isinstance(element.value, str):
            names.append(element.value)
        elif isinstance(element, ast.Starred) and isinstance(element.value, ast.Name):
            inner = literals.get(element.value.id)
            expanded = None if inner is None else _literal_names(inner, literals)
            if expanded is None:
                return None
            names.extend(expanded)
        else:
            return None
    return names


def module_names(module: str, source: str) -> ModuleNames:
    """Public and defined names of a module's source.

    Parameters
    ----------
    module : str
        Dotted module name (for messages).
    source : str
        Its Python source.

    Returns
    -------
    ModuleNames
    """
    tree = ast.parse(source)
    bound: dict[str, str] = {}  # name -> "defined" | "imported"
    literals: dict[str, ast.expr] = {}
    declared: list[str] | None = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound[node.name] = "defined"
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    bound[(alias.asname or alias.name).partition(".")[0]] = "imported"
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        if name.id == "__all__" and value is not None:
                            names = _literal_names(value, literals)
                            if names is None:
                                raise ValueError(f"{module}: __all__ is not a static list")
                            declared = (
                                names
                                if not isinstance(node, ast.AugAssign)
                                else [*(declared or []), *names]
                            )
                        else:
                            bound.setdefault(name.id, "defined")
                            if value is not None:
                                literals[name.id] = value
    if declared is not None:
        public = tuple(declared)
        without_imports = public
    else:
        public = tuple(sorted(n for n in bound if not n.startswith("_")))
        without_imports = tuple(n for n in public if bound[n] == "defined")
    defined = tuple(n for n in public if bound.get(n) == "defined")
    return ModuleNames(module, public, without_imports, defined, declared is not None)


def _sources(rev: str | None) -> dict[str, str]:
    """``{module: source}`` of every module of the package in the working tree or at ``rev``."""
    if rev is None:
        files = sorted((ROOT / PACKAGE).rglob("*.py"))
        items = {f.relative_to(ROOT).as_posix(): f.read_text(encoding="utf-8") for f in files}
    else:
        listed = subprocess.run(
            ["git", "ls-tree", "-r", "--name-only", rev, PACKAGE],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        items = {
            path: subprocess.run(
                ["git", "show", f"{rev}:{path}"],
                cwd=ROOT,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            for path in listed
            if path.endswith(".py")
        }
    modules = {}
    for path, source in items.items():
        parts = path[: -len(".py")].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = source
    return modules


def count(rev: str | None = None) -> dict:
    """Totals and per-module counts.

    Parameters
    ----------
    rev : str, optional
        A git revision (default: the working tree).

    Returns
    -------
    dict
        ``modules``, ``modules_with_all``, ``public`` (sum over modules), ``without_imports``,
        ``defined`` (see the module docstring), ``per_module`` (module -> [public,
        without_imports, defined, has __all__]).
    """
    per = [module_names(m, s) for m, s in sorted(_sources(rev).items())]
    return {
        "revision": rev or "working tree",
        "modules": len(per),
        "modules_with_all": sum(m.has_all for m in per),
        "public": sum(len(m.public) for m in per),
        "without_imports": sum(len(m.without_imports) for m in per),
        "defined": sum(len(m.defined) for m in per),
        "per_module": {
            m.module: [len(m.public), len(m.without_imports), len(m.defined), m.has_all]
            for m in per
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="a git revision (default: the working tree)")
    parser.add_argument("--per-module", action="store_true", help="one line per module")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    result = count(args.rev)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    if args.per_module:
        print("public without_imports defined")
        for module, (public, own, defined, has_all) in result["per_module"].items():
            flag = "__all__" if has_all else "       "
            print(f"{public:6d} {own:15d} {defined:7d} {flag} {module}")
    print(
        f"{result['revision']}: {result['public']} public names in {result['modules']} modules "
        f"({result['modules_with_all']} with __all__); {result['without_imports']} without "
        f"imported names; {result['defined']} defined where they are public"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
