"""Pipeline faults (issue 9): --out safety, YAML errors and keys, relative --dataset, timeouts and
interrupted notebooks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from ecc_lib import paths
from ecc_lib.cli import main
from ecc_lib.runs import config as run_config
from ecc_lib.runs import pipeline
from ecc_lib.runs.execute import NotebookTimeoutError, mark_interrupted

sys.path.insert(0, str(Path(__file__).parent))
from test_pipeline import write_notebook  # noqa: E402


@pytest.fixture
def slow_notebooks(tmp_path):
    folder = tmp_path / "notebooks"
    write_notebook(
        folder / "01_slow.ipynb",
        'run_dir: str = ""  # run folder\nseconds: float = 0.0  # sleep\n'
        'dataset: str = ""  # dataset',
        "import time\nprint('dataset', dataset)",
        "time.sleep(seconds)",
        "print('done')",
    )
    return folder


# ------------------------------------------------------------------------------- --out


def test_out_refuses_the_notebooks_folder(slow_notebooks):
    before = (slow_notebooks / "01_slow.ipynb").read_bytes()
    with pytest.raises(pipeline.OutFolderError, match="notebooks folder"):
        pipeline.run_pipeline(out=slow_notebooks, notebooks_dir=slow_notebooks, progress=False)
    with pytest.raises(pipeline.OutFolderError, match="notebooks folder"):
        pipeline.run_pipeline(out=paths.notebooks_dir(), notebooks_dir=slow_notebooks)
    assert (slow_notebooks / "01_slow.ipynb").read_bytes() == before


def test_out_refuses_a_non_empty_folder_that_is_not_a_run(tmp_path, slow_notebooks, capsys):
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "01_slow.ipynb").write_text("my own file")
    status = main(["run", "--out", str(mine), "--no-progress"])
    assert status == 1
    assert "not an earlier run folder" in capsys.readouterr().err
    assert (mine / "01_slow.ipynb").read_text() == "my own file"
    empty = tmp_path / "empty"
    empty.mkdir()
    result = pipeline.run_pipeline(out=empty, notebooks_dir=slow_notebooks, progress=False)
    assert (result.run_dir / "run.json").exists()
    # an earlier run folder is reused
    pipeline.run_pipeline(out=empty, notebooks_dir=slow_notebooks, progress=False)


# ------------------------------------------------------------------------------- configuration


def test_readme_config_example_works_as_written(tmp_path):
    path = tmp_path / "k10.yaml"
    path.write_text("03: {n_clusters: 10}\n")  # the README example: plain YAML reads 03 as 3
    config = run_config.load_config(path)
    notebooks = run_config.discover_notebooks()
    declared = {nb.stem: run_config.notebook_parameters(nb) for nb in notebooks}
    resolved = run_config.resolve_parameters(
        run_config.select_notebooks(notebooks, "03"), config, declared
    )
    assert resolved["03_clustering"]["n_clusters"] == 10
    path.write_text("seed: 0\n03_clustering:\n  n_clusters: 10\n08: {}\n")
    assert run_config.load_config(path) == {
        "seed": 0,
        "03_clustering": {"n_clusters": 10},
        "08": {},
    }


def test_yaml_syntax_error_names_the_line(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("seed: 0\n03:\n  n_clusters: [5, 10\n  lam: 3\n")
    with pytest.raises(run_config.ConfigError, match=r"bad.yaml: YAML error at line \d"):
        run_config.load_config(path)
    assert main(["run", "--config", str(path), "--out", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert "line" in err and "Traceback" not in err


# ------------------------------------------------------------------------------- --dataset


def test_relative_dataset_is_taken_from_the_callers_directory(
    tmp_path, slow_notebooks, monkeypatch
):
    (tmp_path / "work" / "mydata").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "work")
    result = pipeline.run_pipeline(
        out=tmp_path / "run", dataset="mydata", notebooks_dir=slow_notebooks, progress=False
    )
    assert result.parameters["01_slow"]["dataset"] == str(tmp_path / "work" / "mydata")
    assert pipeline.run_pipeline.__doc__ and "working directory" in pipeline.run_pipeline.__doc__
    with pytest.raises(FileNotFoundError, match="no such folder"):
        pipeline.run_pipeline(
            out=tmp_path / "r2", dataset="./missing", notebooks_dir=slow_notebooks
        )
    # a plain name that is no folder stays a name (bundled or public)
    result = pipeline.run_pipeline(
        out=tmp_path / "r3", dataset="re2", notebooks_dir=slow_notebooks, progress=False
    )
    assert result.parameters["01_slow"]["dataset"] == "re2"


# ------------------------------------------------------------------------------- timeouts


def test_timeout_ends_cleanly_and_marks_the_copy(tmp_path, slow_notebooks):
    out = tmp_path / "run"
    with pytest.raises(NotebookTimeoutError, match="timeout of 2 s") as caught:
        pipeline.run_pipeline(
            config={"seconds": 30.0},
            out=out,
            timeout=2,
            notebooks_dir=slow_notebooks,
            progress=False,
        )
    assert caught.value.cell_index == 3  # markdown, parameters, print, then the sleep
    executed = nbformat.read(out / "01_slow.ipynb", as_version=4)
    assert executed.metadata["ecc_lib"]["status"] == "interrupted"
    assert executed.cells[0].source.startswith("**Interrupted: this copy is incomplete.**")
    assert json.loads((out / "run.json").read_text())["status"] == "timed out"


def test_sigterm_marks_the_running_copy_and_the_run(tmp_path, slow_notebooks):
    out = tmp_path / "run"
    code = (
        "from ecc_lib.runs import pipeline\n"
        f"pipeline.run_pipeline(config={{'seconds': 60.0}}, out={str(out)!r}, "
        f"notebooks_dir={str(slow_notebooks)!r}, progress=False)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(paths.REPO_ROOT)}
    process = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE)
    copy = out / "01_slow.ipynb"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait until the sleeping cell runs
        if copy.exists() and '"running"' in copy.read_text(errors="ignore"):
            break
        time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)
    assert process.returncode != 0
    executed = nbformat.read(copy, as_version=4)
    assert executed.metadata["ecc_lib"]["status"] == "interrupted"
    assert "SIGTERM" in executed.cells[0].source
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted: SIGTERM"


def test_mark_interrupted_is_idempotent(tmp_path, slow_notebooks):
    copy = tmp_path / "copy.ipynb"
    copy.write_bytes((slow_notebooks / "01_slow.ipynb").read_bytes())
    mark_interrupted(copy, "test")
    mark_interrupted(copy, "test")
    nb = nbformat.read(copy, as_version=4)
    assert sum("interrupted" in c.metadata.get("tags", []) for c in nb.cells) == 1


def test_timeout_must_be_positive(tmp_path, capsys):
    assert main(["run", "--timeout", "0", "--out", str(tmp_path / "r"), "--no-progress"]) == 1
    assert "--timeout must be a positive number" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
