"""The report's section of notebook 03 (ECC clustering): ranking quality gain over one global
Bradley-Terry model with paired differences, and a summary of the largest clusters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ecc_lib.grammar import comparison_sentence, finite
from ecc_lib.labels import method_label, method_name, short_model_names
from ecc_lib.method_registry import REFERENCE, method_keys
from ecc_lib.protocol.comparisons import ComparisonRecord, find
from ecc_lib.report.document import HeadlineTable, ReportSection, report_table_name, table_html
from ecc_lib.report.formatting import (
    DASH,
    format_number,
)
from ecc_lib.report.reading import (
    flatten,
    generic_rows,
    measure_row,
    measure_table,
    read_metrics,
    read_table,
)
from ecc_lib.report.summary import ecc_lines, ecc_records, record_text
from ecc_lib.runs.folder import RunContext
from ecc_lib.stats import interval_description

GAIN_METHODS = tuple(m for m in method_keys(paper=True) if m != REFERENCE)
"""The paper's methods other than the reference, first in the table (from the method registry)."""


_USED = {
    "ranking_quality_gain",
    "ranking_quality_gain_ci95",
    "gain_differences",
    "nll",
    "accuracy",
    "within_cluster_tau",
    "gain_vs_probes",
    "gain_vs_k",
    # first-seed readings of quantities shown as means over seeds (leak figure, summary)
    "ranking_quality_gain_disjoint",
    "ranking_quality_gain_disjoint_ci95",
    "ranking_quality_gain_touching",
    "ranking_quality_gain_touching_ci95",
    "comparisons",
    "gain_differences_disjoint",
    "dataset",
    "left_out_reasons",
    "leak_free",
    "ecc_cv_choice",  # in words in the findings (ecc_cv_choice_text)
}
"""The ``metrics.json["ecc"]`` keys the section's own tables and text show."""


def _headline_table(
    values: Mapping[str, Any], records: list[ComparisonRecord], dataset: str, gain: Mapping
) -> HeadlineTable:
    """One row per method: its gains over global BT (disjoint and all pairs), NLL, accuracy, tau."""
    nll, acc, tau = (values.get(k) or {} for k in ("nll", "accuracy", "within_cluster_tau"))
    seeds = values.get("seeds") if isinstance(values.get("seeds"), list) else []
    rows = []
    for method in [
        "global",
        *[m for m in GAIN_METHODS if m in gain or m in nll],
        *[m for m in (gain or nll) if m not in GAIN_METHODS and m != "global"],
    ]:
        found = [find(records, "clustering_gain", method, "global", r) for r in ("disjoint", "all")]
        if method != "global" and all(r is None for r in found):
            continue
        gains = ["0 (reference)" if method == "global" else _record_text(r) for r in found]
        rows.append(
            {
                "dataset": dataset,
                "method": method_label(method),
                "gain on pairs disjoint from the probe (% of NLL) [95% interval]": gains[0],
                "gain on all pairs (% of NLL) [95% interval]": gains[1],
                "held-out NLL (nats per comparison, first seed)": format_number(nll.get(method)),
                "pairwise accuracy (first seed)": format_number(acc.get(method), "share"),
                "within-cluster Kendall tau": format_number(tau.get(method)),
            }
        )
    headline = pd.DataFrame(rows)
    # a column no method fills (no leak split, one seed) is left out
    headline = headline[
        [c for c in headline if not headline[c].isin([DASH, "0 (reference)"]).all()]
    ]
    return HeadlineTable(
        report_table_name("ecc_headline"),
        f"Ranking quality on held-out comparisons of {dataset} ({interval_description(len(seeds) or 1)})",
        headline,
    )


def _difference_rows(
    values: Mapping[str, Any], records: list[ComparisonRecord], dataset: str
) -> list[dict]:
    """Measure rows: ECC's paired gain differences, then any other recorded quantity."""
    diff_rows = [
        measure_row(
            dataset,
            f"gain of {method_label(r.a)} minus {method_label(r.b)} ({'disjoint' if r.reading == 'disjoint' else 'all'} pairs)",
            _record_text(r, "pp"),
            "percentage points",
        )
        for r in records
        if r.question == "method_difference" and r.a == "ecc"
    ]
    return diff_rows + generic_rows(flatten(values), used=_USED, dataset=dataset, section="ecc")


def _context_text(values: Mapping[str, Any], disjoint: bool, gain: Mapping) -> list[str]:
    """Queries left out, the leak-free protocol's split, and the lead-in to the paper's reading."""
    text = []
    reasons = values.get("left_out_reasons") or {}
    if isinstance(reasons, Mapping) and reasons:
        text.append(
            "Left out before the protocol: "
            + ", ".join(
                f"{format_number(n, 'count')} queries ({why})" for why, n in reasons.items()
            )
            + "."
        )
    free = values.get("leak_free")
    if isinstance(free, Mapping) and finite(free.get("share_with_probe")):
        with_gain = (free.get("ranking_quality_gain_with_probe") or {}).get("ecc")
        without = (free.get("ranking_quality_gain_without_probe") or {}).get("ecc")
        text.append(
            f"Under the leak-free protocol only {format_number(free['share_with_probe'], 'share')} "
            "of test queries have a probe outside their scored pairs; ECC's gain is "
            f"{format_number(with_gain, 'pct_nll')} on those and {format_number(without, 'pct_nll')} on the "
            "others (embedding only)."
        )
    if disjoint and finite(gain.get("ecc")):
        counts = (
            f" ({format_number(values.get('n_scored_pairs'), 'count')} held-out comparisons of "
            f"{format_number(values.get('n_test'), 'count')} test queries)"
            if finite(values.get("n_scored_pairs")) and finite(values.get("n_test"))
            else ""
        )
        text.append(
            f"On all scored pairs{counts}, the paper's reading, in which the probe decides part of "
            "the scored pairs (the paper's two comparisons; every difference is in the appendix):"
        )
    return text


def _paper_comparison_text(records: list[ComparisonRecord]) -> list[str]:
    """ECC against the paper's two baselines on all pairs (its reading), one sentence each."""
    text = []
    for other in _PAPER_BASELINES:
        r = find(records, "method_difference", "ecc", other, "all")
        if r is None or not finite(r.estimate):
            continue
        if r.zero_as_printed:  # degenerate: one plain sentence, not a template verdict
            text.append(
                f"ECC and {method_name(other)} have the same gain on all held-out pairs to the "
                f"printed digit ({_record_text(r, 'pp')})."
            )
            continue
        c = r.comparison("ECC", method_name(other))
        text.append(comparison_sentence(c, context="on all held-out pairs"))
    return text


def ecc_section(run: RunContext, metrics: Mapping[str, Any]) -> ReportSection:
    """The section of notebook 03 (``metrics.json["ecc"]``): ECC's ranking quality gain over
    global BT, its paired differences to the other clusterings, and the largest clusters.

    Parameters
    ----------
    run : RunContext
        The run folder: the cluster summary table of notebook 03 gives the largest clusters.
    metrics : mapping
        The whole ``metrics.json`` (its parameters give K), read through
        :class:`~ecc_lib.report.reading.MetricsReader`.

    Returns
    -------
    ReportSection
        Findings paragraph, headline tables and the cluster summary.
    """
    metrics = read_metrics(metrics)
    values = metrics["ecc"]
    section = ReportSection()
    dataset = str(values.get("dataset", ""))
    gain = values.get("ranking_quality_gain") or values.get("gain_disjoint_mean") or {}
    # issue 35: the gains and their intervals are the comparison records the summary reads
    records = ecc_records(metrics)
    disjoint = any(
        r.question == "clustering_gain" and r.reading == "disjoint" and finite(r.estimate)
        for r in records
    )
    section.tables.append(_headline_table(values, records, dataset, gain))
    diff_rows = _difference_rows(values, records, dataset)
    if diff_rows:
        caption = "Paired differences and further measurements (95% bootstrap CI)"
        section.tables.append(measure_table("ecc_differences", caption, diff_rows))
    # the leak-aware readings are the summary's lines (quoted there); here the paper's reading
    leak_aware = [line for line in ecc_lines(metrics) if line.topic != "table"]
    if disjoint:
        text = [
            "The summary above quotes the leak-aware readings (pairs disjoint from the probe's models)."
        ]
        text += [line.text for line in leak_aware if line.topic in ("no_clustering", "k_warning")]
    else:
        text = [line.text for line in leak_aware]
    text += _context_text(values, disjoint, gain)
    text += _paper_comparison_text(records)  # the paper's two comparisons, on all pairs
    choice_text = ecc_cv_choice_text(values)
    if choice_text:
        text.append(choice_text)
    if values.get("ecc_converged") is False:
        text.append(f"ECC's EM stopped before converging ({values.get('ecc_n_iter')} steps).")
    section.findings = " ".join(text) or f"No ranking-quality gain was recorded for {dataset}."
    section.extra_html = cluster_summary_html(run)
    return section


def ecc_cv_choice_text(values: Mapping[str, Any]) -> str:
    """What ECC-CV chose on each protocol seed, in words (issue 34), for the findings.

    Parameters
    ----------
    values : mapping
        ``metrics.json["ecc"]`` (its ``ecc_cv_choice``: ``words``, ``per_seed``, ``clustering``;
        its ``seeds``).

    Returns
    -------
    str
        One sentence; ``""`` when ECC-CV did not run.
    """
    choice = values.get("ecc_cv_choice")
    if not isinstance(choice, Mapping) or not choice.get("words"):
        return ""
    per_seed = [w for w in (choice.get("per_seed") or []) if w]
    seeds = values.get("seeds") if isinstance(values.get("seeds"), list) else []
    if len(seeds) != len(per_seed):
        seeds = list(range(len(per_seed)))
    text = f"ECC-CV (settings chosen by cross-validation on the training queries) chose {choice['words']}"
    if len(per_seed) > 1:
        text += " (" + "; ".join(f"seed {s}: {w}" for s, w in zip(seeds, per_seed)) + ")"
    elif per_seed:
        text += f" ({per_seed[0]})"
    text += "."
    if choice.get("clustering") is False:
        text += (
            " It deployed no clustering on any seed, so its gain is that of a tuned Bradley-Terry "
            "baseline, not a clustering gain."
        )
    return text


def _record_text(record: ComparisonRecord | None, code: str = "pct_nll") -> str:
    """A record's estimate with its interval, written as the summary table writes it."""
    if record is None or not finite(record.estimate):
        return DASH
    return record_text(record, code)


_PAPER_BASELINES = ("emb_only", "human")
"""The baselines the paper compares ECC with (its headline: +18.02 pp over embedding-only and
+17.64 pp over human labels, on all pairs)."""


def cluster_summary_html(run, *, max_rows: int = 8, n_examples: int = 2) -> str:
    """The largest ECC clusters: name (dominant category, size), top models, example queries.

    Examples come from :func:`ecc_lib.protocol.experiments.sweeps.cluster_summary`, which never shows GPQA
    queries; an example whose cluster row names no example is shown as an en dash.

    Parameters
    ----------
    run : RunContext
    max_rows : int, default 8
    n_examples : int, default 2

    Returns
    -------
    str
        Empty when the run has no cluster summary.
    """
    summary = read_table(run, "ecc", "cluster_summary")
    if summary is None or summary.empty:
        return ""
    summary = summary.sort_values("size", ascending=False).head(max_rows)
    models = sorted(
        {
            m.split(" (")[0].strip()
            for cell in summary.get("top_models", pd.Series(dtype=str)).dropna()
            for m in str(cell).split(", ")
        }
    )
    short = short_model_names(models)
    rows, named = [], []
    for row in summary.itertuples():
        top_cat = str(getattr(row, "top_categories", "") or "")
        cats = [c.strip() for c in top_cat.split(",") if c.strip()] if top_cat != "nan" else []
        named.append(cats)
        top_models = str(getattr(row, "top_models", "") or "")
        for full, brief in short.items():
            top_models = top_models.replace(full + " (", brief + " (")
        examples = str(getattr(row, "examples", "") or "")
        rows.append(
            {
                "cluster": "",
                "categories": top_cat if cats else DASH,
                "strongest models (BT score minus mean)": top_models,
                "example queries": " \u2022 ".join(examples.split(" | ")[:n_examples])
                if examples and examples != "nan"
                else DASH,
            }
        )
    # dominant category with its share; the second category where two names would be equal
    first = [f"{c[0]} (n={int(s)})" if c else "" for c, s in zip(named, summary["size"])]
    for i, (cats, size, cluster) in enumerate(zip(named, summary["size"], summary["cluster"])):
        name = cats[0] if cats else f"cluster {cluster}"
        if cats and first.count(first[i]) > 1 and len(cats) > 1:
            name = f"{cats[0]} + {cats[1]}"
        rows[i]["cluster"] = f"{name} (n={int(size)})"
    seen = pd.Series([r["cluster"] for r in rows]).value_counts()
    for r, cluster in zip(rows, summary["cluster"]):
        if seen[r["cluster"]] > 1:
            r["cluster"] += f" #{cluster}"
    return (
        "<h3>The largest ECC clusters</h3>"
        '<p class="note">Each cluster is named by its most common human category with its share (and the second category where two names would be equal) and its number of '
        "training queries. Examples are the queries the cluster is surest of; GPQA questions are never shown.</p>"
        + table_html(pd.DataFrame(rows))
    )


__all__: list[str] = []
