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

TUNED_REFERENCE = "global_tuned"
"""The gain reference of the summary and the bench (the global BT at its tuned prior)."""
TUNED_BASELINES: tuple[str, ...] = method_keys(
    lambda s: s.tuned is not None and METHOD_SPECS[s.tuned].baseline
)
"""The baselines ECC-CV's verdict compares it with (each at its tuned prior; from the method
registry: the tuned methods of the baselines)."""
LEVEL_PP = 0.5
"""A difference within this many percentage points is read as level."""


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
    out = {}
    for m in rows[0]:
        values = np.array([r.get(m, np.nan) for r in rows], dtype=float)
        values = values[np.isfinite(values)]
        mean = float(values.mean()) if len(values) else float("nan")
        sd = float(values.std(ddof=1)) if len(values) > 1 else float("nan")
        out[m] = [mean, sd]
    return out


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


def ecc_cv_verdict(
    choice: Mapping, gains: Mapping[str, Sequence[float]], *, where: str = ""
) -> str:
    """ECC-CV's choice and its comparison with the best tuned baseline, in one or two sentences.

    Parameters
    ----------
    choice : mapping
        :func:`choice_summary`.
    gains : mapping
        :func:`tuned_gains` (``{method: [mean, sd]}`` over the tuned global BT).
    where : str
        Where the gains are read (``"on pairs disjoint from the probe"``).

    Returns
    -------
    str
        ``""`` without ECC-CV or without a tuned baseline.
    """
    if "ecc_cv" not in gains or not choice.get("words"):
        return ""
    baselines = [m for m in TUNED_BASELINES if m in gains and np.isfinite(gains[m][0])]
    if not baselines:
        return ""
    best = max(baselines, key=lambda m: gains[m][0])
    mean, sd = gains["ecc_cv"]
    diff = mean - gains[best][0]
    where = f" {where}" if where else ""
    sd_text = f" +- {sd:.2f}" if np.isfinite(sd) else ""
    if abs(diff) <= LEVEL_PP:
        reading = f"level (within {LEVEL_PP:g} pp)"
    else:
        reading = "above it" if diff > 0 else "below it"
    text = (
        f"ECC-CV chose {choice['words']}; its gain over one global BT at the tuned prior{where} "
        f"is {mean:+.2f}{sd_text} %, {diff:+.2f} pp against the best tuned baseline, "
        f"{_name(best)}: {reading}."
    )
    if not choice.get("clustering"):
        text += " It deployed no clustering, so this is not a clustering gain."
    return text


__all__ = [
    "LEVEL_PP",
    "TUNED_BASELINES",
    "TUNED_REFERENCE",
    "choice_summary",
    "ecc_cv_verdict",
    "regain",
    "tuned_gains",
]
