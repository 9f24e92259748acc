"""The report's section of notebook 04 (routing): held-out score, utility and gap closed per
router, DARS minus single-shot supervision, and the area under the cost-quality front.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ecc_lib.grammar import BETTER_WORSE, Comparison, difference_text, finite, verdict
from ecc_lib.labels import router_name
from ecc_lib.report.document import HeadlineTable, ReportSection, report_table_name
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
from ecc_lib.report.summary import routing_lines
from ecc_lib.runs.folder import RunContext

_USED = {
    "score",
    "score_ci95",
    "utility",
    "gap_closed",
    "dataset",
    "best_fixed_model",
    "best_router",
    "best_router_utility_minus_fixed",
    "best_router_utility_minus_fixed_ci95",
    "n_routers_beating_best_fixed",
    "no_router_beats_best_fixed",
    "pareto_area",
    "dars_minus_single_shot",
    "dars_minus_single_shot_utility",
    "dars_minus_single_shot_utility_ci95",
}
"""The headline keys the section's own tables and text show (the rest go to the generic rows)."""


def _headline_table(headline: Mapping[str, Any], dataset: str, repeats: bool) -> HeadlineTable:
    """One row per router family: held-out score and utility, and the single-shot score."""
    score, score_ci = headline.get("score") or {}, headline.get("score_ci95") or {}
    utility = headline.get("utility") or {}
    families: dict[str, dict[str, str]] = {}
    for name, value in score.items():
        router, _, supervision = name.partition(" (")
        supervision = supervision.rstrip(")")
        row = families.setdefault(router, {"dataset": dataset, "router": router})
        if supervision == "single-shot" and repeats:
            row["single-shot labels: score [95% CI]"] = format_interval(value, score_ci.get(name))
        else:  # DARS targets, or a reference (best fixed model, oracle, random)
            row["held-out score [95% CI]"] = format_interval(value, score_ci.get(name))
            row["utility U"] = format_number(utility.get(name))
    return HeadlineTable(
        report_table_name("routing_headline"),
        f"Routers on {dataset}: mean held-out score of the chosen model (0-1, 95% bootstrap CI over test queries) and utility U, "
        + (
            "trained on DARS targets (references as they are), beside the score trained on single-shot labels"
            if repeats
            else "one observation per pair, so DARS targets equal single-shot labels"
        ),
        pd.DataFrame(list(families.values())),
    )


def _paired_table(paired: Mapping[str, Any], dataset: str) -> HeadlineTable:
    """DARS targets minus single-shot labels per router family (score and utility)."""
    paired_rows = [
        {
            "dataset": dataset,
            "router": name,
            "score: DARS minus single-shot": format_interval_of(d, "score", "signed"),
            "utility: DARS minus single-shot": format_interval_of(d, "utility", "signed"),
        }
        for name, d in paired.items()
        if isinstance(d, Mapping)
    ]
    return HeadlineTable(
        report_table_name("routing_dars_minus_single_shot"),
        f"DARS targets minus single-shot labels, paired per router family on {dataset} "
        "(score and utility in score units; 95% intervals over test queries and single-shot runs)",
        pd.DataFrame(paired_rows),
    )


def _more_rows(
    headline: Mapping[str, Any], paired: Any, dataset: str, cost_dataset: str, cost_repeats: bool
) -> list[dict]:
    """Measure rows: the unpaired supervision effect, the Pareto areas and any other headline key."""
    extra = []
    if not paired:
        cis = headline.get("dars_minus_single_shot_utility_ci95") or {}
        for name, value in (headline.get("dars_minus_single_shot_utility") or {}).items():
            estimate = format_interval(value, cis.get(name), "signed")
            measure = f"DARS minus single-shot utility: {name}"
            extra.append(measure_row(dataset, measure, estimate, "score units"))
    for name, value in (headline.get("pareto_area") or {}).items():
        if finite(value):
            router = router_name(name, repeats=cost_repeats)
            measure = f"area under the cost-quality Pareto front: {router}"
            area_unit = "score x normalised cost"
            extra.append(measure_row(cost_dataset, measure, format_number(value), area_unit))
    return extra + generic_rows(
        flatten(headline), used=_USED, dataset=dataset, section="routing.headline"
    )


def _paired_text(paired: Mapping[str, Any]) -> str | None:
    """The per-family verdicts of DARS targets against single-shot labels on utility."""
    groups: dict[str, list[str]] = {w: [] for w in (*BETTER_WORSE, "")}
    for name, d in paired.items():
        if isinstance(d, Mapping) and finite(d.get("utility")):
            ci = d.get("utility_ci95")
            c = Comparison(
                "DARS",
                "single-shot",
                float(d["utility"]),
                tuple(ci) if ci and len(ci) == 2 else None,
                "score_diff",
            )
            groups[verdict(c)].append(f"{name} ({difference_text(c).split(' = ', 1)[1]})")
    parts = [
        f"{word or 'without an interval against'} single-shot labels for {', '.join(names)}"
        for word, names in groups.items()
        if names
    ]
    if not parts:
        return None
    return (
        "Paired per router family, DARS targets minus single-shot labels on held-out utility: DARS is "
        + "; ".join(parts)
        + "."
    )


def _pareto_text(headline: Mapping[str, Any], cost_dataset: str, cost_repeats: bool) -> str | None:
    """The largest learned area under the cost-quality front against the best fixed model's."""
    areas = {k: v for k, v in (headline.get("pareto_area") or {}).items() if finite(v)}
    learned_areas = {k: v for k, v in areas.items() if "(reference)" not in k}
    fixed = areas.get("Best fixed model (reference)")
    if not learned_areas or fixed is None:
        return None
    top = max(learned_areas, key=learned_areas.get)
    position = "above" if learned_areas[top] > fixed else "not above"
    cis = headline.get("pareto_area_ci95") or {}

    def ci(key: str) -> str:
        pair = cis.get(key)
        ok = isinstance(pair, list | tuple) and len(pair) == 2 and all(map(finite, pair))
        return f" [{pair[0]:.3f}, {pair[1]:.3f}]" if ok else ""

    return (
        f"On {cost_dataset} with model prices, the largest area under the cost-quality Pareto front is "
        f"{router_name(top, repeats=cost_repeats)}'s {learned_areas[top]:.3f}{ci(top)}, {position} the best fixed model's {fixed:.3f}"
        + ci("Best fixed model (reference)")
        + (f" (oracle {areas['Oracle (reference)']:.3f})" if "Oracle (reference)" in areas else "")
        + " (area in score x normalised price over prices 0 to 1, i.e. the mean best score "
        + "within a price budget; one split, "
        + ("95% bootstrap interval over test queries)." if ci(top) else "no interval).")
    )


def routing_section(run: RunContext, metrics: Mapping[str, Any]) -> ReportSection:
    """The section of notebook 04 (``metrics.json["routing"]``): routers against the best fixed
    model and the oracle, DARS targets against single-shot labels, and the cost-quality
    trade-off (``metrics.json["parameters"]["routing"]["cost_dataset"]`` names the cost data).

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
    metrics = read_metrics(metrics)
    values = metrics["routing"]
    parameters = (metrics.get("parameters") or {}).get("routing") or {}
    section = ReportSection()
    headline = values.get("headline") or {}
    dataset = str(headline.get("dataset", ""))
    score, score_ci = headline.get("score") or {}, headline.get("score_ci95") or {}
    info = values.get("info") or {}
    repeats = bool(info.get("has_rewrites") or info.get("has_decodes")) if info else True
    section.tables.append(_headline_table(headline, dataset, repeats))
    paired = headline.get("dars_minus_single_shot") or {}
    if isinstance(paired, Mapping) and paired:
        section.tables.append(_paired_table(paired, dataset))
    cost_dataset = str(
        (parameters or {}).get("cost_dataset") or values.get("cost_dataset") or "the cost dataset"
    )
    # the cost run has no single-shot arm: a router is named alone on data without repeats
    cost_info = values.get("cost_info") or {}
    cost_repeats = bool(cost_info.get("has_rewrites") or cost_info.get("has_decodes"))
    extra = _more_rows(headline, paired, dataset, cost_dataset, cost_repeats)
    if extra:
        section.tables.append(
            measure_table("routing_more", "Supervision effect and cost-quality trade-off", extra)
        )
    best_fixed = headline.get("best_fixed_model")
    ref = "Best fixed model (reference)"
    learned = {k: v for k, v in score.items() if "(reference)" not in k and finite(v)}
    text = []
    if learned and finite(score.get(ref)):
        text.append(
            f"On {dataset}, the best fixed model ({best_fixed}) "
            f"scores {format_interval(score[ref], score_ci.get(ref))} on held-out queries and the per-query oracle "
            f"{format_interval(score.get('Oracle (reference)'), score_ci.get('Oracle (reference)'))}."
        )
    text += [
        line.text
        for name, line in routing_lines({"routing": values})
        if name == dataset and line.topic == "routing"
    ]
    if isinstance(paired, Mapping) and paired:
        text.append(_paired_text(paired))
    text.append(_pareto_text(headline, cost_dataset, cost_repeats))
    section.findings = (
        " ".join(t for t in text if t is not None)
        or f"No routing result was recorded for {dataset}."
    )
    return section


__all__: list[str] = []
