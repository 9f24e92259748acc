"""The report's section of notebook 01 (the data): queries, models, categories, observations per
(query, model) pair and the best model of each dataset.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ecc_lib.labels import model_name_legend, short_model_names
from ecc_lib.report.document import HeadlineTable, ReportSection, report_table_name
from ecc_lib.report.formatting import (
    DASH,
    format_interval,
    format_number,
)
from ecc_lib.report.reading import read_metrics, read_table
from ecc_lib.report.sections.checks import add_checks
from ecc_lib.report.sections.other import data_notes
from ecc_lib.runs.folder import RunContext


def _observations_range(summary: Mapping[str, Any]) -> tuple[int, int]:
    """Fewest and most observations of a (query, model) pair; variants x decodes for summaries
    written before the range was recorded."""
    full = int(summary.get("n_variants") or 1) * int(summary.get("n_decodes") or 1)
    return (
        int(summary.get("min_observations_per_pair") or full),
        int(summary.get("max_observations_per_pair") or full),
    )


def _observations_text(summary: Mapping[str, Any]) -> str:
    rewrites, decodes = int(summary.get("n_variants") or 1), int(summary.get("n_decodes") or 1)
    low, high = _observations_range(summary)
    if high <= 1:
        return "1 (no repeats)"
    count = f"{high}" if low == high else f"{low} to {high}"
    return (
        f"{count} ({rewrites} rewrite{'s' if rewrites > 1 else ''} x "
        f"{decodes} decode{'s' if decodes > 1 else ''}{' at most' if low < high else ''})"
    )


def data_section(run: RunContext, metrics: Mapping[str, Any]) -> ReportSection:
    """The section of notebook 01 (``metrics.json["data"]``): size of each dataset, observations
    per pair, best model; the data checks first (:func:`~ecc_lib.report.sections.checks.add_checks`)
    and the notes of the data policy (:func:`~ecc_lib.report.sections.other.data_notes`).

    Parameters
    ----------
    run : RunContext
        The run folder: the model scores table of notebook 01 gives the best model's interval.
    metrics : mapping
        The whole ``metrics.json`` (read through :class:`~ecc_lib.report.reading.MetricsReader`).

    Returns
    -------
    ReportSection
        Findings paragraph, headline tables and notes.
    """
    metrics = read_metrics(metrics)
    values = metrics["data"]
    section = ReportSection()
    datasets = values.get("datasets", {}) or {}
    scores = read_table(run, "data", "model_scores")
    rows, sentences, single = [], [], []  # single: datasets with one observation per pair
    all_models = (
        [str(m) for m in scores["model"]] if scores is not None and "model" in scores else []
    )
    for summary in datasets.values():
        all_models += [str(m) for m in (summary or {}).get("mean_score") or {}]
    short = short_model_names(all_models) if all_models else {}
    for name, summary in datasets.items():
        summary = summary or {}
        low, obs = _observations_range(summary)
        if obs <= 1:
            single.append(name)
        best, best_text, best_prose = None, DASH, ""
        if scores is not None and {"model", "score"} <= set(scores.columns):
            part = scores[scores["dataset"] == name] if "dataset" in scores else scores
            if len(part):
                top = part.sort_values("score", ascending=False).iloc[0]
                best = str(top["model"])
                value = format_interval(top["score"], [top.get("low"), top.get("high")])
        elif summary.get("mean_score"):
            best = max(summary["mean_score"], key=summary["mean_score"].get)
            value = format_number(summary["mean_score"][best])
        if best is not None:
            best_text, best_prose = f"{short.get(best, best)}: {value}", f"{best}: {value}"
        rows.append(
            {
                "dataset": name,
                "queries": format_number(summary.get("n_queries"), "count"),
                "models": format_number(summary.get("n_models"), "count"),
                "categories": format_number(summary.get("n_categories"), "count"),
                "observations per pair": _observations_text(summary),
                "best model: mean score [95% CI]": best_text,
            }
        )
        sentences.append(
            f"{name} has {format_number(summary.get('n_queries'), 'count')} queries, "
            f"{format_number(summary.get('n_models'), 'count')} models and "
            f"{format_number(summary.get('n_categories'), 'count')} categories, with "
            + (
                "one observation per (query, model) pair"
                if obs <= 1
                else f"{obs if low == obs else f'{low} to {obs}'} observations per pair"
            )
            # prose names a model in full (tables shorten it, with the legend below)
            + (f"; its best model on average is {best_prose}" if best else "")
        )
    section.tables.append(
        HeadlineTable(
            report_table_name("data_headline"),
            "Datasets of the run (mean score in 0-1, 95% bootstrap CI over queries)",
            pd.DataFrame(rows),
        )
    )
    legend = model_name_legend(all_models)
    if len(legend):
        section.tables.append(
            HeadlineTable(
                report_table_name("model_names"),
                "Model names as figures and tables show them, and in full",
                legend,
            )
        )
    section.findings = (
        f"The run covers {len(datasets)} dataset{'s' if len(datasets) != 1 else ''}. "
        + ". ".join(sentences)
        + "."
        + (
            f" With one observation per pair, {' and '.join(single)} "
            f"support{'s' if len(single) == 1 else ''} clustering and routing but not the "
            "label-instability measurements, which need repeated observations."
            if single
            else ""
        )
    )
    section.notes += data_notes(metrics.get("data_policy") or {})
    add_checks(section, metrics.get("checks"))
    return section


__all__: list[str] = []
