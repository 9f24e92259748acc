"""A rewrite that drops the question's numbers or most of its words is refused, with its reason."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecc_lib.collect.prompts import rewrite_refusal

QUESTION = "Ali had $21. Leila gave him half of her $100. How much does Ali have now?"


@pytest.mark.parametrize(
    ("candidate", "reason"),
    [
        ("$$21.07", "drops a number of the question"),  # what SmolLM2-135M returned
        ("$21.08", "drops a number of the question"),
        ("Ali had $21 and $100.", "too short to be the whole question"),
        (
            "Ali had $21 and got $50 of Leila's $100, so he has $71. How much is that?",
            "adds a number the question does not have",
        ),
        (
            "To find it, add half of Leila's $100 to Ali's $21: how much does Ali have now?",
            "works on the answer",
        ),
        (
            "Ali had $21 and Leila gave him half her $100; we need to add. How much now?",
            "works on the answer",
        ),
        (
            "First, Ali had $21, then Leila gave him half of her $100. How much does he have?",
            "works on the answer",
        ),
        (
            "Firstly Ali had $21 and Leila gave him half of her $100. How much does he have now?",
            None,
        ),
        ("Ali has $21; Leila hands him half of her $100. How much money does Ali hold now?", None),
        ("Leila gave Ali half of her 100 dollars and he had 21 before. What has he now?", None),
        (  # what SmolLM2-135M does to "Where would you find X?": a statement, often an answer
            "Ali had $21 and Leila gave him half of her $100, which is what Ali has now.",
            "not a question",
        ),
    ],
)
def test_refusal_reasons(candidate, reason):
    assert rewrite_refusal(candidate, QUESTION) == reason


def test_thousands_separators_and_questions_without_numbers():
    assert (
        rewrite_refusal(
            "A bike costs 1000 dollars. How much do two cost?",
            "A bike costs 1,000 dollars. What do two cost?",
        )
        is None
    )
    assert (
        rewrite_refusal("Which city is France's capital?", "What is the capital of France?") is None
    )
    assert rewrite_refusal("Paris", "What is the capital city of France today?") == (
        "too short to be the whole question"
    )
    # only a question must stay a question
    assert rewrite_refusal("Give the capital of France.", "Name the capital of France") is None


def _multiple_choice_query():
    import pandas as pd

    from ecc_lib.collect.context import prepare_queries

    table = pd.DataFrame(
        {
            "query_id": ["q1"],
            "text": ["Where would you most likely find a stapler at work?"],
            "answer": ["B"],
            "choices": [["kitchen", "office desk", "garden", "car park", "desk lamp"]],
        }
    )
    (query,) = prepare_queries(table, None, 0.7, 1.0, 256)
    assert query.scorer_name == "multiple_choice"
    return query


@pytest.mark.parametrize(
    ("candidate", "reason"),
    [
        (
            "At work, where is a stapler usually found, on the office desk?",
            "states the reference answer",
        ),
        ("At work, where is a stapler usually found, in the KITCHEN?", "names an option"),
        ("At work, where is a stapler most likely to be found?", None),
        # an option word inside another word is not the option
        ("At work, where are staplers most likely found by the gardener?", None),
    ],
)
def test_a_rewrite_that_names_an_answer_option_is_refused(candidate, reason):
    from ecc_lib.collect.rewriting import accept_rewrites

    query = _multiple_choice_query()
    accepted, refused = accept_rewrites([candidate], query, set())
    assert (dict(refused), accepted) == (({reason: 1}, []) if reason else ({}, [candidate]))


def test_a_reference_given_as_an_option_index_or_text_finds_the_right_option():
    from ecc_lib.collect.rewriting import reveals_answer

    query = _multiple_choice_query()
    candidate = "At work, where is a stapler usually found, on the office desk?"
    for reference in ("B", 1, "1", "office desk"):
        query.answer = reference
        assert reveals_answer(candidate, query) == "states the reference answer", reference


def test_an_option_the_question_already_names_may_stay():
    from ecc_lib.collect.rewriting import accept_rewrites

    query = _multiple_choice_query()
    query.text = "Where in the office would you most likely find a stapler, maybe the desk lamp?"
    candidate = "In the office, where is a stapler most likely found, maybe by the desk lamp?"
    assert accept_rewrites([candidate], query, set()) == ([candidate], {})


@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=4), st.integers(0, 3))
def test_a_rewrite_missing_any_one_number_is_refused(numbers, drop):
    question = (
        "Take " + ", then ".join(str(n) for n in numbers) + " and add them up. What is the total?"
    )
    kept = (
        "Add up "
        + " and ".join(str(n) for n in numbers)
        + " please; what total do you get overall?"
    )
    assert rewrite_refusal(kept, question) is None
    dropped = [n for i, n in enumerate(numbers) if i != drop % len(numbers)]
    if set(map(str, dropped)) != set(map(str, numbers)):
        shortened = (
            "Add up "
            + " and ".join(str(n) for n in dropped)
            + " please; what total do you get overall?"
        )
        assert rewrite_refusal(shortened, question) == "drops a number of the question"


# -- one paraphrase per call (--rewrite-format single) -------------------------------------------


def _single_responder(replies):
    """Answers one-paraphrase calls with ``replies(question, n)`` (n counts that question's calls),
    everything else with the answer-key responder."""
    from test_collect_support import responder

    answers = responder()
    seen: dict[str, int] = {}

    def respond(model, messages, body):
        last = messages[-1]["content"]
        if messages[0]["role"] == "system" and "paraphrase" in messages[0]["content"].lower():
            assert messages[2]["role"] == "assistant"  # the worked example comes first
            question = last.rsplit("Paraphrase: ", 1)[1]
            seen[question] = seen.get(question, 0) + 1
            return replies(question, seen[question])
        return answers(model, messages, body)

    return respond


def test_single_format_asks_one_paraphrase_per_call_and_refuses_fragments(tmp_path, capsys):
    import json

    from fake_openai_server import FakeOpenAIServer
    from test_collect_support import QUERIES

    from ecc_lib.cli import main

    def replies(question, n):  # a fragment first, then labelled paraphrases
        mark = "abcdefgh"[n]  # no new number: a digit would be refused as an added number
        return "72" if n == 1 else f'Paraphrase: "Put differently ({mark}): {question}"\nextra line'

    queries = tmp_path / "queries.jsonl"
    QUERIES.to_json(queries, orient="records", lines=True)
    store = tmp_path / "store"
    with FakeOpenAIServer(responder=_single_responder(replies), response_formats=set()) as server:
        status = main(
            ["collect", "--queries", str(queries), "--models", "m1", "--base-url",
             server.base_url, "--store", str(store), "--rewrites", "2", "--decodes", "1",
             "--concurrency", "1", "--rewrite-format", "single"]
        )  # fmt: skip
        rewriting = [r for r in server.requests if "paraphrase" in json.dumps(r["body"]).lower()]
    out = capsys.readouterr().out
    assert status == 0
    assert all("response_format" not in r["body"] for r in rewriting)
    # q3's options are not shown to the rewriter (small models work them into the paraphrase)
    assert not any("Jupiter" in json.dumps(r["body"]) for r in rewriting)
    assert len(rewriting) == 9  # per query: one refused fragment, then two paraphrases
    assert "9 rewrite call(s) asking for one paraphrase each: 3 gave no usable rewrite" in out
    assert "rewrite format single" in out
    calls = [json.loads(line) for line in (store / "rewrite_calls.jsonl").read_text().splitlines()]
    assert {c["parse_method"] for c in calls} == {"single"}
    assert sum(c["n_accepted"] for c in calls) == 6
    refused = [c["refused"] for c in calls if not c["n_accepted"]]
    assert all(r for r in refused)
    rewrites = [json.loads(line) for line in (store / "rewrites.jsonl").read_text().splitlines()]
    texts = [r["text"] for r in rewrites if r["variant_id"] > 0]
    assert len(texts) == 6 and all(t.startswith("Put differently") for t in texts)
    assert not any("extra line" in t or '"' in t for t in texts)


def test_rewrite_calls_bounds_the_calls_and_missing_variants_are_counted(tmp_path):
    from fake_openai_server import FakeOpenAIServer
    from test_collect_support import QUERIES, fast

    from ecc_lib.collect import collect

    with FakeOpenAIServer(
        responder=_single_responder(lambda question, n: "42"), response_formats=set()
    ) as server:
        summary = collect(
            QUERIES, ["m1"], server.base_url, tmp_path,
            **fast(n_decodes=1, rewrite_format="single", rewrite_calls=2),
        )  # fmt: skip
    assert summary.n_rewrite_calls == 6  # 2 calls for each of the 3 queries
    assert summary.n_missing_variants == 6 and not summary.complete
    assert summary.rewrite_problems == {
        "every candidate refused (drops a number of the question)": 2,
        "every candidate refused (adds a number the question does not have)": 4,
    }


@pytest.mark.parametrize("calls", [0, -1, True])
def test_rewrite_calls_must_be_a_positive_whole_number(tmp_path, calls):
    from test_collect_support import QUERIES, fast

    from ecc_lib.collect import collect

    with pytest.raises(ValueError, match="rewrite_calls"):
        collect(QUERIES, ["m1"], "http://127.0.0.1:9/v1", tmp_path, **fast(rewrite_calls=calls))
