"""What a routing table says: the headline against the best fixed model and readable tables."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ecc_lib.labels import router_name
from ecc_lib.routing_evaluation.table import RoutingTable


def routing_headline(result: RoutingTable) -> dict:
    """Whether any router beats the best fixed model, as metrics and one plain sentence.

    Parameters
    ----------
    result : RoutingTable
        A :func:`~ecc_lib.routing_evaluation.experiment.routing_table` result.

    Returns
    -------
    dict
        ``no_router_beats_best_fixed`` (bool: no router's 95 % interval of held-out utility
        minus the best fixed model's lies above 0), ``n_routers_beating_best_fixed``,
        ``best_router`` (the router and supervision with the highest held-out utility; the
        router alone without repeated observations, :func:`ecc_lib.labels.router_name`),
        ``best_router_utility_minus_fixed`` with ``_ci95``, and ``sentence``.
    """
    versus = result.versus_fixed
    fixed_name = result.info.get("best_fixed_model", "the best fixed model")
    if versus is None or len(versus) == 0:
        return {
            "no_router_beats_best_fixed": None,
            "n_routers_beating_best_fixed": 0,
            "best_router": None,
            "best_router_utility_minus_fixed": None,
            "best_router_utility_minus_fixed_ci95": None,
            "sentence": "No learned router was evaluated.",
        }
    best = versus.loc[versus["utility_minus_fixed"].idxmax()]
    beating = versus[versus["beats_best_fixed"]]
    # without repeated observations the DARS targets are the observed outcomes: no "(DARS)"
    repeats = bool(
        result.info.get("has_rewrites")
        or result.info.get("has_decodes")
        or (versus["supervision"] == "single-shot").any()
    )
    label = router_name(f"{best['router']} ({best['supervision']})", repeats=repeats)
    diff = float(best["utility_minus_fixed"])
    ci = [float(best["utility_minus_fixed_ci_low"]), float(best["utility_minus_fixed_ci_high"])]
    if len(beating) == 0:
        sentence = (
            f"No router beats the best fixed model ({fixed_name}) on held-out utility: the best, "
            f"{label}, is {diff:+.3f} from it (95% CI [{ci[0]:+.3f}, {ci[1]:+.3f}])"
        )
        if ci[0] == ci[1] == 0.0:
            sentence += ", matching its utility on every test query"
        sentence += "."
    else:
        names = [
            router_name(f"{r.router} ({r.supervision})", repeats=repeats)
            for r in beating.itertuples()
        ]
        listed = f": {', '.join(names)}" if len(names) <= 4 else ""
        sentence = (
            f"{len(beating)} of {len(versus)} routers beat the best fixed model ({fixed_name}) "
            f"on held-out utility (95% CI above 0){listed}; the best, {label}, by {diff:+.3f} "
            f"(95% CI [{ci[0]:+.3f}, {ci[1]:+.3f}])."
        )
    return {
        "no_router_beats_best_fixed": bool(len(beating) == 0),
        "n_routers_beating_best_fixed": int(len(beating)),
        "best_router": label,
        "best_router_utility_minus_fixed": diff,
        "best_router_utility_minus_fixed_ci95": ci,
        "sentence": sentence,
    }


def format_paired_differences(paired: pd.DataFrame, *, digits: int = 3) -> pd.DataFrame:
    """Readable DARS-minus-single-shot table: ``value [low, high]`` per column.

    Parameters
    ----------
    paired : DataFrame
        ``RoutingTable.paired`` (see :func:`~ecc_lib.routing_evaluation.paired.paired_differences`).
    digits : int, default 3

    Returns
    -------
    DataFrame
        ``router, n_runs, score: DARS - single-shot, utility: DARS - single-shot, gap closed
        (DARS), gap closed (single-shot), gap closed: DARS - single-shot``.
    """

    def cell(row: pd.Series, key: str) -> str:
        value = row[key]
        if not np.isfinite(value):
            return "-"
        return (
            f"{value:+.{digits}f} [{row[key + '_ci_low']:+.{digits}f}, "
            f"{row[key + '_ci_high']:+.{digits}f}]"
        )

    columns = {
        "score: DARS - single-shot": "score_diff",
        "utility: DARS - single-shot": "utility_diff",
        "gap closed (DARS)": "gap_closed_dars",
        "gap closed (single-shot)": "gap_closed_single_shot",
        "gap closed: DARS - single-shot": "gap_closed_diff",
    }
    out = paired[["router", "n_runs"]].copy()
    for title, key in columns.items():
        out[title] = [cell(row, key) for _, row in paired.iterrows()]
    return out


def format_routing_table(
    result: RoutingTable | pd.DataFrame,
    *,
    metrics: Sequence[str] = ("score", "score_rewrite", "score_decode", "cost", "utility"),
    digits: int = 3,
    intervals: bool = False,
) -> pd.DataFrame:
    """Readable table: ``mean +- std`` over runs where there are several runs, NaN shown as ``-``.

    Parameters
    ----------
    result : RoutingTable or DataFrame
        A :func:`~ecc_lib.routing_evaluation.experiment.routing_table` result or its ``table``.
    metrics : sequence of str
        Metric columns to show (``gap_closed`` and ``pareto_area`` are always added when present).
    digits : int, default 3
        Decimals.
    intervals : bool, default False
        Append the 95% bootstrap interval ``[low, high]`` of each metric that has one.

    Returns
    -------
    DataFrame
        ``router, supervision, n_runs`` and one text column per metric.
    """
    table = result if isinstance(result, pd.DataFrame) else result.table
    out = table[["router", "supervision", "n_runs"]].copy()
    columns = list(metrics) + ["gap_closed", "pareto_area"]
    nan = pd.Series(np.nan, index=table.index)

    def fmt(mean: float, sd: float, low: float, high: float) -> str:
        if not np.isfinite(mean):
            return "-"
        text = f"{mean:.{digits}f}"
        if np.isfinite(sd):
            text += f" ± {sd:.{digits}f}"
        if intervals and np.isfinite(low) and np.isfinite(high):
            text += f" [{low:.{digits}f}, {high:.{digits}f}]"
        return text

    for key in columns:
        if key not in table or table[key].isna().all():
            continue
        out[key] = [
            fmt(m, s, lo, hi)
            for m, s, lo, hi in zip(
                table[key],
                table.get(f"{key}_std", nan),
                table.get(f"{key}_ci_low", nan),
                table.get(f"{key}_ci_high", nan),
                strict=True,
            )
        ]
    return out


__all__ = [
    "format_paired_differences",
    "format_routing_table",
    "routing_headline",
]
