"""Issue 35, deliver 5: ``make run`` says what it installs and how long that usually takes, and the
README quotes the fresh-machine time (install included) that a script measured."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FRESH = {
    "format": 2,
    "commit": "abc1234",
    "cpus": 2,
    "installer": "uv",
    "install_s": 150.0,
    "make_run_s": 60.0,
    "make_test_s": 400.0,
    "make_run_fresh_s": 210.0,
    "make_test_fresh_s": 550.0,
    "n_passed": 1300,
}


def test_make_install_says_what_it_installs_before_it_starts():
    make = shutil.which("make")
    if make is None:
        pytest.skip("no make")
    done = subprocess.run(
        [make, "--no-print-directory", "-n", "install", "VENV=/nonexistent/venv"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert "scripts/install_message.py" in lines[0]  # first, before the venv is made
    assert any("uv pip install" in line for line in lines)  # uv for the rest ...
    assert any('pip install --quiet -e ".[all,dev]"' in line for line in lines)  # ... else pip
    torch = next(line for line in lines if "install --quiet" in line and '"torch==' in line)
    assert "-m pip install" in torch  # torch always with pip (its local or CPU wheel index)
    printed = subprocess.run(
        [sys.executable, "scripts/install_message.py", "--torch", "torch==2.13.0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in ("torch==2.13.0", "numpy", "sentence-transformers", "papermill", "pytest"):
        assert name in printed
    assert "uv" in printed and "pip" in printed


def test_the_usual_time_is_the_measured_one(tmp_path):
    message = _load(ROOT / "scripts" / "install_message.py")
    result = tmp_path / "two_commands.json"
    assert "not measured" in message.usual_time(result)
    result.write_text(json.dumps(FRESH))
    text = message.usual_time(result)
    assert "2 min 30 s" in text and "2-core" in text and "with uv" in text and "abc1234" in text


def test_the_readme_quotes_the_fresh_machine_time_with_the_install(tmp_path, monkeypatch):
    update = _load(ROOT / "scripts" / "update_readme.py")
    (tmp_path / "two_commands.json").write_text(json.dumps(FRESH))
    (tmp_path / "make_run.json").write_text(
        json.dumps({"wall_s": 62.5, "notebooks_s": {"03_clustering": 21.0, "04_routing": 22.0}})
    )
    monkeypatch.setattr(update, "RESULTS", tmp_path)
    text = update.times_block()
    assert "`make run` 3 min 30 s, of which installing the venv 2 min 30 s (with uv" in text
    assert (
        "the main job 1 min 0 s" in text and "Once installed, the main job takes 1 min 2 s" in text
    )
    # a result of the older format (make test first) never claims a fresh make run time
    old = {k: FRESH[k] for k in ("commit", "cpus", "n_passed")} | {
        "make_test_s": 395.6,
        "make_run_s": 58.8,
    }
    (tmp_path / "two_commands.json").write_text(json.dumps(old))
    text = update.times_block()
    assert "`make run` 59 s on that venv" in text and "not measured at this commit" in text


def test_the_benchmark_records_the_install_and_both_commands():
    bench = _load(ROOT / "benchmarks" / "two_commands_time.py")
    record = bench.record(
        commit="abc1234", install_s=150.0, run_s=60.0, test_s=400.0, installer="uv", passed=1300
    )
    assert record["make_run_fresh_s"] == 210.0 and record["make_test_fresh_s"] == 550.0
    assert bench.installer_of("[3/4] ...\n      installed with uv\n") == "uv"
    assert bench.installer_of("      with pip (uv is not available here, or failed)") == "pip"
