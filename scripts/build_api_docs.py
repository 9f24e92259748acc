"""Write the API reference pages ``docs/api/*.rst``, one page per part of the house.

Usage::

    python scripts/build_api_docs.py

Each page lists its packages bottom-up, as in ``docs/design.md`` section 8: a heading per package, the
package's docstring, then an ``automodule`` per module. Run it after moving, adding or
removing a module; ``tests/test_api_docs.py`` fails while a public module has no place here.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"

PAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "data": ("Data: tables, comparisons, observations, checks and embeddings", ("data", "embed")),
    "ecc": (
        "ECC: Bradley-Terry profiles and capability clusters",
        ("bradley_terry", "ecc", "distributed"),
    ),
    "dars": ("DARS: capability distributions and label instability", ("dars",)),
    "routing": ("Routers and routing evaluation", ("routers", "routing_evaluation")),
    "protocol": (
        "The evaluation protocols, the experiments and the benchmark",
        ("protocol", "bench"),
    ),
    "reporting": (
        "Run folders, figures and the report",
        (
            "runs",
            "plotting",
            "report",
            "stats",
            "grammar",
            "labels",
            "method_registry",
            "metrics_schema",
            "serialization",
            "paths",
            "redaction",
            "synthetic",
        ),
    ),
    "collect": ("Collecting outcomes from live endpoints", ("collect",)),
    "cli": ("Command line (``ecc-lab``)", ("cli",)),
}


def modules_of(name: str) -> list[str]:
    """The public modules of ``ecc_lib.<name>``: the package first, then its modules in order."""
    module = importlib.import_module(f"ecc_lib.{name}")
    found = [module.__name__]
    if hasattr(module, "__path__"):
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{module.__name__}."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                found.append(info.name)
    return found


def page(title: str, packages: tuple[str, ...]) -> str:
    lines = [title, "=" * len(title), ""]
    for name in packages:
        mods = modules_of(name)
        heading = f"``ecc_lib.{name}``"
        lines += [heading, "-" * len(heading), ""]
        for mod in mods:
            lines.append(f".. automodule:: {mod}")
            if hasattr(importlib.import_module(mod), "__path__"):
                lines.append("   :no-members:")
            lines.append("")
    return "\n".join(lines)


def main() -> None:
    for name, (title, packages) in PAGES.items():
        (API / f"{name}.rst").write_text(page(title, packages), encoding="utf-8")
    index = API / "index.rst"
    text = index.read_text(encoding="utf-8")
    head, _, rest = text.partition(".. toctree::")
    tail = rest[rest.index("\n\n.. automodule") :] if "\n\n.. automodule" in rest else ""
    toc = ".. toctree::\n   :maxdepth: 2\n\n" + "".join(f"   {n}\n" for n in PAGES)
    index.write_text(head + toc + tail.lstrip("\n").join(["\n", ""]), encoding="utf-8")
    print(f"wrote {len(PAGES)} pages under {API.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
