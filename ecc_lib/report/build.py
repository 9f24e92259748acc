"""Building the report of a run folder: read ``metrics.json``, ``run.json``, the figures, the tables
and the provenance, run the builders of the registered sections (:mod:`ecc_lib.report.registry`)
and add the appendix."""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ecc_lib.labels import method_name
from ecc_lib.report.document import Figure, Report, ReportSection, table_html
from ecc_lib.report.formatting import DASH
from ecc_lib.report.glossary import glossary_html
from ecc_lib.report.reading import read_metrics, skip_reasons
from ecc_lib.report.registry import SECTIONS, Section, build_summary, registered_section
from ecc_lib.report.sections.capability_map import CAPABILITY_MAP_FIGURE, no_other_model
from ecc_lib.report.sections.other import other_section
from ecc_lib.report.summary import seed_count, summary_to_metrics
from ecc_lib.runs import artifacts as run_artifacts
from ecc_lib.runs import folder as run_folder
from ecc_lib.runs import metrics as run_metrics
from ecc_lib.stats import interval_description

SHARED_KEYS = ("parameters", "provenance", "data_policy", "summary", "checks")
"""Parts of ``metrics.json`` no section reports on its own (the appendix and the data section
read them); every other key without a registered section gets a section of its own."""


def _datasets_of(metrics: Mapping[str, Any]) -> list[str]:
    names = [
        *((metrics.get("data") or {}).get("datasets", {}) or {}),
        *(str((metrics.get(key) or {}).get("dataset") or "") for key in ("dars", "ecc")),
        str(((metrics.get("routing") or {}).get("headline") or {}).get("dataset") or ""),
    ]
    return [n for n in dict.fromkeys(names) if n]


def _held_datasets_sentence(record: Mapping[str, Any]) -> str:
    """``"This run folder holds 2 datasets: a (notebooks 01, 02), b (notebook 01). "`` from
    ``run.json`` (which datasets each notebook last ran on), or ``""`` when it does not say."""
    held: dict[str, list[str]] = {}
    recorded = record.get("datasets")
    if not isinstance(recorded, Mapping):
        return ""
    for notebook, names in sorted(recorded.items()):
        for name in names or []:
            label = os.path.basename(str(name).rstrip("/\\")) or str(name)
            held.setdefault(label, []).append(str(notebook).split("_", 1)[0])
    if not held:
        return ""
    parts = [
        f"{label} (notebook{'s' if len(numbers) > 1 else ''} {', '.join(numbers)})"
        for label, numbers in held.items()
    ]
    return (
        f"This run folder holds {len(held)} dataset{'s' if len(held) != 1 else ''}: "
        + ", ".join(parts)
        + ". "
    )


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


def build_report(run_dir: str | os.PathLike | run_folder.RunContext, *, title: str = "") -> Report:
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
    metrics = read_metrics(run_metrics.collect_metrics(run))
    figures = run_artifacts.list_figures(run)
    run_json = run.run_dir / run_folder.RUN_FILE
    record = json.loads(run_json.read_text()) if run_json.exists() else {}
    ran = set(record.get("notebooks", []))
    dropped = degenerate_figures(metrics)
    sections = _arrange([_section(spec, run, metrics, figures, dropped, ran) for spec in SECTIONS])
    known = {*(spec.key for spec in SECTIONS), *SHARED_KEYS}
    for key in sorted(k for k in metrics if k not in known):
        extra = other_section(key, metrics[key])
        extra.appendix = True
        sections.append(extra)
    n_tables = len(run_artifacts.list_tables(run))
    intro = (
        f"Run folder {run.run_dir.name}: {len(figures)} figures (PNG and PDF under figures/), "
        f"{n_tables} tables (CSV under tables/, headline tables also as LaTeX), all numbers in metrics.json. "
        + interval_description(seed_count(metrics.get("ecc")))
        + " The routers of the routing dataset (one split) get the same interval, which with "
        "one split is the bootstrap over test queries (single-shot arms also resample their "
        "runs); flip rates: 95% bootstrap over queries; 'mean \u00b1 sd' is a spread over seeds, "
        "not a verdict. "
    )
    intro += _held_datasets_sentence(record)
    git = _run_provenance(run).get("git", {})
    if git:
        intro += f"Code at git commit {git.get('commit') or 'unknown'}" + (
            " with local changes." if git.get("dirty") else "."
        )
    document = Report(
        title=title or report_title(metrics, run.run_dir.name),
        intro=intro,
        sections=sections,
        summary_html=summary_html(build_summary(metrics, sections=SECTIONS)),
    )
    document.appendix_html = (
        '<details class="appendix" id="appendix"><summary>Appendix: the synthetic tour, further '
        "figures and tables, parameters, provenance and the glossary</summary>\n"
        + "\n".join(document.appendix_sections_html())
        + "\n"
        + appendix_html(metrics, run)
        + "\n"
        + glossary_html()
        + "\n</details>"
    )
    return document


def _section(
    spec: Section,
    run: run_folder.RunContext,
    metrics: Mapping[str, Any],
    figures: pd.DataFrame,
    dropped: Mapping[str, str],
    ran: set[str],
) -> ReportSection:
    """One registered section: its builder's findings, tables and notes, with what every section
    shares (number, title, figures, the sentences on what is left out)."""
    number, key = spec.number, spec.key
    if spec.figure_names:  # a section that shows named figures only (the capability map)
        shown = figures[figures["name"].isin(spec.owned_figures)]
    else:
        owned = {name for other in SECTIONS for name in other.owned_figures}
        shown = figures[(figures["notebook"] == spec.notebook) & ~figures["name"].isin(owned)]
    kept = [Figure(f.name, f.png, f.caption) for f in shown.itertuples() if f.name not in dropped]
    # an empty sentence: the section's own findings say why the figure is left out
    notes = [dropped[f.name] for f in shown.itertuples() if dropped.get(f.name)]
    values = metrics.get(key)
    reasons = skip_reasons(values) if values is not None else {}
    skipped = ""
    if values is None:
        notebook_ran = any(n.startswith(spec.notebook) for n in ran)
        skipped = (
            f"This section is left out: notebook {spec.notebook} ran but recorded no {key!r} metrics."
            if notebook_ran
            else f"This section is left out: notebook {spec.notebook} was not run in this run."
        )
    elif "" in reasons or "skipped" in reasons:
        skipped = "This section is left out: " + (reasons.get("") or reasons["skipped"])
    else:
        notes += [f"Not measured ({_part_words(where)}): {why}" for where, why in reasons.items()]
        built = spec.build(run, metrics)
        if built is None:
            skipped = f"This section is left out: the run recorded nothing to show for {key!r}."
    if skipped:
        return ReportSection(number, spec.title, figures=kept, notes=notes, skipped=skipped)
    built.number, built.title, built.figures = number, spec.title, kept
    built.notes = notes + built.notes
    return built


def degenerate_figures(metrics: Mapping[str, Any]) -> dict[str, str]:
    """Figures whose content is degenerate for this run's data, with the sentence said instead.

    - ``01_observations_per_pair`` when every dataset has one observation per pair (one bar);
    - ``04_routing_utility`` when the routing data has no cost and no repeats (utility equals
      score, the figure repeats ``04_routing_scores``);
    - ``03_capability_map`` when every group's best model is the global best (an empty sentence:
      the section's findings say so).

    Parameters
    ----------
    metrics : mapping

    Returns
    -------
    dict
        Figure name -> sentence.
    """
    out = {}
    datasets = ((metrics.get("data") or {}).get("datasets") or {}).values()
    maxima = [d.get("max_observations_per_pair") for d in datasets if isinstance(d, Mapping)]
    if maxima and all(m == 1 for m in maxima):
        out[registered_section("data").figure("observations_per_pair")] = (
            "Every (query, model) pair has one observation, so the figure of observations per pair "
            "(one bar) is left out."
        )
    cmap = metrics.get("capability_map")
    if isinstance(cmap, Mapping) and no_other_model(cmap):
        # the section's findings say that no group needs another model
        out[registered_section("capability_map").figure(CAPABILITY_MAP_FIGURE)] = ""
    info = (metrics.get("routing") or {}).get("info") or {}
    if (
        info
        and info.get("cost_available") is False
        and not (info.get("has_rewrites") or info.get("has_decodes"))
    ):
        out[registered_section("routing").figure("routing_utility")] = (
            "Without cost and repeated observations the utility equals the score, so the utility "
            "figure (the same as the score figure) is left out."
        )
    return out


def _arrange(sections: list[ReportSection]) -> list[ReportSection]:
    """Main sections in the registry's order, each with its headline table and figure; the rest
    of each (further tables, figures, the cluster summary) and the appendix sections (the tour)
    after them."""
    by_number = {(s.number, s.title): s for s in sections}
    main, appendix = [], []
    for spec in sorted((s for s in SECTIONS if not s.appendix), key=lambda s: s.order):
        section = by_number.pop((spec.number, spec.title), None)
        if section is None:
            continue
        main.append(section)
        if section.skipped:
            continue
        names = {f.name for f in section.figures}
        wanted = next(
            (spec.figure(n) for n in spec.headline_figures if spec.figure(n) in names),
            section.figures[0].name if section.figures else None,
        )
        rest_figures = [f for f in section.figures if f.name != wanted]
        section.figures = [f for f in section.figures if f.name == wanted]
        rest_tables, section.tables = section.tables[1:], section.tables[:1]
        if rest_figures or rest_tables or section.extra_html:
            more = ReportSection(
                "",
                f"More on: {section.title}",
                findings=f"Further tables and figures of section {spec.number or spec.title}.",
                tables=rest_tables,
                figures=rest_figures,
                extra_html=section.extra_html,
                appendix=True,
            )
            section.extra_html = ""
            appendix.append(more)
    for section in by_number.values():
        section.appendix = True
    return main + list(by_number.values()) + appendix


def summary_html(summary: Mapping[str, list]) -> str:
    """``<section id="summary">``: per dataset its quotable lines (:mod:`ecc_lib.report.summary`).

    Parameters
    ----------
    summary : mapping
        Dataset -> list of :class:`~ecc_lib.report.summary.SummaryLine`.

    Returns
    -------
    str
    """
    parts = ['<section class="report-section" id="summary">', "<h2>Summary</h2>"]
    if not summary:
        parts.append('<p class="note">No result of this run has a comparison to quote.</p>')
    for dataset, lines in summary.items():
        parts.append(f"<h3>{html.escape(dataset)}</h3>")
        parts += [summary_table_html(x) for x in lines if x.topic == "table"]
        parts.append("<ul>")
        parts += [
            f'<li data-topic="{html.escape(x.topic)}">{html.escape(x.text)}</li>'
            for x in lines
            if x.topic != "table"
        ]
        parts.append("</ul>")
    parts.append("</section>")
    return "\n".join(parts)


def summary_table_html(line) -> str:
    """The summary table (a ``table`` :class:`~ecc_lib.report.summary.SummaryLine`) as HTML.

    Parameters
    ----------
    line : SummaryLine
        Its ``rows`` are :func:`~ecc_lib.report.summary.summary_table`.

    Returns
    -------
    str
    """
    from ecc_lib.report.summary import record_text

    rows = line.rows or []
    if not rows:
        return ""
    caption = line.text.splitlines()[0]
    reference = method_name(rows[0]["reference"])
    best = rows[0]["best_baseline"]
    has_all = any(r.get("gain_all") for r in rows)
    has_note = any(r.get("note") for r in rows)
    head = ["method", "gain on disjoint pairs [95% interval]" if has_all else "gain [95% interval]"]
    head += ["gain on all pairs [95% interval]"] if has_all else []
    head += [
        f"against {reference}",
        f"against the best baseline ({method_name(best)})" if best else "against the best baseline",
    ]
    head += ["note"] if has_note else []
    out = [
        '<table class="summary-table">',
        f"<caption>{html.escape(caption)}</caption>",
        "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>",
    ]
    for r in rows:
        numbers = [record_text(r["gain"])] + ([record_text(r.get("gain_all"))] if has_all else [])
        words = [
            r["verdict_reference"] or "(reference)",
            r["verdict_best_baseline"] or "(best baseline)",
        ]
        words += [r.get("note") or ""] if has_note else []
        out.append(
            "<tr>"
            + f"<td>{html.escape(r['name'])}</td>"
            + "".join(f'<td class="number">{html.escape(c)}</td>' for c in numbers)
            + "".join(f"<td>{html.escape(str(c))}</td>" for c in words)
            + "</tr>"
        )
    out.append("</table>")
    return "\n".join(out)


def record_summary(run_dir: str | os.PathLike | run_folder.RunContext) -> dict[str, list[dict]]:
    """Write the summary as ``metrics.json["summary"]`` (``metrics/summary.json``).

    Parameters
    ----------
    run_dir : path or RunContext

    Returns
    -------
    dict
        What was recorded.
    """
    run = run_folder.run_context(run_dir)
    payload = summary_to_metrics(build_summary(run_metrics.collect_metrics(run), sections=SECTIONS))
    run_metrics.record_metrics(run, "summary", payload)
    return payload


def _part_words(key: str) -> str:
    """A ``*_skipped`` key as words (``single_shot_skipped`` -> ``single shot``), never the key."""
    parts = key.replace("_skipped", "").replace("skipped", "").strip(".").split(".")
    return ", ".join(method_name(p) for p in parts if p) or "this part"


def _run_provenance(run: run_folder.RunContext) -> dict[str, Any]:
    """The run's provenance (:func:`ecc_lib.runs.provenance.provenance`), ``{}`` where it cannot be read
    (it is informative only)."""
    try:
        from ecc_lib.runs import provenance

        return provenance.provenance(run)
    except Exception:
        return {}


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
    parts = ["<h2>Parameters and provenance</h2>"]
    if rows:
        parts.append(table_html(pd.DataFrame(rows), caption="Parameters of each section"))
    prov = _run_provenance(run)
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
        parts.append(table_html(frame, caption="Dataset files (sha256)"))
    return "\n".join(parts)


__all__ = [
    "build_report",
    "record_summary",
]
