"""The append-only collection store: torn lines, duplicates, locking, redaction, export."""

from __future__ import annotations

import json
import logging

import pandas as pd
import pytest

from ecc_lib.collect.errors import StoreError
from ecc_lib.collect.export import collected_outcomes, export_outcomes
from ecc_lib.collect.store import RECORDS_FILE, CollectionStore, observation_type, read_jsonl
from ecc_lib.data.schema import validate_outcomes


def record(query_id="q1", model="m1", variant_id=0, decode_id=0, score=1.0, **extra):
    return {
        "query_id": query_id,
        "model": model,
        "variant_id": variant_id,
        "decode_id": decode_id,
        "observation_type": observation_type(variant_id, decode_id),
        "score": score,
        "scoring_error": None if score is not None else "no reference answer",
        "cost": 0.001,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "latency_s": 0.1,
        **extra,
    }


def test_observation_type_rule():
    assert observation_type(0, 0) == "original"
    assert observation_type(0, 2) == "decode"
    assert observation_type(1, 0) == "rewrite"
    assert observation_type(2, 1) == "rewrite"


def test_append_refuses_duplicate_keys_and_survives_reopen(tmp_path):
    with CollectionStore(tmp_path) as store:
        assert store.add_record(record())
        assert not store.add_record(record(score=0.0))  # same key: refused
        assert store.add_record(record(decode_id=1))
    lines = (tmp_path / RECORDS_FILE).read_bytes().splitlines()
    assert len(lines) == 2
    reopened = CollectionStore(tmp_path)
    assert set(reopened.records) == {("q1", "m1", 0, 0), ("q1", "m1", 0, 1)}
    assert reopened.records[("q1", "m1", 0, 0)]["score"] == 1.0


def test_torn_last_line_is_ignored_counted_and_cut_before_next_append(tmp_path, caplog):
    with CollectionStore(tmp_path) as store:
        store.add_record(record())
        store.add_record(record(decode_id=1))
    path = tmp_path / RECORDS_FILE
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"query_id":"q1","model":"m1","varia')  # crash mid-write
    with caplog.at_level(logging.WARNING):
        store = CollectionStore(tmp_path)
    assert store.n_torn == 1 and len(store.records) == 2
    assert "torn" in caplog.text
    with CollectionStore(tmp_path) as store:
        store.add_record(record(decode_id=2))
    records, torn, bad = read_jsonl(path)
    assert (torn, bad) == (0, 0)
    assert [r["decode_id"] for r in records] == [0, 1, 2]
    assert path.read_bytes().startswith(whole)


def test_duplicate_lines_on_disk_keep_the_first(tmp_path):
    path = tmp_path / RECORDS_FILE
    lines = [json.dumps(record(score=s)) for s in (1.0, 0.0)]
    path.write_text("\n".join(lines) + "\n")
    store = CollectionStore(tmp_path)
    assert store.n_duplicates == 1 and store.records[("q1", "m1", 0, 0)]["score"] == 1.0


def test_lock_keeps_a_second_writer_out(tmp_path):
    first = CollectionStore(tmp_path).open()
    try:
        with pytest.raises(StoreError, match="in use"):
            CollectionStore(tmp_path).open()
    finally:
        first.close()
    CollectionStore(tmp_path).open().close()  # released


def test_secrets_are_redacted_from_every_line(tmp_path):
    secret = "sk-test-123"
    with CollectionStore(tmp_path, secrets=[secret]) as store:
        store.add_record(record(content=f"echo Bearer {secret}"))
        store.add_failure({"error": f"key {secret} rejected"})
        store.update_manifest({"run_id": "r1", "note": secret})
    for path in tmp_path.iterdir():
        assert secret.encode() not in path.read_bytes(), path.name
    assert "[REDACTED]" in CollectionStore(tmp_path).records[("q1", "m1", 0, 0)]["content"]


def test_changed_query_is_refused(tmp_path):
    with CollectionStore(tmp_path) as store:
        assert store.add_queries([{"query_id": "q1", "text": "2+2?", "answer": "4"}]) == 1
        assert store.add_queries([{"query_id": "q1", "text": "2+2?", "answer": "4"}]) == 0
        with pytest.raises(StoreError, match=r"q1.*text"):
            store.add_queries([{"query_id": "q1", "text": "3+3?", "answer": "4"}])


def test_export_leaves_out_scoring_failures_with_a_logged_count(tmp_path, caplog):
    with CollectionStore(tmp_path) as store:
        store.add_record(record(model="m1", score=1.0))
        store.add_record(record(model="m2", score=0.0, cost=None))
        store.add_record(record(model="m2", variant_id=1, score=None))
    with caplog.at_level(logging.WARNING):
        outcomes = export_outcomes(tmp_path, tmp_path / "out" / "o.csv")
    assert "left out 1 record(s) whose scoring failed" in caplog.text
    assert len(outcomes) == 2 and outcomes["score"].tolist() == [1.0, 0.0]
    assert outcomes["cost"].isna().tolist() == [False, True]
    validate_outcomes(outcomes)  # the shared data model accepts it
    written = pd.read_csv(tmp_path / "out" / "o.csv")
    assert list(written.columns[:7]) == [
        "query_id",
        "model",
        "score",
        "cost",
        "variant_id",
        "decode_id",
        "observation_type",
    ]
    assert {"prompt_tokens", "completion_tokens", "latency_s"} <= set(written.columns)
    export_outcomes(tmp_path, tmp_path / "o.parquet")
    assert len(pd.read_parquet(tmp_path / "o.parquet")) == 2
    export_outcomes(tmp_path, tmp_path / "o.jsonl")
    assert len(pd.read_json(tmp_path / "o.jsonl", lines=True)) == 2
    with pytest.raises(ValueError, match=r"write \.csv, \.parquet"):
        export_outcomes(tmp_path, tmp_path / "o.xlsx")


def test_export_of_missing_store_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        collected_outcomes(tmp_path / "nope")
