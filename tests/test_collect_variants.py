"""Model variants (one endpoint model under several settings) and rewrites small models can write
(issue 14)."""

from __future__ import annotations

import json

import pytest
from fake_openai_server import FakeOpenAIServer
from test_collect_support import QUERIES, fast, record_lines, responder

from ecc_lib.cli import main
from ecc_lib.collect import collect, read_collected
from ecc_lib.collect.models import ModelSpec, parse_model_spec, parse_models

# -- the syntax --------------------------------------------------------------------------------


def test_model_spec_syntax():
    plain = parse_model_spec(" gpt-4o-mini ")
    assert plain == ModelSpec("gpt-4o-mini", "gpt-4o-mini", {})
    vertex = parse_model_spec("claude-3-5-sonnet@20240620")  # '@' without '=' is part of the name
    assert (vertex.label, vertex.endpoint_model, vertex.settings) == (
        "claude-3-5-sonnet@20240620",
        "claude-3-5-sonnet@20240620",
        {},
    )
    spec = parse_model_spec("o3-mini@reasoning_effort=high; max_tokens=4000;seed=1")
    assert spec.label == "o3-mini@reasoning_effort=high;max_tokens=4000;seed=1"
    assert spec.endpoint_model == "o3-mini"
    assert spec.sampling == {"max_tokens": 4000}
    assert spec.extra_body == {"reasoning_effort": "high", "seed": 1}
    both = parse_model_spec("claude@20240620@temperature=0")
    assert (both.endpoint_model, both.settings) == ("claude@20240620", {"temperature": 0.0})


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("m@temperature=-1", "temperature must be >= 0"),
        ("m@temperature=hot", "temperature must be a number"),
        ("m@top_p=1.5", r"top_p must be in \(0, 1\]"),
        ("m@max_tokens=0", "max_tokens must be an integer >= 1"),
        ("m@max_tokens=2.5", "max_tokens must be an integer >= 1"),
        ("@temperature=1", "no name"),
        ("m@temperature=1;temperature=2", "given twice"),
        ("m@temperature=1;oops", "not KEY=VALUE"),
        ("m@messages=[]", "cannot be set per model"),
    ],
)
def test_bad_model_specs_are_clear_errors(text, match):
    with pytest.raises(ValueError, match=match):
        parse_model_spec(text)


def test_the_same_variant_twice_is_an_error_but_two_settings_are_two_models():
    specs = parse_models("smollm2@temperature=0.2,smollm2@temperature=1.0, smollm2")
    assert [s.label for s in specs] == [
        "smollm2@temperature=0.2",
        "smollm2@temperature=1.0",
        "smollm2",
    ]
    with pytest.raises(ValueError, match="listed twice"):
        parse_models("m@temperature=0.2,m@temperature=0.20")  # the same settings
    with pytest.raises(ValueError, match="listed twice"):
        parse_models(["m1", "m1"])


# -- variants in a collection ------------------------------------------------------------------


def test_variants_are_separate_models_with_their_settings_in_every_record(tmp_path):
    models = "m1@temperature=0.2,m1@temperature=1.0;seed=7"
    with FakeOpenAIServer(responder=responder()) as server:
        summary = collect(QUERIES, models, server.base_url, tmp_path, **fast(n_rewrites=1))
        bodies = [r["body"] for r in server.requests]
    assert summary.complete and summary.n_models == 2 and summary.n_planned == 3 * 2 * 2 * 3
    assert {b["model"] for b in bodies} == {"m1"}  # the endpoint sees one model
    rewrite_bodies, answer_bodies = bodies[:3], bodies[3:]
    assert {b["temperature"] for b in rewrite_bodies} == {0.7}  # the rewriter: plain m1
    assert sorted({(b["temperature"], b.get("seed")) for b in answer_bodies}) == [
        (0.2, None),
        (1.0, 7),
    ]
    lines = record_lines(tmp_path)
    for record in lines:
        assert record["endpoint_model"] == "m1"
        if record["model"] == "m1@temperature=0.2":
            assert record["model_settings"] == {"temperature": 0.2}
            assert record["temperature"] == 0.2 and record["extra_body"] is None
        else:
            assert record["model"] == "m1@temperature=1.0;seed=7"
            assert record["model_settings"] == {"temperature": 1.0, "seed": 7}
            assert record["temperature"] == 1.0 and record["extra_body"] == {"seed": 7}
    _, outcomes = read_collected(tmp_path)
    assert sorted(outcomes["model"].unique()) == ["m1@temperature=0.2", "m1@temperature=1.0;seed=7"]
    assert outcomes.groupby("model").size().tolist() == [18, 18]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["runs"][-1]["settings"]["model_settings"]["m1@temperature=0.2"] == {
        "endpoint_model": "m1",
        "temperature": 0.2,
    }


def test_a_variant_setting_beats_a_per_query_setting(tmp_path):
    queries = QUERIES.assign(temperature=[0.5, None, None])
    with FakeOpenAIServer(responder=responder()) as server:
        collect(queries, "m1@temperature=0.0,m2", server.base_url, tmp_path, **fast(n_rewrites=0))
        bodies = [r["body"] for r in server.requests]
    by_model = {}
    for body in bodies:
        text = body["messages"][1]["content"]
        by_model.setdefault((body["model"], text[:4]), set()).add(body["temperature"])
    assert by_model[("m1", "[Q1]")] == {0.0} and by_model[("m2", "[Q1]")] == {0.5}
    assert by_model[("m2", "[Q2]")] == {0.7}


# -- rewrites small models can produce ---------------------------------------------------------


def test_structured_output_steps_down_to_what_the_server_supports(tmp_path):
    with FakeOpenAIServer(responder=responder(), response_formats={"json_object"}) as server:
        summary = collect(QUERIES, ["m1"], server.base_url, tmp_path, **fast(concurrency=1))
        formats = [
            (r["status"], (r["body"].get("response_format") or {}).get("type"))
            for r in server.requests
            if "rewrite" in r["body"]["messages"][0]["content"].lower()
        ]
    # the first call learns that json_schema is refused; the others ask for json_object at once
    assert formats == [(400, "json_schema"), (200, "json_object"), (200, "json_object"),
                       (200, "json_object")]  # fmt: skip
    assert summary.complete and summary.rewrite_format == "json_object"
    assert (summary.n_rewrite_calls, summary.n_rewrite_structured) == (3, 3)
    assert (summary.n_rewrite_fallback, summary.n_rewrite_unusable) == (0, 0)
    schema = server.requests[1]["body"]["response_format"]["schema"]
    assert schema["required"] == ["rewrites"]


def test_numbered_lists_are_read_by_the_fallback_and_counted(tmp_path, capsys):
    queries = tmp_path / "queries.jsonl"
    QUERIES.to_json(queries, orient="records", lines=True)
    store = tmp_path / "store"
    with FakeOpenAIServer(
        responder=responder(), response_formats=set(), rewrite_style="numbered"
    ) as server:
        status = main(
            ["collect", "--queries", str(queries), "--models", "m1", "--base-url",
             server.base_url, "--store", str(store), "--rewrites", "2", "--decodes", "1",
             "--concurrency", "1"]
        )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0
    assert "3 rewrite call(s): 0 read as JSON, 3 needed the list fallback, 0 gave no usable" in out
    assert "response_format none" in out
    calls = [json.loads(line) for line in (store / "rewrite_calls.jsonl").read_text().splitlines()]
    assert {c["parse_method"] for c in calls} == {"numbered_list"}
    assert all(c["n_accepted"] == 2 for c in calls)


def test_unusable_rewrites_are_counted_with_the_reason(tmp_path, capsys):
    with FakeOpenAIServer(
        responder=responder(), response_formats=set(), rewrite_style="prose"
    ) as server:
        summary = collect(QUERIES, ["m1"], server.base_url, tmp_path, **fast(n_decodes=1))
    assert not summary.complete and summary.n_missing_variants == 6
    assert summary.n_rewrite_calls == 9  # 3 attempts for each of the 3 queries
    assert summary.n_rewrite_unusable == 9
    assert summary.rewrite_problems == {"nothing readable as rewrites": 9}
    assert "nothing readable as rewrites: 9" in summary.rewrite_report()
    assert len(record_lines(tmp_path)) == 3  # the originals were still answered


def test_a_500_naming_response_format_steps_down_without_retries(tmp_path):
    # llama-cpp-python answers a response_format it does not know with 500, not 400
    with FakeOpenAIServer(
        responder=responder(), response_formats={"json_object"}, format_refusal_status=500
    ) as server:
        summary = collect(QUERIES, ["m1"], server.base_url, tmp_path, **fast(concurrency=1))
        statuses = server.statuses()
    assert statuses.count(500) == 1 and statuses[0] == 500  # one probe, no round of retries
    assert summary.complete and summary.rewrite_format == "json_object"
    assert summary.n_rewrite_structured == 3 and summary.n_failed == 0
