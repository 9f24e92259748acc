"""The report as a document and its HTML: figures, headline tables, sections and the whole
report, each rendered as the HTML fragments that notebook 05 displays."""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ecc_lib.report.formatting import DASH
from ecc_lib.report.glossary import GUIDE_PAGE, terms_html
from ecc_lib.runs.execute import REPORT_NOTEBOOK_PREFIX


def report_table_name(name: str) -> str:
    """The file stem of a table the report writes under ``tables/``: the report notebook's
    number and the name (``"05_ecc_headline"`` for ``"ecc_headline"``).

    Parameters
    ----------
    name : str

    Returns
    -------
    str
    """
    return f"{REPORT_NOTEBOOK_PREFIX}_{name}"


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
    number : str, default ""
        Notebook number (``"03"``); empty for a section no notebook owns.
    title : str, default ""
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
    appendix : bool
        Shown in the collapsed appendix rather than the main body.
    """

    number: str = ""
    title: str = ""
    findings: str = ""
    tables: list[HeadlineTable] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str = ""
    extra_html: str = ""
    appendix: bool = False

    def to_html(self, *, figure_start: int = 1) -> str:
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
            parts.append(table_html(table.frame, caption=table.caption))
        parts.append(self.extra_html)
        for i, figure in enumerate(self.figures, start=figure_start):
            parts.append(figure_html(figure, i))
        parts.append(terms_html("\n".join(parts)))  # links to the glossary of the appendix
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
        The collapsed appendix (``<details>``): appendix sections, parameters, provenance.
    summary_html : str, default ""
        ``<section id="summary">``, shown first.
    """

    title: str
    intro: str
    sections: list[ReportSection]
    appendix_html: str = ""
    summary_html: str = ""

    def headline_tables(self) -> list[HeadlineTable]:
        """Every headline table of every section.

        Returns
        -------
        list of HeadlineTable
        """
        return [t for s in self.sections if not s.skipped for t in s.tables]

    def section_html(self) -> list[str]:
        """HTML of the summary and of each main section, figures numbered through the report.

        Returns
        -------
        list of str
        """
        return ([self.summary_html] if self.summary_html else []) + self._numbered(False, 1)

    def appendix_sections_html(self) -> list[str]:
        """HTML of the appendix sections, figures numbered after the main body's.

        Returns
        -------
        list of str
        """
        start = 1 + sum(len(s.figures) for s in self.sections if not s.appendix and not s.skipped)
        return self._numbered(True, start)

    def _numbered(self, appendix: bool, start: int) -> list[str]:
        """HTML of the main (or the appendix) sections, their figures numbered from ``start``."""
        out = []
        for section in self.sections:
            if bool(section.appendix) is appendix:
                out.append(section.to_html(figure_start=start))
                start += 0 if section.skipped else len(section.figures)
        return out

    def header_html(self) -> str:
        """Title and introduction.

        Returns
        -------
        str
        """
        return (
            f"<h1>{html.escape(self.title)}</h1>\n<p>{html.escape(self.intro)}</p>\n"
            '<p class="glossary-link">Every term is defined in the <a href="#glossary">glossary</a> '
            f"at the end of the appendix ({html.escape(GUIDE_PAGE)} in the guide).</p>"
        )


def table_html(frame: pd.DataFrame, *, caption: str = "") -> str:
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


__all__: list[str] = []
