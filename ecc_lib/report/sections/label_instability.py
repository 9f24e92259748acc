"""The report's section of notebook 02 (label instability): the winner flip rate in its three
readings beside chance, by source of randomness (rewrites, decodes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ecc_lib.grammar import finite
from ecc_lib.report.document import HeadlineTable, ReportSection, report_table_name
from ecc_lib.report.formatting import format_interval_of, format_number
from ecc_lib.report.reading import (
    flatten,
    generic_rows,
    measure_row,
    measure_table,
    read_metrics,
)
from ecc_lib.report.summary import flip_lines
from ecc_lib.runs.folder import RunContext


def _side_rows(
    by_side: Mapping[str, Any], dataset: str, sources: Mapping[str, str], notes: list[str]
) -> list[dict]:
    """One row per measured source of randomness (rewrites, decodes, both), a note per side that
    is not measured; "both" is left out where it equals the one side with repeats."""
    side_rows = []
    missing = [name for name, summary in by_side.items() if not summary]
    for name, summary in by_side.items():
        if not summary:
            notes.append(
                f"The {name} side ({sources.get(name, name)}) is not measured: {dataset} has no repeated "
                "observations there, so 'both' equals the other side."
            )
            continue
        if name == "both" and missing:
            continue  # the same numbers as the one side that has repeats
        side_rows.append(
            {
                "dataset": dataset,
                "source of randomness": sources.get(name, name),
                "flip rate": format_interval_of(summary, "winner_flip_rate", "share"),
                "unstable pairs": format_interval_of(summary, "unstable_pair_share", "share"),
                "queries": format_number(summary.get("n_queries"), "count"),
            }
        )
    return side_rows


def dars_section(run: RunContext, metrics: Mapping[str, Any]) -> ReportSection:
    """The section of notebook 02 (``metrics.json["dars"]``): the three flip-rate readings
    beside chance, by side.

    Parameters
    ----------
    run : RunContext
        The run folder.
    metrics : mapping
        The whole ``metrics.json`` (read through :class:`~ecc_lib.report.reading.MetricsReader`).

    Returns
    -------
    ReportSection
        Findings paragraph, headline tables and notes on sides without repeats.
    """
    values = read_metrics(metrics)["dars"]
    section = ReportSection()
    flat = flatten(values)
    dataset = str(values.get("dataset", ""))
    rows, used = [], {"by_side", "dataset", "winner_flip_rate_side"}
    side = values.get("winner_flip_rate_side") or "both"
    by_side = values.get("by_side") or {}
    n_models = next((s.get("n_models") for s in by_side.values() if s), None)
    chance = values.get("flip_rate_chance") or {}
    if not chance and n_models:
        chance = {"pairwise": 1 - 1 / int(n_models)}
    r = values.get("winner_change_rate_r")
    # strict and change first: the pairwise reading counts random tie-breaks as flips
    readings = (
        ("winner_flip_rate_strict", "strict", "strict flip: the two draws' top sets are disjoint"),
        ("winner_change_rate", "change", f"the winner changes within {r or 'R'} draws"),
        (
            "winner_flip_rate",
            "pairwise",
            "pairwise: two single-shot labels name different winners (counts tie-breaks)",
        ),
        ("single_vs_distribution_disagreement", None, "single-shot label differs from argmax U"),
    )
    for key, reading, label in readings:
        if finite(values.get(key)):
            used |= {key, key + "_ci95"}
            level = chance.get(reading) if reading else None
            label += f" (chance {format_number(level, 'share')})" if finite(level) else ""
            estimate = format_interval_of(values, key, "share")
            rows.append(measure_row(dataset, label, estimate, "% of queries"))
    used |= {"flip_rate_chance", "winner_change_rate_r"}
    sources = {"input": "rewrites", "output": "decodes", "both": "rewrites and decodes"}
    side_rows = _side_rows(by_side, dataset, sources, section.notes)
    rows += generic_rows(flat, used=used, dataset=dataset, section="dars")
    caption = f"Label instability on {dataset} (95% bootstrap CI over queries)"
    section.tables.append(measure_table("dars_headline", caption, rows))
    if side_rows:
        section.tables.append(
            HeadlineTable(
                report_table_name("dars_by_side"),
                "Flip rate and share of pairs whose observations disagree, by source of randomness",
                pd.DataFrame(side_rows),
            )
        )
    if not finite(values.get("winner_flip_rate")):
        section.findings = f"{dataset} has no (query, model) pair with two observations, so the flip rate is not measured."
        return section
    rate = format_interval_of(values, "winner_flip_rate", "share")
    present = [sources.get(n, n) for n, v in by_side.items() if v and n != "both"]
    origin = " and ".join(present) if present else sources.get(side, side)
    lines = flip_lines({"dars": values})
    text = (
        f"On {dataset} ({n_models or 'several'} models, randomness from {origin}) the summary above "
        f"quotes the three flip readings beside chance; the pairwise reading, {rate}, is on its "
        "own no measure of instability."
        if lines
        else f"On {dataset}, the flip rate is {rate}."
    )
    if finite(values.get("single_vs_distribution_disagreement")):
        text += (
            f" The single-shot winner differs from the distribution-aware label argmax U on "
            f"{format_interval_of(values, 'single_vs_distribution_disagreement', 'share')} of queries."
        )
    section.findings = text
    return section


__all__: list[str] = []
