"""The one grammar of the report's comparisons, and the one table of how units are written.

A comparison is a typed value, "A minus B = d [lo, hi] unit"; :func:`verdict` turns it into
"better than", "worse than" or "not distinguishable from" by the sign of ``d`` and whether the
interval covers 0 (a comparison without an interval is never called better or worse), and
:func:`comparison_sentence` writes the sentence. No other code of the report writes such
sentences, so the direction word always agrees with the number (property-tested in
``tests/test_report_grammar.py``): never "beats by -x", never "%" on a percentage-point difference.

How a unit is written lives in :data:`UNITS` only: a value in percent of the global model's held-out
NLL (``pct_nll``), a difference of two such values in percentage points (``pp``), a share of queries
stored as a fraction (``share``) and a difference of two shares (``pp_share``), score units, counts.
Its codes are the one unit vocabulary: the metrics schema's ``unit`` keyword holds them, so which
unit a metric has is the written contract's (:func:`ecc_lib.metrics_schema.metric_unit`), and how it
is written is this table's (docs/design.md, "one unit vocabulary").
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

DASH = "\u2013"
PM = "\u00b1"


@dataclass(frozen=True)
class Unit:
    """How a unit is written.

    Parameters
    ----------
    scale : float
        Stored value times ``scale`` is the shown number.
    spec : str
        Format spec of the shown number (``"+.1f"`` for signed differences).
    sign : str
        Written right after the number (``"%"``, ``" pp"``).
    words : str
        What the unit is, in words (the meaning the metrics schema gives it).
    column : str, default ""
        What a table's unit column writes ("percentage points of gain"); ``""`` where the
        measure's name already says it (a plain number, a score, an index).
    """

    scale: float
    spec: str
    sign: str
    words: str
    column: str = ""


UNITS: dict[str, Unit] = {
    # levels
    "pct_nll": Unit(
        1, ".1f", "%", "% of the global BT's held-out NLL", "% of the global BT's held-out NLL"
    ),
    "share": Unit(100, ".1f", "%", "share, stored 0-1 and written in percent", "% of queries"),
    "score": Unit(1, ".3f", "", "score units (the datasets' own 0-1 scores)"),
    "count": Unit(1, ",.0f", "", "count (of what, the key's description says)", "count"),
    "plain": Unit(1, ".3f", "", "no unit: a plain number, words, flags, settings or a container"),
    "nats": Unit(1, ".3f", "", "nats per scored pair (held-out negative log-likelihood)"),
    "ari": Unit(1, ".3f", "", "adjusted Rand index (-0.5 to 1)"),
    "tau": Unit(1, ".3f", "", "Kendall tau (-1 to 1)"),
    "observations": Unit(1, ".3f", "", "observations per (query, model) pair"),
    "cost": Unit(1, ".3f", "", "cost units of the dataset"),
    "per_score": Unit(1, ".3f", "", "1/score units (the risk weight beta)"),
    "score_per_cost": Unit(1, ".3f", "", "score units per normalised cost (the cost weight)"),
    "score_x_cost": Unit(1, ".3f", "", "score x normalised cost (an area under a Pareto front)"),
    # differences of two levels
    "pp": Unit(1, "+.1f", " pp", "percentage points of gain", "percentage points of gain"),
    "pp_share": Unit(
        100, "+.1f", " pp", "percentage points of queries", "percentage points of queries"
    ),
    "score_diff": Unit(1, "+.3f", "", "score units (a difference of two scores)", "difference"),
    "signed": Unit(1, "+.3f", "", "a difference of two plain numbers", "difference"),
    # references: the unit is another key's (resolved by ecc_lib.metrics_schema.metric_unit)
    "inherit": Unit(
        1, ".3f", "", "the unit of the nearest enclosing key (an estimate, interval ends, mean-sd)"
    ),
    "record": Unit(1, ".3f", "", "the unit the comparison record's own unit key names"),
    "record_levels": Unit(
        1, ".3f", "", "the level unit whose difference the record's unit key names (DIFFERENCE_OF)"
    ),
}
"""Every unit of the report and of the metrics schema (its ``unit`` keyword holds these codes):
the only place where scale, unit sign and the unit's words are chosen."""


def unit(code: str) -> Unit:
    """The :class:`Unit` of a code.

    Parameters
    ----------
    code : str
        Key of :data:`UNITS`.

    Returns
    -------
    Unit

    Raises
    ------
    KeyError
        For a code that is not a key of :data:`UNITS` (naming the known codes).
    """
    try:
        return UNITS[code]
    except KeyError:
        raise KeyError(f"unknown unit code {code!r}; the units are {sorted(UNITS)}") from None


def finite(value: Any) -> bool:
    """Whether ``value`` is a finite real number (not a bool, not None).

    Parameters
    ----------
    value : object

    Returns
    -------
    bool
    """
    try:
        return value is not None and not isinstance(value, bool) and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


_NEGATIVE_ZERO = re.compile(r"-(?=0(?:\.0+)?(?![\d.]))")


def number(value: Any, code: str = "plain", *, with_sign: bool = True) -> str:
    """One number in its unit (``12.3%``, ``-3.9 pp``, ``0.985``); an en dash when not finite.

    Parameters
    ----------
    value : float or None
    code : str
        Key of :data:`UNITS`.
    with_sign : bool, default True
        Write the unit sign after the number.

    Returns
    -------
    str
    """
    if not finite(value):
        return DASH
    u = unit(code)
    text = f"{u.scale * float(value):{u.spec}}"
    text = _NEGATIVE_ZERO.sub("", text)
    if text.startswith("+") and text.lstrip("+").strip("0.,") == "":
        text = text[1:]  # "+0.0" is no direction
    return text + (u.sign if with_sign else "")


def interval(ci: Sequence[Any] | None, code: str = "plain") -> str:
    """``[lo, hi]`` without the unit sign, ``""`` without a finite interval.

    Parameters
    ----------
    ci : pair of float, optional
    code : str

    Returns
    -------
    str
    """
    if ci is None or len(ci) != 2 or not all(finite(b) for b in ci):
        return ""
    return f"[{number(ci[0], code, with_sign=False)}, {number(ci[1], code, with_sign=False)}]"


BETTER_WORSE = ("better than", "worse than", "not distinguishable from")
HIGHER_LOWER = ("higher than", "lower than", "not distinguishable from")


@dataclass(frozen=True)
class Comparison:
    """ "A minus B = estimate [lo, hi] unit".

    Parameters
    ----------
    a, b : str
        Display names of the two sides (never internal keys).
    estimate : float
        ``A minus B``.
    ci : pair of float, optional
        95% interval of the difference.
    unit : str, default "pp"
        Key of :data:`UNITS` of the difference.
    words : tuple of str, default :data:`BETTER_WORSE`
        Words for a positive, negative and undecided difference.
    higher_is_better : bool, default True
        Whether a positive difference reads as the first word.
    interval_kind : str, default "95% CI"
        How the interval was formed (:data:`ecc_lib.stats.INTERVAL_NAME` for every comparison of
        the report and the bench).
    """

    a: str
    b: str
    estimate: float
    ci: tuple[float, float] | None = None
    unit: str = "pp"
    words: tuple[str, str, str] = BETTER_WORSE
    higher_is_better: bool = True
    interval_kind: str = "95% CI"


def _shown(value: float, code: str) -> float:
    """``value`` as the reader sees it: rounded as :func:`number` writes it, in stored units."""
    return float(number(value, code, with_sign=False).replace(",", "")) / unit(code).scale


def direction(c: Comparison) -> int:
    """+1 when the interval lies above 0, -1 below 0, 0 when it covers 0 or is missing.

    The bounds are taken as printed: an interval written ``[0.0, +4.5]`` covers 0 for the reader,
    so it is "not distinguishable" even where the unrounded bound is 0.0001.

    Parameters
    ----------
    c : Comparison

    Returns
    -------
    int
    """
    if not finite(c.estimate) or c.ci is None or not all(finite(b) for b in c.ci):
        return 0
    lo, hi = sorted(_shown(float(b), c.unit) for b in c.ci)
    estimate = _shown(float(c.estimate), c.unit)
    if lo > 0 and estimate > 0:
        return 1
    if hi < 0 and estimate < 0:
        return -1
    return 0


def verdict(c: Comparison) -> str:
    """The direction word of a comparison (:attr:`Comparison.words`); ``""`` without an interval.

    Parameters
    ----------
    c : Comparison

    Returns
    -------
    str
    """
    if not has_interval(c):
        return ""  # issue 35: a comparison without an interval gets no verdict word
    d = direction(c) * (1 if c.higher_is_better else -1)
    return c.words[0] if d > 0 else c.words[1] if d < 0 else c.words[2]


def has_interval(c: Comparison) -> bool:
    """Whether a comparison has a finite estimate and a finite interval (only then a verdict).

    Parameters
    ----------
    c : Comparison

    Returns
    -------
    bool
    """
    return finite(c.estimate) and c.ci is not None and all(finite(b) for b in c.ci)


def difference_text(c: Comparison) -> str:
    """``A minus B = -3.9 pp [-7.1, -0.6]`` (paired 95% CI).

    Parameters
    ----------
    c : Comparison

    Returns
    -------
    str
    """
    ci = interval(c.ci, c.unit)
    kind = f" ({c.interval_kind})" if ci else " (no interval)"
    return f"{c.a} minus {c.b} = {number(c.estimate, c.unit)}" + (f" {ci}" if ci else "") + kind


def comparison_sentence(
    c: Comparison, *, subject: str = "", context: str = "", obj: str = "", verb: str = "is"
) -> str:
    """``ECC is worse than embedding-only clusters on pairs ...: ECC minus ... = -3.9 pp [...]``.

    Parameters
    ----------
    c : Comparison
    subject : str, optional
        Replaces ``c.a`` as the grammatical subject.
    context : str, optional
        Words after the verdict ("on pairs disjoint from the probe's models").
    obj : str, optional
        Replaces ``c.b`` after the verdict.
    verb : str, default "is"
        "are" for a plural subject.

    Returns
    -------
    str
        One sentence ending with a full stop.
    """
    word = verdict(c)
    if not word:  # no interval: the numbers without a verdict word
        head = f"{subject or c.a} against {obj or c.b}" + (f" {context}" if context else "")
        text = difference_text(c).removesuffix(" (no interval)")
        return head[0].upper() + head[1:] + f" (no interval): {text}."
    head = f"{subject or c.a} {verb} {word} {obj or c.b}"
    head = head[0].upper() + head[1:]
    return head + (f" {context}" if context else "") + f": {difference_text(c)}."


def level_text(
    value: Any, code: str, *, ci: Sequence[Any] | None = None, sd: Any = None, n: Any = None
) -> str:
    """A level with its spread: ``10.7% \u00b1 1.5 (mean \u00b1 sd over 3 seeds)`` or ``58.4% [57.9, 58.9]``.

    Parameters
    ----------
    value : float
    code : str
    ci : pair of float, optional
    sd : float, optional
        Standard deviation over ``n`` seeds.
    n : int, optional

    Returns
    -------
    str
    """
    text = number(value, code)
    if text == DASH:
        return text
    if finite(sd) and finite(n) and int(n) > 1:
        spread = number(sd, code, with_sign=False).lstrip("+")
        text += f" {PM} {spread} (mean {PM} sd over {int(n)} seeds)"
    ci_text = interval(ci, code)
    return text + (f" {ci_text}" if ci_text else "")


__all__ = [
    "UNITS",
]
