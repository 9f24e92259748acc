"""Figures and tables of a run folder: :func:`save_figure` writes ``figures/NAME.png`` and
``.pdf`` with a caption in ``figures/captions.json``, :func:`save_table` writes
``tables/NAME.csv``; :func:`list_figures` and :func:`list_tables` read them back for the report.
The folder itself is :mod:`ecc_lib.runs.folder`.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pandas as pd

from ecc_lib._optional import require
from ecc_lib.runs.folder import RunContext, check_name, read_json, run_context, write_json
from ecc_lib.safe_output import atomic_path, write_csv

logger = logging.getLogger(__name__)

FIGURE_FORMATS = ("png", "pdf")
"""Formats every figure is written in."""
FIGURE_WIDTHS = {"column": 3.5, "page": 7.0}
"""Figure widths in inches: one column or the full page of a two-column paper."""
_FIGURE_RC = {"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none"}


def save_figure(
    fig,
    run_dir: str | os.PathLike | RunContext,
    name: str,
    *,
    caption: str | None = None,
    dpi: int = 200,
) -> list[Path]:
    """Write ``fig`` as ``figures/NAME.png`` and ``figures/NAME.pdf`` of the run.

    The files keep the figure's size (the figure functions of :mod:`ecc_lib.plotting` are
    :data:`FIGURE_WIDTHS` wide with constrained layout), and the PDF embeds its fonts as TrueType
    (``pdf.fonttype`` 42), as journals ask.

    Parameters
    ----------
    fig : matplotlib Figure or None
        ``None`` (a figure function found nothing to draw, e.g. the spread of scores without
        repeated observations) writes nothing and removes a stale file of that name.
    run_dir : path or RunContext
    name : str
        File name without extension; prefix it with the notebook number (``"03_gain"``) so that
        the report groups figures by notebook.
    caption : str, optional
        One line for the report (and the image's alt text), stored in ``figures/captions.json``.
    dpi : int, default 200
        Resolution of the PNG.

    Returns
    -------
    list of Path
        The PNG and PDF paths (empty for ``None``). The figure is left open (the notebook
        displays it).
    """
    matplotlib = require("matplotlib", extra="plot", purpose="saving figures")

    context = run_context(run_dir)
    check_name(name)
    captions_path = context.figures_dir / "captions.json"
    captions = _read_captions(captions_path)
    if fig is None:
        logger.info("figure %s not written: there is nothing to draw for this run", name)
        for fmt in FIGURE_FORMATS:
            (context.figures_dir / f"{name}.{fmt}").unlink(missing_ok=True)
        if name in captions:
            del captions[name]
            write_json(captions_path, captions)
        return []
    engine = fig.get_layout_engine() if hasattr(fig, "get_layout_engine") else None
    # constrained layout already fits the labels into the figure: keep its exact width
    bbox = None if engine is not None and "Constrained" in type(engine).__name__ else "tight"
    written = []
    with matplotlib.rc_context(_FIGURE_RC):
        for fmt in FIGURE_FORMATS:
            path = context.figures_dir / f"{name}.{fmt}"
            # no creation date in the PDF: the same run gives the same file
            metadata = {"CreationDate": None} if fmt == "pdf" else None
            with atomic_path(path, root=context.run_dir) as temporary:
                fig.savefig(temporary, format=fmt, dpi=dpi, bbox_inches=bbox, metadata=metadata)
            written.append(path)
    index = captions.get(name, {}).get("index", len(captions))
    captions[name] = {"caption": caption or _figure_title(fig) or name, "index": index}
    write_json(captions_path, captions)
    return written


def _read_captions(path: Path) -> dict[str, dict[str, Any]]:
    """``captions.json`` as ``{name: {"caption", "index"}}`` (plain strings are read as captions)."""
    if not path.exists():
        return {}
    raw = read_json(path)
    return {
        name: entry if isinstance(entry, dict) else {"caption": str(entry), "index": i}
        for i, (name, entry) in enumerate(raw.items())
    }


def _figure_title(fig) -> str:
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None and suptitle.get_text():
        return suptitle.get_text()
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    return "; ".join(titles)


def save_table(
    table: pd.DataFrame,
    run_dir: str | os.PathLike | RunContext,
    name: str,
    *,
    index: bool = False,
) -> Path:
    """Write ``table`` as ``tables/NAME.csv`` of the run and return the path.

    The CSV is spreadsheet-safe (:func:`ecc_lib.safe_output.write_csv`): a text cell (a model,
    category or cluster name) that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
    return is written with a leading ``'``, so that a spreadsheet shows it rather than running it
    as a formula; numbers are written as numbers and ``metrics.json`` keeps the names exact. The
    file is written atomically and never through a symbolic link.

    Parameters
    ----------
    table : DataFrame
        The table.
    run_dir : path or RunContext
        The run folder.
    name : str
        File stem.
    index : bool, default False
        Write the index too.

    Returns
    -------
    Path
    """
    context = run_context(run_dir)
    check_name(name)
    if not isinstance(table, pd.DataFrame):
        table = pd.DataFrame(table)
    path = context.tables_dir / f"{name}.csv"
    return write_csv(table, path, index=index, float_format="%.10g", root=context.run_dir)


def list_figures(run_dir: str | os.PathLike | RunContext) -> pd.DataFrame:
    """The run's figures: ``name``, ``notebook`` (prefix), ``png``, ``pdf``, ``caption``.

    Ordered by notebook, then in the order the notebook saved them.

    Parameters
    ----------
    run_dir : path or RunContext
        The run folder.

    Returns
    -------
    DataFrame
    """
    context = run_context(run_dir, create=False)
    captions_path = context.figures_dir / "captions.json"
    captions = _read_captions(captions_path)
    rows = []
    for png in context.figures_dir.glob("*.png"):
        pdf = png.with_suffix(".pdf")
        entry = captions.get(png.stem, {})
        rows.append(
            {
                "name": png.stem,
                "notebook": png.stem.split("_", 1)[0],
                "png": str(png),
                "pdf": str(pdf) if pdf.exists() else "",
                "caption": entry.get("caption", png.stem),
                "_index": entry.get("index", len(captions)),
            }
        )
    frame = pd.DataFrame(rows, columns=["name", "notebook", "png", "pdf", "caption", "_index"])
    frame = frame.sort_values(["notebook", "_index", "name"], kind="stable")
    return frame.drop(columns="_index").reset_index(drop=True)


def list_tables(run_dir: str | os.PathLike | RunContext) -> pd.DataFrame:
    """The run's tables: ``name``, ``notebook`` (prefix), ``csv``.

    Parameters
    ----------
    run_dir : path or RunContext
        The run folder.

    Returns
    -------
    DataFrame
    """
    context = run_context(run_dir, create=False)
    rows = [
        {"name": csv.stem, "notebook": csv.stem.split("_", 1)[0], "csv": str(csv)}
        for csv in sorted(context.tables_dir.glob("*.csv"))
    ]
    return pd.DataFrame(rows, columns=["name", "notebook", "csv"])


__all__: list[str] = []
