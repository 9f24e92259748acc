"""Shared data and helpers of the collection tests (queries with a known answer key); no tests here."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pandas as pd
from fake_openai_server import answer_key_responder

QUERIES = pd.DataFrame(
    {
        "query_id": ["q1", "q2", "q3"],
        "text": [
            "[Q1] What is 12 times 6?",
            "[Q2] Which city is the capital of France?",
            "[Q3] Which planet is the largest?",
        ],
        "category": ["math", "geography", None],
        "answer": ["72", "Paris", "C"],
        "choices": [None, None, ["Mars", "Venus", "Jupiter", "Earth"]],
    }
)
ANSWER_KEY = {"[Q1]": "72", "[Q2]": "Paris", "[Q3]": "C"}
ACCURACY = {"m1": 0.8, "m2": 0.4}
MODELS = ["m1", "m2"]


def responder():
    return answer_key_responder(ANSWER_KEY, ACCURACY)


def fast(**overrides):
    """Collection settings for tests: no progress bar, quick retries, short timeouts, no fsync
    (the kill test's subprocess keeps the default fsync)."""
    settings = {
        "fsync": False,
        "n_rewrites": 2,
        "n_decodes": 3,
        "concurrency": 4,
        "timeout": 5.0,
        "backoff_base": 0.01,
        "backoff_max": 0.05,
        "show_progress": False,
        "api_key_env": None,
    }
    settings.update(overrides)
    return settings


def record_lines(store: Path) -> list[dict]:
    path = Path(store) / "records.jsonl"
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def keys_of(lines: list[dict]) -> list[tuple]:
    return [(r["query_id"], r["model"], r["variant_id"], r["decode_id"]) for r in lines]


def assert_no_duplicates(store: Path) -> None:
    counts = Counter(keys_of(record_lines(store)))
    duplicated = {key: n for key, n in counts.items() if n > 1}
    assert not duplicated, duplicated


def wait_for_records(process, records: Path, n: int, timeout: float = 30.0) -> None:
    """Wait until the collection running in ``process`` has written ``n`` record lines, and
    check it is still running (its stderr tail is the failure message)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if records.exists() and records.read_bytes().count(b"\n") >= n:
            break
        time.sleep(0.01)
    assert process.poll() is None, process.stderr.read().decode()[-2000:]
