"""Scorers of ecc_lib.collect: answer extraction, the four scorers, the registry."""

from __future__ import annotations

import math

import pytest

from ecc_lib.collect.scorers import (
    ScoringFailure,
    apply_scorer,
    choose_scorer,
    exact_match,
    extract_final_answer,
    multiple_choice_letter,
    numeric_equivalence,
    parse_number,
    reference_letter,
    token_f1,
)


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("reasoning\nFinal answer: 42", "42"),
        ("**Final answer:** B", "B"),
        ("The final answer is $\\boxed{\\frac{1}{2}}$.", "\\frac{1}{2}"),
        ("Final Answer: \\boxed{7}", "7"),
        ("Final answer:\n\n  Paris  ", "Paris"),
        ("I will state the final answer below.\nFinal answer: 3", "3"),
        ("first Final answer: 1\nthen Final answer: 2", "2"),
        ("so x = \\boxed{x^{2}+1} here", "x^{2}+1"),
        ("no commitment at all", None),
        ("", None),
        (None, None),
    ],
)
def test_extract_final_answer(response, expected):
    assert extract_final_answer(response) == expected


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1,000", 1000),
        ("3.0", 3),
        ("-2.5", -2.5),
        ("\\frac{3}{4}", 0.75),
        ("-\\dfrac{1}{8}", -0.125),
        ("1/3", 1 / 3),
        ("$1,234.50", 1234.5),
        ("50%", 50),
        ("\\boxed{12}", 12),
        ("Natalia sold 48+24 = 72 clips.\n#### 72", 72),
        ("x = 5 apples", 5),
        ("2.5e3", 2500),
        ("\u22127", -7),
        ("no digits", None),
        ("1/0", None),
    ],
)
def test_parse_number(text, value):
    parsed = parse_number(text)
    if value is None:
        assert parsed is None
    else:
        assert math.isclose(float(parsed), value)


@pytest.mark.parametrize(
    ("response", "answer", "score"),
    [
        ("Final answer: 1,000", "1000", 1.0),
        ("Final answer: 3.0", "3", 1.0),
        ("Final answer: \\boxed{\\frac{1}{2}}", "0.5", 1.0),
        ("Final answer: 0.333333", "1/3", 1.0),  # within relative tolerance 1e-6
        ("Final answer: 0.33", "1/3", 0.0),
        ("We get 10 then 12. So 72 in total", "#### 72", 1.0),  # last-number fallback
        ("Final answer: 71", "72", 0.0),
        ("no number given", "72", 0.0),
        ("", "72", 0.0),
        ("Final answer: 6", ["5", "6"], 1.0),
    ],
)
def test_numeric_equivalence(response, answer, score):
    assert numeric_equivalence(response, answer) == score


def test_numeric_final_line_wins_over_other_numbers():
    # the last number of the text is 9, but the committed answer is 4
    assert numeric_equivalence("Final answer: 4\n(checked with 9 steps)", "4") == 1.0
    assert numeric_equivalence("Final answer: 4\n(checked with 9 steps)", "9") == 0.0


@pytest.mark.parametrize("answer", [None, float("nan"), "", "seventy"])
def test_numeric_unusable_reference_is_a_failure_not_zero(answer):
    result = numeric_equivalence("Final answer: 72", answer)
    assert isinstance(result, ScoringFailure)


CHOICES = ["Paris", "London", "Berlin", "Madrid"]


@pytest.mark.parametrize(
    ("response", "answer", "score"),
    [
        ("Final answer: A", "A", 1.0),
        ("Final answer: (A)", "A", 1.0),
        ("Final answer: A. Paris", "A", 1.0),
        ("**Final answer: a**", "A", 1.0),
        ("Final answer: Paris", "A", 1.0),  # option text maps to its letter
        ("Final answer: B", "A", 0.0),
        ("Final answer: A", "Paris", 1.0),  # reference given as option text
        ("Final answer: A", 0, 1.0),  # 0-based index
        ("Final answer: B", "1", 1.0),
        ("I think the answer is (C).", "C", 1.0),  # no final line: "answer is X"
        ("Final answer: E", "A", 0.0),  # outside the 4 options
        ("nothing useful", "A", 0.0),
        (None, "A", 0.0),
    ],
)
def test_multiple_choice_letter(response, answer, score):
    assert multiple_choice_letter(response, answer, choices=CHOICES) == score


def test_multiple_choice_bad_reference_is_failure():
    assert isinstance(reference_letter("Rome", CHOICES), ScoringFailure)
    assert isinstance(reference_letter(7, CHOICES), ScoringFailure)
    assert isinstance(multiple_choice_letter("Final answer: A", None, CHOICES), ScoringFailure)


@pytest.mark.parametrize(
    ("response", "answer", "score"),
    [
        ("Final answer: The Eiffel Tower.", "eiffel tower", 1.0),
        ("Final answer: Eiffel", "Eiffel Tower", 0.0),
        ("blah\nParis", "paris", 1.0),  # last line fallback
        ("Final answer: Lyon", '["Paris", "Lyon"]', 1.0),  # JSON list of references
        ("", "Paris", 0.0),
    ],
)
def test_exact_match(response, answer, score):
    assert exact_match(response, answer) == score


def test_token_f1_hand_computed():
    # prediction bag {barack, obama}, gold bag {obama}: P = 1/2, R = 1, F1 = 2/3
    assert token_f1("Final answer: Barack Obama", "Obama") == pytest.approx(2 / 3)
    # articles and punctuation are dropped; hyphens split tokens
    assert token_f1("Final answer: the well-known Paris!", "well known paris") == 1.0
    # numbers are normalised as floats, and a wrong number zeroes F1 (DROP)
    assert token_f1("Final answer: 12.0 yards", "12 yards") == 1.0
    assert token_f1("Final answer: 13 yards", "12 yards") == 0.0
    # best of several references
    assert token_f1("Final answer: red car", ["blue car", "red car"]) == 1.0
    assert isinstance(token_f1("Final answer: x", None), ScoringFailure)


def test_choose_scorer_rules():
    assert choose_scorer("gsm8k")[0] == "numeric"
    assert choose_scorer("High-School Math")[0] == "numeric"
    assert choose_scorer("mmlu_pro-math")[0] == "multiple_choice"  # MC rule tried first
    assert choose_scorer("DROP")[0] == "token_f1"
    assert choose_scorer("history")[0] == "exact_match"
    assert choose_scorer(None)[0] == "exact_match"
    assert choose_scorer("math", has_choices=True)[0] == "multiple_choice"
    assert choose_scorer("math", query_scorer="token_f1")[0] == "token_f1"
    assert choose_scorer("math", override="exact_match")[0] == "exact_match"
    assert choose_scorer("math", override={"math": "token_f1"})[0] == "token_f1"
    assert choose_scorer("drop", override={"math": "exact_match"})[0] == "token_f1"
    with pytest.raises(ValueError, match="unknown scorer"):
        choose_scorer("math", override="nope")


def test_apply_scorer_never_raises_and_checks_range():
    def boom(response, answer):
        raise RuntimeError("bad")

    assert apply_scorer(boom, "x", "y") == (None, "scorer raised RuntimeError: bad")
    score, error = apply_scorer(lambda r, a, choices=None: 1.5, "x", "y")
    assert score is None and "outside [0, 1]" in error
    assert apply_scorer(lambda r, a: True, "x", "y") == (1.0, None)
    score, error = apply_scorer(numeric_equivalence, "Final answer: 1", None)
    assert score is None and error == "no reference answer"
