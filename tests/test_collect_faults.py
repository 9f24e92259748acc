"""Faults of live collection never cost data or leak the key (issue 9, "Collection").

Each case was reproduced against the code before the fix: a key with a trailing newline, a dead or
misspelt endpoint, a hanging server, a read-only store, a full disk, a store path that is a file,
SIGTERM, and an empty reply.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_openai_server import FakeOpenAIServer
from test_collect_support import (
    MODELS,
    QUERIES,
    assert_no_duplicates,
    fast,
    keys_of,
    record_lines,
    responder,
    wait_for_records,
)

from ecc_lib.cli import main
from ecc_lib.collect import collect
from ecc_lib.collect import store as store_module
from ecc_lib.collect.errors import EndpointConfigError, EndpointUnreachableError, StoreError

KEY = "sk-live-SECRET-4242"
ROOT = Path(__file__).resolve().parents[1]


def store_bytes(store: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(store.iterdir()) if p.is_file()}


def assert_every_line_is_json(store: Path) -> None:
    for path in store.glob("*.jsonl"):
        data = path.read_bytes()
        assert not data or data.endswith(b"\n"), f"{path.name} ends with a torn line"
        for line in data.splitlines():
            assert isinstance(json.loads(line), dict), path.name
    json.loads((store / "manifest.json").read_text())


def cli(argv: list[str]) -> int:
    return main(["collect", *argv])


# -- the API key -------------------------------------------------------------------------------


def test_a_key_with_a_trailing_newline_is_stripped_and_never_shown(
    tmp_path, monkeypatch, capsys, caplog
):
    monkeypatch.setenv("ECC_TEST_KEY", KEY + "\n")  # as `export KEY=$(cat key.txt)` leaves it
    queries = tmp_path / "queries.jsonl"
    QUERIES.to_json(queries, orient="records", lines=True)
    store = tmp_path / "store"
    with (
        caplog.at_level(logging.DEBUG),
        FakeOpenAIServer(responder=responder(), api_key=KEY, status_plan={5: 500}) as server,
    ):
        status = cli(
            ["--queries", str(queries), "--models", "m1,m2", "--base-url", server.base_url,
             "--api-key-env", "ECC_TEST_KEY", "--store", str(store), "--rewrites", "1",
             "--decodes", "1", "--max-retries", "0"]
        )  # fmt: skip
        authorizations = {r["authorization"] for r in server.requests}
    out, err = capsys.readouterr()
    assert authorizations == {f"Bearer {KEY}"}  # the stripped key was sent
    assert status == 1  # call 5 failed for good (no retries): one entry in failures.jsonl
    assert len(record_lines(store)) == 3 * 2 * 2 - 1
    assert (store / "failures.jsonl").read_bytes().count(b"\n") == 1
    for path in store.iterdir():
        assert b"SECRET" not in path.read_bytes(), path.name
    assert "SECRET" not in out + err + caplog.text


@pytest.mark.parametrize("bad", ["sk-abc\ndef-SECRET", "sk-abc def-SECRET", "sk-\u00e9-SECRET"])
def test_a_key_that_cannot_be_a_header_is_a_clear_error_that_does_not_show_it(
    tmp_path, monkeypatch, capsys, bad
):
    monkeypatch.setenv("ECC_TEST_KEY", bad)
    queries = tmp_path / "queries.jsonl"
    QUERIES.to_json(queries, orient="records", lines=True)
    with FakeOpenAIServer(responder=responder()) as server:
        status = cli(
            ["--queries", str(queries), "--models", "m1", "--base-url", server.base_url,
             "--api-key-env", "ECC_TEST_KEY", "--store", str(tmp_path / "store")]
        )  # fmt: skip
        assert server.n_calls == 0
    err = capsys.readouterr().err
    assert status == 1 and "ECC_TEST_KEY" in err and "SECRET" not in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "store").exists()


# -- dead, misspelt and hanging endpoints ------------------------------------------------------


def dead_url() -> str:
    server = FakeOpenAIServer().start()
    server.stop()
    return server.base_url


def test_connection_refused_fails_fast_with_one_message_and_the_store_intact(tmp_path, capsys):
    store = tmp_path / "store"
    with FakeOpenAIServer(responder=responder()) as server:
        collect(QUERIES, MODELS, server.base_url, store, **fast(n_rewrites=1, n_decodes=1))
    before = store_bytes(store)
    started = time.perf_counter()
    with pytest.raises(EndpointUnreachableError, match="connection refused") as caught:
        # default retries and backoff: today's code retried every call 6 times
        collect(QUERIES, MODELS, dead_url(), store, **fast(n_decodes=2, backoff_base=0.5))
    assert time.perf_counter() - started < 5.0
    assert "is the server running" in str(caught.value)
    after = store_bytes(store)
    for name in ("records.jsonl", "rewrites.jsonl", "queries.jsonl", "failures.jsonl"):
        assert after[name] == before[name], name
    manifest = json.loads(after["manifest.json"])
    assert manifest["runs"][-1]["status"] == "failed: EndpointUnreachableError"

    queries = tmp_path / "queries.jsonl"
    QUERIES.to_json(queries, orient="records", lines=True)
    status = cli(["--queries", str(queries), "--models", "m1", "--base-url", dead_url(),
                  "--store", str(store)])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 1 and err.count("error:") == 1 and "Traceback" not in err
    assert "connection refused" in err


@pytest.mark.parametrize(
    ("url", "hint"),
    [("localhost:8000/v1", "http://localhost:8000/v1"), ("127.0.0.1:8000/v1", "http://")],
)
def test_a_url_without_scheme_is_refused_before_anything_is_written(tmp_path, url, hint):
    store = tmp_path / "store"
    with pytest.raises(EndpointConfigError, match="scheme") as caught:
        collect(QUERIES, MODELS, url, store, **fast())
    assert hint in str(caught.value)
    assert not store.exists()


def test_consecutive_dropped_connections_stop_the_run(tmp_path):
    store = tmp_path / "store"
    with FakeOpenAIServer(responder=responder()) as server:
        collect(QUERIES, MODELS, server.base_url, store, **fast(n_rewrites=1, n_decodes=1))
        before = store_bytes(store)
        server.fault = "close"  # the server now drops every connection
        calls = server.n_calls
        with pytest.raises(EndpointUnreachableError, match="5 consecutive") as caught:
            collect(
                QUERIES,
                MODELS,
                server.base_url,
                store,
                **fast(n_decodes=3, max_retries=5, max_consecutive_errors=5, concurrency=2),
            )
        assert server.n_calls - calls <= 5 + 2  # in flight when the fifth failed
    assert "disconnected" in str(caught.value)
    assert store_bytes(store)["records.jsonl"] == before["records.jsonl"]
    assert_every_line_is_json(store)


def test_a_few_dropped_connections_are_retried_and_the_run_completes(tmp_path):
    with FakeOpenAIServer(responder=responder(), faults={1: "close", 2: "close", 7: "close"}) as s:
        summary = collect(QUERIES, MODELS, s.base_url, tmp_path, **fast(max_consecutive_errors=3))
    assert summary.complete and summary.n_failed == 0
    assert_no_duplicates(tmp_path)


def test_a_hanging_server_is_bounded_by_timeout_and_consecutive_errors(tmp_path):
    with FakeOpenAIServer(responder=responder(), fault="hang") as server:
        started = time.perf_counter()
        with pytest.raises(EndpointUnreachableError, match="timed out"):
            collect(
                QUERIES,
                MODELS,
                server.base_url,
                tmp_path,
                **fast(timeout=0.2, max_retries=5, max_consecutive_errors=4, concurrency=2),
            )
        elapsed = time.perf_counter() - started
    assert elapsed < 15.0  # 2 rounds of 2 calls x 0.2 s, not 6 x 0.2 s for each of 54 calls


def test_timeout_and_max_retries_flags_reach_the_client(tmp_path, capsys):
    queries = tmp_path / "queries.jsonl"
    QUERIES.to_json(queries, orient="records", lines=True)
    store = tmp_path / "store"
    with FakeOpenAIServer(responder=responder(), faults={0: "hang", 5: "hang", 6: "hang"}) as s:
        started = time.perf_counter()
        status = cli(
            ["--queries", str(queries), "--models", "m1", "--base-url", s.base_url,
             "--store", str(store), "--rewrites", "1", "--decodes", "2", "--concurrency", "1",
             "--timeout", "0.3", "--max-retries", "1"]
        )  # fmt: skip
        elapsed = time.perf_counter() - started
        statuses = s.statuses()
    out = capsys.readouterr().out
    # call 0 (a rewrite) hangs and is retried once; calls 5 and 6 are the same answer: 2 attempts,
    # then it is a failure; everything else completes
    assert statuses.count("hang") == 3 and elapsed < 30.0  # not 6 x 60 s
    assert status == 1 and "11/12 records" in out and "1 failed call(s)" in out
    failure = json.loads((store / "failures.jsonl").read_text())
    assert failure["attempts"] == 2 and "timed out after 0.3 s" in failure["error"]
    settings = json.loads((store / "manifest.json").read_text())["runs"][-1]["settings"]
    assert (settings["timeout"], settings["max_retries"]) == (0.3, 1)


# -- the store ---------------------------------------------------------------------------------


class _FaultyOs:
    """The ``os`` module as the store sees it, with failing ``open`` or ``write``."""

    def __init__(self, *, open_errno: int | None = None, write_errno: int | None = None, after=0):
        self.open_errno, self.write_errno, self.after = open_errno, write_errno, after
        self.writes = 0

    def __getattr__(self, name):
        return getattr(os, name)

    def open(self, path, flags, *args):
        if self.open_errno is not None and flags & (os.O_WRONLY | os.O_RDWR):
            raise OSError(self.open_errno, os.strerror(self.open_errno), str(path))
        return os.open(path, flags, *args)

    def write(self, fd, data):
        if self.write_errno is not None:
            self.writes += 1
            if self.writes > self.after:  # half a line reaches the disk, then it is full
                os.write(fd, bytes(data[: len(data) // 2]))
                raise OSError(self.write_errno, os.strerror(self.write_errno))
        return os.write(fd, data)


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES])
def test_a_read_only_store_is_a_clear_error(tmp_path, monkeypatch, capsys, code):
    store = tmp_path / "store"
    with FakeOpenAIServer(responder=responder()) as server:
        collect(QUERIES, MODELS, server.base_url, store, **fast(n_rewrites=0, n_decodes=1))
        before = store_bytes(store)
        monkeypatch.setattr(store_module, "os", _FaultyOs(open_errno=code))
        with pytest.raises(StoreError, match="cannot write") as caught:
            collect(QUERIES, MODELS, server.base_url, store, **fast(n_rewrites=0, n_decodes=2))
        queries = tmp_path / "queries.jsonl"
        QUERIES.to_json(queries, orient="records", lines=True)
        status = cli(["--queries", str(queries), "--models", "m1", "--base-url",
                      server.base_url, "--store", str(store)])  # fmt: skip
    assert str(store) in str(caught.value)
    assert ("read-only" if code == errno.EROFS else "permission denied") in str(caught.value)
    assert store_bytes(store) == before
    err = capsys.readouterr().err
    assert status == 1 and "Traceback" not in err and "cannot write" in err


def test_a_full_disk_stops_the_run_and_what_was_written_stays_valid(tmp_path, monkeypatch):
    store = tmp_path / "store"
    with FakeOpenAIServer(responder=responder()) as server:
        faulty = _FaultyOs(write_errno=errno.ENOSPC, after=30)
        monkeypatch.setattr(store_module, "os", faulty)
        with pytest.raises(StoreError, match="no space left") as caught:
            collect(QUERIES, MODELS, server.base_url, store, **fast())
        assert "rerun" in str(caught.value)
        assert_every_line_is_json(store)  # the half line was taken back
        assert not (store / "manifest.json.tmp").exists()
        kept = len(record_lines(store))
        assert kept > 0
        monkeypatch.undo()
        summary = collect(QUERIES, MODELS, server.base_url, store, **fast())
    assert summary.complete and summary.n_skipped == kept
    assert_no_duplicates(store)
    # the full disk kept the manifest at "started"; the next run found it and closed it
    runs = json.loads((store / "manifest.json").read_text())["runs"]
    assert [run["status"] for run in runs] == ["interrupted", "completed"]


def test_a_store_path_that_is_a_file_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "results.csv"
    path.write_text("query_id,score\n")
    with pytest.raises(StoreError, match="is a file, not a folder"):
        collect(QUERIES, MODELS, "http://127.0.0.1:9/v1", path, **fast())
    assert path.read_text() == "query_id,score\n"
    queries = tmp_path / "queries.jsonl"
    QUERIES.to_json(queries, orient="records", lines=True)
    status = cli(["--queries", str(queries), "--models", "m1", "--base-url",
                  "http://127.0.0.1:9/v1", "--store", str(path / "sub")])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 1 and "Traceback" not in err and "is a file" in err


# -- signals -----------------------------------------------------------------------------------


def test_sigterm_marks_the_run_interrupted_and_a_rerun_completes(tmp_path):
    queries = tmp_path / "queries.jsonl"
    QUERIES.to_json(queries, orient="records", lines=True)
    store = tmp_path / "store"
    argv = ["collect", "--queries", str(queries), "--models", "m1,m2", "--store", str(store),
            "--concurrency", "2"]  # fmt: skip
    with FakeOpenAIServer(responder=responder(), delay=0.05) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        process = subprocess.Popen(
            [sys.executable, "-m", "ecc_lib", *argv, "--base-url", server.base_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        records = store / "records.jsonl"
        wait_for_records(process, records, 6)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=20)
        err = err.decode()
        assert process.returncode == 128 + signal.SIGTERM, err
        assert "Traceback" not in err and "interrupted by SIGTERM" in err
        manifest = json.loads((store / "manifest.json").read_text())
        assert manifest["runs"][-1]["status"] == "interrupted"
        kept = len(record_lines(store))
        assert 6 <= kept < 54
        assert_every_line_is_json(store)
        server.delay = 0.0
        summary = collect(queries, MODELS, server.base_url, store, **fast())
    assert summary.complete and summary.n_skipped == kept
    assert_no_duplicates(store)


# -- empty replies -----------------------------------------------------------------------------


@pytest.mark.parametrize(("fault", "reason"), [("null", "'length'"), ("empty", "'stop'")])
def test_an_empty_reply_is_a_recorded_failure_not_a_score_of_zero(tmp_path, fault, reason):
    with FakeOpenAIServer(responder=responder(), faults={4: fault, 9: fault}) as server:
        summary = collect(QUERIES, MODELS, server.base_url, tmp_path, **fast(n_rewrites=1))
        empty = [server.requests[i]["body"] for i in (4, 9)]
    assert not summary.complete and summary.n_failed == 2 and summary.n_empty_replies == 2
    lines = record_lines(tmp_path)
    assert len(lines) == 3 * 2 * 2 * 3 - 2
    assert all(r["content"] for r in lines)  # no record of an empty reply
    failures = [json.loads(line) for line in (tmp_path / "failures.jsonl").read_text().splitlines()]
    assert len(failures) == 2
    for failure in failures:
        assert failure["kind"] == "decode" and "empty reply" in failure["error"]
        assert reason in failure["error"] and failure["finish_reason"] == reason.strip("'")
    failed_keys = {(f["query_id"], f["model"], f["variant_id"], f["decode_id"]) for f in failures}
    assert {(b["model"]) for b in empty} == {k[1] for k in failed_keys}
    with FakeOpenAIServer(responder=responder()) as server:  # a rerun asks them again
        again = collect(QUERIES, MODELS, server.base_url, tmp_path, **fast(n_rewrites=1))
        assert server.n_calls == 2
    assert again.complete and set(failed_keys) <= set(keys_of(record_lines(tmp_path)))
