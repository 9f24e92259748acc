"""Comparisons with tuned-prior baselines (issue 34): gains over the tuned global BT, and ECC-CV's
choice and verdict in words.

ECC-CV chooses the BT prior strength by cross-validation on the training queries; the ``*_tuned``
methods (the ``tuned`` entries of :data:`~ecc_lib.method_registry.METHOD_SPECS`) get the same choice, so ECC-CV is compared
only with them and its gain is read over the tuned global BT (``global_tuned``). The paper's
reference (the global BT at the default prior, ``global``) stays the reference of the recorded
``ranking_quality_gain*`` keys (docs/design.md, section 8).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ecc_lib.ecc.cv_grid import describe_choices, is_clustering
from ecc_lib.method_registry import METHOD_SPECS, method_keys
from ecc_lib.stats import mean_sd

TUNED_REFERENCE = "global_tuned"
"""The gain reference of the summary and the bench (the global BT at its tuned prior)."""
TUNED_BASELINES: tuple[str, ...] = method_keys(
    lambda s: s.tuned is not None and METHOD_SPECS[s.tuned].baseline
)
"""The baselines ECC-CV's verdict compares it with (each at its tuned prior; from the method
registry: the tuned methods of the baselines)."""


def _name(method: str) -> str:
    """A tuned baseline in the verdict: its family's words, then "(tuned prior)"."""
    return f"{METHOD_SPECS[METHOD_SPECS[method].tuned].name} (tuned prior)"


def regain(gains: Mapping[str, float], reference: str = TUNED_REFERENCE) -> dict:
    """Gains over the default global BT re-expressed over another method of the same pairs.

    With ``g_m = 100 (NLL_global - NLL_m) / NLL_global`` the gain over ``reference`` is
    ``100 (g_m - g_ref) / (100 - g_ref)`` (exact: the same NLLs, another denominator).

    Parameters
    ----------
    gains : mapping
        ``{method: gain % over the global BT}`` of one seed (the global BT itself may be absent:
        its gain is 0).
    reference : str
        The new reference (default the tuned global BT).

    Returns
    -------
    dict
        ``{method: gain % over reference}`` with the global BT included (``{}`` when the
        reference is absent).
    """
    full = {"global": 0.0, **{m: float(v) for m, v in gains.items() if v is not None}}
    if reference not in full:
        return {}
    ref = full[reference]
    return {m: 100.0 * (g - ref) / (100.0 - ref) for m, g in full.items()}


def tuned_gains(per_seed: Sequence[Mapping[str, float]]) -> dict:
    """Mean and sd over seeds of the gain over the tuned global BT, per method.

    Parameters
    ----------
    per_seed : sequence of mapping
        ``gain_disjoint`` (or ``gain``) of each seed, over the default global BT.

    Returns
    -------
    dict
        ``{method: [mean, sd]}`` (sd NaN with one seed; ``{}`` without ``global_tuned``).
    """
    rows = [regain(g) for g in per_seed]
    if not rows or not all(rows):
        return {}
    return {m: list(mean_sd([r.get(m, np.nan) for r in rows])) for m in rows[0]}


def choice_summary(choices: Sequence[Mapping | None]) -> dict:
    """ECC-CV's choice over seeds: words, per-seed words and whether any seed chose a clustering.

    Parameters
    ----------
    choices : sequence of dict or None
        ``best_params_`` per seed.

    Returns
    -------
    dict
        ``{"words": str, "clustering": bool}`` (``clustering`` false when every seed chose one
        global BT or one BT per human category).
    """
    found = [c for c in choices if c is not None]
    return {
        "words": describe_choices(found),
        "clustering": any(is_clustering(c) for c in found),
    }


def ecc_cv_verdict(choice: Mapping, records: Sequence, *, where: str = "") -> str:
    """ECC-CV's choice and its comparison with the best tuned baseline, in one or two sentences.

    The comparison is the typed record of ECC-CV minus the tuned baseline with the largest gain
    (:mod:`ecc_lib.protocol.comparisons`, the one interval of :mod:`ecc_lib.stats`), on pairs
    disjoint from the probe where they are scored; without an interval it gets no verdict word.

    Parameters
    ----------
    choice : mapping
        :func:`choice_summary`.
    records : sequence of ComparisonRecord
        The comparison records of the run (:meth:`MultiSeedEvaluation.comparisons`).
    where : str
        Where the gains are read (``"on pairs disjoint from the probe"``).

    Returns
    -------
    str
        ``""`` without ECC-CV's choice or without a tuned baseline.
    """
    from ecc_lib.grammar import interval, number
    from ecc_lib.protocol.comparisons import find

    if not choice.get("words"):
        return ""
    gains = [r for r in records if r.question == "clustering_gain"]
    disjoint = any(r.reading == "disjoint" and np.isfinite(r.estimate) for r in gains)
    reading = "disjoint" if disjoint else "all"
    scored = {
        r.a: r.estimate
        for r in gains
        if r.reading == reading and r.a in TUNED_BASELINES and np.isfinite(r.estimate)
    }
    record = None
    if scored and any(r.a == "ecc_cv" and r.reading == reading for r in gains):
        best = max(scored, key=scored.get)
        record = find(records, "method_difference", "ecc_cv", best, reading)
    if record is None:
        return ""
    where = f" {where}" if where else ""
    difference = f"ECC-CV minus {_name(best)} = {number(record.estimate, record.unit)}"
    ci = interval(record.ci, record.unit)
    if record.verdict:
        head = f"ECC-CV is {record.verdict} the best tuned baseline{where}"
    else:
        head = f"ECC-CV against the best tuned baseline{where} (no interval)"
    text = f"ECC-CV chose {choice['words']}. {head}: {difference}{' ' + ci if ci else ''}."
    if not choice.get("clustering"):
        text += " It deployed no clustering, so this is not a clustering gain."
    return text


__all__ = [
    "regain",
]
