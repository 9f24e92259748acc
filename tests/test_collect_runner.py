"""End-to-end collection runs against a real chat-completions server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest
from fake_openai_server import FakeOpenAIServer, default_responder, rewrite_response
from test_collect_support import (
    MODELS,
    QUERIES,
    assert_no_duplicates,
    fast,
    keys_of,
    record_lines,
    responder,
)

from ecc_lib.collect import collect, read_collected
from ecc_lib.data.schema import validate_outcomes


def test_full_run_yields_every_key_once_and_a_rerun_calls_nothing(tmp_path):
    store = tmp_path / "store"
    with FakeOpenAIServer(responder=responder()) as server:
        summary = collect(QUERIES, MODELS, server.base_url, store, **fast())
        calls = server.n_calls
        again = collect(QUERIES, MODELS, server.base_url, store, **fast())
        assert server.n_calls == calls  # nothing asked twice
        answer_prompts = [r["body"]["messages"][1]["content"] for r in server.requests[3:]]
    expected = set(itertools.product(["q1", "q2", "q3"], MODELS, range(3), range(3)))
    lines = record_lines(store)
    assert len(lines) == 3 * 2 * 3 * 3 == summary.n_planned == summary.n_collected
    assert set(keys_of(lines)) == expected
    assert_no_duplicates(store)
    assert summary.complete and summary.n_failed == 0 and summary.n_rewrite_calls == 3
    assert (again.n_skipped, again.n_collected, again.n_rewrite_calls) == (54, 0, 0)

    # every answer prompt asked one of the stored variants, rewrites included
    queries, outcomes = read_collected(store)
    assert sum("Rephrasing" in prompt for prompt in answer_prompts) == 2 * 3 * 3 * 2
    validate_outcomes(outcomes, queries)
    assert outcomes.groupby("observation_type").size().to_dict() == {
        "original": 6,
        "decode": 12,
        "rewrite": 36,
    }
    assert set(outcomes["score"]) <= {0.0, 1.0}
    by_model = outcomes.groupby("model")["score"].mean()
    assert by_model["m1"] > by_model["m2"]  # the fake m1 is right 80% of the time, m2 40%
    assert (outcomes["prompt_tokens"] > 0).all() and (outcomes["latency_s"] > 0).all()
    scorers = dict(zip(queries["query_id"], queries["scorer"], strict=True))
    assert scorers == {"q1": "numeric", "q2": "exact_match", "q3": "multiple_choice"}


def test_injected_429_500_and_slow_responses_are_retried_and_the_run_completes(tmp_path):
    faults = {
        "fail_first": 3,
        "fail_status": 429,
        "status_plan": {10: 500, 11: 503, 20: 502},
        "slow_calls": {15, 30},
        "slow_seconds": 4.0,  # beyond the timeout even on a loaded machine
    }
    with FakeOpenAIServer(responder=responder(), **faults) as server:
        summary = collect(
            QUERIES,
            MODELS,
            server.base_url,
            tmp_path,
            **fast(timeout=1.5, max_consecutive_errors=50),
        )
        statuses = server.statuses()
    assert summary.complete and summary.n_failed == 0 and summary.n_collected == 54
    assert statuses[:3] == [429, 429, 429] and {500, 502, 503} <= set(statuses)
    lines = record_lines(tmp_path)
    assert len(lines) == 54 and sum(r["attempts"] > 1 for r in lines) >= 3
    assert_no_duplicates(tmp_path)


def test_calls_failing_for_good_are_logged_and_retried_by_the_next_run(tmp_path):
    settings = fast(n_rewrites=1, n_decodes=1, max_retries=1)
    with FakeOpenAIServer(responder=responder(), fail_models={"m2": 500}) as server:
        first = collect(QUERIES, MODELS, server.base_url, tmp_path, **settings)
        assert (first.n_collected, first.n_failed, first.complete) == (6, 6, False)
        failures = [json.loads(x) for x in (tmp_path / "failures.jsonl").read_text().splitlines()]
        assert len(failures) == 6 and {f["model"] for f in failures} == {"m2"}
        assert all(f["status"] == 500 and f["attempts"] == 2 for f in failures)
        manifest = json.loads((tmp_path / "manifest.json").read_text())
        assert manifest["runs"][-1]["status"] == "incomplete"
        server.fail_models = {}  # the outage ends
        second = collect(QUERIES, MODELS, server.base_url, tmp_path, **settings)
    assert (second.n_skipped, second.n_collected, second.complete) == (6, 6, True)
    assert len(record_lines(tmp_path)) == 12
    assert_no_duplicates(tmp_path)


def test_rerun_with_more_rewrites_and_decodes_only_adds_what_is_missing(tmp_path):
    with FakeOpenAIServer(responder=responder()) as server:
        collect(QUERIES, MODELS, server.base_url, tmp_path, **fast(n_rewrites=1, n_decodes=1))
        before = {(r["query_id"], r["variant_id"]): r["text"] for r in _rewrites(tmp_path)}
        summary = collect(QUERIES, MODELS, server.base_url, tmp_path, **fast())
    assert (summary.n_skipped, summary.n_collected) == (12, 42)
    after = {(r["query_id"], r["variant_id"]): r["text"] for r in _rewrites(tmp_path)}
    assert all(after[key] == text for key, text in before.items())  # rewrites are reused
    assert len(after) == 9 and len(set(after.values())) == 9
    assert_no_duplicates(tmp_path)


def _rewrites(store):
    return [json.loads(line) for line in (store / "rewrites.jsonl").read_text().splitlines()]


def test_costs_from_the_api_else_the_price_table_else_unknown(tmp_path):
    settings = fast(n_rewrites=0, n_decodes=1)
    with FakeOpenAIServer(responder=responder(), report_cost=True) as server:
        reported = collect(QUERIES, MODELS, server.base_url, tmp_path / "a", **settings)
    lines = record_lines(tmp_path / "a")
    assert {r["cost_source"] for r in lines} == {"api"}
    expected = sum((r["prompt_tokens"] + 2 * r["completion_tokens"]) / 1e6 for r in lines)
    assert reported.spend_usd == pytest.approx(expected) and reported.n_unpriced == 0

    prices = tmp_path / "prices.csv"
    prices.write_text("model,input_per_1m,output_per_1m\nm1,3,15\n")
    with FakeOpenAIServer(responder=responder()) as server:
        priced = collect(
            QUERIES, MODELS, server.base_url, tmp_path / "b", prices=prices, **settings
        )
    outcomes = read_collected(tmp_path / "b")[1]
    m1 = outcomes[outcomes["model"] == "m1"]
    assert m1["cost"].to_numpy() == pytest.approx(
        (m1["prompt_tokens"] * 3 + m1["completion_tokens"] * 15).to_numpy(dtype=float) / 1e6
    )
    assert outcomes.loc[outcomes["model"] == "m2", "cost"].isna().all()
    assert priced.n_unpriced == 3 and priced.spend_usd == pytest.approx(m1["cost"].sum())


def test_unscorable_records_are_stored_unscored_and_left_out_of_the_export(tmp_path, caplog):
    queries = QUERIES.assign(answer=["72", None, "C"])
    with FakeOpenAIServer(responder=responder()) as server:
        summary = collect(
            queries, MODELS, server.base_url, tmp_path, **fast(n_rewrites=0, n_decodes=2)
        )
    lines = record_lines(tmp_path)
    unscored = [r for r in lines if r["score"] is None]
    assert len(lines) == 12 and len(unscored) == 4 == summary.n_scoring_failures
    assert {r["query_id"] for r in unscored} == {"q2"}
    assert {r["scoring_error"] for r in unscored} == {"no reference answer"}
    outcomes = read_collected(tmp_path)[1]
    assert len(outcomes) == 8 and "q2" not in set(outcomes["query_id"])
    assert "left out 4 record(s)" in caplog.text


def test_rewrites_that_reveal_the_answer_or_repeat_are_refused(tmp_path):
    def leaky(model, messages, body):
        if "rewrite" in messages[0]["content"].lower():
            stem = messages[1]["content"].split("Question:\n")[1].split("\n\n")[0]
            return json.dumps({"rewrites": [stem, f"{stem} (it is 72)", f"Tell me: {stem}"]})
        return default_responder(model, messages, body)

    queries = QUERIES.iloc[:1]
    with FakeOpenAIServer(responder=leaky) as server:
        summary = collect(queries, ["m1"], server.base_url, tmp_path, **fast(n_decodes=1))
        rewrite_calls = sum(
            "rewrite" in r["body"]["messages"][0]["content"].lower() for r in server.requests
        )
    texts = {r["variant_id"]: r["text"] for r in _rewrites(tmp_path)}
    assert texts == {0: QUERIES.text[0], 1: f"Tell me: {QUERIES.text[0]}"}
    assert rewrite_calls == 3  # asked again for the missing variant, then gave up
    assert summary.n_missing_variants == 1 and not summary.complete
    assert sorted(keys_of(record_lines(tmp_path))) == [("q1", "m1", 0, 0), ("q1", "m1", 1, 0)]


def test_progress_bar_shows_done_remaining_failed_and_spend(tmp_path, capsys):
    with FakeOpenAIServer(responder=responder(), report_cost=True) as server:
        collect(
            QUERIES,
            MODELS,
            server.base_url,
            tmp_path,
            **fast(n_rewrites=0, n_decodes=1, show_progress=True),
        )
    err = capsys.readouterr().err
    assert "answers" in err and "done=6" in err and "remaining=0" in err
    assert "failed=0" in err and "spend=$0.00" in err


def test_collect_works_inside_a_running_event_loop_like_jupyter(tmp_path):
    async def notebook_cell():
        with FakeOpenAIServer(responder=responder()) as server:
            return collect(
                QUERIES, MODELS, server.base_url, tmp_path, **fast(n_rewrites=0, n_decodes=1)
            )

    assert asyncio.run(notebook_cell()).n_collected == 6


def test_rewrite_response_of_the_fake_server_follows_the_prompt():
    from ecc_lib.collect.prompts import parse_rewrites, rewrite_messages

    messages = rewrite_messages("Q?", 2, avoid=["old one"])
    assert parse_rewrites(rewrite_response("m", messages)) == [
        "Rephrasing two by m: Q?",
        "Rephrasing three by m: Q?",
    ]


def test_bad_arguments_fail_before_any_call(tmp_path):
    with pytest.raises(ValueError, match="listed twice"):
        collect(QUERIES, ["m1", "m1"], "http://127.0.0.1:9/v1", tmp_path, **fast())
    with pytest.raises(ValueError, match="n_decodes"):
        collect(QUERIES, MODELS, "http://127.0.0.1:9/v1", tmp_path, **fast(n_decodes=0))
    with pytest.raises(ValueError, match="unknown scorer"):
        collect(QUERIES, MODELS, "http://127.0.0.1:9/v1", tmp_path, **fast(scorer="bleu"))
    assert not (tmp_path / "records.jsonl").exists()
