"""Run folders: where notebooks write figures, tables and metrics, and how they are read back.

A run folder (``runs/NAME/``) holds

``NN_name.ipynb``
    the executed notebooks (never written over the source notebooks);
``figures/``
    every figure as PNG and PDF, plus ``captions.json`` (figure name -> one-line caption and the
    order in which it was first saved);
``tables/``
    every table as CSV;
``metrics/``
    one JSON fragment per section (``data``, ``dars``, ``ecc``, ``routing``), written by the notebooks
    through :func:`record_metrics`;
``provenance/``
    fingerprints (sha256) of the dataset files the notebooks loaded, written by
    :func:`ecc_lib.runs.provenance.load_dataset`;
``metrics.json``
    the fragments merged: ``{section: values, "parameters": {section: parameters},
    "provenance": {packages, datasets, git, python}}``, with sorted keys and no time stamps, so that
    the same seed gives the same file;
``run.json``
    what is not reproducible: start time, duration of each notebook, the resolved parameters;
``report.html``
    the executed ``05_report`` notebook exported to HTML (input cells hidden);
``.ecc_lib-run``
    the marker that only ecc_lib writes (:func:`write_run_marker`): ``ecc-lab run --out`` reuses
    only a folder that carries it, never a user's folder that merely looks like a run;
``.ecc_lib-run.lock``
    locked while an ``ecc-lab run`` writes into the folder (:func:`lock_run_folder`).

Notebooks call :func:`run_context`, :func:`save_figure`, :func:`save_table` and
:func:`record_metrics`; :func:`to_jsonable` is the package's one JSON converter.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ecc_lib import paths
from ecc_lib._optional import require
from ecc_lib.metrics_schema import validate_section
from ecc_lib.redaction import redact_urls_in
from ecc_lib.serialization import to_jsonable

logger = logging.getLogger(__name__)

FIGURES = "figures"
TABLES = "tables"
METRICS = "metrics"
PROVENANCE = "provenance"
METRICS_FILE = "metrics.json"
RUN_FILE = "run.json"
REPORT_FILE = "report.html"
MARKER_FILE = ".ecc_lib-run"
"""Marker of a run folder written by ecc_lib (a small JSON object, :data:`MARKER_FORMAT`)."""
MARKER_FORMAT = "ecc_lib run folder"
LOCK_FILE = ".ecc_lib-run.lock"
"""Held (an OS file lock) while ``ecc-lab run`` writes into the folder."""
MAX_FILE_LABEL = 80
"""Longest dataset label kept whole in a file name (:func:`file_label`); longer ones are cut."""
FIGURE_FORMATS = ("png", "pdf")
HEADLINE_METRICS = (
    "ecc.ranking_quality_gain",
    "dars.winner_flip_rate",
    "dars.single_vs_distribution_disagreement",
    "routing.headline.score",
    "routing.headline.gap_closed",
    "routing.headline.dars_minus_single_shot_utility",
    "routing.headline.pareto_area",
)
"""Metric key prefixes of the report's headline table (``*_ci95`` siblings give the intervals)."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


# --------------------------------------------------------------------------------------------
# run folder


def _under_run_dir(name: str, doc: str) -> property:
    """A read-only property: ``run_dir / name``."""

    def path(self: RunContext) -> Path:
        return self.run_dir / name

    path.__doc__ = doc
    return property(path)


@dataclass(frozen=True)
class RunContext:
    """Folders of one run; :func:`run_context` creates them.

    Parameters
    ----------
    run_dir : Path
        The run folder.
    """

    run_dir: Path

    figures_dir = _under_run_dir(FIGURES, "``figures/`` of the run.")
    tables_dir = _under_run_dir(TABLES, "``tables/`` of the run.")
    metrics_dir = _under_run_dir(
        METRICS, "``metrics/`` of the run (one JSON fragment per notebook section)."
    )
    provenance_dir = _under_run_dir(PROVENANCE, "``provenance/`` of the run.")
    metrics_path = _under_run_dir(METRICS_FILE, "``metrics.json`` of the run.")
    report_path = _under_run_dir(REPORT_FILE, "The HTML report of the run.")

    def create(self) -> RunContext:
        """Create the run folder and its sub-folders.

        Returns
        -------
        RunContext
            ``self``.
        """
        fresh = not self.run_dir.exists() or (
            self.run_dir.is_dir() and not any(self.run_dir.iterdir())
        )
        for folder in (self.figures_dir, self.tables_dir, self.metrics_dir, self.provenance_dir):
            folder.mkdir(parents=True, exist_ok=True)
        if fresh:  # a folder ecc_lib made (a user's non-empty folder is never marked here)
            write_run_marker(self.run_dir)
        return self


def default_run_name(now: _dt.datetime | None = None) -> str:
    """A time stamp such as ``20260521-143005`` (local time).

    Parameters
    ----------
    now : datetime, optional
        Time stamped (default: now).

    Returns
    -------
    str
    """
    return (now or _dt.datetime.now()).strftime("%Y%m%d-%H%M%S")


def resolve_run_dir(run_dir: str | os.PathLike | None) -> Path:
    """``run_dir`` as an absolute path; empty or None means ``runs/interactive``.

    Parameters
    ----------
    run_dir : path or None
        A run folder, relative or absolute.

    Returns
    -------
    Path
    """
    if run_dir is None or str(run_dir) == "":
        return (paths.runs_dir() / "interactive").resolve()
    return Path(run_dir).expanduser().resolve()


def run_context(run_dir: str | os.PathLike | RunContext | None, create: bool = True) -> RunContext:
    """The :class:`RunContext` of ``run_dir``, with its folders created unless ``create`` is False.

    Parameters
    ----------
    run_dir : path, RunContext or None
        The run folder (None or empty: ``runs/interactive``).
    create : bool, default True
        Create the run folder and its sub-folders; False only reads (what does not exist stays
        absent).

    Returns
    -------
    RunContext
    """
    context = run_dir if isinstance(run_dir, RunContext) else RunContext(resolve_run_dir(run_dir))
    return context.create() if create else context


def write_run_marker(run_dir: str | os.PathLike) -> Path:
    """Write the run-folder marker :data:`MARKER_FILE` (only ecc_lib writes it).

    Parameters
    ----------
    run_dir : path
        The run folder (it must exist).

    Returns
    -------
    Path
        The marker file (left as it is when it is already there).
    """
    path = Path(run_dir) / MARKER_FILE
    if not is_run_folder(run_dir, legacy=False):
        payload = {"format": MARKER_FORMAT, "version": 1}
        path.write_text(json.dumps(payload, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _ecc_lib_run_json(path: Path) -> bool:
    """Whether ``path`` is a ``run.json`` written by an ecc_lib before the marker existed."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and {"started", "notebooks", "durations_s", "status"} <= set(
        record
    )


def is_run_folder(run_dir: str | os.PathLike, legacy: bool = True) -> bool:
    """Whether ``run_dir`` is a run folder ecc_lib wrote.

    Parameters
    ----------
    run_dir : path
        The folder.
    legacy : bool, default True
        Also accept a folder of an older ecc_lib without the marker, recognised by its
        ``run.json`` (an object with the keys ``started``, ``notebooks``, ``durations_s`` and
        ``status``). A ``metrics/`` folder alone never makes a run folder.

    Returns
    -------
    bool
    """
    run_dir = Path(run_dir)
    marker = run_dir / MARKER_FILE
    if marker.is_file() and not marker.is_symlink():
        try:
            payload = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            payload = None
        if isinstance(payload, dict) and payload.get("format") == MARKER_FORMAT:
            return True
    return legacy and _ecc_lib_run_json(run_dir / RUN_FILE)


class RunFolderBusyError(RuntimeError):
    """Another ``ecc-lab run`` is writing into the run folder."""


@contextlib.contextmanager
def lock_run_folder(run_dir: str | os.PathLike):
    """Hold the run folder's lock (:data:`LOCK_FILE`) while the block runs.

    The lock is an OS file lock, released when the process ends in any way (even SIGKILL), so a
    stale lock file never blocks a later run.

    Parameters
    ----------
    run_dir : path
        The run folder (it must exist).

    Yields
    ------
    Path
        The lock file (it holds the process id of the run).

    Raises
    ------
    RunFolderBusyError
        Another process holds the lock; the message names its process id.
    """
    path = Path(run_dir) / LOCK_FILE
    handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held while the block runs
    try:
        try:
            _lock_file(handle)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise RunFolderBusyError(
                f"run folder {run_dir} is in use by another ecc-lab run (process {holder}); "
                "wait until it ends or choose another --out"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield path
    finally:
        handle.close()  # closing releases the lock


def _lock_file(handle) -> None:
    """Lock an open file without waiting (OSError when another process holds it)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        import msvcrt

        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        return
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def file_label(label: str, max_length: int = MAX_FILE_LABEL) -> str:
    """A dataset label made safe for the file names of a run folder (shown labels stay as written).

    Characters other than ASCII letters, digits, ``_``, ``-`` and ``.`` become ``_``; a label
    that had to change, or is longer than ``max_length``, gets a short hash of the original
    label, so that two labels never share a file name (``a&b`` and ``a_b``).

    Parameters
    ----------
    label : str
        The label as written (``"my data"``, ``"données"``, ``"[v2]"``).
    max_length : int, default :data:`MAX_FILE_LABEL`
        Longest label kept whole.

    Returns
    -------
    str
        A plain name such as ``my_data-1a2b3c4d`` (accepted by :func:`save_figure`).
    """
    import hashlib

    label = str(label)
    plain = re.sub(r"[^A-Za-z0-9_.\-]", "_", label)
    if plain == label and len(label) <= max_length and _NAME.match(label):
        return label
    digest = hashlib.sha256(label.encode("utf-8")).hexdigest()[:8]
    stem = plain[:max_length].strip("._-") or "dataset"
    return f"{stem}-{digest}"


def check_name(name: str) -> str:
    """``name`` when it is a plain file name of a run folder, else a ValueError.

    Parameters
    ----------
    name : str
        A file name without folders or an extension.

    Returns
    -------
    str
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"file name {name!r} must be a plain name (letters, digits, '_', '-', '.'), "
            "without folders or an extension"
        )
    return name


FIGURE_WIDTHS = {"column": 3.5, "page": 7.0}
"""Figure widths in inches: one column or the full page of a two-column paper."""
_FIGURE_RC = {"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none"}


def save_figure(
    fig,
    run_dir: str | os.PathLike | RunContext,
    name: str,
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
            _write_json(captions_path, captions)
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
            fig.savefig(path, dpi=dpi, bbox_inches=bbox, metadata=metadata)
            written.append(path)
    index = captions.get(name, {}).get("index", len(captions))
    captions[name] = {"caption": caption or _figure_title(fig) or name, "index": index}
    _write_json(captions_path, captions)
    return written


def _read_captions(path: Path) -> dict[str, dict[str, Any]]:
    """``captions.json`` as ``{name: {"caption", "index"}}`` (plain strings are read as captions)."""
    if not path.exists():
        return {}
    raw = _read_json(path)
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
    index: bool = False,
) -> Path:
    """Write ``table`` as ``tables/NAME.csv`` of the run and return the path.

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
    table.to_csv(path, index=index, float_format="%.10g")
    return path


def _write_json(path: Path, payload: Any) -> None:
    payload = redact_urls_in(to_jsonable(payload))  # no credentials in a recorded URL
    text = json.dumps(payload, indent=2, sort_keys=True, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


def _read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def record_metrics(
    run_dir: str | os.PathLike | RunContext,
    section: str,
    mapping: Mapping[str, Any],
    parameters: Mapping[str, Any] | None = None,
) -> Path:
    """Write the headline numbers of one section as ``metrics/SECTION.json``.

    Parameters
    ----------
    run_dir : path or RunContext
    section : str
        Top-level key in ``metrics.json`` (``"data"``, ``"dars"``, ``"ecc"``, ``"routing"``).
        Each call replaces the section's fragment: record a section once, with all its numbers.
    mapping : mapping
        Nested mapping of numbers (numpy scalars and arrays are converted; NaN becomes null).
    parameters : mapping, optional
        The parameters that produced these numbers; stored under ``metrics.json["parameters"]``.

    Returns
    -------
    Path of the fragment.

    Raises
    ------
    ecc_lib.metrics_schema.MetricsSchemaError
        When the values break the metrics schema (the message names the key); nothing is
        written then.
    """
    context = run_context(run_dir)
    check_name(section)
    if section in ("parameters", "provenance"):
        raise ValueError(f"section name {section!r} is reserved")
    if not isinstance(mapping, Mapping):
        raise TypeError(f"metrics of section {section!r} must be a mapping")
    values = to_jsonable(mapping)
    validate_section(section, values)  # the written contract (ecc_lib/metrics_schema.json)
    path = context.metrics_dir / f"{section}.json"
    _write_json(path, {"values": values, "parameters": dict(parameters or {})})
    return path


def record_metric_entry(
    run_dir: str | os.PathLike | RunContext, section: str, key: str, value: Any
) -> Path:
    """Set ``metrics.json[section][key]`` to ``value``, keeping the section's other keys.

    For sections that collect one entry per dataset (``data_policy``, ``embeddings``), written by
    whichever notebook loads that dataset.

    Parameters
    ----------
    run_dir : path or RunContext
        The run folder.
    section : str
        Top-level key in ``metrics.json``.
    key : str
        Key inside the section (a dataset label).
    value : object
        JSON-able value (converted as by :func:`record_metrics`).

    Returns
    -------
    Path
        The section's fragment.
    """
    context = run_context(run_dir)
    path = context.metrics_dir / f"{section}.json"
    values = _read_json(path).get("values", {}) if path.exists() else {}
    values[str(key)] = value
    return record_metrics(context, section, values)


def collect_metrics(run_dir: str | os.PathLike | RunContext) -> dict:
    """Merge the fragments under ``metrics/`` into ``{section: values, "parameters": {...}}``.

    Parameters
    ----------
    run_dir : path or RunContext
        The run folder.

    Returns
    -------
    dict
    """
    context = run_context(run_dir, create=False)
    merged: dict[str, Any] = {"parameters": {}}
    if not context.metrics_dir.is_dir():
        return merged
    for path in sorted(context.metrics_dir.glob("*.json")):
        fragment = _read_json(path)
        merged[path.stem] = fragment.get("values", {})
        merged["parameters"][path.stem] = fragment.get("parameters", {})
    return merged


def flatten_metrics(metrics: Mapping[str, Any], prefix: str = "") -> pd.DataFrame:
    """Nested metrics as a two-column table ``metric`` (dotted key), ``value`` (scalars only).

    Parameters
    ----------
    metrics : mapping
        Nested metrics (:func:`collect_metrics`).
    prefix : str, default ""
        Prepended to every key.

    Returns
    -------
    DataFrame
    """
    rows: list[tuple[str, Any]] = []

    def walk(node: Any, key: str) -> None:
        if isinstance(node, Mapping):
            for child in sorted(node, key=str):
                walk(node[child], f"{key}.{child}" if key else str(child))
        elif isinstance(node, list):
            rows.append((key, json.dumps(node)))
        else:
            rows.append((key, node))

    walk(metrics, prefix)
    return pd.DataFrame(rows, columns=["metric", "value"])


def headline_metrics(
    metrics: Mapping[str, Any], prefixes: Sequence[str] = HEADLINE_METRICS
) -> pd.DataFrame:
    """The headline numbers: ``metric``, ``value`` and ``ci95`` (from a ``*_ci95`` sibling).

    A metric ``a.b.c`` takes its interval from the first of ``a_ci95.b.c``, ``a.b_ci95.c``,
    ``a.b.c_ci95`` that exists, so ``ecc.ranking_quality_gain.ecc`` is paired with
    ``ecc.ranking_quality_gain_ci95.ecc`` and ``dars.winner_flip_rate`` with
    ``dars.winner_flip_rate_ci95``.

    Parameters
    ----------
    metrics : mapping
        Nested metrics (:func:`collect_metrics`).
    prefixes : sequence of str
        Dotted prefixes of the headline metrics.

    Returns
    -------
    DataFrame
        ``metric, value, ci95``.
    """
    flat = flatten_metrics(
        {k: v for k, v in metrics.items() if k not in ("parameters", "provenance")}
    )
    values = dict(zip(flat["metric"], flat["value"], strict=True))
    rows = []
    for prefix in prefixes:
        for key, value in values.items():
            if not (key == prefix or key.startswith(prefix + ".")):
                continue
            parts = key.split(".")
            ci = None
            for i in range(len(parts)):
                candidate = ".".join(parts[:i] + [parts[i] + "_ci95"] + parts[i + 1 :])
                if candidate in values:
                    ci = values[candidate]
                    break
            if ci is not None:
                bounds = json.loads(ci) if isinstance(ci, str) else ci
                ci = "[" + ", ".join(_short_number(b) for b in bounds) + "]"
            rows.append({"metric": key, "value": value, "ci95": ci})
    frame = pd.DataFrame(rows, columns=["metric", "value", "ci95"])
    return frame.drop_duplicates("metric").reset_index(drop=True)


def _short_number(value: Any) -> str:
    return "nan" if value is None else f"{float(value):.4g}"


def get_metric(metrics: Mapping[str, Any], dotted_key: str) -> Any:
    """The value at ``"ecc.ranking_quality_gain.over_global"``-style keys (KeyError names the key).

    Parameters
    ----------
    metrics : mapping
        Nested metrics (:func:`collect_metrics`).
    dotted_key : str
        Keys joined by dots.

    Returns
    -------
    object
    """
    node: Any = metrics
    for part in dotted_key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(f"metric {dotted_key!r} not found (missing part {part!r})")
        node = node[part]
    return node


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


__all__ = [
    "check_name",
    "FIGURES",
    "FIGURE_FORMATS",
    "FIGURE_WIDTHS",
    "HEADLINE_METRICS",
    "LOCK_FILE",
    "MARKER_FILE",
    "MARKER_FORMAT",
    "MAX_FILE_LABEL",
    "METRICS",
    "METRICS_FILE",
    "PROVENANCE",
    "REPORT_FILE",
    "RUN_FILE",
    "RunContext",
    "RunFolderBusyError",
    "TABLES",
    "collect_metrics",
    "default_run_name",
    "file_label",
    "flatten_metrics",
    "get_metric",
    "headline_metrics",
    "is_run_folder",
    "list_figures",
    "list_tables",
    "lock_run_folder",
    "record_metric_entry",
    "record_metrics",
    "resolve_run_dir",
    "run_context",
    "save_figure",
    "save_table",
    "write_run_marker",
]
