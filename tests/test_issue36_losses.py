"""Issue 36, items 4-7 (losses): nothing written through a symbolic link, run.json written
atomically and a damaged one refused, ``bench --out`` keeps a user's files, and a full disk is one
line that keeps the earlier file."""

from __future__ import annotations

import errno
import io
import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from fake_openai_server import FakeOpenAIServer
from test_collect_support import QUERIES, fast

from ecc_lib.cli import main
from ecc_lib.collect import collect
from ecc_lib.collect.errors import StoreError
from ecc_lib.collect.store import CollectionStore
from ecc_lib.runs import folder as run_folder
from ecc_lib.runs import pipeline

sys.path.insert(0, str(Path(__file__).parent))
from test_pipeline import write_notebook  # noqa: E402

OUTSIDE = "a user's file outside the folder\n"


@pytest.fixture
def notebooks(tmp_path):
    """01 writes a table; 05 prints a line (fast notebooks)."""
    folder = tmp_path / "notebooks"
    write_notebook(
        folder / "01_data.ipynb",
        'run_dir: str = ""  # run folder\ndataset: str = "a"  # dataset',
        "import pandas as pd\nfrom ecc_lib.runs import folder as run_folder\n"
        "from ecc_lib.runs import artifacts as run_artifacts\nrun = run_folder.run_context(run_dir)",
        "run_artifacts.save_table(pd.DataFrame({'x': [1]}), run, f'01_{dataset}')",
    )
    write_notebook(
        folder / "05_report.ipynb",
        'run_dir: str = ""  # run folder',
        "print('report')",
    )
    return folder


def _marked_run_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    run_folder.write_run_marker(path)
    return path


def _run_cli(notebooks, out, *extra) -> int:
    return main(["run", "--out", str(out), "--notebooks", str(notebooks), "--no-progress", *extra])


# ------------------------------------------------------------------ 4: never through a link


@pytest.mark.parametrize(
    "name", ["report.html", "metrics.json", "run.json", ".ecc_lib-run.lock", "01_data.ipynb"]
)
def test_a_run_folder_file_that_is_a_link_is_refused_and_its_target_kept(
    tmp_path, notebooks, capsys, name
):
    out = _marked_run_folder(tmp_path / "run")
    outside = tmp_path / "outside.txt"
    outside.write_text(OUTSIDE)
    (out / name).symlink_to(outside)
    status = _run_cli(notebooks, out, "--only", "01,05")
    err = capsys.readouterr().err
    assert status == 1, err
    assert "symbolic link" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert outside.read_text() == OUTSIDE


def test_a_tables_folder_that_is_a_link_is_refused_and_nothing_lands_outside(
    tmp_path, notebooks, capsys
):
    out = _marked_run_folder(tmp_path / "run")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "01_keep.csv").write_text(OUTSIDE)  # a rerun of 01 would delete 01_* there
    (out / "tables").symlink_to(elsewhere, target_is_directory=True)
    status = _run_cli(notebooks, out, "--only", "01")
    err = capsys.readouterr().err
    assert status == 1 and "symbolic link" in err and "Traceback" not in err
    assert sorted(p.name for p in elsewhere.iterdir()) == ["01_keep.csv"]
    assert (elsewhere / "01_keep.csv").read_text() == OUTSIDE


def test_save_table_and_write_json_never_write_through_a_link(tmp_path):
    from ecc_lib.runs import artifacts
    from ecc_lib.safe_output import LinkedOutputError

    run = run_folder.run_context(tmp_path / "run")
    outside = tmp_path / "outside.txt"
    outside.write_text(OUTSIDE)
    (run.tables_dir / "01_t.csv").symlink_to(outside)
    with pytest.raises(LinkedOutputError, match="symbolic link"):
        artifacts.save_table(pd.DataFrame({"x": [1]}), run, "01_t")
    run.metrics_path.symlink_to(outside)
    with pytest.raises(LinkedOutputError):
        run_folder.write_json(run.metrics_path, {"a": 1})
    assert outside.read_text() == OUTSIDE


@pytest.mark.parametrize("name", ["records.jsonl", "queries.jsonl", "failures.jsonl", ".lock"])
def test_a_store_file_that_is_a_link_is_refused_and_its_target_kept(tmp_path, name):
    store = tmp_path / "store"
    store.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("no newline at the end: a torn line would be cut")
    before = outside.read_text()
    (store / name).symlink_to(outside)
    with pytest.raises(StoreError, match="symbolic link"):
        CollectionStore(store, fsync=False).open()
    with FakeOpenAIServer() as server:
        with pytest.raises(StoreError, match="symbolic link"):
            collect(
                QUERIES.head(1), ["m1"], server.base_url, store, **fast(n_rewrites=0, n_decodes=1)
            )
    assert outside.read_text() == before


# --------------------------------------------------------- 5: run.json atomic, damage refused


def test_a_damaged_run_json_is_refused_unless_replace_damaged(tmp_path, notebooks, capsys):
    out = _marked_run_folder(tmp_path / "run")
    torn = '{"started": "2026-01-01T00:00:00", "datasets": {"01_data": ["alpha"]}, "notebo'
    (out / "run.json").write_text(torn)
    status = _run_cli(notebooks, out, "--only", "01", "--dataset", "beta")
    err = capsys.readouterr().err
    assert status == 1 and "Traceback" not in err
    assert "run.json is damaged" in err and "--replace-damaged" in err
    assert (out / "run.json").read_text() == torn  # nothing replaced
    assert not (out / "01_data.ipynb").exists()  # nothing ran
    status = _run_cli(notebooks, out, "--only", "01", "--dataset", "beta", "--replace-damaged")
    assert status == 0
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "finished" and record["datasets"]["01_data"] == ["beta"]


def test_run_json_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """A write that fails half-way (a full disk) keeps the earlier run.json readable."""
    from ecc_lib.safe_output import OutputError

    run = run_folder.run_context(tmp_path / "run")
    path = run.run_dir / "run.json"
    run_folder.write_json(path, {"status": "finished", "datasets": {"01": ["a"]}})
    before = path.read_text()
    _fill_the_disk(monkeypatch, run.run_dir)
    with pytest.raises(OutputError, match="no space left"):
        run_folder.write_json(path, {"status": "running", "datasets": {"01": ["a"]}, "x": "y" * 99})
    assert path.read_text() == before
    assert [p.name for p in run.run_dir.iterdir() if p.name.startswith(".run.json")] == []


# ----------------------------------------------------------------- 6: bench --out and markers


def test_bench_outputs_never_overwrite_a_users_folder(tmp_path):
    from ecc_lib.bench import BenchSettings
    from ecc_lib.bench.result import BenchResult
    from ecc_lib.report.bench import write_bench_outputs
    from ecc_lib.safe_output import OutputFolderError

    mine = tmp_path / "paper"
    mine.mkdir()
    files = {"bench.tex": "\\section{mine}\n", "bench.html": "<p>mine</p>", "bench.csv": "a\n1\n"}
    for name, text in files.items():
        (mine / name).write_text(text)
    result = BenchResult({}, BenchSettings())
    with pytest.raises(OutputFolderError, match="ecc_lib did not write"):
        write_bench_outputs(result, mine)
    assert {p.name: p.read_text() for p in mine.iterdir()} == files
    fresh = tmp_path / "bench"
    first = write_bench_outputs(result, fresh)  # a new folder is claimed (marked) ...
    assert (fresh / run_folder.MARKER_FILE).is_file()
    assert write_bench_outputs(result, fresh) == first  # ... and reused


def test_the_bench_cli_refuses_a_users_folder_before_computing(tmp_path, capsys):
    mine = tmp_path / "paper"
    mine.mkdir()
    (mine / "bench.tex").write_text("\\section{mine}\n")
    status = main(["bench", "dcrouter", "--out", str(mine), "--seeds", "1"])
    err = capsys.readouterr().err
    assert status == 1 and "Traceback" not in err
    assert "ecc_lib did not write" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in mine.iterdir()) == ["bench.tex"]


def test_a_run_json_with_the_right_keys_does_not_make_a_run_folder(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    record = {"started": "x", "notebooks": [], "durations_s": {}, "status": "finished"}
    (mine / "run.json").write_text(json.dumps(record))
    (mine / "report.html").write_text("my report")
    assert not run_folder.is_run_folder(mine)
    with pytest.raises(pipeline.OutFolderError, match="not an earlier run folder"):
        pipeline.check_out_folder(mine.resolve())


# ---------------------------------------------------------------------------- 7: disk full


class _FullFile:
    """A file object whose writes store half of what they are given, then fail with ENOSPC."""

    def __init__(self, handle):
        self._handle = handle

    def write(self, data):
        self._handle.write(data[: len(data) // 2])
        self._handle.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._handle.close()

    def __getattr__(self, name):
        return getattr(self._handle, name)


def _fill_the_disk(monkeypatch, folder: Path) -> None:
    """Every file opened for writing under ``folder`` gets half of each write, then ENOSPC."""
    real_open = io.open
    folder = Path(folder).resolve()

    def full_open(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        writing = any(flag in mode for flag in "wax")
        if writing and isinstance(file, (str, Path)) and folder in Path(file).resolve().parents:
            return _FullFile(handle)
        return handle

    monkeypatch.setattr(io, "open", full_open)
    monkeypatch.setattr("builtins.open", full_open)


def test_a_full_disk_keeps_the_earlier_report_whole(tmp_path, monkeypatch):
    import nbformat

    from ecc_lib.runs.execute import export_report
    from ecc_lib.safe_output import OutputError

    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print('x')")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": "<h1>R</h1>" * 500})]
    notebook.cells.append(cell)
    executed = tmp_path / "05_report.ipynb"
    nbformat.write(notebook, executed)
    out = tmp_path / "run"
    out.mkdir()
    report = export_report(executed, out / "report.html")
    before = report.read_text()
    _fill_the_disk(monkeypatch, out)
    with pytest.raises(OutputError, match="no space left") as raised:
        export_report(executed, report, title="another title")
    assert "\n" not in str(raised.value)
    assert report.read_text() == before
    assert sorted(p.name for p in out.iterdir()) == ["report.html"]  # no temporary left


def test_collect_export_on_a_full_disk_is_one_line_and_keeps_the_old_tables(
    tmp_path, monkeypatch, capsys
):
    store = tmp_path / "store"
    with FakeOpenAIServer() as server:
        collect(
            QUERIES.head(2), ["m1", "m2"], server.base_url, store, **fast(n_rewrites=0, n_decodes=1)
        )
    out = tmp_path / "dataset"
    assert main(["collect-export", "--store", str(store), "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = pd.DataFrame.to_parquet

    def full_parquet(self, path, *args, **kwargs):
        real(self, path, *args, **kwargs)
        with open(path, "r+b") as handle:  # half a file on disk, then the error
            handle.truncate(max(1, Path(path).stat().st_size // 2))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full_parquet)
    status = main(["collect-export", "--store", str(store), "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 1 and "Traceback" not in err
    assert "no space left" in err and len(err.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_bench_outputs_on_a_full_disk_are_one_line_and_keep_the_old_files(tmp_path, monkeypatch):
    from ecc_lib.bench import BenchSettings
    from ecc_lib.bench.result import BenchResult
    from ecc_lib.report.bench import write_bench_outputs
    from ecc_lib.safe_output import OutputError

    out = tmp_path / "bench"
    write_bench_outputs(BenchResult({}, BenchSettings()), out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    _fill_the_disk(monkeypatch, out)
    with pytest.raises(OutputError, match="no space left"):
        write_bench_outputs(BenchResult({}, BenchSettings(seed=7)), out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
