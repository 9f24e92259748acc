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
        ("Ali has $21; Leila hands him half of her $100. How much money does Ali hold now?", None),
        ("Leila gave Ali half of her 100 dollars and he had 21 before. What has he now?", None),
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
