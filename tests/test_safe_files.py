"""Issue 24: anybody's files -- pickles, links, two tables, read-only and full disks, bad settings.

Each test reproduces a defect of the code before issue 24 (code execution from a pickle, writes
through a symbolic link, a truncated notebook, a traceback instead of one line).
"""

from __future__ import annotations

import contextlib
import errno
import os
import pickle
import resource
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fake_openai_server import FakeOpenAIServer
from test_collect_support import QUERIES, fast

from ecc_lib.cli import main
from ecc_lib.cli.init import InitError, init_folder, starter_files
from ecc_lib.data.schema import DataValidationError
from ecc_lib.data.sources import load_dataset
from ecc_lib.data.tables import read_outcomes, read_table

REPO = Path(__file__).resolve().parents[1]


class _Payload:
    """Unpickling this creates ``marker``: proof that a pickle was opened."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def _evil_pickle(path: Path, marker: Path) -> Path:
    path.write_bytes(pickle.dumps(_Payload(marker)))
    return path


def _outcomes() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [
        {"query_id": f"q{q}", "model": m, "score": float(rng.integers(0, 2)), "variant_id": v}
        for q in range(12)
        for m in ("a", "b", "c")
        for v in range(3)
    ]
    return pd.DataFrame(rows)


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1] if text.strip() else ""


# -- item 1: never unpickle user data ---------------------------------------------------------


def test_a_pickle_given_to_dars_outcomes_is_refused_unopened(tmp_path, capsys):
    marker = tmp_path / "pwned"
    path = _evil_pickle(tmp_path / "outcomes.pkl", marker)
    assert main(["dars", "--outcomes", str(path)]) == 1
    err = capsys.readouterr().err
    assert "refusing to read a pickle" in err and str(path) in err and "Traceback" not in err
    assert not marker.exists()


def test_a_pickle_in_a_dataset_folder_is_refused_unopened(tmp_path):
    marker = tmp_path / "pwned"
    folder = tmp_path / "data"
    folder.mkdir()
    pd.DataFrame({"query_id": ["q1"], "text": ["hi"]}).to_csv(folder / "queries.csv", index=False)
    _evil_pickle(folder / "outcomes.pkl", marker)
    with pytest.raises(DataValidationError, match=r"outcomes\.pkl: refusing to read a pickle"):
        load_dataset(str(folder))
    with pytest.raises(DataValidationError, match="refusing"):
        read_outcomes(folder / "outcomes.pkl")
    assert not marker.exists()


def test_the_routerbench_release_may_still_be_read_when_asked_explicitly(tmp_path):
    frame = pd.DataFrame({"x": [1, 2]})
    frame.to_pickle(tmp_path / "t.pkl")
    with pytest.raises(DataValidationError):
        read_table(tmp_path / "t.pkl")
    pd.testing.assert_frame_equal(read_table(tmp_path / "t.pkl", allow_pickle=True), frame)


# -- item 11: two outcome tables in one folder ------------------------------------------------


def test_a_folder_with_two_outcome_tables_is_refused(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    outcomes = _outcomes()
    queries = pd.DataFrame({"query_id": sorted(outcomes["query_id"].unique())})
    queries["text"] = "question " + queries["query_id"]
    queries.to_csv(folder / "queries.csv", index=False)
    outcomes.to_csv(folder / "outcomes.csv", index=False)
    load_dataset(str(folder))  # one table of each kind: fine
    outcomes.head(3).to_parquet(folder / "outcomes.parquet")
    with pytest.raises(
        DataValidationError, match=r"2 outcomes tables \(outcomes.csv, outcomes.parquet\)"
    ):
        load_dataset(str(folder))
    (folder / "outcomes.parquet").rename(folder / "outcomes.parquet.bak")  # not a table name
    load_dataset(str(folder))


def test_collect_export_refuses_a_folder_that_holds_another_table(tmp_path, capsys):
    store = tmp_path / "store"
    with FakeOpenAIServer() as server:
        from ecc_lib.collect import collect

        collect(
            QUERIES.head(2), ["m1", "m2"], server.base_url, store, **fast(n_rewrites=0, n_decodes=1)
        )
    out = tmp_path / "dataset"
    out.mkdir()
    (out / "outcomes.csv").write_text("query_id,model,score\nold,a,1\n")
    assert main(["collect-export", "--store", str(store), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "already holds outcomes.csv" in err and "Traceback" not in err
    assert sorted(p.name for p in out.iterdir()) == ["outcomes.csv"]  # nothing written beside it
    (out / "outcomes.csv").unlink()
    assert main(["collect-export", "--store", str(store), "--out", str(out)]) == 0
    assert main(["collect-export", "--store", str(store), "--out", str(out)]) == 0  # re-export
    queries, outcomes = load_dataset(str(out))
    assert len(outcomes) == 4


# -- item 6: ecc-lab init never writes through a link -----------------------------------------


def test_init_refuses_a_dangling_link_and_creates_nothing_elsewhere(tmp_path, capsys):
    target, elsewhere = tmp_path / "starter", tmp_path / "elsewhere"
    target.mkdir()
    elsewhere.mkdir()
    name = starter_files()[1].name
    (target / name).symlink_to(elsewhere / "planted.ipynb")
    assert main(["init", str(target)]) == 1
    err = capsys.readouterr().err
    assert "symbolic link" in err and len(err.strip().splitlines()) == 1
    assert list(elsewhere.iterdir()) == []
    assert sorted(p.name for p in target.iterdir()) == [name]  # nothing copied


def test_init_force_does_not_overwrite_a_link_target(tmp_path):
    target = tmp_path / "starter"
    target.mkdir()
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    name = starter_files()[0].name
    (target / name).symlink_to(precious)
    with pytest.raises(InitError, match="never writes through a link, even with --force"):
        init_folder(target, force=True)
    assert precious.read_text() == "keep me" and (target / name).is_symlink()


def test_init_writes_whole_files_and_force_replaces_regular_ones(tmp_path):
    target = tmp_path / "starter"
    written = init_folder(target)
    sources = starter_files()
    assert [p.read_bytes() for p in written] == [p.read_bytes() for p in sources]
    assert oct(written[0].stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    written[0].write_text("edited")
    with pytest.raises(FileExistsError, match="--force"):
        init_folder(target)
    init_folder(target, force=True)
    assert written[0].read_bytes() == sources[0].read_bytes()
    assert not [p for p in target.iterdir() if p.name.endswith(".tmp")]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _limit_file_size() -> None:  # runs in the child: a "disk" that takes 20 000 bytes a file
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))


def test_init_on_a_full_disk_gives_one_line_and_leaves_no_truncated_notebook(tmp_path):
    largest = max(starter_files(), key=lambda p: p.stat().st_size)
    assert largest.stat().st_size > 20_000  # the limit cuts it
    target = tmp_path / "starter"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "ecc_lib", "init", str(target)],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=_limit_file_size,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "cannot write the starter files" in result.stderr and "File too large" in result.stderr
    assert list(target.iterdir()) == []  # no truncated notebook, no temporary file


@contextlib.contextmanager
def _read_only_folder(tmp_path: Path):
    """A folder that cannot be written: permission bits for a normal user; for root (who ignores
    them) a read-only tmpfs, or a skip where mounting is not allowed."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield folder
        finally:
            folder.chmod(0o755)
        return
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("running as root and cannot mount a read-only tmpfs")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_init_on_a_read_only_folder_gives_one_line(tmp_path, capsys):
    with _read_only_folder(tmp_path) as folder:
        status = main(["init", str(folder / "starter")])
        err = capsys.readouterr().err
        assert status == 1 and len(err.strip().splitlines()) == 1
        assert "cannot write the starter files" in err and "Read-only file system" in err
        status = main(["init", str(folder)])
        assert status == 1 and "Read-only" in capsys.readouterr().err


# -- item 19: one line, not a traceback -------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("n_boot: 0", "parameter 'n_boot' of 00_tour must be >= 1, got 0"),
        ("seed: -1", "parameter 'seed' of 00_tour must be >= 0, got -1"),
        ("03_clustering: {n_seeds: 0}", "parameter 'n_seeds' of 03_clustering must be >= 1"),
    ],
)
def test_out_of_range_run_parameters_are_one_line_before_any_notebook_runs(
    tmp_path, capsys, line, message
):
    config = tmp_path / "params.yaml"
    config.write_text(line + "\n")
    out = tmp_path / "run"
    assert main(["run", "--config", str(config), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (out / "01_data.ipynb").exists()


@pytest.mark.parametrize("command", ["dars", "ecc"])
def test_a_negative_seed_flag_is_one_line(tmp_path, capsys, command):
    path = tmp_path / "outcomes.csv"
    _outcomes().to_csv(path, index=False)
    queries = tmp_path / "queries.csv"
    pd.DataFrame({"query_id": [f"q{q}" for q in range(12)], "text": "t"}).to_csv(
        queries, index=False
    )
    extra = ["--queries", str(queries)] if command == "ecc" else []
    assert main([command, "--outcomes", str(path), *extra, "--seed", "-1"]) == 1
    assert "--seed must be a whole number >= 0, got -1" in capsys.readouterr().err


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:1", "not-an-address", "http://127.0.0.1:1"])
def test_a_bad_dask_scheduler_address_is_one_line(tmp_path, capsys, monkeypatch, address):
    pytest.importorskip("distributed")
    from ecc_lib.distributed import scheduler

    monkeypatch.setattr(scheduler, "CONNECT_TIMEOUT", "1s")
    path = tmp_path / "outcomes.csv"
    _outcomes().to_csv(path, index=False)
    assert main(["dars", "--outcomes", str(path), "--scheduler", address]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert _last_line(err).startswith(
        f"ecc-lab dars: error: cannot reach the Dask scheduler at '{address}'"
    )


def test_a_read_only_embedding_cache_warns_in_one_line_and_keeps_going(tmp_path, caplog):
    from ecc_lib.embed.cache import EmbeddingCache, text_digests

    digests = text_digests(["a", "b"])
    vectors = np.eye(2, 4, dtype=np.float32)
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder would go")
    cache = EmbeddingCache("some-model", write_dir=blocked, read_dirs=[])
    assert cache.add(digests, vectors) is None
    assert "cannot be written" in caplog.text and "2 new vector(s)" in caplog.text
    with _read_only_folder(tmp_path) as folder:
        cache = EmbeddingCache("some-model", write_dir=folder, read_dirs=[])
        caplog.clear()
        assert cache.add(digests, vectors) is None
        assert "Read-only file system" in caplog.text


def test_a_full_embedding_cache_leaves_no_temporary_file(tmp_path, monkeypatch, caplog):
    from ecc_lib.embed import cache as embedding_cache

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(embedding_cache.np, "savez", full)
    cache = embedding_cache.EmbeddingCache("some-model", write_dir=tmp_path, read_dirs=[])
    assert cache.add(embedding_cache.text_digests(["a"]), np.ones((1, 3), np.float32)) is None
    assert "No space left" in caplog.text
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
