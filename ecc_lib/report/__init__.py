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

The package holds one job per module; the names notebook 05 and the guide use (:func:`build_report`,
:func:`record_summary`, :func:`build_summary`, :func:`save_headline_tables`) are importable from
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

from ecc_lib.report.build import build_report, record_summary
from ecc_lib.report.latex import save_headline_tables
from ecc_lib.report.registry import build_summary

__all__ = [
    "build_report",
    "build_summary",
    "record_summary",
    "save_headline_tables",
]
