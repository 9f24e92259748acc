"""Issue 36, hostile servers and flags of live collection (items 12, 13, 15): a deeply nested
reply, a 4,000-digit token count, an absurd ``usage.cost``, ``user:pw@`` plus an API key and
``--temperature inf`` each end in one clear line (or a recorded failure), never a traceback."""

from __future__ import annotations

import json
import logging

import pytest
from fake_openai_server import FakeOpenAIServer
from test_collect_support import MODELS, QUERIES, fast, record_lines, responder

from ecc_lib.cli import main
from ecc_lib.collect import collect
from ecc_lib.collect.client import ChatClient
from ecc_lib.collect.errors import EndpointConfigError

pytest.importorskip("httpx")


def _failures(store):
    path = store / "failures.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_deeply_nested_reply_is_one_recorded_failure_not_retried(tmp_path):
    with FakeOpenAIServer(responder=responder(), faults={3: "deep_json"}) as server:
        summary = collect(QUERIES, MODELS, server.base_url, tmp_path, **fast(n_rewrites=0))
        n_calls = server.n_calls
    assert summary.n_failed == 1
    assert n_calls == 3 * 2 * 3  # the nested reply was not asked again
    (failure,) = _failures(tmp_path)
    assert "nested too deeply" in failure["error"]
    assert len(record_lines(tmp_path)) == 3 * 2 * 3 - 1


def test_a_4000_digit_token_count_is_an_unknown_count(tmp_path):
    with FakeOpenAIServer(responder=responder(), fault="huge_tokens") as server:
        summary = collect(QUERIES, ["m1"], server.base_url, tmp_path, **fast(n_rewrites=0))
    assert summary.complete and summary.n_failed == 0
    lines = record_lines(tmp_path)
    assert len(lines) == 3 * 3
    assert all(r["prompt_tokens"] is None for r in lines)
    assert all(isinstance(r["completion_tokens"], int) for r in lines)


def test_an_absurd_reported_cost_is_not_taken(tmp_path, caplog):
    with (
        caplog.at_level(logging.WARNING),
        FakeOpenAIServer(responder=responder(), fault="absurd_cost", report_cost=True) as server,
    ):
        summary = collect(QUERIES, ["m1"], server.base_url, tmp_path, **fast(n_rewrites=0))
    assert summary.n_failed == 0
    costs = [r.get("cost") for r in record_lines(tmp_path)]
    assert not any(isinstance(c, float) and c > 1e6 for c in costs)
    assert summary.spend_usd < 1e6
    assert "1e+300" in caplog.text and "not taken" in caplog.text


def test_userinfo_and_an_api_key_together_are_refused(tmp_path, monkeypatch, capsys):
    with pytest.raises(EndpointConfigError, match="user:password.*only one"):
        ChatClient("http://u:pw@127.0.0.1:9/v1", api_key="sk-x")
    monkeypatch.setenv("ECC_TEST_KEY", "sk-live-SECRET-1")
    queries = tmp_path / "queries.jsonl"
    QUERIES.to_json(queries, orient="records", lines=True)
    with FakeOpenAIServer(responder=responder()) as server:
        url = server.base_url.replace("http://", "http://user:pw@")
        status = main(
            ["collect", "--queries", str(queries), "--models", "m1", "--base-url", url,
             "--api-key-env", "ECC_TEST_KEY", "--store", str(tmp_path / "store")]
        )  # fmt: skip
        assert server.n_calls == 0
    err = capsys.readouterr().err
    assert status == 1 and "ECC_TEST_KEY" in err and "only one" in err
    assert "SECRET" not in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["inf", "nan", "-1"])
def test_a_non_finite_temperature_is_refused_before_any_call(tmp_path, capsys, value):
    queries = tmp_path / "queries.jsonl"
    QUERIES.to_json(queries, orient="records", lines=True)
    with FakeOpenAIServer(responder=responder()) as server:
        status = main(
            ["collect", "--queries", str(queries), "--models", "m1", "--base-url",
             server.base_url, "--store", str(tmp_path / "store"), f"--temperature={value}"]
        )  # fmt: skip
        assert server.n_calls == 0
    err = capsys.readouterr().err
    assert status != 0 and "--temperature" in err and "finite" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    with pytest.raises(ValueError, match="finite"):
        collect(
            QUERIES, ["m1"], "http://127.0.0.1:9/v1", tmp_path, **fast(temperature=float(value))
        )


@pytest.mark.parametrize(
    "damage", [b'{"format": 1, "runs": [', b"\xff\xfe", b"[1, 2]", b'{"runs": 3}']
)
def test_a_damaged_manifest_is_named_and_the_store_stays_usable(tmp_path, caplog, damage):
    with FakeOpenAIServer(responder=responder()) as server:
        first = collect(QUERIES, ["m1"], server.base_url, tmp_path, **fast(n_rewrites=0))
    assert first.complete
    manifest = tmp_path / "manifest.json"
    manifest.write_bytes(damage)
    caplog.set_level(logging.WARNING)
    with FakeOpenAIServer(responder=responder()) as server:
        again = collect(QUERIES, ["m1", "m2"], server.base_url, tmp_path, **fast(n_rewrites=0))
        assert server.n_calls == 3 * 3  # only m2's answers: m1's records were kept
    assert again.complete
    assert str(manifest) in caplog.text and "damaged" in caplog.text
    assert (tmp_path / "manifest.json.damaged").read_bytes() == damage
    runs = json.loads(manifest.read_text())["runs"]
    assert len(runs) == 1 and runs[0]["status"] == "completed"
    assert len(record_lines(tmp_path)) == 3 * 3 * 2
