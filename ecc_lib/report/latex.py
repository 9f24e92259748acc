"""The headline tables as LaTeX (booktabs), beside their CSV under ``tables/``."""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from typing import Any

import pandas as pd

from ecc_lib.report.document import Report
from ecc_lib.report.formatting import DASH, PM
from ecc_lib.runs import artifacts as run_artifacts
from ecc_lib.runs import folder as run_folder
from ecc_lib.safe_output import write_text

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
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    PM: r"$\pm$",
    DASH: "--",
    "\u2022": r"\textbullet{}",
    "\u2026": r"\ldots{}",
}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIAL))


# letters without a decomposition, in the commands of LaTeX's default (OT1) encoding
_LATEX_LETTERS = {
    "\u00df": r"\ss{}",
    "\u00e6": r"\ae{}",
    "\u00c6": r"\AE{}",
    "\u00f8": r"\o{}",
    "\u00d8": r"\O{}",
    "\u0153": r"\oe{}",
    "\u0152": r"\OE{}",
    "\u0142": r"\l{}",
    "\u0141": r"\L{}",
    "\u0131": r"\i{}",
    "\u00a1": "!`",
    "\u00bf": "?`",
    "\u00a0": "~",
    "\u2018": "`",
    "\u2019": "'",
    "\u201c": "``",
    "\u201d": "''",
    "\u2014": "---",
    "\u2212": r"\ensuremath{-}",
    "\u00d7": r"\ensuremath{\times}",
    "\u00b0": r"\ensuremath{^\circ}",
    "\u00a9": r"\textcopyright{}",
    "\u00a7": r"\S{}",
    "\u00b6": r"\P{}",
    "\u2264": r"\ensuremath{\leq}",
    "\u2265": r"\ensuremath{\geq}",
    "\u2192": r"\ensuremath{\rightarrow}",
}
_COMBINING_ACCENTS = {
    "\u0300": "`",
    "\u0301": "'",
    "\u0302": "^",
    "\u0303": "~",
    "\u0304": "=",
    "\u0306": "u",
    "\u0307": ".",
    "\u0308": '"',
    "\u030a": "r",
    "\u030b": "H",
    "\u030c": "v",
    "\u0327": "c",
    "\u0328": "k",
}
_GREEK = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi o pi rho varsigma "
    "sigma tau upsilon phi chi psi omega"
).split()
_GREEK_UPPER = {
    *("Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi", "Psi", "Omega"),
}
_GREEK_UPPER_LATIN = "AB--EZH-IK-MN-O-P--T--X--"  # the capitals that are Latin letters in LaTeX
_INVISIBLE = re.compile(
    "[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufe00-\ufe0f\ufeff]"
)
"""Zero-width and direction marks (and variation selectors): nothing to set, left out."""


def _greek(char: str) -> str | None:
    code = ord(char)
    if 0x03B1 <= code <= 0x03C9:
        name = _GREEK[code - 0x03B1]
        return "o" if name == "o" else f"\\ensuremath{{\\{name}}}"
    if 0x0391 <= code <= 0x03A9 and code != 0x03A2:
        name = _GREEK[code - 0x0391].capitalize()  # 0x03A2 (no capital final sigma) left out
        if name in _GREEK_UPPER:
            return f"\\ensuremath{{\\{name}}}"
        return _GREEK_UPPER_LATIN[code - 0x0391]
    return None


def _latex_char(char: str) -> str:
    """One character pdflatex cannot take as it is, as LaTeX that sets it (or its code point)."""
    if char in _LATEX_LETTERS:
        return _LATEX_LETTERS[char]
    greek = _greek(char)
    if greek is not None:
        return greek
    decomposed = unicodedata.normalize("NFD", char)
    base, marks = decomposed[:1], decomposed[1:]
    if base.isascii() and base.isalpha() and marks and all(m in _COMBINING_ACCENTS for m in marks):
        out = "\\i" if base == "i" else base
        for mark in marks:
            out = f"\\{_COMBINING_ACCENTS[mark]}{{{out}}}"
        return out
    compatible = unicodedata.normalize("NFKC", char)
    if compatible != char and compatible.isascii() and compatible.isprintable():
        return _escape_ascii(compatible)  # ligatures, full-width forms, superscript digits
    return f"[U+{ord(char):04X}]"


def _escape_ascii(text: str) -> str:
    return _LATEX_RE.sub(lambda m: _LATEX_SPECIAL[m.group(0)], text)


def latex_escape(text: Any) -> str:
    """Text as LaTeX that pdflatex sets with no package beyond the defaults.

    LaTeX's special characters are escaped (and +-, the en dash as LaTeX); a line break or tab
    becomes a space (a blank line would end the table cell's paragraph); control characters
    (NUL ...), zero-width and direction marks are left out; accented Latin letters become accent
    commands (``é`` -> ``\\'{e}``), Greek letters math symbols, and any other character that
    pdflatex cannot set (CJK, emoji, Arabic, Hebrew ...) its code point ``[U+4E2D]``.

    Parameters
    ----------
    text : object

    Returns
    -------
    str
        Printable ASCII.
    """
    text = _INVISIBLE.sub("", str(text))
    text = re.sub(r"[\t\n\r\v\f\u2028\u2029\x85]+", " ", text)
    text = "".join(
        " " if c != "\u00a0" and unicodedata.category(c) == "Zs" else c
        for c in text
        if c.isprintable() or unicodedata.category(c) == "Zs"
    )
    # LaTeX's special characters (+-, the en dash ... among them), then every other non-ASCII one
    return re.sub(r"[^\x20-\x7e]", lambda m: _latex_char(m.group()), _escape_ascii(text))


def _cell(value: Any) -> str:
    """A table cell: escaped, and guarded with ``{}`` when it starts with ``[`` (which would be
    read as the optional argument of the ``\\\\`` or rule before it) or ``*``."""
    text = latex_escape(value)
    return "{}" + text if text.lstrip().startswith(("[", "*")) else text


def latex_problems(text: str) -> list[str]:
    """What would stop pdflatex on a table of :func:`latex_table` (a pure-Python check).

    The rules: printable ASCII only; braces balanced; an even number of unescaped ``$``; no
    blank line; no unescaped ``#``, ``%``, ``_`` or ``^`` outside math; no ``[`` right after a
    ``\\\\``, ``\\toprule``, ``\\midrule`` or ``\\bottomrule``; as many cells in each row as the
    column specification has columns.

    Parameters
    ----------
    text : str
        The LaTeX of one table.

    Returns
    -------
    list of str
        One sentence per problem (empty when the table is fine).
    """
    problems = []
    bad = sorted({c for c in text if not (c == "\n" or "\x20" <= c <= "\x7e")})
    if bad:
        problems.append(f"characters pdflatex cannot set: {[f'U+{ord(c):04X}' for c in bad]}")
    if re.search(r"\n[ \t]*\n", text):
        problems.append("a blank line (it ends the paragraph inside the table)")
    plain = re.sub(r"\\[\\{}$&#%_~^ ]", "", text)  # drop escaped characters
    plain = re.sub(r"\\[A-Za-z]+", "", plain)
    depth = 0
    for char in plain:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            break
    if depth != 0:
        problems.append("unbalanced braces")
    if plain.count("$") % 2:
        problems.append("an odd number of unescaped $")
    no_math = re.sub(r"\\(ensuremath|label)\{[^{}]*\}", "", text)  # math; a label's name
    no_math = re.sub(r"\\[\\{}$&#%_~^ ]", "", no_math)
    outside_math = "".join(no_math.split("$")[::2])
    problems += [f"an unescaped {char} outside math" for char in "#%_^" if char in outside_math]
    if re.search(r"(\\\\|\\toprule|\\midrule|\\bottomrule)\s*[\[*]", text):
        problems.append("a [ (or *) right after \\\\ or a rule: read as its optional argument")
    spec = re.search(r"\\begin\{tabular\}\{([^}]*)\}", text)
    if spec:
        n_columns = len(re.findall(r"[lcr]|p\{[^}]*\}", spec.group(1)))
        body = text[spec.end() : text.find(r"\end{tabular}")]
        for row in re.split(r"\\\\", body):
            row = re.sub(r"\\(toprule|midrule|bottomrule)", "", row).strip()
            if row and len(re.findall(r"(?<!\\)&", row)) + 1 != n_columns:
                problems.append(f"a row without {n_columns} cells: {row[:60]!r}")
                break
    return problems


def latex_table(frame: pd.DataFrame, *, caption: str = "", label: str = "") -> str:
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
    header = " & ".join(_cell(c) for c in shown.columns) + r" \\"
    lines += [r"\begin{tabular}{" + spec + "}", r"\toprule", header, r"\midrule"]
    lines += [" & ".join(_cell(v) for v in row) + r" \\" for row in shown.itertuples(index=False)]
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
        run_artifacts.save_table(table.frame, run_dir, table.name)
        written.append(save_latex_table(table.frame, run_dir, table.name, caption=table.caption))
    return written


def save_latex_table(
    table: pd.DataFrame,
    run_dir: str | os.PathLike | run_folder.RunContext,
    name: str,
    *,
    caption: str = "",
) -> Path:
    """Write ``table`` as ``tables/NAME.tex``: a booktabs ``table`` for a paper.

    Parameters
    ----------
    table : DataFrame
        Cells are written as text (format numbers first, e.g. with
        :func:`ecc_lib.report.format_interval`); the index is left out.
    run_dir : path or RunContext
    name : str
        File name without extension; also the label ``tab:NAME``.
    caption : str, optional

    Returns
    -------
    Path
    """
    context = run_folder.run_context(run_dir)
    run_folder.check_name(name)
    path = context.tables_dir / f"{name}.tex"
    write_text(path, latex_table(table, caption=caption, label=f"tab:{name}"), root=context.run_dir)
    return path


__all__ = [
    "save_headline_tables",
]
