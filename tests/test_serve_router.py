"""Issue 38: serve-router in front of fake OpenAI-compatible upstreams."""

from __future__ import annotations

import http.client
import json
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

from ecc_lib.data.sources import load_bundled
from ecc_lib.data.tables import read_queries
from ecc_lib.routers.deploy import train_deployed
from ecc_lib.routers.serve import (
    RouterServer,
    export_decisions,
    parse_upstreams,
    read_decisions,
)

pytest.importorskip("httpx")
sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer  # noqa: E402

CHEAP, STRONG = "gemma-2-9b-it", "llama-3.1-nemotron-51b-instruct"
OPENAI_KEY = "sk-openai-must-stay-home"
KEY_A = "key-for-upstream-a-only"


@pytest.fixture(scope="module")
def deployed_and_texts():
    """A kNN router between a cheap and a strong dcrouter model (static embeddings)."""
    queries, outcomes = load_bundled("dcrouter")
    queries = queries.iloc[:2000]
    outcomes = outcomes[
        outcomes["model"].isin([CHEAP, STRONG]) & outcomes["query_id"].isin(queries["query_id"])
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        deployed, _ = train_deployed(queries, outcomes, family="kNN", embedder="static")
    deployed.calibrate(budget=0.5)
    texts = queries["text"].tolist()[:1000]
    return deployed, texts


def _post(connection: http.client.HTTPConnection, path: str, body: dict) -> tuple[int, dict]:
    connection.request(
        "POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"}
    )
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def _client_calls(base_url: str, texts: list[str], n_threads: int = 8) -> list[tuple[int, dict]]:
    """OpenAI-style chat calls, one keep-alive connection per thread."""
    parts = urlsplit(base_url)
    chunks = np.array_split(np.arange(len(texts)), n_threads)

    def run(rows: np.ndarray) -> list[tuple[int, dict]]:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        try:
            return [
                _post(
                    connection,
                    f"{parts.path}/chat/completions",
                    {
                        "model": "router",
                        "messages": [
                            {"role": "system", "content": "Answer briefly."},
                            {"role": "user", "content": texts[i]},
                        ],
                        "max_tokens": 16,
                    },
                )
                for i in rows
            ]
        finally:
            connection.close()

    with ThreadPoolExecutor(n_threads) as pool:
        return [reply for part in pool.map(run, chunks) for reply in part]


@pytest.mark.parametrize(
    "n_requests", [100, pytest.param(1000, marks=pytest.mark.slow)], ids=["100", "1000"]
)
def test_routes_requests_as_route_does_and_keeps_keys_home(
    deployed_and_texts, monkeypatch, tmp_path, n_requests
):
    deployed, texts = deployed_and_texts
    texts = texts[:n_requests]
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("KEY_A", KEY_A)
    expected = deployed.route(texts)["model"].tolist()
    assert set(expected) == {CHEAP, STRONG}  # both upstreams are used
    with (
        FakeOpenAIServer(api_key=KEY_A) as upstream_a,
        FakeOpenAIServer() as upstream_b,
        RouterServer(
            deployed,
            {CHEAP: upstream_a.base_url, STRONG: upstream_b.base_url},
            api_key_envs={CHEAP: "KEY_A"},
            log_dir=tmp_path / "log",
        ) as server,
    ):
        replies = _client_calls(server.base_url, texts)
    assert [status for status, _ in replies] == [200] * len(texts)
    assert [reply["model"] for _, reply in replies] == expected
    assert [reply["router"]["model"] for _, reply in replies] == expected
    assert all(reply["choices"][0]["message"]["content"] for _, reply in replies)
    # each upstream saw exactly the requests routed to it, with its model name
    assert upstream_a.n_calls == expected.count(CHEAP)
    assert upstream_b.n_calls == expected.count(STRONG)
    assert {r["model"] for r in upstream_a.requests} == {CHEAP}
    # key policy: KEY_A to upstream A only; OPENAI_API_KEY (not api.openai.com) to nobody
    assert {r["authorization"] for r in upstream_a.requests} == {f"Bearer {KEY_A}"}
    assert {r["authorization"] for r in upstream_b.requests} == {None}
    sent = json.dumps([r["body"] for r in upstream_a.requests + upstream_b.requests])
    assert OPENAI_KEY not in sent and KEY_A not in sent
    # the logged decisions read back as a dataset folder
    queries, decisions = read_decisions(tmp_path / "log")
    assert len(queries) == len(texts) and decisions["model"].tolist().count(CHEAP) == (
        expected.count(CHEAP)
    )
    folder = export_decisions(tmp_path / "log", tmp_path / "dataset")
    assert sorted(read_queries(folder / "queries.csv")["text"]) == sorted(texts)


def test_an_upstream_that_times_out_fails_one_request_cleanly(deployed_and_texts):
    deployed, texts = deployed_and_texts
    choices = deployed.route(texts[:40])["model"].tolist()
    first_strong = choices.index(STRONG)
    n = first_strong + 6  # requests before and after the one that times out
    texts, choices = texts[:n], choices[:n]
    with (
        FakeOpenAIServer() as upstream_a,
        FakeOpenAIServer(faults={0: "hang"}) as upstream_b,  # its first call never answers
        RouterServer(
            deployed,
            {CHEAP: upstream_a.base_url, STRONG: upstream_b.base_url},
            timeout=0.5,
            max_retries=0,
        ) as server,
    ):
        replies = _client_calls(server.base_url, texts, n_threads=1)
    statuses = [status for status, _ in replies]
    assert statuses[first_strong] == 502
    assert "upstream for" in replies[first_strong][1]["error"]["message"]
    assert statuses[:first_strong] + statuses[first_strong + 1 :] == [200] * (n - 1)
    assert [reply["model"] for _, reply in replies if "model" in reply] == (
        choices[:first_strong] + choices[first_strong + 1 :]
    )


def test_dry_run_answers_with_the_choice_only(deployed_and_texts):
    deployed, texts = deployed_and_texts
    with RouterServer(deployed, {}, dry_run=True) as server:
        replies = _client_calls(server.base_url, texts[:20], n_threads=2)
    expected = deployed.route(texts[:20])["model"].tolist()
    assert [r["choices"][0]["message"]["content"] for _, r in replies] == expected
    assert all(r["router"]["dry_run"] for _, r in replies)


def test_bad_requests_are_answered_and_the_server_keeps_serving(deployed_and_texts):
    deployed, texts = deployed_and_texts
    with RouterServer(deployed, {}, dry_run=True, max_request_bytes=2000) as server:
        parts = urlsplit(server.base_url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        status, reply = _post(connection, "/v1/chat/completions", {"messages": []})
        assert status == 400 and "no user message" in reply["error"]["message"]
        status, reply = _post(
            connection, "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                                 "stream": True}
        )  # fmt: skip
        assert status == 400 and "streaming" in reply["error"]["message"]
        status, reply = _post(
            connection,
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "y" * 5000}]},
        )
        assert status == 413
        connection.close()
        replies = _client_calls(server.base_url, texts[:3], n_threads=1)
        assert [s for s, _ in replies] == [200, 200, 200]


def test_every_model_needs_an_upstream(deployed_and_texts):
    deployed, _ = deployed_and_texts
    with pytest.raises(ValueError, match="have no --upstream"):
        RouterServer(deployed, {CHEAP: "http://127.0.0.1:9/v1"})
    with pytest.raises(ValueError, match="not NAME=URL"):
        parse_upstreams(["just-a-url"])


def test_serve_router_command_line_errors_are_one_line(deployed_and_texts, tmp_path, capsys):
    from ecc_lib.cli import main

    deployed, _ = deployed_and_texts
    deployed.save(tmp_path / "router")
    status = main(["serve-router", "--router", str(tmp_path / "router"), "--upstream", "x"])
    assert status == 1
    assert capsys.readouterr().err.strip() == (
        "ecc-lab serve-router: error: upstream 'x' is not NAME=URL"
    )
    status = main(
        ["serve-router", "--router", str(tmp_path / "router"),
         "--upstream", f"{CHEAP}=http://127.0.0.1:9/v1"]
    )  # fmt: skip
    assert status == 1
    assert "have no --upstream NAME=URL" in capsys.readouterr().err
