"""The Sphinx API reference (docs/api) lists every public module (the build is in test_docs)."""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import ecc_lib

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"


def public_modules() -> set[str]:
    names = {"ecc_lib"}
    for info in pkgutil.walk_packages(ecc_lib.__path__, prefix="ecc_lib."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.add(info.name)
    return names


def test_every_public_module_has_a_place_in_the_reference():
    documented = set()
    for page in API.glob("*.rst"):
        documented |= set(re.findall(r"^\.\. automodule:: (\S+)", page.read_text(), re.MULTILINE))
    missing = sorted(public_modules() - documented)
    assert not missing, f"add these modules to a page under docs/api/: {missing}"
    stale = sorted(documented - public_modules())
    assert not stale, f"docs/api/ names modules that do not exist: {stale}"
