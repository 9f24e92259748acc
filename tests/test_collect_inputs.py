"""Inputs of ecc_lib.collect: price tables, cost rules, queries files, prompts and rewrite parsing."""

from __future__ import annotations

import json
from collections import Counter

import pandas as pd
import pytest

from ecc_lib.collect.pricing import Price, call_cost, price_table, read_price_table, reported_cost
from ecc_lib.collect.prompts import answer_messages, parse_rewrites, rewrite_messages
from ecc_lib.collect.queries import parse_choices, read_queries_file
from ecc_lib.data.schema import DataValidationError


def test_price_table_formats_agree(tmp_path):
    (tmp_path / "p.csv").write_text("model,input_per_1m,output_per_1m\nm1,0.5,1.5\nm2,2,8\n")
    (tmp_path / "p.json").write_text(
        json.dumps({"m1": {"input_per_1m": 0.5, "output_per_1m": 1.5}, "m2": [2, 8]})
    )
    (tmp_path / "p.yaml").write_text(
        "- {model: m1, input_per_1m: 0.5, output_per_1m: 1.5}\n"
        "- {model: m2, input_per_1m: 2, output_per_1m: 8}\n"
    )
    expected = {"m1": Price(0.5, 1.5), "m2": Price(2.0, 8.0)}
    for name in ("p.csv", "p.json", "p.yaml"):
        assert read_price_table(tmp_path / name) == expected
    assert price_table({"m1": (0.5, 1.5), "m2": {"input_per_1m": 2, "output_per_1m": 8}}) == (
        expected
    )


def test_price_table_errors_name_file_and_model(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("model,input_per_1m,output_per_1m\nm1,0.5,-1\n")
    with pytest.raises(DataValidationError, match=r"p\.csv.*m1.*>= 0"):
        read_price_table(path)
    path.write_text("model,input\nm1,0.5\n")
    with pytest.raises(DataValidationError, match="missing column"):
        read_price_table(path)
    with pytest.raises(FileNotFoundError):
        read_price_table(tmp_path / "absent.csv")


def test_cost_prefers_reported_then_prices_then_unknown():
    prices = {"m1": Price(1.0, 3.0)}
    assert call_cost("m1", 1000, 500, 0.25, prices) == (0.25, "api")
    # 1000 * 1 / 1e6 + 500 * 3 / 1e6 = 0.0025
    cost, source = call_cost("m1", 1000, 500, None, prices)
    assert source == "price_table" and cost == pytest.approx(0.0025)
    assert call_cost("m2", 1000, 500, None, prices) == (None, None)
    assert call_cost("m1", None, 500, None, prices) == (None, None)
    assert reported_cost({"usage": {"prompt_tokens": 3, "cost": 0.01}}) == 0.01
    assert reported_cost({"usage": {"total_cost": 0}}) == 0.0
    assert reported_cost({"usage": {"prompt_tokens": 3}}) is None
    assert reported_cost({"usage": {"cost": "free"}}) is None


def test_read_queries_csv_keeps_text_and_parses_choices(tmp_path):
    path = tmp_path / "q.csv"
    frame = pd.DataFrame(
        {
            "query_id": ["001", "002", "003"],
            "text": ["Which city?", "How many?", "Say NA"],
            "category": ["geo", "math", None],
            "answer": ["A", "1,000", "NA"],
            "choices": ['["Paris", "Rome"]', None, None],
        }
    )
    frame.to_csv(path, index=False)
    queries = read_queries_file(path)
    assert list(queries["query_id"]) == ["001", "002", "003"]
    assert list(queries["answer"]) == ["A", "1,000", "NA"]
    assert queries["choices"].iloc[0] == ["Paris", "Rome"]
    assert queries["choices"].iloc[1] is None
    jsonl = tmp_path / "q.jsonl"
    frame.assign(choices=[["Paris", "Rome"], None, None]).to_json(
        jsonl, orient="records", lines=True
    )
    assert read_queries_file(jsonl)["choices"].iloc[0] == ["Paris", "Rome"]


def test_read_queries_errors(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("query_id,text,choices\nq1,Pick,only-one\n")
    with pytest.raises(DataValidationError, match=r"choices.*row 0.*q1"):
        read_queries_file(path)
    path.write_text("query_id,text\nq1,a\nq1,b\n")
    with pytest.raises(DataValidationError, match="duplicate"):
        read_queries_file(path)
    other = tmp_path / "q.txt"
    other.write_text("query_id,text\nq1,a\n")
    with pytest.raises(DataValidationError, match="must end in"):
        read_queries_file(other)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["a", "b"], ["a", "b"]),
        ('{"B": "two", "A": "one"}', ["one", "two"]),
        ("one\ntwo\n", ["one", "two"]),
        ("one|two|three", ["one", "two", "three"]),
        (str(["it's", "b"]), ["it's", "b"]),  # a list as DataFrame.to_csv writes it
        (None, None),
        ("", None),
    ],
)
def test_parse_choices(value, expected):
    assert parse_choices(value) == expected


def test_prompts_keep_options_and_passage_verbatim():
    choices = ["Paris", "Rome"]
    messages = rewrite_messages("Which city?", 3, choices=choices, passage="Long text.")
    user = messages[1]["content"]
    assert "exactly 3" in user and "Question:\nWhich city?" in user
    assert "A. Paris\nB. Rome" in user and "Long text." in user
    answer = answer_messages(
        "Which town?", choices=choices, passage="Long text.", scorer_name="multiple_choice"
    )
    assert "Final answer:" in answer[0]["content"] and "letter" in answer[0]["content"]
    assert (
        answer[1]["content"] == "Passage:\nLong text.\n\nWhich town?\n\nOptions:\nA. Paris\nB. Rome"
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"rewrites": ["a?", "b?"]}', ["a?", "b?"]),
        ('Sure!\n```json\n{"rewrites": ["a?", " "]}\n```', ["a?"]),
        ('["a?", "b?"]', ["a?", "b?"]),
        ("1. a?\n2) b?\n- c?", ["a?", "b?", "c?"]),
        ("no list here", []),
        (None, []),
    ],
)
def test_parse_rewrites(content, expected):
    assert parse_rewrites(content) == expected


@pytest.mark.parametrize(
    ("content", "finish_reason", "rewrites", "method", "problem"),
    [
        ('{"rewrites": ["How many eggs?", "What count?"]}', "stop",
         ["How many eggs?", "What count?"], "json", None),
        ('```json\n{"rewrites": ["How many eggs?", "What is the cou', "length",
         ["How many eggs?"], "truncated_json", None),
        ("Here are 2 rewrites:\n**Rewrite 1:** How many eggs?\nRewrite 2: What egg count?",
         "stop", ["How many eggs?", "What egg count?"], "numbered_list", None),
        ("Sure! Here are the rewrites:\nHow many eggs does she eat in four weeks?\n\n"
         "In 4 weeks, how many dozens of eggs does Claire eat?", "stop",
         ["How many eggs does she eat in four weeks?",
          "In 4 weeks, how many dozens of eggs does Claire eat?"], "lines", None),
        (None, "length", [], "none", "empty reply (content null, finish_reason 'length')"),
        ("  ", "stop", [], "none", "empty reply (content empty, finish_reason 'stop')"),
        ("I cannot do that.", "stop", [], "none", "nothing readable as rewrites"),
    ],
)  # fmt: skip
def test_read_rewrites_says_how_it_read_the_reply(
    content, finish_reason, rewrites, method, problem
):
    from ecc_lib.collect.prompts import read_rewrites

    parsed = read_rewrites(content, finish_reason)
    assert (parsed.rewrites, parsed.method, parsed.problem) == (rewrites, method, problem)
    assert parsed.fallback == (method in ("truncated_json", "numbered_list", "lines"))


def test_the_shipped_demo_queries_read_with_answers_and_scorers():
    from pathlib import Path

    from ecc_lib.collect.context import prepare_queries
    from ecc_lib.collect.queries import read_queries_file

    path = Path(__file__).resolve().parents[1] / "data" / "collect-demo" / "queries.jsonl"
    table = read_queries_file(path)
    prepared = prepare_queries(table, None, 0.7, 1.0, 256)
    assert len(prepared) == 20 and all(q.answer not in (None, "") for q in prepared)
    assert Counter(q.scorer_name for q in prepared) == {"multiple_choice": 20}
    assert len({q.query_id for q in prepared}) == 20
    for query in prepared:
        assert len(query.choices) == 5 and query.answer in "ABCDE"
        assert query.scorer(f"Final answer: {query.answer}", query.answer, choices=query.choices)
        wrong = "ABCDE".replace(query.answer, "")[0]
        assert query.scorer(f"Final answer: {wrong}", query.answer, choices=query.choices) == 0.0
