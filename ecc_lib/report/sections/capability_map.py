"""The report's section "Which model for which queries" (issue 37), right after the summary: the
capability map that notebook 03 records (``metrics.json["capability_map"]``, the figure
``03_capability_map``): a table of groups, the figure, and one sentence on what the map is worth on
held-out queries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ecc_lib.grammar import finite
from ecc_lib.report.document import HeadlineTable, ReportSection
from ecc_lib.report.formatting import DASH, format_interval, format_number
from ecc_lib.report.reading import read_metrics
from ecc_lib.runs.folder import RunContext

CAPABILITY_MAP_TABLE = "capability_map"
"""The group table's file stem under ``tables/`` (CSV and LaTeX)."""
CAPABILITY_MAP_FIGURE = "capability_map"
"""The figure's name after the notebook number (``03_capability_map``)."""


def no_other_model(values: Mapping[str, Any]) -> bool:
    """Whether every group's best model is the global best (the figure is then left out).

    Parameters
    ----------
    values : mapping
        ``metrics.json["capability_map"]``.

    Returns
    -------
    bool
    """
    return values.get("n_groups_other_best") == 0


def group_table(values: Mapping[str, Any]) -> pd.DataFrame:
    """One formatted row per group: name, size, best model, P(best), runner-up, whether the
    global best is distinguishable from the best.

    Parameters
    ----------
    values : mapping
        ``metrics.json["capability_map"]``.

    Returns
    -------
    DataFrame
    """
    global_best = str(values.get("global_best") or "")
    rows = []
    for group in values.get("groups") or []:
        best = str(group.get("best_model") or DASH)
        if best == global_best:
            distinguishable = "is the best"
        else:
            distinguishable = "yes" if group.get("global_best_distinguishable") else "no"
        rows.append(
            {
                "group": str(group.get("name") or group.get("group")),
                "queries (train / test)": f"{format_number(group.get('n_train'), 'count')} / "
                f"{format_number(group.get('n_test'), 'count')}",
                "best model": best,
                "P(best)": format_number(group.get("p_best")),
                "runner-up": str(group.get("runner_up") or DASH),
                f"global best ({global_best}) distinguishable from the best": distinguishable,
            }
        )
    return pd.DataFrame(rows)


def held_out_sentence(values: Mapping[str, Any]) -> str:
    """The held-out value of the map in one sentence.

    Parameters
    ----------
    values : mapping
        ``metrics.json["capability_map"]``.

    Returns
    -------
    str
    """
    held = values.get("held_out") or {}
    global_best = values.get("global_best")
    n_test = held.get("n_test_scored")
    estimate, ci = held.get("estimate"), held.get("ci95")
    if not finite(estimate):
        return f"No test query has a score of both models, so the map's held-out value is not measured ({DASH})."
    return (
        f"On {format_number(n_test, 'count')} held-out test queries, sending each query to its "
        f"group's best model changes the mean score by {format_interval(estimate, ci, 'signed')} "
        f"(95% paired bootstrap CI over test queries) against sending every query to {global_best} "
        f"({format_number(held.get('routed_score'))} against {format_number(held.get('global_score'))})."
    )


def capability_map_section(run: RunContext, metrics: Mapping[str, Any]) -> ReportSection | None:
    """The section "Which model for which queries" (``metrics.json["capability_map"]``).

    Parameters
    ----------
    run : RunContext
        The run folder (the figure comes from ``figures/03_capability_map``).
    metrics : mapping
        The whole ``metrics.json``.

    Returns
    -------
    ReportSection or None
        None when the map has no group.
    """
    metrics = read_metrics(metrics)
    values = metrics["capability_map"]
    groups = values.get("groups") or []
    if not groups:
        return None
    dataset = str(values.get("dataset") or "")
    detail = str(values.get("method_detail") or values.get("method") or "")
    global_best = str(values.get("global_best") or "")
    n_groups = len(groups)
    where = f" of {dataset}" if dataset else ""
    section = ReportSection()
    if no_other_model(values):
        every = f"In every one of the {n_groups} groups" if n_groups > 1 else "In the one group"
        section.findings = (
            f"{every}{where} (grouping: {detail}) the best model is "
            f"the global best, {global_best}: no group needs another model, so the map's figure "
            "is left out."
        )
    else:
        n_other = int(values.get("n_groups_other_best") or 0)
        n_needs = int(values.get("n_groups_needing_other_model") or 0)
        section.findings = (
            f"Grouping: {detail}; the queries{where} fall into {n_groups} groups. In {n_other} of them "
            f"({format_number(values.get('share_groups_other_best'), 'share')}) another model than the "
            f"global best, {global_best}, scores highest, and in {n_needs} the global best is "
            "distinguishable from (worse than) it. " + held_out_sentence(values)
        )
    section.tables.append(
        HeadlineTable(
            CAPABILITY_MAP_TABLE,
            f"Which model for which queries{where}: each group's best model by Bradley-Terry score "
            f"on its training queries, P(best) over {format_number(values.get('n_boot'), 'count')} "
            "bootstrap draws of them, and whether the global best is distinguishable from it "
            "(95% bootstrap interval of the score difference excludes 0)",
            group_table(values),
        )
    )
    return section


__all__: list[str] = []
