"""The report's comparison grammar: the direction word follows the sign and the interval."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ecc_lib import grammar
from ecc_lib.grammar import Comparison
from ecc_lib.report.reading import flatten, generic_rows

values = st.floats(min_value=-500, max_value=500, allow_nan=False, allow_infinity=False)
widths = st.floats(min_value=0, max_value=200, allow_nan=False, allow_infinity=False)
units = st.sampled_from(["pp", "pp_share", "score_diff", "signed"])


def _parse(sentence: str) -> tuple[str, float, list[float] | None]:
    """Verdict word, estimate and interval read back from a sentence."""
    found_word = re.search(r" is (better than|worse than|not distinguishable from) ", sentence)
    word = found_word.group(1) if found_word else None
    found = re.search(
        r"= ([+-]?\d[\d,]*(?:\.\d+)?)(?:%| pp)?(?: \[([+-]?[\d,.]+), ([+-]?[\d,.]+)\])?",
        sentence,
    )
    ci = [float(found.group(2)), float(found.group(3))] if found.group(2) else None
    return word, float(found.group(1).replace(",", "")), ci


@settings(max_examples=300, deadline=None)
@given(values, widths, widths, units, st.booleans())
def test_direction_word_matches_sign_and_interval(d, below, above, code, has_ci):
    ci = (d - below, d + above) if has_ci else None
    c = Comparison("A", "B", d, ci, code)
    sentence = grammar.comparison_sentence(c)
    word, shown, shown_ci = _parse(sentence)
    assert "by -" not in sentence and "beats" not in sentence
    if code.startswith("pp"):
        # the only percent sign is the interval's level ("95% CI")
        assert set(re.findall(r"[\d.]+%", sentence)) <= {"95%"} and " pp" in sentence
    # the word follows the numbers as printed: a bound written 0.0 covers 0
    if not has_ci:  # issue 35: no interval, no verdict word
        assert word is None and " against B (no interval): " in sentence
    elif shown_ci is None or shown_ci[0] <= 0 <= shown_ci[1] or shown == 0:
        assert word == "not distinguishable from"
    elif d > 0:
        assert word == "better than" and shown >= 0 and shown_ci[0] >= 0
    else:
        assert word == "worse than" and shown <= 0 and shown_ci[1] <= 0


@settings(max_examples=100, deadline=None)
@given(values, widths, widths)
def test_lower_is_better_flips_the_word(d, below, above):
    c = Comparison("A", "B", d, (d - below, d + above), "score_diff", higher_is_better=False)
    up = Comparison("A", "B", d, (d - below, d + above), "score_diff")
    flipped = {"better than": "worse than", "worse than": "better than"}
    assert grammar.verdict(c) == flipped.get(grammar.verdict(up), grammar.verdict(up))


def test_units_of_levels_and_differences():
    assert grammar.number(0.584, "share") == "58.4%"
    assert grammar.number(-0.0585, "pp_share") == "-5.9 pp"
    assert grammar.number(-5.8516, "pp") == "-5.9 pp"
    assert grammar.number(-0.0, "pp") == "0.0 pp"
    assert grammar.number(float("nan"), "pp") == grammar.DASH
    assert (
        grammar.level_text(10.72, "pct_nll", sd=1.5, n=3)
        == "10.7% \u00b1 1.5 (mean \u00b1 sd over 3 seeds)"
    )
    assert not hasattr(grammar, "t_interval")  # issue 35: one interval, defined in stats


def test_probe_strategy_difference_is_in_points_of_gain():
    """'probe strategies: difference -585.2% ... % of queries' read a gain difference in
    percentage points as a share ("strategies" contains "rate")."""

    values = flatten(
        {"probe_strategies": {"difference": -5.8516, "difference_ci95": [-10.475, -1.88]}}
    )
    (row,) = generic_rows(values, used=set(), dataset="d")
    assert row["estimate"] == "-5.9 pp [-10.5, -1.9]"
    assert row["unit"] == "percentage points of gain"


def test_an_interval_printed_as_touching_zero_is_not_distinguishable():
    """'beats comparison-only by +2.3 [+0.0, +4.5]': a bound that prints as 0 covers 0."""
    c = Comparison("ECC", "B", 2.3, (0.0001, 4.5), "pp")
    assert grammar.verdict(c) == "not distinguishable from"
    assert grammar.verdict(Comparison("ECC", "B", 2.3, (0.06, 4.5), "pp")) == "better than"
