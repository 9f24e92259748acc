"""Count the public names of ecc_lib, module by module, without importing it.

A module's public names are the names in its ``__all__`` when it has one, else its top-level names
that do not start with an underscore (functions, classes, assignments and imports, as
``from module import *`` would give them). Totals are sums over modules (a name re-exported by a
package ``__init__`` counts in both). Two narrower counts: ``without_imports`` leaves out, in
modules without ``__all__``, the names bound by import statements (``np``, ``Path``, helpers
imported from elsewhere); ``defined`` counts only the public names a module defines itself (def,
class, assignment), so that no name counts twice.

``--surface`` counts what a user can learn: the ``__all__`` names of every module whose dotted path
has no part starting with ``_``, each counted once for the object it names. A name a package face
re-exports (``from ecc_lib.x.y import NAME``, or a ``_EXPORTS``/``_LAZY`` dict of lazy exports) is
followed to the module that defines it, so ``ecc_lib.ECC``, ``ecc_lib.ecc.ECC`` and
``ecc_lib.ecc.estimator.ECC`` are one name. The default count is unchanged by this option.

Run from the repository root::

    python scripts/count_public_names.py                # the working tree
    python scripts/count_public_names.py --rev main     # a git revision
    python scripts/count_public_names.py --per-module   # one line per module
    python scripts/count_public_names.py --surface      # distinct public objects
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


def _origins(module: str, source: str, is_face: bool) -> dict[str, tuple[str, str]]:
    """``{name: (module, name)}`` of the names a module imports or exports lazily."""
    found: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom):
            base = module.split(".") if is_face else module.split(".")[:-1]
            if node.level:
                base = base[: len(base) - (node.level - 1)]
                where = ".".join([*base, *([node.module] if node.module else [])])
            else:
                where = node.module or ""
            for alias in node.names:
                found[alias.asname or alias.name] = (where, alias.name)
        targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
        value = getattr(node, "value", None)
        if isinstance(value, ast.Dict) and any(
            isinstance(t, ast.Name) and t.id in ("_EXPORTS", "_LAZY") for t in targets
        ):
            for key, where in zip(value.keys, value.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(where, ast.Constant):
                    found[key.value] = (where.value, key.value)
    return found


def surface(rev: str | None = None) -> dict:
    """Distinct public objects (see ``--surface`` in the module docstring).

    Parameters
    ----------
    rev : str, optional
        A git revision (default: the working tree).

    Returns
    -------
    dict
        ``surface`` (distinct objects), ``declared`` (``__all__`` entries of public modules) and
        ``names`` (sorted ``module.name`` of each object).
    """
    sources = _sources(rev)
    faces = {m for m in sources if _is_face(m, sources)}
    origins = {m: _origins(m, s, m in faces) for m, s in sources.items()}
    objects: set[str] = set()
    declared = 0
    for module, source in sources.items():
        if any(part.startswith("_") for part in module.split(".")):
            continue
        names = module_names(module, source)
        if not names.has_all:
            continue
        for name in names.public:
            declared += 1
            where = (module, name)
            for _ in range(10):  # follow re-exports to the defining module
                nxt = origins.get(where[0], {}).get(where[1])
                if nxt is None or nxt[0] not in sources:
                    break
                where = nxt
            objects.add(f"{where[0]}.{where[1]}")
    return {"surface": len(objects), "declared": declared, "names": sorted(objects)}


def _is_face(module: str, sources: dict[str, str]) -> bool:
    """Whether ``module`` is a package (another module lies below it)."""
    return any(other.startswith(module + ".") for other in sources)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="a git revision (default: the working tree)")
    parser.add_argument("--per-module", action="store_true", help="one line per module")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--surface", action="store_true", help="distinct public objects, re-exports counted once"
    )
    args = parser.parse_args(argv)
    if args.surface:
        found = surface(args.rev)
        if args.json:
            print(json.dumps(found, indent=2))
            return 0
        print(
            f"{args.rev or 'working tree'}: {found['surface']} distinct public names "
            f"({found['declared']} __all__ entries of public modules)"
        )
        return 0
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
