"""The headline tables as LaTeX (booktabs), beside their CSV under ``tables/``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from ecc_lib import run_folder
from ecc_lib.report.document import Report
from ecc_lib.report.formatting import DASH, PM

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
