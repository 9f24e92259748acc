"""Numbers as the report writes them: estimates with units, 95% intervals, mean +- sd over seeds,
and dotted metric keys as words. ``None``, NaN and non-numbers read as an en dash, never "NaN";
``-0.0`` reads as ``0.0``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ecc_lib.grammar import DASH, PM, finite
from ecc_lib.grammar import unit as grammar_unit
from ecc_lib.labels import method_label
from ecc_lib.method_registry import METHOD_SPECS, REFERENCE

_NEGATIVE_ZERO = re.compile(r"-(?=0(?:\.0+)?(?![\d.]))")
"""``-0.0`` reads as a negative result: it is written as ``0.0``."""


def format_number(value: Any, unit: str = "plain") -> str:
    """One number in the report's style.

    Parameters
    ----------
    value : float or None
        ``None`` or a non-finite value gives an en dash (never "NaN").
    unit : str, default "plain"
        A key of :data:`ecc_lib.grammar.UNITS`: ``"share"``: a fraction shown as a percentage
        with one decimal (0.282 -> ``28.2%``); ``"pct_nll"``: a value already in percent (28.2 ->
        ``28.2%``); ``"pp"``: percentage points with a sign; ``"count"``: an integer with
        thousands separators; ``"signed"``: three decimals with a sign; ``"plain"``, ``"score"``,
        ``"nats"`` ...: three decimals.

    Returns
    -------
    str
    """
    if not finite(value):
        return DASH
    return _bare(float(value), unit) + grammar_unit(unit).sign


def _bare(value: float, unit: str) -> str:
    """A bound of an interval: the number without its unit sign (never ``-0.0``)."""
    u = grammar_unit(unit)
    return _NEGATIVE_ZERO.sub("", f"{u.scale * value:{u.spec}}")


def _ci_text(ci: Sequence[Any] | None, unit: str) -> str:
    """A space and ``[low, high]`` for a finite interval (bounds without unit sign), else ``""``."""
    if ci is None or len(ci) != 2 or not all(finite(b) for b in ci):
        return ""
    return f" [{_bare(float(ci[0]), unit)}, {_bare(float(ci[1]), unit)}]"


def format_interval(value: Any, ci: Sequence[Any] | None, unit: str = "plain") -> str:
    """``value [low, high]``, e.g. ``28.2% [25.1, 31.4]``; without a finite interval, the value.

    Parameters
    ----------
    value : float or None
    ci : pair of float, optional
        95% interval.
    unit : str
        As in :func:`format_number`.

    Returns
    -------
    str
    """
    text = format_number(value, unit)
    return text if text == DASH else text + _ci_text(ci, unit)


def format_interval_of(values: Any, key: str, unit: str = "plain") -> str:
    """``values[key]`` with the interval ``values[key + "_ci95"]``, as :func:`format_interval`
    writes it (an en dash where ``key`` is not recorded).

    Parameters
    ----------
    values : mapping
    key : str
    unit : str
        As in :func:`format_number`.

    Returns
    -------
    str
    """
    return format_interval(values.get(key), values.get(key + "_ci95"), unit)


def format_mean_sd(mean: Any, sd: Any, unit: str = "plain", *, n: int | None = None) -> str:
    """``mean +- sd`` over seeds (``n`` seeds when given), e.g. ``28.2% +- 1.3 (5 seeds)``.

    Parameters
    ----------
    mean, sd : float or None
    unit : str
        As in :func:`format_number`.
    n : int, optional
        Number of seeds.

    Returns
    -------
    str
    """
    text = format_number(mean, unit)
    if text == DASH or not finite(sd):
        return text
    seeds = f" ({int(n)} seeds)" if n else ""
    return f"{text} {PM} {_bare(float(sd), unit).lstrip('+')}{seeds}"


def humanise(key: str) -> str:
    """A dotted metric key as words: ``ranking_quality_gain.ecc`` -> ``ranking quality gain: ECC``.

    Parameters
    ----------
    key : str

    Returns
    -------
    str
    """
    parts = [p for p in key.split(".") if p]
    words = [
        method_label(p) if p in METHOD_SPECS and METHOD_SPECS[p].paper and p != REFERENCE else p
        for p in parts
    ]
    words = [w.replace("_", " ") for w in words]
    return words[0] + (": " + ", ".join(words[1:]) if len(words) > 1 else "")


__all__: list[str] = []
