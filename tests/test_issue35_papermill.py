"""Issue 35, item 7: the guide's papermill path (docs/guide/notebooks.md).

``mkdir -p RUN``, ``papermill NB RUN/NB -p run_dir RUN``, then ``ecc-lab run --only 05 --out RUN``
merges ``metrics/`` into ``metrics.json`` and builds the report; a user's folder that merely holds
a notebook is still refused.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest

from ecc_lib.runs import folder as run_folder
from ecc_lib.runs import pipeline


def _notebook(path: Path, parameters: str, body: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    cell = nbformat.v4.new_code_cell(parameters)
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell, nbformat.v4.new_code_cell(body)]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def _tiny_notebooks(folder: Path) -> Path:
    """01 records one metric into its run folder; 05 is a report that shows the merged metrics."""
    _notebook(
        folder / "01_first.ipynb",
        'run_dir: str = ""  # run folder\nsize: int = 5  # a number',
        "from ecc_lib.runs import folder as run_folder\nfrom ecc_lib.runs import metrics as run_metrics\n"
        "run = run_folder.run_context(run_dir)\nrun_metrics.record_metrics(run, 'first', {'size': size})",
    )
    _notebook(
        folder / "05_report.ipynb",
        'run_dir: str = ""  # run folder',
        "from ecc_lib.runs import metrics as run_metrics\n"
        "run_metrics.flatten_metrics(run_metrics.collect_metrics(run_dir))",
    )
    return folder


def _papermill_copy(path: Path, run_dir: str, **metadata) -> Path:
    """A notebook as papermill writes its output copy before the first cell runs."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["papermill"] = {
        "parameters": {"run_dir": run_dir},
        "input_path": "notebooks/01_first.ipynb",
        "output_path": str(path),
        "status": "running",
        **metadata,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def test_papermill_copy_alone_makes_a_run_folder(tmp_path):
    run_dir = tmp_path / "k10-papermill"
    _papermill_copy(run_dir / "03_clustering.ipynb", str(run_dir))
    run_folder.run_context(run_dir)  # what the notebook's first cell does
    assert run_folder.is_run_folder(run_dir, legacy=False)
    pipeline.check_out_folder(run_dir.resolve())  # no OutFolderError


def test_papermill_relative_run_dir_is_taken_from_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "runs" / "k10"
    _papermill_copy(run_dir / "03_clustering.ipynb", "runs/k10")
    run_folder.run_context("runs/k10")
    assert run_folder.is_run_folder(run_dir, legacy=False)


@pytest.mark.parametrize(
    "case", ["other file", "no papermill record", "other run_dir", "empty run_dir", "symlink"]
)
def test_a_users_folder_with_a_notebook_is_never_marked(tmp_path, case):
    run_dir = tmp_path / "mine"
    copy = _papermill_copy(run_dir / "03_clustering.ipynb", str(run_dir))
    if case == "other file":
        (run_dir / "thesis.tex").write_text("my work")
    elif case == "no papermill record":
        nbformat.write(nbformat.v4.new_notebook(), copy)
    elif case == "other run_dir":
        _papermill_copy(copy, str(tmp_path / "elsewhere"))
    elif case == "empty run_dir":
        _papermill_copy(copy, "")
    else:
        target = _papermill_copy(tmp_path / "real.ipynb", str(run_dir))
        copy.unlink()
        os.symlink(target, copy)
    run_folder.run_context(run_dir)
    assert not run_folder.is_run_folder(run_dir, legacy=False)
    with pytest.raises(pipeline.OutFolderError, match="no .ecc_lib-run marker"):
        pipeline.check_out_folder(run_dir.resolve())


def test_guide_papermill_command_then_only_05_builds_the_report(tmp_path, monkeypatch):
    """The guide's two steps, with papermill itself on a small notebook."""
    papermill = pytest.importorskip("papermill")
    notebooks = _tiny_notebooks(tmp_path / "notebooks")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "k10-papermill").mkdir(parents=True)  # mkdir -p runs/k10-papermill
    papermill.execute_notebook(
        str(notebooks / "01_first.ipynb"),
        "runs/k10-papermill/01_first.ipynb",
        parameters={"run_dir": "runs/k10-papermill", "size": 7},
        kernel_name="python3",
        progress_bar=False,
    )
    out = tmp_path / "runs" / "k10-papermill"
    assert not (out / "metrics.json").exists()  # papermill does not merge metrics/
    result = pipeline.run_pipeline(
        only="05", out="runs/k10-papermill", notebooks_dir=notebooks, progress=False
    )
    assert result.report_path == out.resolve() / "report.html"
    assert json.loads((out / "metrics.json").read_text())["first"]["size"] == 7
    assert "first.size" in result.report_path.read_text()
