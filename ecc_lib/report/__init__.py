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
negative. No query text of GPQA is ever shown (:func:`ecc_lib.protocol.experiments.sweeps.cluster_summary`
leaves those queries out of the examples).

The package holds one job per module, and every public name of them is importable from
:mod:`ecc_lib.report` itself:

- :mod:`ecc_lib.report.build`: :func:`build_report` reads a run folder and assembles the report;
- :mod:`ecc_lib.report.registry`: the :class:`Section` of every report section, in one place;
- :mod:`ecc_lib.report.reading`: what is read from the run (metrics through the schema, units,
  flattened metrics, intervals, skips, tables);
- :mod:`ecc_lib.report.formatting`: numbers, intervals and metric keys as text;
- :mod:`ecc_lib.report.summary`: the quotable summary lines (also ``metrics.json["summary"]``);
- :mod:`ecc_lib.report.sections`: one findings-and-tables builder per notebook;
- :mod:`ecc_lib.report.document`: the report's classes and their HTML;
- :mod:`ecc_lib.report.latex`: the headline tables as LaTeX;
- :mod:`ecc_lib.report.glossary`: every term the report uses, defined once (the guide's glossary
  page and the report's).

The sentences and units come from the one grammar below the report, :mod:`ecc_lib.grammar`.
"""

from __future__ import annotations

from ecc_lib.report.build import (
    SHARED_KEYS,
    appendix_html,
    build_report,
    degenerate_figures,
    record_summary,
    report_title,
    summary_html,
    summary_table_html,
)
from ecc_lib.report.document import (
    Figure,
    HeadlineTable,
    Report,
    ReportSection,
    figure_html,
    report_table_name,
    table_html,
)
from ecc_lib.report.formatting import (
    DASH,
    PM,
    format_interval,
    format_mean_sd,
    format_number,
    humanise,
)
from ecc_lib.report.glossary import (
    GLOSSARY,
    GUIDE_PAGE,
    glossary_html,
    glossary_markdown,
    glossary_terms,
    term_anchor,
    terms_html,
    used_terms,
)
from ecc_lib.report.latex import (
    latex_escape,
    latex_problems,
    latex_table,
    save_headline_tables,
    save_latex_table,
)
from ecc_lib.report.reading import (
    MetricsReader,
    ci_of,
    flatten,
    generic_rows,
    measure_frame,
    measure_row,
    read_metrics,
    read_table,
    skip_reasons,
    unit_code,
    utility_meaning,
)
from ecc_lib.report.registry import (
    SECTIONS,
    Section,
    SectionBuilder,
    build_summary,
    registered_section,
)
from ecc_lib.report.sections import (
    GAIN_METHODS,
    SECTION_TITLES,
    cluster_summary_html,
    data_notes,
    ecc_cv_choice_text,
    other_section,
)
from ecc_lib.report.summary import (
    MAX_LINES,
    MAX_SENTENCES,
    MAX_WORDS,
    MIN_QUERIES_PER_CLUSTER,
    NO_VERDICT,
    PRIORITY,
    SAME_EVERYWHERE,
    TUNED_OR_SEARCHED,
    SummaryLine,
    default_reference,
    ecc_cv_line,
    ecc_lines,
    ecc_records,
    flip_lines,
    record_text,
    routing_lines,
    summary_table,
    summary_text,
    summary_to_metrics,
    table_text,
)

__all__ = [
    "SECTIONS",
    "SHARED_KEYS",
    "MetricsReader",
    "Section",
    "SectionBuilder",
    "measure_frame",
    "measure_row",
    "read_metrics",
    "read_table",
    "registered_section",
    "report_table_name",
    "unit_code",
    "utility_meaning",
    "GLOSSARY",
    "GUIDE_PAGE",
    "glossary_html",
    "glossary_markdown",
    "glossary_terms",
    "term_anchor",
    "terms_html",
    "used_terms",
    "MAX_LINES",
    "MIN_QUERIES_PER_CLUSTER",
    "PRIORITY",
    "SummaryLine",
    "build_summary",
    "default_reference",
    "ecc_cv_line",
    "TUNED_OR_SEARCHED",
    "ecc_records",
    "record_text",
    "summary_table",
    "summary_table_html",
    "summary_text",
    "table_text",
    "MAX_SENTENCES",
    "MAX_WORDS",
    "NO_VERDICT",
    "SAME_EVERYWHERE",
    "ecc_lines",
    "flip_lines",
    "routing_lines",
    "summary_to_metrics",
    "DASH",
    "GAIN_METHODS",
    "PM",
    "SECTION_TITLES",
    "Figure",
    "HeadlineTable",
    "Report",
    "ReportSection",
    "appendix_html",
    "build_report",
    "ci_of",
    "cluster_summary_html",
    "ecc_cv_choice_text",
    "data_notes",
    "degenerate_figures",
    "figure_html",
    "flatten",
    "format_interval",
    "format_mean_sd",
    "format_number",
    "generic_rows",
    "humanise",
    "latex_escape",
    "latex_problems",
    "latex_table",
    "save_latex_table",
    "other_section",
    "record_summary",
    "report_title",
    "save_headline_tables",
    "skip_reasons",
    "summary_html",
    "table_html",
]
