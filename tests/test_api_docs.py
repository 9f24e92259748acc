"""The Sphinx API reference (docs/api) lists every public module and builds without warnings."""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_api_reference_builds_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
        + [str(API), str(tmp_path / "html")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "html" / "routing.html").exists()
    assert "SoftmaxRankingRouter" in (tmp_path / "html" / "routing.html").read_text()
