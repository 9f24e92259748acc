"""The report's section of notebook 00 (the tour on planted data): clusterings against the
planted capability clusters, single-shot labels against the truth.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ecc_lib.grammar import Comparison, comparison_sentence, finite
from ecc_lib.report.document import ReportSection
from ecc_lib.report.formatting import (
    format_interval,
    format_interval_of,
    format_number,
)
from ecc_lib.report.reading import (
    flatten,
    generic_rows,
    measure_row,
    measure_table,
    read_metrics,
)
from ecc_lib.runs.folder import RunContext


def tour_section(run: RunContext, metrics: Mapping[str, Any]) -> ReportSection:
    """The section of notebook 00 (``metrics.json["tour"]``): ARI of each clustering with the
    planted clusters, and how often single-shot labels name the true best model.

    Parameters
    ----------
    run : RunContext
        The run folder.
    metrics : mapping
        The whole ``metrics.json`` (read through :class:`~ecc_lib.report.reading.MetricsReader`).

    Returns
    -------
    ReportSection
        Findings paragraph and headline tables.
    """
    values = read_metrics(metrics)["tour"]
    section = ReportSection()
    flat = flatten(values)
    rows, used = [], {"ari", "ari_ci95", "ari_difference", "ari_difference_ci95"}
    names = {"ecc": "ECC", "emb_only": "embedding-only clusters", "labels": "topic labels"}
    ari, ari_ci = values.get("ari", {}) or {}, values.get("ari_ci95") or {}
    for key, value in ari.items():
        measure = f"ARI with planted capability clusters: {names.get(key, key)}"
        estimate = format_interval(value, ari_ci.get(key))
        rows.append(measure_row("synthetic", measure, estimate, "adjusted Rand index (1 = exact)"))
    diff, diff_ci = values.get("ari_difference"), values.get("ari_difference_ci95")
    if finite(diff):
        estimate = format_interval(diff, diff_ci, "signed")
        measure = "ARI of ECC minus ARI of embedding-only"
        rows.append(measure_row("synthetic", measure, estimate, "difference of ARI"))
    for key, label in (
        ("single_shot_accuracy", "single-shot label names the true best model"),
        ("distribution_accuracy", "label from all observations names the true best model"),
        ("winner_flip_rate", "two single-shot labels disagree (flip rate)"),
    ):
        if finite(values.get(key)):
            used |= {key, key + "_ci95"}
            estimate = format_interval_of(values, key, "share")
            rows.append(measure_row("synthetic", label, estimate, "% of queries"))
    rows += generic_rows(
        flat, used=used | {"n_queries", "n_models"}, dataset="synthetic", section="tour"
    )
    caption = "Tour on planted data: headline numbers (95% bootstrap CI over queries)"
    section.tables.append(measure_table("tour_headline", caption, rows))
    text = []
    if ari:
        e = ari.get("ecc")
        text.append(
            f"On {values.get('n_queries', 'the')} synthetic queries whose topic (visible in the "
            f"embedding and the label) is independent of the capability cluster that decides "
            f"which model wins, ECC recovers the planted capability clusters with an adjusted Rand "
            f"index of {format_interval(e, ari_ci.get('ecc'))}, against "
            f"{format_number(ari.get('emb_only'))} for embedding-only clusters and "
            f"{format_number(ari.get('labels'))} for the topic labels."
        )
        if finite(diff):
            c = Comparison(
                "ECC's ARI",
                "embedding-only clusters' ARI",
                float(diff),
                tuple(diff_ci) if diff_ci and len(diff_ci) == 2 else None,
                "signed",
                interval_kind="paired 95% bootstrap CI over queries",
            )
            text.append(
                comparison_sentence(
                    c, subject="ECC", obj="embedding-only clusters", context="at recovering them"
                )
            )
    if finite(values.get("single_shot_accuracy")):
        text.append(
            f"With repeated answers, one sampled answer per model names the true best model for "
            f"{format_interval(values['single_shot_accuracy'], values.get('single_shot_accuracy_ci95'), 'share')} "
            f"of queries, the label from all observations for "
            f"{format_interval(values.get('distribution_accuracy'), values.get('distribution_accuracy_ci95'), 'share')}; "
            f"two single-shot labels of the same query disagree "
            f"{format_interval(values.get('winner_flip_rate'), values.get('winner_flip_rate_ci95'), 'share')} of the time."
        )
    section.findings = " ".join(text) or "The tour recorded no numbers."
    return section


__all__: list[str] = []
