"""Where each public name of ecc_lib is used, without importing the package.

For every name in every module's ``__all__`` this finds the places that use it, read statically
(``ast``) from Python files and from the text of the documentation:

- in Python (``ecc_lib/``, ``tests/``, ``benchmarks/``, ``scripts/``, ``docs/*.py`` and the code
  cells of ``notebooks/*.ipynb``): ``from MODULE import NAME``, attribute access through an
  imported module (``import ecc_lib.x as m; m.NAME``, ``ecc_lib.x.NAME``,
  ``importlib.import_module("ecc_lib.x").NAME``) and strings ``"ecc_lib.x:NAME"`` /
  ``"ecc_lib.x.NAME"`` (entry points, lazy exports);
- in ``README.md``, ``docs/**/*.md`` and ``docs/**/*.rst``: dotted mentions ``ecc_lib.x.NAME``,
  the Python code blocks, and a name in backticks (```NAME``` or ```NAME(...)```) when some module
  exports that name (a use of the module that defines it, or of the face that lists it when its
  defining module does not).

- in ``pyproject.toml``: the entry points (``[project.scripts]``, ``[project.entry-points]``), a
  use by ``scripts`` (the commands a user runs).

A package face (``__init__.py``) that re-exports a name (an import, or a ``_EXPORTS``/``_LAZY``
dict of lazy exports) passes every use of ``face.NAME`` on to the module that defines it.

Each use is placed, relative to the module whose ``__all__`` holds the name, in one of: ``own``
(the module itself), ``package`` (the same top-level package, ``ecc_lib/<pkg>/``; a top-level
module such as ``ecc_lib/stats.py`` is a package of its own), ``other`` (another ecc_lib package),
``tests``, ``notebooks``, ``docs`` (the guide, the API pages, ``README.md``), ``benchmarks`` and
``scripts``. A name is *outside*, and so public, when a user reaches it: some use is in
``notebooks``, ``docs``, ``benchmarks`` or ``scripts`` (the rule in ``docs/CONTRIBUTING.md``).
Uses by other ecc_lib packages (``other``) or by tests alone leave a name internal: importable from
its defining module, in no ``__all__``. Uses by docstrings of ecc_lib are not counted.

Run from the repository root::

    python scripts/public_name_usage.py               # summary table
    python scripts/public_name_usage.py --names       # one line per name with its places
    python scripts/public_name_usage.py --unused      # names no user reaches
    python scripts/public_name_usage.py --json
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from count_public_names import module_names  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "ecc_lib"
PLACES = ("own", "package", "other", "tests", "notebooks", "docs", "benchmarks", "scripts")
OUTSIDE = ("notebooks", "docs", "benchmarks", "scripts")
DOTTED = re.compile(r"\becc_lib(?:[.:][A-Za-z_][A-Za-z0-9_]*)+")
BACKTICKED = re.compile(r"`{1,2}~?([A-Za-z_][A-Za-z0-9_.]*)(?:\(\S*?\))?`{1,2}")
FENCE = re.compile(r"^```\s*(?:python|py|\{code-cell\}\s*(?:ipython3|python))\s*$")


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _package_of(module: str) -> str:
    """``ecc_lib.<pkg>`` for a module of a subpackage, the module itself for a top-level module."""
    parts = module.split(".")
    if len(parts) == 1:
        return module
    candidate = ".".join(parts[:2])
    is_package = (ROOT / PACKAGE / parts[1] / "__init__.py").exists()
    return candidate if is_package else module


class Library:
    """The modules of ecc_lib: their ``__all__`` and where a face's names come from."""

    def __init__(self) -> None:
        self.files: dict[str, Path] = {}
        self.exports: dict[str, tuple[str, ...]] = {}
        self.origin: dict[tuple[str, str], tuple[str, str]] = {}  # (face, name) -> (module, name)
        self.is_face: set[str] = set()
        for path in sorted((ROOT / PACKAGE).rglob("*.py")):
            module = _module_of(path)
            self.files[module] = path
            if path.name == "__init__.py":
                self.is_face.add(module)
        for module, path in self.files.items():
            source = path.read_text(encoding="utf-8")
            names = module_names(module, source)
            if names.has_all:
                self.exports[module] = names.public
            self._read_origins(module, ast.parse(source))

    def _read_origins(self, module: str, tree: ast.Module) -> None:
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                source = _absolute(node, module, module in self.is_face)
                for alias in node.names:
                    self.origin[(module, alias.asname or alias.name)] = (source, alias.name)
            value = getattr(node, "value", None)
            targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
            if isinstance(value, ast.Dict) and any(
                isinstance(t, ast.Name) and t.id in ("_EXPORTS", "_LAZY") for t in targets
            ):
                for key, where in zip(value.keys, value.values, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(where, ast.Constant):
                        self.origin[(module, key.value)] = (where.value, key.value)

    def resolve(self, module: str, name: str) -> list[tuple[str, str]]:
        """The chain ``(module, name)``, then each module it was imported from."""
        chain = [(module, name)]
        while chain[-1] in self.origin and len(chain) < 10:
            nxt = self.origin[chain[-1]]
            if nxt[0] not in self.files:
                break
            chain.append(nxt)
        return chain

    def split(self, dotted: str) -> tuple[str, str] | None:
        """``ecc_lib.x.y.NAME`` (or ``ecc_lib.x.y:NAME``) -> ``("ecc_lib.x.y", "NAME")``."""
        dotted = dotted.replace(":", ".")
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if module in self.files:
                return module, parts[cut]
        return None


def _absolute(node: ast.ImportFrom, module: str, is_face: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_face else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def python_uses(source: str, lib: Library, here: str | None = None) -> set[tuple[str, str]]:
    """``(module, name)`` pairs a Python source uses (``here``: its own module, for relative
    imports)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    aliases: dict[str, str] = {}  # local name -> module
    uses: set[tuple[str, str]] = set()
    is_face = here in lib.is_face if here else False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    aliases[alias.name.partition(".")[0]] = alias.name.partition(".")[0]
        elif isinstance(node, ast.ImportFrom):
            source_module = _absolute(node, here or "", is_face) if node.level else node.module
            if not source_module:
                continue
            for alias in node.names:
                full = f"{source_module}.{alias.name}"
                if full in lib.files:
                    aliases[alias.asname or alias.name] = full
                elif source_module in lib.files:
                    uses.add((source_module, alias.name))
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            call = node.value
            func = call.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called == "import_module" and call.args and isinstance(call.args[0], ast.Constant):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        aliases[target.id] = str(call.args[0].value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for match in DOTTED.findall(node.value):
                found = lib.split(match)
                if found:
                    uses.add(found)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts = []
            inner: ast.expr = node
            while isinstance(inner, ast.Attribute):
                parts.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id in aliases:
                dotted = ".".join([aliases[inner.id], *reversed(parts)])
                found = lib.split(dotted)
                if found:
                    uses.add(found)
    return uses


def _docstring_free(source: str) -> str:
    """The source with the docstrings of modules, classes and functions blanked (their
    references are no use)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                for i in range(value.lineno - 1, value.end_lineno):
                    lines[i] = "\n"
                lines[value.lineno - 1] = " " * value.col_offset + "None\n"
    return "".join(lines)


def text_uses(text: str, lib: Library, exported_by: dict[str, list[str]]) -> set[tuple[str, str]]:
    """Uses in a Markdown or reStructuredText page."""
    uses = set()
    for match in DOTTED.findall(text):
        found = lib.split(match)
        if found:
            uses.add(found)
    for match in BACKTICKED.findall(text):
        last = match.rsplit(".", 1)[-1]
        if "." in match and match.startswith(PACKAGE):
            continue  # dotted: done above
        for module in exported_by.get(last, ()):
            uses.add((module, last))
    block: list[str] | None = None
    fenced = False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            if fenced and block is not None:
                uses |= python_uses("\n".join(block), lib)
            block = [] if not fenced and FENCE.match(line.strip()) else None
            fenced = not fenced
        elif block is not None:
            block.append(line)
    return uses


def entry_point_uses(text: str, lib: Library) -> set[tuple[str, str]]:
    """``(module, name)`` of the entry points of a ``pyproject.toml`` (``module:name``)."""
    project = tomllib.loads(text).get("project", {})
    groups = [project.get("scripts", {}), *project.get("entry-points", {}).values()]
    found = (lib.split(target) for group in groups for target in group.values())
    return {pair for pair in found if pair}


def _own_loads(path: Path) -> set[str]:
    """Names a module reads itself (outside ``__all__``; decorators and calls count)."""
    tree = ast.parse(_docstring_free(path.read_text(encoding="utf-8")))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _notebook_code(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = []
    for cell in cells:
        if cell["cell_type"] == "code":
            lines = "".join(cell["source"]).splitlines()
            code.append("\n".join("" if ln.lstrip()[:1] in "%!" else ln for ln in lines))
    return "\n".join(code)


def sources() -> list[tuple[str, str, str, str | None]]:
    """``(place, file, kind, module)`` for every file that may use a name; kind is py, ipynb,
    text or toml."""
    found: list[tuple[str, str, str, str | None]] = []
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        found.append(("ecc_lib", str(path.relative_to(ROOT)), "py", _module_of(path)))
    for place, folder in (("tests", "tests"), ("benchmarks", "benchmarks"), ("scripts", "scripts")):
        for path in sorted((ROOT / folder).rglob("*.py")):
            found.append((place, str(path.relative_to(ROOT)), "py", None))
    for path in sorted((ROOT / "docs").rglob("*.py")):
        found.append(("docs", str(path.relative_to(ROOT)), "py", None))
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        found.append(("notebooks", str(path.relative_to(ROOT)), "ipynb", None))
    for pattern in ("*.md", "*.rst"):
        for path in sorted((ROOT / "docs").rglob(pattern)):
            if "_build" not in path.parts:
                found.append(("docs", str(path.relative_to(ROOT)), "text", None))
    found.append(("docs", "README.md", "text", None))
    found.append(("scripts", "pyproject.toml", "toml", None))
    return found


def usage() -> dict:
    """``{module: {name: {place: [files]}}}`` for every name of every ``__all__``."""
    lib = Library()
    exported_by: dict[str, list[str]] = defaultdict(list)
    for module, names in lib.exports.items():
        for name in names:
            # a bare mention is one of the defining module, or of the face that lists the name
            # when its defining module does not
            home = lib.resolve(module, name)[-1]
            if home == (module, name) or name not in lib.exports.get(home[0], ()):
                exported_by[name].append(module)
    # (module, name) -> set of (place, file, user module)
    used: dict[tuple[str, str], set[tuple[str, str, str | None]]] = defaultdict(set)
    for place, file, kind, here in sources():
        text = (ROOT / file).read_text(encoding="utf-8")
        if kind == "py":
            pairs = python_uses(_docstring_free(text) if here else text, lib, here)
        elif kind == "ipynb":
            pairs = python_uses(_notebook_code(ROOT / file), lib)
        elif kind == "toml":
            pairs = entry_point_uses(text, lib)
        else:
            pairs = text_uses(text, lib, exported_by)
        for module, name in pairs:
            for link in lib.resolve(module, name):
                used[link].add((place, file, here))
    table: dict[str, dict[str, dict[str, list[str]]]] = {}
    for module, names in lib.exports.items():
        package = _package_of(module)
        own = _own_loads(lib.files[module])
        entries = {}
        for name in names:
            places: dict[str, list[str]] = defaultdict(list)
            # uses of the name through this module, plus those of each face that re-exports it
            for place, file, user in sorted(used.get((module, name), ()), key=str):
                if place == "ecc_lib":
                    if user == module:
                        place = "own"
                    elif module == PACKAGE:
                        place = "package"
                    else:
                        place = "package" if _package_of(user) == package else "other"
                places[place].append(file)
            if name in own and not places.get("own"):
                places["own"].append(str(lib.files[module].relative_to(ROOT)))
            entries[name] = dict(places)
        table[module] = entries
    return table


def is_outside(places: dict) -> bool:
    """Whether a name's places make it public (see the module docstring)."""
    return any(places.get(p) for p in OUTSIDE)


def _kind(places: dict) -> str:
    """The widest place of a name: out, other, pkg, tests, own or none."""
    if is_outside(places):
        return "out"
    for key, kind in (("other", "other"), ("package", "pkg"), ("tests", "tests"), ("own", "own")):
        if places.get(key):
            return kind
    return "none"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", action="store_true", help="one line per name")
    parser.add_argument("--unused", action="store_true", help="names no user reaches")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    table = usage()
    if args.json:
        print(json.dumps(table, indent=1, sort_keys=True))
        return 0
    if args.names or args.unused:
        for module, entries in table.items():
            for name, places in entries.items():
                if args.unused and is_outside(places):
                    continue
                counts = " ".join(f"{p}={len(places[p])}" for p in PLACES if places.get(p))
                print(f"{module}.{name}: {counts or 'UNUSED'}")
        return 0
    columns = ("all", "out", "other", "pkg", "tests", "own", "none")
    print(f"{'module':45s} " + " ".join(f"{c:>5s}" for c in columns))
    totals = dict.fromkeys(columns, 0)
    for module, entries in table.items():
        row = dict.fromkeys(columns, 0)
        for places in entries.values():
            row["all"] += 1
            row[_kind(places)] += 1
        for column in columns:
            totals[column] += row[column]
        print(f"{module:45s} " + " ".join(f"{row[c]:5d}" for c in columns))
    print(f"{'total':45s} " + " ".join(f"{totals[c]:5d}" for c in columns))
    print(
        "all: names in __all__; out: reached by users (notebooks, docs, benchmarks, scripts); "
        "else other: used by another ecc_lib package; else pkg: used in the package; else tests: "
        "used by tests; else own: used in its module only; none: used nowhere (for a face: its "
        "re-export is unused); every name not out belongs in no __all__"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
