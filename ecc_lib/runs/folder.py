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
    through :func:`ecc_lib.runs.metrics.record_metrics`;
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

This module makes, marks, locks and names the folder (:func:`run_context`,
:func:`write_run_marker`, :func:`lock_run_folder`, :func:`check_name`) and reads and writes its JSON
files (:func:`read_json`, :func:`write_json`). Figures and tables are saved by
:mod:`ecc_lib.runs.artifacts`, metrics recorded and read back by :mod:`ecc_lib.runs.metrics`;
:func:`ecc_lib.serialization.to_jsonable` is the package's one JSON converter.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecc_lib import paths
from ecc_lib.redaction import redact_urls_in
from ecc_lib.safe_output import (
    OUTPUT_MARKER,
    is_marked_folder,
    mark_folder,
    open_no_follow,
    refuse_links,
    write_text,
)
from ecc_lib.serialization import to_jsonable

logger = logging.getLogger(__name__)

FIGURES = "figures"
TABLES = "tables"
METRICS = "metrics"
PROVENANCE = "provenance"
METRICS_FILE = "metrics.json"
RUN_FILE = "run.json"
REPORT_FILE = "report.html"
MARKER_FILE = OUTPUT_MARKER
"""Marker of a run folder written by ecc_lib (a small JSON object,
:data:`ecc_lib.safe_output.OUTPUT_MARKER_FORMAT`); the
marker of every ecc_lib output folder (:func:`ecc_lib.safe_output.claim_output_folder`)."""
LOCK_FILE = ".ecc_lib-run.lock"
"""Held (an OS file lock) while ``ecc-lab run`` writes into the folder."""
MAX_FILE_LABEL = 80
"""Longest dataset label kept whole in a file name (:func:`file_label`); longer ones are cut."""
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
            self.run_dir.is_dir()
            and (not any(self.run_dir.iterdir()) or _papermill_copies_only(self.run_dir))
        )
        folders = (self.figures_dir, self.tables_dir, self.metrics_dir, self.provenance_dir)
        for folder in folders:  # a sub-folder that is a link would take the outputs elsewhere
            refuse_links(folder)
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
        # a folder ecc_lib made, or one that held only the copy papermill is executing into it
        # (a user's other non-empty folder is never marked here)
        if fresh:
            write_run_marker(self.run_dir)
        return self


def _papermill_copies_only(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds nothing but notebooks that papermill is executing into it.

    ``papermill NB.ipynb RUN/NB.ipynb -p run_dir RUN`` writes its output copy into ``RUN`` before
    the first cell runs, so the folder is not empty when the notebook makes its run context. A
    copy is recognised by its ``metadata.papermill`` record, whose ``run_dir`` parameter names
    this folder (relative to the working directory of the kernel, as the notebook reads it).
    """
    entries = list(run_dir.iterdir())
    if not entries:
        return False
    for entry in entries:
        if entry.suffix != ".ipynb" or not entry.is_file() or entry.is_symlink():
            return False
        try:
            record = json.loads(entry.read_text(encoding="utf-8"))["metadata"]["papermill"]
            named = record["parameters"]["run_dir"]
        except (OSError, ValueError, KeyError, TypeError):
            return False
        if not isinstance(named, str) or not named or resolve_run_dir(named) != run_dir.resolve():
            return False
    return True


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


def run_context(
    run_dir: str | os.PathLike | RunContext | None, *, create: bool = True
) -> RunContext:
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
    return mark_folder(run_dir)


def _ecc_lib_run_json(path: Path) -> bool:
    """Whether ``path`` is a ``run.json`` written by an ecc_lib before the marker existed."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and {"started", "notebooks", "durations_s", "status"} <= set(
        record
    )


def is_run_folder(run_dir: str | os.PathLike, *, legacy: bool = False) -> bool:
    """Whether ``run_dir`` is a run folder ecc_lib wrote.

    Parameters
    ----------
    run_dir : path
        The folder.
    legacy : bool, default False
        Also accept a folder of an older ecc_lib without the marker, recognised by its
        ``run.json`` (an object with the keys ``started``, ``notebooks``, ``durations_s`` and
        ``status``). Off by default: a ``run.json`` with the right keys is easily written by
        anyone, so only the marker makes a run folder (``ecc-lab run --out`` and
        ``ecc-lab bench --out`` reuse nothing else). A ``metrics/`` folder alone never does.

    Returns
    -------
    bool
    """
    run_dir = Path(run_dir)
    if is_marked_folder(run_dir):
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
    ecc_lib.safe_output.LinkedOutputError
        The lock file is a symbolic link (never opened through it).
    """
    path = Path(run_dir) / LOCK_FILE
    fd = open_no_follow(path, os.O_RDWR | os.O_CREAT)  # never through a link
    handle = os.fdopen(fd, "r+", encoding="utf-8")  # held while the block runs
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


def file_label(label: str, *, max_length: int = MAX_FILE_LABEL) -> str:
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


def write_json(path: str | os.PathLike, payload: Any) -> None:
    """Write ``payload`` as sorted, indented JSON (converted by
    :func:`ecc_lib.serialization.to_jsonable`, URLs redacted, NaN refused), the one JSON writer of
    the run folder: written atomically (a temporary file renamed over ``path``, so a crash or a
    full disk never leaves a torn file) and never through a symbolic link
    (:func:`ecc_lib.safe_output.write_text`).

    Parameters
    ----------
    path : str or PathLike
        The file.
    payload : object
        JSON-able after conversion.
    """
    payload = redact_urls_in(to_jsonable(payload))  # no credentials in a recorded URL
    text = json.dumps(payload, indent=2, sort_keys=True, allow_nan=False)
    write_text(path, text + "\n")


def read_json(path: str | os.PathLike) -> Any:
    """Read a JSON file (UTF-8).

    Parameters
    ----------
    path : str or PathLike
        The file.

    Returns
    -------
    object
    """
    return json.loads(Path(path).read_text(encoding="utf-8"))


__all__ = [
    "file_label",
    "run_context",
]
