"""Run folders that are safe to reuse (issue 24, items 8-10 and 17): a marker only ecc_lib writes,
one run at a time, no silent mixing of datasets, a merged run.json, killed notebooks marked, and
any folder name a file system allows."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest

from ecc_lib import paths, report
from ecc_lib.cli import main
from ecc_lib.runs import folder as run_folder
from ecc_lib.runs import pipeline

sys.path.insert(0, str(Path(__file__).parent))
from test_pipeline import write_notebook  # noqa: E402


@pytest.fixture
def notebooks(tmp_path):
    """01 writes a table named after its dataset and sleeps ``seconds``; 05 is a report."""
    folder = tmp_path / "notebooks"
    write_notebook(
        folder / "01_data.ipynb",
        'run_dir: str = ""  # run folder\ndataset: str = "a"  # dataset\n'
        "seconds: float = 0.0  # sleep",
        "import time\nimport pandas as pd\nfrom ecc_lib.runs import folder as run_folder\nfrom ecc_lib.runs import artifacts as run_artifacts\n"
        "run = run_folder.run_context(run_dir)",
        "run_artifacts.save_table(pd.DataFrame({'x': [1]}), run, f'01_{dataset}')",
        "time.sleep(seconds)",
    )
    write_notebook(
        folder / "05_report.ipynb",
        'run_dir: str = ""  # run folder',
        "from ecc_lib.runs import folder as run_folder\nfrom ecc_lib.runs import artifacts as run_artifacts\nrun = run_folder.run_context(run_dir)\nprint('report')",
    )
    return folder


def _run(notebooks, out, **kwargs):
    return pipeline.run_pipeline(out=out, notebooks_dir=notebooks, progress=False, **kwargs)


# ---------------------------------------------------------------- 8: a marker only ecc_lib writes


def test_a_users_folder_with_metrics_is_not_taken_for_a_run(tmp_path, notebooks, capsys):
    mine = tmp_path / "paper"
    (mine / "metrics").mkdir(parents=True)
    (mine / "report.html").write_text("my report")
    (mine / "metrics.json").write_text('{"mine": 1}')
    status = main(["run", "--out", str(mine), "--notebooks", str(notebooks), "--no-progress"])
    assert status == 1
    assert "not an earlier run folder" in capsys.readouterr().err
    assert (mine / "report.html").read_text() == "my report"
    assert (mine / "metrics.json").read_text() == '{"mine": 1}'
    assert not (mine / run_folder.MARKER_FILE).exists()


def test_a_run_folder_carries_the_marker_and_is_reused(tmp_path, notebooks):
    out = tmp_path / "run"
    _run(notebooks, out, only="01")
    assert run_folder.is_run_folder(out, legacy=False)
    pipeline.check_out_folder(out.resolve())  # reused: no refusal
    # issue 36 item 6: a run.json with the right keys is not enough, only the marker is
    (out / run_folder.MARKER_FILE).unlink()
    assert not run_folder.is_run_folder(out) and run_folder.is_run_folder(out, legacy=True)
    with pytest.raises(pipeline.OutFolderError, match="not an earlier run folder"):
        pipeline.check_out_folder(out.resolve())


# ------------------------------------------------------ 9: one dataset per folder, one run at once


def test_a_second_dataset_is_refused_unless_appended(tmp_path, notebooks, capsys):
    out = tmp_path / "run"
    _run(notebooks, out, dataset="alpha", only="01")
    with pytest.raises(pipeline.DatasetMixError, match=r"already holds a run on \['alpha'\]"):
        _run(notebooks, out, dataset="beta")
    assert not (out / "tables" / "01_beta.csv").exists()
    status = main(
        ["run", "--out", str(out), "--notebooks", str(notebooks), "--dataset", "beta"]
        + ["--no-progress"]
    )
    assert status == 1 and "--append" in capsys.readouterr().err
    _run(notebooks, out, dataset="beta", append=True, only="01")
    record = json.loads((out / "run.json").read_text())
    assert record["datasets"]["01_data"] == ["alpha", "beta"]
    assert {p.stem for p in (out / "tables").glob("01_*.csv")} == {"01_alpha", "01_beta"}
    intro = report.build_report(out).intro
    assert "This run folder holds 2 datasets: alpha (notebook 01), beta (notebook 01)" in intro


def test_a_run_on_the_default_dataset_records_it_and_refuses_a_second(tmp_path, notebooks):
    """The main job passes no ``dataset``: the notebook's default is what it read, so the folder
    holds it and another dataset is refused (was: nothing recorded, the second dataset mixed in)."""
    out = tmp_path / "run"
    _run(notebooks, out, only="01")
    record = json.loads((out / "run.json").read_text())
    assert record["datasets"] == {"01_data": ["a"]}
    with pytest.raises(pipeline.DatasetMixError, match=r"already holds a run on \['a'\]"):
        _run(notebooks, out, dataset="beta", only="01")
    assert not (out / "tables" / "01_beta.csv").exists()
    _run(notebooks, out, dataset="a", only="01")  # the same dataset, named: no mix
    # the benchmark over datasets (standalone notebook 06) may run into the folder
    write_notebook(
        notebooks / "06_benchmark.ipynb",
        'run_dir: str = ""  # run folder\ndatasets: list = ["x", "y"]  # datasets',
        "from ecc_lib.runs import folder as run_folder\nfrom ecc_lib.runs import artifacts as run_artifacts\nrun = run_folder.run_context(run_dir)\nprint(datasets)",
    )
    _run(notebooks, out, only="06")
    record = json.loads((out / "run.json").read_text())
    assert record["datasets"] == {"01_data": ["a"], "06_benchmark": ["x", "y"]}
    _run(notebooks, out, only="01")  # and the folder still holds only "a" for the others


@pytest.mark.slow  # heavy (a whole notebook run or a local cluster): make test-all
def test_a_rerun_on_the_same_dataset_leaves_no_stale_outputs(tmp_path, notebooks):
    out = tmp_path / "run"
    _run(notebooks, out, dataset="alpha", only="01")
    stale = out / "tables" / "01_old.csv"
    stale.write_text("x\n1\n")
    _run(notebooks, out, dataset="alpha", only="01")
    assert not stale.exists() and (out / "tables" / "01_alpha.csv").exists()


def test_two_runs_into_one_folder_at_once_are_refused(tmp_path, notebooks, capsys):
    out = run_folder.run_context(tmp_path / "run").run_dir  # a new, marked run folder
    with run_folder.lock_run_folder(out):
        with pytest.raises(run_folder.RunFolderBusyError, match=f"in use .*process {os.getpid()}"):
            _run(notebooks, out, only="05")
        status = main(["run", "--out", str(out), "--notebooks", str(notebooks), "--no-progress"])
        assert status == 1 and "in use by another ecc-lab run" in capsys.readouterr().err
    assert not (out / "05_report.ipynb").exists()
    with run_folder.lock_run_folder(out):  # released when the holder's block ended
        pass


# ------------------------------------------------------------- 10: run.json merged, kills marked


def test_only_05_keeps_the_earlier_notebooks_times_and_parameters(tmp_path, notebooks):
    out = tmp_path / "run"
    _run(notebooks, out, dataset="alpha")
    first = json.loads((out / "run.json").read_text())
    _run(notebooks, out, only="05")
    record = json.loads((out / "run.json").read_text())
    assert record["parameters"]["01_data"] == first["parameters"]["01_data"]
    assert record["parameters"]["01_data"]["dataset"] == "alpha"
    assert record["durations_s"]["01_data"] == first["durations_s"]["01_data"]
    assert set(record["durations_s"]) == {"01_data", "05_report"}
    assert record["notebooks"] == ["01_data", "05_report"]
    assert record["last_notebooks"] == ["05_report"]
    assert [h["notebooks"] for h in record["history"]] == [["01_data", "05_report"], ["05_report"]]
    assert [h["status"] for h in record["history"]] == ["finished", "finished"]


@pytest.mark.slow  # heavy (a whole notebook run or a local cluster): make test-all
def test_a_killed_notebook_copy_is_marked_interrupted_by_the_next_run(tmp_path, notebooks):
    out = tmp_path / "run"
    code = (
        "from ecc_lib.runs import pipeline\n"
        f"pipeline.run_pipeline(config={{'seconds': 120.0}}, out={str(out)!r}, "
        f"notebooks_dir={str(notebooks)!r}, progress=False)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(paths.REPO_ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stderr=subprocess.DEVNULL, start_new_session=True
    )
    copy = out / "01_data.ipynb"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:  # wait until the sleeping cell runs
            if copy.exists() and "time.sleep" in copy.read_text(errors="ignore"):
                if '"running"' in copy.read_text(errors="ignore"):
                    break
            time.sleep(0.5)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the runner and its kernel, no clean-up
        process.wait(timeout=60)
    assert json.loads((out / "run.json").read_text())["status"] == "running"
    assert "ecc_lib" not in nbformat.read(copy, as_version=4).metadata
    _run(notebooks, out, only="05")  # the stale lock of the killed run does not block
    executed = nbformat.read(copy, as_version=4)
    assert executed.metadata["ecc_lib"]["status"] == "interrupted"
    assert executed.metadata["ecc_lib"]["reason"] == pipeline.KILLED_REASON
    assert executed.cells[0].source.startswith("**Interrupted: this copy is incomplete.**")
    record = json.loads((out / "run.json").read_text())
    assert record["history"][0]["status"] == "killed"
    assert record["history"][0]["stopped_in"] == "01_data"
    assert record["status"] == "finished" and record["running"] is None


# ----------------------------------------------------------------- 17: any folder name works


def test_file_labels_are_plain_distinct_and_short():
    labels = ["my data", "donn\u00e9es", "a&b", "a_b", "[v2]", "x" * 240, "dcrouter", "2024"]
    files = [run_folder.file_label(label) for label in labels]
    assert files[-2:] == ["dcrouter", "2024"]  # plain names stay as written
    assert len(set(files)) == len(files)
    for name in files:
        run_folder.check_name(f"01_scores_by_category_{name}")
        assert len(name) <= run_folder.MAX_FILE_LABEL + 9


FOLDER_NAMES = ["my data", "donn\u00e9es", "a&b", "[v2]", "d" * 240]


@pytest.mark.slow  # heavy (a whole notebook run or a local cluster): make test-all
def test_notebook_01_runs_on_ordinary_folder_names(tmp_path):
    """Notebook 01 itself on five tiny datasets whose folder names refused on main."""
    rng = np.random.default_rng(0)
    folders = []
    for name in FOLDER_NAMES:
        folder = tmp_path / "data" / name
        folder.mkdir(parents=True)
        ids = [f"q{i}" for i in range(8)]
        pd.DataFrame({"query_id": ids, "text": [f"question {i}" for i in range(8)]}).assign(
            category=["c1", "c2"] * 4
        ).to_csv(folder / "queries.csv", index=False)
        rows = [(q, m, float(rng.integers(0, 2))) for q in ids for m in ("m1", "m2", "m3")]
        pd.DataFrame(rows, columns=["query_id", "model", "score"]).to_csv(
            folder / "outcomes.csv", index=False
        )
        folders.append(str(folder))
    out = tmp_path / "run"
    pipeline.run_pipeline(
        config={"datasets": folders, "n_boot": 20}, only="01", out=out, progress=False
    )
    metrics = json.loads((out / "metrics.json").read_text())
    assert sorted(metrics["data"]["datasets"]) == sorted(FOLDER_NAMES)  # shown as written
    captions = json.loads((out / "figures" / "captions.json").read_text())
    for name in FOLDER_NAMES:
        stem = f"01_scores_by_category_{run_folder.file_label(name)}"
        assert (out / "figures" / f"{stem}.png").exists()
        assert (out / "tables" / f"{stem}.csv").exists()
        assert captions[stem]["caption"].startswith(f"{name}: mean score")
