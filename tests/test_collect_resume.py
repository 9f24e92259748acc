"""Interrupted runs, authentication failures and API-key hygiene of live collection."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap

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

from ecc_lib.collect import collect
from ecc_lib.collect.errors import EndpointAuthError
from ecc_lib.collect.runner import acollect
from ecc_lib.collect.store import CollectionStore


def _content_by_key(store):
    return {
        key: (r["score"], r["content"])
        for key, r in zip(keys_of(record_lines(store)), record_lines(store), strict=True)
    }


def test_a_run_killed_midway_and_restarted_ends_with_the_same_records(tmp_path):
    queries_file = tmp_path / "queries.jsonl"
    QUERIES.to_json(queries_file, orient="records", lines=True)
    reference, killed = tmp_path / "reference", tmp_path / "killed"
    with FakeOpenAIServer(responder=responder()) as server:
        collect(queries_file, MODELS, server.base_url, reference, **fast())
        server.delay = 0.08  # slow enough to be killed mid-way
        script = textwrap.dedent(
            f"""
            from ecc_lib.collect import collect
            collect({str(queries_file)!r}, {MODELS!r}, {server.base_url!r}, {str(killed)!r},
                    api_key_env=None, concurrency=2, show_progress=False)
            """
        )
        process = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE)
        records = killed / "records.jsonl"
        wait_for_records(process, records, 10)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        process.stderr.close()
        n_at_kill = len(record_lines(killed))
        assert 10 <= n_at_kill < 54  # killed mid-way
        server.delay = 0.0
        summary = collect(queries_file, MODELS, server.base_url, killed, **fast())
    assert summary.n_skipped == n_at_kill and summary.complete
    assert set(keys_of(record_lines(killed))) == set(keys_of(record_lines(reference)))
    assert_no_duplicates(killed)
    assert _content_by_key(killed) == _content_by_key(reference)
    manifest = json.loads((killed / "manifest.json").read_text())
    # the killed run could not close its entry: the next run found it "started" and closed it
    assert [run["status"] for run in manifest["runs"]] == ["interrupted", "completed"]
    assert "killed" in manifest["runs"][0]["note"]


def test_cancelling_a_run_keeps_the_store_consistent_and_resumable(tmp_path):
    async def start_then_cancel(base_url):
        task = asyncio.ensure_future(
            acollect(QUERIES, MODELS, base_url, tmp_path, **fast(concurrency=3))
        )
        records = tmp_path / "records.jsonl"
        while not (records.exists() and records.read_bytes().count(b"\n") >= 8):
            await asyncio.sleep(0.005)
        task.cancel()  # what Ctrl-C does to asyncio.run's main task
        with pytest.raises(asyncio.CancelledError):
            await task

    with FakeOpenAIServer(responder=responder(), delay=0.02) as server:
        asyncio.run(start_then_cancel(server.base_url))
        manifest = json.loads((tmp_path / "manifest.json").read_text())
        assert manifest["runs"][-1]["status"] == "interrupted"
        partial = len(record_lines(tmp_path))
        assert 8 <= partial < 54
        CollectionStore(tmp_path).open().close()  # the lock was released
        summary = collect(QUERIES, MODELS, server.base_url, tmp_path, **fast())
    assert summary.n_skipped == partial and summary.complete
    assert len(record_lines(tmp_path)) == 54
    assert_no_duplicates(tmp_path)


def test_401_stops_with_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.setenv("ECC_TEST_KEY", "sk-wrong-key-0000")
    with FakeOpenAIServer(responder=responder(), api_key="sk-right-key") as server:
        with pytest.raises(EndpointAuthError) as caught:
            collect(
                QUERIES,
                MODELS,
                server.base_url,
                tmp_path,
                **fast(api_key_env="ECC_TEST_KEY", concurrency=2),
            )
        assert server.n_calls <= 2  # stopped at once, nothing retried
    message = str(caught.value)
    assert "401" in message and server.base_url in message and "'m1'" in message
    assert "ECC_TEST_KEY" in message and "sk-wrong-key-0000" not in message
    assert record_lines(tmp_path) == []
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["runs"][-1]["status"] == "failed: EndpointAuthError"


def test_the_api_key_never_reaches_the_store_or_the_logs(tmp_path, monkeypatch, caplog):
    key = "sk-live-SECRET-4242"
    monkeypatch.setenv("ECC_TEST_KEY", key)
    base = responder()

    def echoing(model, messages, body):  # a server that echoes the key back
        return base(model, messages, body).replace("Let me", f"(key {key}) Let me")

    with caplog.at_level(logging.DEBUG):
        with FakeOpenAIServer(
            responder=echoing, api_key=key, status_plan={4: 429, 7: 401}
        ) as server:
            with pytest.raises(EndpointAuthError):
                collect(
                    QUERIES,
                    MODELS,
                    server.base_url,
                    tmp_path,
                    **fast(api_key_env="ECC_TEST_KEY", concurrency=1),
                )
            server.status_plan = {}
            summary = collect(
                QUERIES, MODELS, server.base_url, tmp_path, **fast(api_key_env="ECC_TEST_KEY")
            )
            assert {r["authorization"] for r in server.requests} == {f"Bearer {key}"}
    assert summary.complete
    assert any("[REDACTED]" in r["content"] for r in record_lines(tmp_path))
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {"records.jsonl", "manifest.json", "rewrites.jsonl"} <= {p.name for p in files}
    for path in files:
        assert key.encode() not in path.read_bytes(), path.name
    assert key not in caplog.text
    settings = json.loads((tmp_path / "manifest.json").read_text())["runs"][-1]["settings"]
    assert settings["api_key_env"] == "ECC_TEST_KEY"
    assert os.environ["ECC_TEST_KEY"] == key


def test_a_torn_last_record_is_dropped_and_collected_again_without_duplicates(tmp_path, caplog):
    settings = fast(n_rewrites=1, n_decodes=1)
    with FakeOpenAIServer(responder=responder()) as server:
        collect(QUERIES, MODELS, server.base_url, tmp_path, **settings)
        path = tmp_path / "records.jsonl"
        data = path.read_bytes()
        last_start = data.rstrip(b"\n").rfind(b"\n") + 1
        lost = keys_of([json.loads(data[last_start:])])[0]
        path.write_bytes(data[: last_start + 40])  # a crash in the middle of the last write
        with caplog.at_level(logging.WARNING):
            summary = collect(
                QUERIES, MODELS, server.base_url, tmp_path, **settings, temperature=0.1
            )
    assert (summary.n_skipped, summary.n_collected) == (11, 1)
    lines = record_lines(tmp_path)  # parses every line: the torn bytes are gone
    assert len(lines) == 12 and keys_of(lines)[-1] == lost
    assert_no_duplicates(tmp_path)
    assert "torn" in caplog.text
    assert "other settings" in caplog.text and "'temperature': (0.7, 0.1)" in caplog.text
