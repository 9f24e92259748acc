"""The run report: findings paragraphs, headline tables and their LaTeX, built from ``metrics.json``.

``notebooks/05_report.ipynb`` calls :func:`build_report` on a run folder and displays each
:class:`ReportSection` as HTML; ``ecc-lab run`` exports it to ``report.html``. Everything here is
built defensively from what the run recorded:

- a metric ``x`` with a ``x_ci95`` sibling (at any level of its dotted key) is shown as an interval,
  ``28.2% [25.1, 31.4]``; a ``x_mean`` / ``x_sd`` pair as ``mean +- sd`` over seeds;
- a ``skipped`` (or ``*_skipped``) string in a section is the one sentence that says why the section
  (or that part of it) is left out;
- sections whose notebook did not run are left out with a sentence saying so.

Each section opens with a findings paragraph generated from the numbers: what was measured, the
headline with its uncertainty, how it compares with the baselines, and plainly when a result is
negative. No query text of GPQA is ever shown (:func:`ecc_lib.ecc_experiments.cluster_summary`
leaves those queries out of the examples).
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ecc_lib import run_folder
from ecc_lib.notebook_execution import NOTEBOOK_TITLES
from ecc_lib.plotting import method_label, short_model_names

SECTION_KEYS = {"00": "tour", "01": "data", "02": "dars", "03": "ecc", "04": "routing"}
"""Metrics section recorded by each notebook (by number)."""
DASH = "\u2013"
PM = "\u00b1"


# --------------------------------------------------------------------------------------------
# formatting


def _finite(value: Any) -> bool:
    try:
        return value is not None and not isinstance(value, bool) and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


_NEGATIVE_ZERO = re.compile(r"-(?=0(?:\.0+)?(?![\d.]))")


def _no_negative_zero(function):
    """``-0.0`` reads as a negative result: write it as ``0.0``."""

    def wrapper(*args, **kwargs):
        return _NEGATIVE_ZERO.sub("", function(*args, **kwargs))

    wrapper.__doc__, wrapper.__name__ = function.__doc__, function.__name__
    return wrapper


@_no_negative_zero
def format_number(value: Any, unit: str = "") -> str:
    """One number in the report's style.

    Parameters
    ----------
    value : float or None
        ``None`` or a non-finite value gives an en dash (never "NaN").
    unit : str
        ``"%"``: a fraction shown as a percentage with one decimal (0.282 -> ``28.2%``);
        ``"pct"``: a value already in percent (28.2 -> ``28.2%``); ``"pp"``: percentage points
        with a sign; ``"count"``: an integer with thousands separators; ``"signed"``: three
        decimals with a sign; anything else: three significant decimals.

    Returns
    -------
    str
    """
    if not _finite(value):
        return DASH
    v = float(value)
    if unit == "%":
        return f"{100 * v:.1f}%"
    if unit == "pct":
        return f"{v:.1f}%"
    if unit == "pp":
        return f"{v:+.1f} pp"
    if unit == "pp_share":
        return f"{100 * v:+.1f} pp"
    if unit == "count":
        return f"{round(v):,}"
    if unit == "signed":
        return f"{v:+.3f}"
    return f"{v:.3f}"


@_no_negative_zero
def _bare(value: float, unit: str) -> str:
    """A bound of an interval: the number without its unit sign."""
    if unit == "%":
        return f"{100 * value:.1f}"
    if unit in ("pct", "pp"):
        return f"{value:.1f}" if unit == "pct" else f"{value:+.1f}"
    if unit == "pp_share":
        return f"{100 * value:+.1f}"
    if unit == "signed":
        return f"{value:+.3f}"
    return f"{value:.3f}"


def format_interval(value: Any, ci: Sequence[Any] | None, unit: str = "") -> str:
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
    if ci is None or len(ci) != 2 or not all(_finite(b) for b in ci) or text == DASH:
        return text
    return f"{text} [{_bare(float(ci[0]), unit)}, {_bare(float(ci[1]), unit)}]"


def format_mean_sd(mean: Any, sd: Any, unit: str = "", n: int | None = None) -> str:
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
    if text == DASH or not _finite(sd):
        return text
    seeds = f" ({int(n)} seeds)" if n else ""
    return f"{text} {PM} {_bare(float(sd), unit).lstrip('+')}{seeds}"


def guess_unit(key: str) -> str:
    """Unit of a metric from its key: gains are in percent, rates and shares are fractions.

    Parameters
    ----------
    key : str
        Dotted metric key.

    Returns
    -------
    str
        A unit code of :func:`format_number`.
    """
    name = key.lower()
    if "gain" in name and "gap" not in name:
        return "pct"
    if name.startswith("n_") or ".n_" in name or name.endswith("_count"):
        return "count"
    if any(w in name for w in ("rate", "share", "disagreement", "accuracy", "gap_closed", "agree")):
        return "%"
    if "minus" in name or "difference" in name or "delta" in name:
        return "signed"
    return ""


UNIT_TEXT = {
    "%": "% of queries",
    "pct": "% of global BT held-out NLL",
    "pp": "percentage points",
    "count": "count",
    "signed": "difference",
    "": "",
}


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
        method_label(p) if p in ("ecc", "emb_only", "comp_only", "human") else p for p in parts
    ]
    words = [w.replace("_", " ") for w in words]
    return words[0] + (": " + ", ".join(words[1:]) if len(words) > 1 else "")


# --------------------------------------------------------------------------------------------
# metrics helpers


def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as ``{dotted key: leaf}`` (lists stay leaves).

    Parameters
    ----------
    node : object
    prefix : str, default ""

    Returns
    -------
    dict
    """
    out: dict[str, Any] = {}
    if isinstance(node, Mapping):
        for key in node:
            out.update(flatten(node[key], f"{prefix}.{key}" if prefix else str(key)))
    else:
        out[prefix] = node
    return out


def ci_of(values: Mapping[str, Any], key: str) -> list[float] | None:
    """The ``*_ci95`` sibling of a dotted key, at any level (``a_ci95.b``, ``a.b_ci95``).

    Parameters
    ----------
    values : mapping
        Flattened metrics.
    key : str

    Returns
    -------
    list of float or None
    """
    parts = key.split(".")
    for i in range(len(parts) - 1, -1, -1):
        candidate = ".".join(parts[:i] + [parts[i] + "_ci95"] + parts[i + 1 :])
        found = values.get(candidate)
        if isinstance(found, list | tuple) and len(found) == 2:
            return list(found)
    if key + ".ci95" in values:
        return values[key + ".ci95"]
    return None


def skip_reasons(section: Any) -> dict[str, str]:
    """``{dotted key: sentence}`` of every ``skipped`` / ``*_skipped`` string in a section.

    Parameters
    ----------
    section : mapping or str

    Returns
    -------
    dict
    """
    if isinstance(section, str):
        return {"": section}
    reasons = {}
    for key, value in flatten(section).items():
        last = key.rsplit(".", 1)[-1]
        if isinstance(value, str) and value and (last == "skipped" or last.endswith("_skipped")):
            reasons[key] = value
    return reasons


def generic_rows(values: Mapping[str, Any], used: set[str], dataset: str) -> list[dict[str, str]]:
    """Rows for metrics with an interval or a mean/sd pair that no curated row has shown.

    Parameters
    ----------
    values : mapping
        Flattened section (:func:`flatten`).
    used : set of str
        Dotted keys (and prefixes) already shown.
    dataset : str

    Returns
    -------
    list of dict
        ``dataset``, ``measure``, ``estimate``, ``unit`` rows.
    """

    def is_used(key: str) -> bool:
        return any(key == u or key.startswith(u + ".") for u in used)

    def row(base: str, estimate: str, unit: str, suffix: str = "") -> dict[str, str]:
        return {
            "dataset": dataset,
            "measure": humanise(base) + suffix,
            "estimate": estimate,
            "unit": UNIT_TEXT.get(unit, ""),
        }

    rows = []
    for key, value in values.items():
        if is_used(key) or not _finite(value):
            continue
        unit = guess_unit(key)
        # mean and sd over seeds: x_mean / x_sd (x_n_seeds) or x.mean / x.sd (x.n)
        sep = "_" if key.endswith("_mean") else "." if key.endswith(".mean") else ""
        if sep:
            base = key[: -len(sep + "mean")]
            sd = values.get(base + sep + "sd")
            if sd is not None:
                n = next(
                    (
                        values[base + sep + k]
                        for k in ("n_seeds", "n")
                        if _finite(values.get(base + sep + k))
                    ),
                    None,
                )
                rows.append(
                    row(base, format_mean_sd(value, sd, unit, n), unit, " (mean over seeds)")
                )
            continue
        # {"estimate": x, "ci95": [low, high]}
        if key.endswith(".estimate"):
            base = key[: -len(".estimate")]
            rows.append(row(base, format_interval(value, values.get(base + ".ci95"), unit), unit))
            continue
        ci = ci_of(values, key)
        if ci is not None:
            rows.append(row(key, format_interval(value, ci, unit), unit))
    return rows


# --------------------------------------------------------------------------------------------
# the report


@dataclass
class Figure:
    """A figure of the run.

    Parameters
    ----------
    name : str
        File name without extension.
    png : str
        Path of the PNG.
    caption : str
    """

    name: str
    png: str
    caption: str


@dataclass
class HeadlineTable:
    """A headline table.

    Parameters
    ----------
    name : str
        File stem under ``tables/`` (CSV and LaTeX).
    caption : str
    frame : DataFrame
        Formatted cells.
    """

    name: str
    caption: str
    frame: pd.DataFrame


@dataclass
class ReportSection:
    """One section of the report (one notebook).

    Attributes
    ----------
    number : str
        Notebook number (``"03"``).
    title : str
    findings : str
        The opening paragraph (plain text).
    tables : list of HeadlineTable
    figures : list of Figure
    notes : list of str
        Sentences on parts of the section that do not apply.
    skipped : str
        Non-empty when the whole section is left out: the sentence saying why.
    extra_html : str
        Further HTML (the cluster summary).
    """

    number: str
    title: str
    findings: str = ""
    tables: list[HeadlineTable] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str = ""
    extra_html: str = ""

    def to_html(self, figure_start: int = 1) -> str:
        """The section as HTML (findings first, then notes, tables, figures).

        Parameters
        ----------
        figure_start : int, default 1
            Number of the section's first figure.

        Returns
        -------
        str
        """
        anchor = self.number or re.sub(r"\W+", "-", self.title.lower())
        parts = [f'<section class="report-section" id="section-{anchor}">']
        heading = f"{self.number} {self.title}" if self.number else self.title
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        if self.skipped:
            parts.append(f'<p class="skipped">{html.escape(self.skipped)}</p></section>')
            return "\n".join(parts)
        parts.append(f'<p class="findings">{html.escape(self.findings)}</p>')
        for note in self.notes:
            parts.append(f'<p class="note">{html.escape(note)}</p>')
        for table in self.tables:
            parts.append(table_html(table.frame, table.caption))
        parts.append(self.extra_html)
        for i, figure in enumerate(self.figures, start=figure_start):
            parts.append(figure_html(figure, i))
        parts.append("</section>")
        return "\n".join(p for p in parts if p)


@dataclass
class Report:
    """The whole report.

    Parameters
    ----------
    title : str
    intro : str
    sections : list of ReportSection
    appendix_html : str, default ""
    """

    title: str
    intro: str
    sections: list[ReportSection]
    appendix_html: str = ""

    def headline_tables(self) -> list[HeadlineTable]:
        """Every headline table of every section.

        Returns
        -------
        list of HeadlineTable
        """
        return [t for s in self.sections if not s.skipped for t in s.tables]

    def section_html(self) -> list[str]:
        """HTML of each section, figures numbered through the report.

        Returns
        -------
        list of str
        """
        out, start = [], 1
        for section in self.sections:
            out.append(section.to_html(figure_start=start))
            if not section.skipped:
                start += len(section.figures)
        return out

    def header_html(self) -> str:
        """Title and introduction.

        Returns
        -------
        str
        """
        return f"<h1>{html.escape(self.title)}</h1>\n<p>{html.escape(self.intro)}</p>"


def table_html(frame: pd.DataFrame, caption: str = "") -> str:
    """A table without index column or NaN (empty cells become an en dash).

    Parameters
    ----------
    frame : DataFrame
    caption : str, default ""

    Returns
    -------
    str
    """
    shown = frame.astype(object).where(frame.notna(), DASH)
    body = shown.to_html(index=False, border=0, classes="report-table", escape=True)
    if caption:
        body = body.replace(
            '<table border="0" class="dataframe report-table">',
            f'<table class="dataframe report-table"><caption>{html.escape(caption)}</caption>',
            1,
        )
    return body


def figure_html(figure: Figure, number: int) -> str:
    """An embedded PNG whose alt text is the figure's caption.

    Parameters
    ----------
    figure : Figure
    number : int

    Returns
    -------
    str
    """
    data = base64.b64encode(Path(figure.png).read_bytes()).decode("ascii")
    caption = html.escape(figure.caption, quote=True)
    return (
        f'<figure id="figure-{html.escape(figure.name)}">'
        f'<img src="data:image/png;base64,{data}" alt="{caption}">'
        f"<figcaption><b>Figure {number}</b> (<code>{html.escape(figure.name)}</code>). "
        f"{caption}</figcaption></figure>"
    )


def _read_csv(run: run_folder.RunContext, name: str) -> pd.DataFrame | None:
    path = run.tables_dir / f"{name}.csv"
    return pd.read_csv(path) if path.exists() else None


def _row(dataset: str, measure: str, estimate: str, unit: str = "") -> dict[str, str]:
    return {"dataset": dataset, "measure": measure, "estimate": estimate, "unit": unit}


def _frame(rows: list[dict[str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["dataset", "measure", "estimate", "unit"])


def _ci_text(ci: Sequence[Any] | None, unit: str) -> str:
    if ci is None or len(ci) != 2 or not all(_finite(b) for b in ci):
        return ""
    return f" [{_bare(float(ci[0]), unit)}, {_bare(float(ci[1]), unit)}]"


def _verdict(ci: Sequence[Any] | None, better: str, worse: str, same: str) -> str:
    if ci is None or not all(_finite(b) for b in ci):
        return same
    if float(ci[0]) > 0:
        return better
    if float(ci[1]) < 0:
        return worse
    return same


# ---------------------------------------------------------------------------------- sections


def _tour_section(values: Mapping[str, Any], section: ReportSection) -> None:
    flat = flatten(values)
    rows, used = [], {"ari", "ari_ci95", "ari_difference", "ari_difference_ci95"}
    names = {"ecc": "ECC", "emb_only": "embedding-only clusters", "labels": "topic labels"}
    ari = values.get("ari", {}) or {}
    for key, value in ari.items():
        rows.append(
            _row(
                "synthetic",
                f"ARI with planted capability clusters: {names.get(key, key)}",
                format_interval(value, (values.get("ari_ci95") or {}).get(key)),
                "adjusted Rand index (1 = exact)",
            )
        )
    diff, diff_ci = values.get("ari_difference"), values.get("ari_difference_ci95")
    if _finite(diff):
        rows.append(
            _row(
                "synthetic",
                "ARI of ECC minus ARI of embedding-only",
                format_interval(diff, diff_ci, "signed"),
                "difference of ARI",
            )
        )
    for key, label in (
        ("single_shot_accuracy", "single-shot label names the true best model"),
        ("distribution_accuracy", "label from all observations names the true best model"),
        ("winner_flip_rate", "two single-shot labels disagree (flip rate)"),
    ):
        if _finite(values.get(key)):
            used |= {key, key + "_ci95"}
            rows.append(
                _row(
                    "synthetic",
                    label,
                    format_interval(values[key], values.get(key + "_ci95"), "%"),
                    "% of queries",
                )
            )
    rows += generic_rows(flat, used | {"n_queries", "n_models"}, "synthetic")
    section.tables.append(
        HeadlineTable(
            "05_tour_headline",
            "Tour on planted data: headline numbers (95% bootstrap CI over queries)",
            _frame(rows),
        )
    )
    text = []
    if ari:
        e = ari.get("ecc")
        text.append(
            f"On {values.get('n_queries', 'the')} synthetic queries whose topic (visible in the "
            f"embedding and the label) is independent of the capability cluster that decides "
            f"which model wins, ECC recovers the planted capability clusters with an adjusted Rand "
            f"index of {format_interval(e, (values.get('ari_ci95') or {}).get('ecc'))}, against "
            f"{format_number(ari.get('emb_only'))} for embedding-only clusters and "
            f"{format_number(ari.get('labels'))} for the topic labels."
        )
        if _finite(diff):
            text.append(
                _verdict(
                    diff_ci,
                    f"The paired difference over embedding-only is "
                    f"{format_interval(diff, diff_ci, 'signed')}: ECC is measurably better.",
                    f"The paired difference over embedding-only is "
                    f"{format_interval(diff, diff_ci, 'signed')}: ECC is worse here.",
                    f"The paired difference over embedding-only is "
                    f"{format_interval(diff, diff_ci, 'signed')}: no measurable difference.",
                )
            )
    if _finite(values.get("single_shot_accuracy")):
        text.append(
            f"With repeated answers, one sampled answer per model names the true best model for "
            f"{format_interval(values['single_shot_accuracy'], values.get('single_shot_accuracy_ci95'), '%')} "
            f"of queries, the label from all observations for "
            f"{format_interval(values.get('distribution_accuracy'), values.get('distribution_accuracy_ci95'), '%')}; "
            f"two single-shot labels of the same query disagree "
            f"{format_interval(values.get('winner_flip_rate'), values.get('winner_flip_rate_ci95'), '%')} of the time."
        )
    section.findings = " ".join(text) or "The tour recorded no numbers."


def _observations_text(summary: Mapping[str, Any]) -> str:
    rewrites, decodes = int(summary.get("n_variants") or 1), int(summary.get("n_decodes") or 1)
    if rewrites * decodes == 1:
        return "1 (no repeats)"
    return (
        f"{rewrites * decodes} ({rewrites} rewrite{'s' if rewrites > 1 else ''} x "
        f"{decodes} decode{'s' if decodes > 1 else ''})"
    )


def _data_section(values: Mapping[str, Any], section: ReportSection, run) -> None:
    datasets = values.get("datasets", {}) or {}
    scores = _read_csv(run, "01_model_scores")
    rows, sentences = [], []
    for name, summary in datasets.items():
        summary = summary or {}
        obs = (summary.get("n_variants") or 1) * (summary.get("n_decodes") or 1)
        best, best_text = None, DASH
        if scores is not None and {"model", "score"} <= set(scores.columns):
            part = scores[scores["dataset"] == name] if "dataset" in scores else scores
            if len(part):
                top = part.sort_values("score", ascending=False).iloc[0]
                best = str(top["model"])
                best_text = f"{short_model_names([best])[best]}: " + format_interval(
                    top["score"], [top.get("low"), top.get("high")]
                )
        elif summary.get("mean_score"):
            best = max(summary["mean_score"], key=summary["mean_score"].get)
            best_text = (
                f"{short_model_names([best])[best]}: {format_number(summary['mean_score'][best])}"
            )
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
                else f"{obs} observations per pair"
            )
            + (f"; its best model on average is {best_text}" if best else "")
        )
    section.tables.append(
        HeadlineTable(
            "05_data_headline",
            "Datasets of the run (mean score: fraction correct, 95% bootstrap CI over queries)",
            pd.DataFrame(rows),
        )
    )
    section.findings = (
        f"The run covers {len(datasets)} dataset{'s' if len(datasets) != 1 else ''}. "
        + ". ".join(sentences)
        + ". A dataset with one observation per pair supports clustering and routing but not the label-instability measurements, which need repeated observations."
    )


def _dars_section(values: Mapping[str, Any], section: ReportSection) -> None:
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
    readings = (
        ("winner_flip_rate", "pairwise", f"two single-shot labels name different winners ({side})"),
        ("winner_flip_rate_strict", "strict", "strict flip: the two draws' top sets are disjoint"),
        ("winner_change_rate", "change", f"the winner changes within {r or 'R'} draws"),
        ("single_vs_distribution_disagreement", None, "single-shot label differs from argmax U"),
    )
    for key, reading, label in readings:
        if _finite(values.get(key)):
            used |= {key, key + "_ci95"}
            level = chance.get(reading) if reading else None
            rows.append(
                _row(
                    dataset,
                    label + (f" (chance {format_number(level, '%')})" if _finite(level) else ""),
                    format_interval(values[key], values.get(key + "_ci95"), "%"),
                    "% of queries",
                )
            )
    used |= {"flip_rate_chance", "winner_change_rate_r"}
    side_rows = []
    missing = [name for name, summary in by_side.items() if not summary]
    sources = {"input": "rewrites", "output": "decodes", "both": "rewrites and decodes"}
    for name, summary in by_side.items():
        if not summary:
            section.notes.append(
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
                "flip rate": format_interval(
                    summary.get("winner_flip_rate"), summary.get("winner_flip_rate_ci95"), "%"
                ),
                "unstable pairs": format_interval(
                    summary.get("unstable_pair_share"), summary.get("unstable_pair_share_ci95"), "%"
                ),
                "queries": format_number(summary.get("n_queries"), "count"),
            }
        )
    rows += generic_rows(flat, used, dataset)
    section.tables.append(
        HeadlineTable(
            "05_dars_headline",
            f"Label instability on {dataset} (95% bootstrap CI over queries)",
            _frame(rows),
        )
    )
    if side_rows:
        section.tables.append(
            HeadlineTable(
                "05_dars_by_side",
                "Flip rate and share of pairs whose observations disagree, by source of randomness",
                pd.DataFrame(side_rows),
            )
        )
    rate, ci = values.get("winner_flip_rate"), values.get("winner_flip_rate_ci95")
    if not _finite(rate):
        section.findings = f"{dataset} has no (query, model) pair with two observations, so the flip rate is not measured."
        return
    present = [sources.get(n, n) for n, v in by_side.items() if v and n != "both"]
    origin = " and ".join(present) if present else sources.get(side, side)
    text = (
        f"On {dataset}, two single-shot labels of the same query (one sampled observation per model, "
        f"randomness from {origin}) name different best models "
        f"{format_interval(rate, ci, '%')} of the time"
    )
    if _finite(chance.get("pairwise")):
        text += (
            f"; with {n_models or 'these'} models that always tie, a random tie-break would flip "
            f"{format_number(chance['pairwise'], '%')} of the time"
        )
    text += "."
    strict, change = values.get("winner_flip_rate_strict"), values.get("winner_change_rate")
    if _finite(strict):
        text += (
            f" Counting a flip only when the two draws' sets of top-scoring models are disjoint "
            f"(no tie involved), the rate is {format_interval(strict, values.get('winner_flip_rate_strict_ci95'), '%')}"
            + (
                f"; the winner changes within {r} draws for "
                f"{format_interval(change, values.get('winner_change_rate_ci95'), '%')} of queries"
                + (
                    f" (chance {format_number(chance.get('change'), '%')})"
                    if _finite(chance.get("change"))
                    else ""
                )
                if _finite(change)
                else ""
            )
            + "."
        )
    dis = values.get("single_vs_distribution_disagreement")
    if _finite(dis):
        text += (
            f" The single-shot winner differs from the distribution-aware label argmax U on "
            f"{format_interval(dis, values.get('single_vs_distribution_disagreement_ci95'), '%')} of queries."
        )
    shares = [
        s.get("tied_top_share") for s in by_side.values() if s and _finite(s.get("tied_top_share"))
    ]
    if shares:
        text += f" Several models share the best drawn score in {100 * shares[0]:.1f}% of draws, so many flips come from tie-breaking among equally good models."
    section.findings = text


GAIN_METHODS = ("ecc", "emb_only", "comp_only", "human")


def _ecc_section(values: Mapping[str, Any], section: ReportSection, run) -> None:
    flat = flatten(values)
    dataset = str(values.get("dataset", ""))
    gain = values.get("ranking_quality_gain") or {}
    gain_ci = values.get("ranking_quality_gain_ci95") or {}
    nll, acc, tau = (
        values.get("nll") or {},
        values.get("accuracy") or {},
        values.get("within_cluster_tau") or {},
    )
    rows = []
    for method in [
        "global",
        *[m for m in GAIN_METHODS if m in gain],
        *[m for m in gain if m not in GAIN_METHODS],
    ]:
        if method != "global" and method not in gain:
            continue
        rows.append(
            {
                "dataset": dataset,
                "method": method_label(method),
                "gain over global BT (% of NLL) [95% CI]": "0 (reference)"
                if method == "global"
                else format_interval(gain.get(method), gain_ci.get(method), "pct"),
                "held-out NLL (nats per comparison)": format_number(nll.get(method)),
                "pairwise accuracy": format_number(acc.get(method), "%"),
                "within-cluster Kendall tau": format_number(tau.get(method)),
            }
        )
    section.tables.append(
        HeadlineTable(
            "05_ecc_headline",
            f"Ranking quality on held-out comparisons of {dataset} (95% bootstrap CI over test queries)",
            pd.DataFrame(rows),
        )
    )
    differences = values.get("gain_differences") or {}
    diff_rows = [
        _row(
            dataset,
            f"gain of ECC minus {method_label(k.split('_minus_', 1)[-1])}",
            format_interval(d.get("estimate"), d.get("ci95"), "pct").replace("%", " pp"),
            "percentage points",
        )
        for k, d in differences.items()
        if isinstance(d, Mapping)
    ]
    used = {
        "ranking_quality_gain",
        "ranking_quality_gain_ci95",
        "gain_differences",
        "nll",
        "accuracy",
        "within_cluster_tau",
        "gain_vs_probes",
        "gain_vs_k",
        "dataset",
    }
    diff_rows += generic_rows(flat, used, dataset)
    if diff_rows:
        section.tables.append(
            HeadlineTable(
                "05_ecc_differences",
                "Paired differences and further measurements (95% bootstrap CI)",
                _frame(diff_rows),
            )
        )
    text = []
    if _finite(gain.get("ecc")):
        text.append(
            f"On {dataset} ({format_number(values.get('n_queries'), 'count')} queries: "
            f"{format_number(values.get('n_train'), 'count')} to fit, {format_number(values.get('n_test'), 'count')} held out, "
            f"{format_number(values.get('n_scored_pairs'), 'count')} held-out comparisons scored), ECC reduces the held-out "
            f"pairwise negative log-likelihood of one global Bradley-Terry model by "
            f"{format_interval(gain['ecc'], gain_ci.get('ecc'), 'pct')}."
        )
    for key, d in differences.items():
        if not isinstance(d, Mapping):
            continue
        other = method_label(key.split("_minus_", 1)[-1])
        est = (
            f"{float(d['estimate']):+.1f} points{_ci_text(d.get('ci95'), 'pp')}"
            if _finite(d.get("estimate"))
            else DASH
        )
        text.append(
            _verdict(
                d.get("ci95"),
                f"It beats {other} by {est}.",
                f"It does worse than {other}: {est}.",
                f"Against {other} the difference is {est}, not distinguishable from zero.",
            )
        )
    best = max(gain, key=lambda m: gain[m] if _finite(gain[m]) else -math.inf) if gain else None
    if best and best != "ecc" and _finite(gain.get(best)):
        versus = differences.get(f"ecc_minus_{best}")
        ci = versus.get("ci95") if isinstance(versus, Mapping) else None
        text.append(
            f"The largest point estimate is that of {method_label(best)} "
            f"({format_number(gain[best], 'pct')}), not ECC"
            + (
                "; the two are not distinguishable."
                if ci and all(_finite(b) for b in ci) and float(ci[0]) <= 0 <= float(ci[1])
                else "."
            )
        )
    if values.get("ecc_converged") is False:
        text.append(f"ECC's EM stopped before converging ({values.get('ecc_n_iter')} steps).")
    section.findings = " ".join(text) or f"No ranking-quality gain was recorded for {dataset}."
    section.extra_html = cluster_summary_html(run)


def cluster_summary_html(run, max_rows: int = 8, n_examples: int = 2) -> str:
    """The largest ECC clusters: name (dominant category, size), top models, example queries.

    Examples come from :func:`ecc_lib.ecc_experiments.cluster_summary`, which never shows GPQA
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
    summary = _read_csv(run, "03_cluster_summary")
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
    rows = []
    for row in summary.itertuples():
        top_cat = str(getattr(row, "top_categories", "") or "")
        top = (
            top_cat.split(",")[0].strip().rsplit(" ", 1)[0] if top_cat and top_cat != "nan" else ""
        )
        name = top or f"cluster {row.cluster}"
        top_models = str(getattr(row, "top_models", "") or "")
        for full, brief in short.items():
            top_models = top_models.replace(full + " (", brief + " (")
        examples = str(getattr(row, "examples", "") or "")
        rows.append(
            {
                "cluster": f"{name} (n={int(row.size)})",
                "categories": top_cat if top_cat != "nan" else DASH,
                "strongest models (BT score minus mean)": top_models,
                "example queries": " \u2022 ".join(examples.split(" | ")[:n_examples])
                if examples and examples != "nan"
                else DASH,
            }
        )
    return (
        "<h3>The largest ECC clusters</h3>"
        '<p class="note">Each cluster is named by its most common human category and its number of '
        "training queries. Examples are the queries the cluster is surest of; GPQA questions are never shown.</p>"
        + table_html(pd.DataFrame(rows))
    )


def _routing_section(
    values: Mapping[str, Any], section: ReportSection, parameters: Mapping[str, Any]
) -> None:
    headline = values.get("headline") or {}
    flat = flatten(headline)
    dataset = str(headline.get("dataset", ""))
    score, score_ci = headline.get("score") or {}, headline.get("score_ci95") or {}
    utility, gap = headline.get("utility") or {}, headline.get("gap_closed") or {}
    rows = []
    for name, value in score.items():
        router, _, supervision = name.partition(" (")
        rows.append(
            {
                "dataset": dataset,
                "router": router,
                "supervision": supervision.rstrip(")"),
                "held-out score [95% CI]": format_interval(value, score_ci.get(name)),
                "utility U": format_number(utility.get(name)),
                "gap closed": format_number(gap.get(name), "%") if name in gap else DASH,
            }
        )
    section.tables.append(
        HeadlineTable(
            "05_routing_headline",
            f"Routers on {dataset}: mean held-out score of the chosen model (0-1, 95% bootstrap CI over test queries); gap closed: share of the utility gap from the best fixed model (0%) to the oracle (100%)",
            pd.DataFrame(rows),
        )
    )
    used = {
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
    paired = headline.get("dars_minus_single_shot") or {}
    if isinstance(paired, Mapping) and paired:
        paired_rows = []
        for name, d in paired.items():
            if not isinstance(d, Mapping):
                continue
            gap_ss, gap_dars = d.get("gap_closed_single_shot"), d.get("gap_closed_dars")
            paired_rows.append(
                {
                    "dataset": dataset,
                    "router": name,
                    "score: DARS minus single-shot": format_interval(
                        d.get("score"), d.get("score_ci95"), "signed"
                    ),
                    "utility: DARS minus single-shot": format_interval(
                        d.get("utility"), d.get("utility_ci95"), "signed"
                    ),
                    "gap closed: single-shot to DARS": (
                        f"{format_number(gap_ss, '%')} to {format_number(gap_dars, '%')} "
                        f"({format_interval(d.get('gap_closed_diff'), d.get('gap_closed_diff_ci95'), 'pp_share')})"
                    ),
                }
            )
        section.tables.append(
            HeadlineTable(
                "05_routing_dars_minus_single_shot",
                f"DARS targets minus single-shot labels, paired per router family on {dataset} "
                "(score and utility in score units; 95% intervals over test queries and single-shot runs)",
                pd.DataFrame(paired_rows),
            )
        )
    extra = []
    if not paired:
        for name, value in (headline.get("dars_minus_single_shot_utility") or {}).items():
            extra.append(
                _row(
                    dataset,
                    f"DARS minus single-shot utility: {name}",
                    format_interval(
                        value,
                        (headline.get("dars_minus_single_shot_utility_ci95") or {}).get(name),
                        "signed",
                    ),
                    "score units",
                )
            )
    cost_dataset = str(
        (parameters or {}).get("cost_dataset") or values.get("cost_dataset") or "the cost dataset"
    )
    for name, value in (headline.get("pareto_area") or {}).items():
        if _finite(value):
            extra.append(
                _row(
                    cost_dataset,
                    f"area under the cost-quality Pareto front: {name}",
                    format_number(value),
                    "score x normalised cost",
                )
            )
    extra += generic_rows(flat, used, dataset)
    if extra:
        section.tables.append(
            HeadlineTable(
                "05_routing_more", "Supervision effect and cost-quality trade-off", _frame(extra)
            )
        )
    best_fixed = headline.get("best_fixed_model")
    ref = "Best fixed model (reference)"
    learned = {k: v for k, v in score.items() if "(reference)" not in k and _finite(v)}
    text = []
    if learned and _finite(score.get(ref)):
        top = max(learned, key=learned.get)
        text.append(
            f"On {dataset}, the best fixed model ({short_model_names([str(best_fixed)]).get(str(best_fixed), best_fixed)}) "
            f"scores {format_interval(score[ref], score_ci.get(ref))} on held-out queries and the per-query oracle "
            f"{format_interval(score.get('Oracle (reference)'), score_ci.get('Oracle (reference)'))}."
        )
        if learned[top] > score[ref]:
            text.append(
                f"The best router, {top}, scores {format_interval(learned[top], score_ci.get(top))}, above the best fixed model."
            )
        else:
            text.append(
                f"No router beats the best fixed model: the best, {top}, scores "
                f"{format_interval(learned[top], score_ci.get(top))}"
                + (
                    f" and closes {format_number(gap.get(top), '%')} of the gap to the oracle."
                    if top in gap
                    else "."
                )
            )
        margin = headline.get("best_router_utility_minus_fixed")
        if _finite(margin):
            text.append(
                f"The best router's utility minus the best fixed model's is "
                f"{format_interval(margin, headline.get('best_router_utility_minus_fixed_ci95'), 'signed')}."
            )
    diffs = headline.get("dars_minus_single_shot_utility") or {}
    if isinstance(paired, Mapping) and paired:
        parts, better, worse = [], 0, 0
        for name, d in paired.items():
            if isinstance(d, Mapping) and _finite(d.get("utility")):
                ci = d.get("utility_ci95")
                parts.append(f"{name} {format_interval(d['utility'], ci, 'signed')}")
                if ci and all(_finite(b) for b in ci):
                    better += float(ci[0]) > 0
                    worse += float(ci[1]) < 0
        if parts:
            text.append(
                "Training on DARS targets instead of single-shot labels changes the held-out utility by "
                + ", ".join(parts)
                + f": {better} of {len(parts)} router families gain measurably"
                + (f", {worse} lose" if worse else "")
                + (", the others are within noise." if better + worse < len(parts) else ".")
            )
    elif diffs:
        parts = ", ".join(f"{k} {float(v):+.3f}" for k, v in diffs.items() if _finite(v))
        positive = sum(float(v) > 0 for v in diffs.values() if _finite(v))
        text.append(
            f"Training on DARS targets instead of single-shot labels changes the held-out utility by {parts} "
            f"({positive} of {len(diffs)} router families gain)."
        )
    areas = {k: v for k, v in (headline.get("pareto_area") or {}).items() if _finite(v)}
    if areas:
        learned_areas = {k: v for k, v in areas.items() if "(reference)" not in k}
        fixed = areas.get("Best fixed model (reference)")
        if learned_areas and fixed is not None:
            top = max(learned_areas, key=learned_areas.get)
            verdict = "above" if learned_areas[top] > fixed else "not above"
            text.append(
                f"On {cost_dataset} with model prices, the largest area under the cost-quality Pareto front is "
                f"{top}'s {learned_areas[top]:.3f}, {verdict} the best fixed model's {fixed:.3f}"
                + (
                    f" (oracle {areas['Oracle (reference)']:.3f})."
                    if "Oracle (reference)" in areas
                    else "."
                )
            )
    section.findings = " ".join(text) or f"No routing result was recorded for {dataset}."


# ---------------------------------------------------------------------------------- assembly


def _datasets_of(metrics: Mapping[str, Any]) -> list[str]:
    names: list[str] = []
    names += list((metrics.get("data") or {}).get("datasets", {}) or {})
    for key in ("dars", "ecc"):
        names.append(str((metrics.get(key) or {}).get("dataset") or ""))
    names.append(str(((metrics.get("routing") or {}).get("headline") or {}).get("dataset") or ""))
    return [n for n in dict.fromkeys(names) if n]


def report_title(metrics: Mapping[str, Any], run_name: str) -> str:
    """``ecc_lib report: dcrouter and re2, run NAME``.

    Parameters
    ----------
    metrics : mapping
    run_name : str

    Returns
    -------
    str
    """
    names = _datasets_of(metrics)
    joined = (
        (", ".join(names[:-1]) + " and " + names[-1])
        if len(names) > 1
        else (names[0] if names else "no dataset")
    )
    return f"ecc_lib report: {joined}, run {run_name}"


def build_report(run_dir: str | os.PathLike | run_folder.RunContext, title: str = "") -> Report:
    """Read a run folder and build the report (sections in notebook order).

    Parameters
    ----------
    run_dir : path or RunContext
    title : str, optional
        Heading of the report; default :func:`report_title` (datasets and run name).

    Returns
    -------
    Report
    """
    run = run_folder.run_context(run_dir)
    metrics = run_folder.collect_metrics(run)
    parameters = metrics.get("parameters", {})
    figures = run_folder.list_figures(run)
    run_json = run.run_dir / run_folder.RUN_FILE
    record = json.loads(run_json.read_text()) if run_json.exists() else {}
    ran = set(record.get("notebooks", []))
    sections = []
    for number, key in SECTION_KEYS.items():
        section = ReportSection(number, NOTEBOOK_TITLES.get(number, key))
        shown = figures[figures["notebook"] == number]
        section.figures = [Figure(f.name, f.png, f.caption) for f in shown.itertuples()]
        values = metrics.get(key)
        reasons = skip_reasons(values) if values is not None else {}
        if values is None:
            notebook_ran = any(n.startswith(number) for n in ran)
            section.skipped = (
                f"This section is left out: notebook {number} ran but recorded no {key!r} metrics."
                if notebook_ran
                else f"This section is left out: notebook {number} was not run in this run."
            )
        elif "" in reasons or "skipped" in reasons:
            section.skipped = "This section is left out: " + (reasons.get("") or reasons["skipped"])
        else:
            for where, reason in reasons.items():
                section.notes.append(
                    f"Not measured ({where.replace('_skipped', '').replace('.', ' ')}): {reason}"
                )
            builder = {
                "tour": lambda v, s: _tour_section(v, s),
                "data": lambda v, s: _data_section(v, s, run),
                "dars": lambda v, s: _dars_section(v, s),
                "ecc": lambda v, s: _ecc_section(v, s, run),
                "routing": lambda v, s: _routing_section(v, s, parameters.get("routing", {})),
            }[key]
            builder(values, section)
        if key == "data" and not section.skipped:
            section.notes += data_notes(metrics.get("data_policy") or {})
        sections.append(section)
    known = {*SECTION_KEYS.values(), "parameters", "provenance", "data_policy"}
    for key in sorted(k for k in metrics if k not in known):
        sections.append(other_section(key, metrics[key]))
    n_tables = len(run_folder.list_tables(run))
    intro = (
        f"Run folder {run.run_dir.name}: {len(figures)} figures (PNG and PDF under figures/), "
        f"{n_tables} tables (CSV under tables/, headline tables also as LaTeX), all numbers in metrics.json. "
        "Intervals are 95% percentile-bootstrap intervals over queries; 'mean \u00b1 sd' is over seeds. "
    )
    try:
        from ecc_lib import provenance

        git = provenance.provenance(run).get("git", {})
    except Exception:  # provenance is informative only
        git = {}
    if git:
        intro += f"Code at git commit {git.get('commit') or 'unknown'}" + (
            " with local changes." if git.get("dirty") else "."
        )
    return Report(
        title=title or report_title(metrics, run.run_dir.name),
        intro=intro,
        sections=sections,
        appendix_html=appendix_html(metrics, run),
    )


def data_notes(policy: Mapping[str, Any]) -> list[str]:
    """The data checks' notes per dataset (``metrics.json["data_policy"]``) as sentences.

    Parameters
    ----------
    policy : mapping

    Returns
    -------
    list of str
    """
    notes = []
    for name, entry in policy.items():
        if not isinstance(entry, Mapping):
            continue
        for note in entry.get("notes") or []:
            text = str(note).strip()
            notes.append(
                f"{name}: {text[0].upper() + text[1:] if text else text}".rstrip(".") + "."
            )
    return notes


def other_section(key: str, values: Any) -> ReportSection:
    """A section for metrics no builder knows: every value with an interval or a seed spread.

    Parameters
    ----------
    key : str
        Section name in ``metrics.json``.
    values : mapping

    Returns
    -------
    ReportSection
    """
    section = ReportSection("", key.replace("_", " ").capitalize())
    reasons = skip_reasons(values)
    if "" in reasons or "skipped" in reasons:
        section.skipped = "This section is left out: " + (reasons.get("") or reasons["skipped"])
        return section
    dataset = str(values.get("dataset", "")) if isinstance(values, Mapping) else ""
    rows = generic_rows(flatten(values), set(), dataset)
    if rows:
        section.tables.append(
            HeadlineTable(f"05_{key}_headline", f"{key}: values with 95% intervals", _frame(rows))
        )
        section.findings = (
            f"This run recorded {len(rows)} {key.replace('_', ' ')} value"
            f"{'s' if len(rows) != 1 else ''} with an interval or a spread over seeds"
            + (f" on {dataset}" if dataset else "")
            + "; the table lists them."
        )
    else:
        section.findings = (
            f"This run recorded {key.replace('_', ' ')} values without intervals; see metrics.json."
        )
    return section


def _compact(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(_compact(v) for v in value) or DASH
    if value is None or value == "":
        return DASH
    if isinstance(value, float) and not math.isfinite(value):
        return DASH
    return str(value)


def appendix_html(metrics: Mapping[str, Any], run) -> str:
    """Parameters of each section and the provenance, as compact tables (no NaN).

    Parameters
    ----------
    metrics : mapping
    run : RunContext

    Returns
    -------
    str
    """
    rows = [
        {
            "section": section,
            "parameters": "; ".join(f"{k} = {_compact(v)}" for k, v in sorted(params.items())),
        }
        for section, params in (metrics.get("parameters") or {}).items()
    ]
    parts = ["<h2>Appendix: parameters and provenance</h2>"]
    if rows:
        parts.append(table_html(pd.DataFrame(rows), "Parameters of each section"))
    try:
        from ecc_lib import provenance

        prov = provenance.provenance(run)
    except Exception:
        prov = {}
    packages = prov.get("packages") or {}
    if packages:
        parts.append(
            "<p>Packages: "
            + html.escape(", ".join(f"{k} {v}" for k, v in sorted(packages.items())))
            + "</p>"
        )
    datasets = prov.get("datasets") or {}
    if datasets:
        rows = []
        for name, info in datasets.items():
            files = info.items() if isinstance(info, Mapping) else [(name, info)]
            rows += [
                {"dataset": name, "file": f, "sha256 (first 16)": _compact(h)[:16]}
                for f, h in files
            ]
        frame = pd.DataFrame(rows)
        parts.append(table_html(frame, "Dataset files (sha256)"))
    return "\n".join(parts)


# ---------------------------------------------------------------------------------- LaTeX

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    PM: r"$\pm$",
    DASH: "--",
    "\u2022": r"\textbullet{}",
    "\u2026": r"\ldots{}",
}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIAL))


def latex_escape(text: Any) -> str:
    """Text with LaTeX's special characters escaped (and +-, en dash as LaTeX).

    Parameters
    ----------
    text : object

    Returns
    -------
    str
    """
    return _LATEX_RE.sub(lambda m: _LATEX_SPECIAL[m.group(0)], str(text))


def latex_table(frame: pd.DataFrame, caption: str = "", label: str = "") -> str:
    """A booktabs table (``\\toprule``, ``\\midrule``, ``\\bottomrule``) of string cells.

    Parameters
    ----------
    frame : DataFrame
        Shown without its index; missing cells become ``--``.
    caption, label : str, optional

    Returns
    -------
    str
        A ``table`` environment (``table*``, spanning both columns, for more than four
        columns); needs ``\\usepackage{booktabs}``.
    """
    shown = frame.astype(object).where(frame.notna(), DASH)
    spec = "l" * shown.shape[1]
    # more than four columns do not fit a column of a two-column paper: span the page
    env = "table*" if shown.shape[1] > 4 else "table"
    lines = [r"\begin{" + env + "}[t]", r"\centering", r"\small"]
    if caption:
        lines.append(r"\caption{" + latex_escape(caption) + "}")
    if label:
        lines.append(r"\label{" + label + "}")
    lines += [r"\begin{tabular}{" + spec + "}", r"\toprule"]
    lines.append(" & ".join(latex_escape(c) for c in shown.columns) + r" \\")
    lines.append(r"\midrule")
    for row in shown.itertuples(index=False):
        lines.append(" & ".join(latex_escape(v) for v in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{" + env + "}"]
    return "\n".join(lines) + "\n"


def save_headline_tables(report: Report, run_dir) -> list[Path]:
    """Write every headline table as ``tables/NAME.csv`` and ``tables/NAME.tex`` (booktabs).

    Parameters
    ----------
    report : Report
    run_dir : path or RunContext

    Returns
    -------
    list of Path
        The LaTeX files.
    """
    written = []
    for table in report.headline_tables():
        run_folder.save_table(table.frame, run_dir, table.name)
        written.append(
            run_folder.save_latex_table(table.frame, run_dir, table.name, caption=table.caption)
        )
    return written
