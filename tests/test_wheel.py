"""The package as users install it: a wheel in a fresh environment, run from an empty folder.

The wheel is built from this tree and installed without dependencies into a new virtual environment
whose only other import path is the test environment's site-packages (for numpy, papermill and the
rest; its editable hook for ecc_lib is not processed there). Commands then run from an empty folder
outside the repository, so nothing can come from the source tree.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECC_LIB_", "PYTHON"))}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), HF_HUB_OFFLINE="1")
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    """Build the wheel once, install it into a new environment; return its paths."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation"]
        + ["-q", "-w", str(dist)],
        check=True,
        cwd=base,
    )
    (wheel,) = dist.glob("ecc_lib-*.whl")
    env_dir = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(purelib, "_test_dependencies.pth").write_text(site.getsitepackages()[0] + "\n")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "-q", str(wheel)],
        check=True,
        cwd=base,
        env=_clean_env(base),
    )
    empty = base / "empty"
    empty.mkdir()
    return {"wheel": wheel, "python": python, "bin": env_dir / "bin", "cwd": empty, "home": base}


def _run(installed, *command: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        list(command),
        cwd=installed["cwd"],
        env=_clean_env(installed["home"]),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_wheel_carries_notebooks_data_and_embedding_cache(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    bundle = "ecc_lib/_bundle/"
    for notebook in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        assert f"{bundle}notebooks/{notebook.name}" in names
    for dataset in ("dcrouter", "re2", "mmlu2"):
        for part in ("queries.parquet", "outcomes.parquet", "LICENSE", "BUILD.json"):
            assert f"{bundle}data/{dataset}/{part}" in names
        assert f"{bundle}data/embeddings/all-MiniLM-L6-v2/bundled-{dataset}.npz" in names
    assert not any(name.startswith(("data/", "notebooks/", "tests/")) for name in names)


def test_installed_package_is_not_the_source_tree(installed):
    found = _run(
        installed,
        str(installed["python"]),
        "-c",
        "import ecc_lib, ecc_lib.paths as p; print(ecc_lib.__file__); print(p.data_dir()); "
        "print(p.is_source_checkout())",
    )
    assert found.returncode == 0, found.stderr
    package, data, checkout = found.stdout.split()
    assert str(ROOT) not in package and str(ROOT) not in data
    assert checkout == "False" and data.endswith("_bundle/data")


def test_datasets_and_module_entry_point_from_an_empty_folder(installed):
    listed = _run(installed, str(installed["bin"] / "ecc-lab"), "datasets")
    assert listed.returncode == 0, listed.stderr
    assert "dcrouter" in listed.stdout and "5,989" in listed.stdout
    helped = _run(installed, str(installed["python"]), "-m", "ecc_lib", "--help")
    assert helped.returncode == 0 and "init" in helped.stdout


@pytest.mark.slow  # heavy (a whole notebook run or a local cluster): make test-all
def test_run_writes_into_runs_of_the_working_directory(installed):
    out = _run(installed, str(installed["bin"] / "ecc-lab"), "run", "--only", "02", "--no-progress")
    assert out.returncode == 0, out.stderr[-3000:]
    (run_dir,) = (installed["cwd"] / "runs").iterdir()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["dars"]["winner_flip_rate"] is not None
    # the kernel imported the installed package, not the clone
    assert str(ROOT) not in json.dumps(metrics["provenance"].get("datasets", {}))


@pytest.mark.slow  # heavy (a whole notebook run or a local cluster): make test-all
def test_init_copies_starter_notebooks_and_run_uses_them(installed):
    starter = installed["cwd"] / "starter"
    made = _run(installed, str(installed["bin"] / "ecc-lab"), "init", str(starter))
    assert made.returncode == 0, made.stderr
    assert (starter / "02_label_instability.ipynb").is_file()
    assert (starter / "params.example.yaml").is_file()
    again = _run(installed, str(installed["bin"] / "ecc-lab"), "init", str(starter))
    assert again.returncode == 1 and "--force" in again.stderr
    # the user's own notebook in that folder is what runs (a tiny one keeps the test quick)
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
        "cells": [
            {
                "cell_type": "code",
                "id": "parameters",
                "metadata": {"tags": ["parameters"]},
                "execution_count": None,
                "outputs": [],
                "source": ['run_dir: str = ""  # run folder'],
            },
            {
                "cell_type": "code",
                "id": "mine",
                "metadata": {},
                "execution_count": None,
                "outputs": [],
                "source": ["print('my own notebook')"],
            },
        ],
    }
    (starter / "09_mine.ipynb").write_text(json.dumps(notebook))
    out_dir = installed["cwd"] / "runs" / "mine"
    ran = _run(
        installed,
        str(installed["bin"] / "ecc-lab"),
        "run",
        "--notebooks",
        str(starter),
        "--only",
        "09",
        "--out",
        str(out_dir),
        "--no-progress",
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "my own notebook" in (out_dir / "09_mine.ipynb").read_text()
