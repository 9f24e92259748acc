"""Safe output writing: every file ecc_lib writes goes through here.

Three rules, in one place (the lowest layer, so that every writer can use them):

- **atomic**: a file is written in full to a temporary file beside it, flushed to disk, then renamed
  over its name (:func:`atomic_path`, :func:`write_text`, :func:`write_bytes`), so a full disk, a
  crash or a kill leaves either the old file or the new one, never a truncated one;
- **never through a link**: a name that is a symbolic link (or a folder on the way to it, below the
  output folder) is refused (:class:`LinkedOutputError`), as ``ecc-lab init`` refuses: a link to a
  user's file outside the folder is never overwritten;
- **CSV-safe**: text cells of a CSV table that a spreadsheet would run as a formula (starting with
  ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) are written with a leading single quote
  (:func:`csv_safe_frame`, :func:`write_csv`); numbers stay numbers (``-1.5`` is not a formula),
  and the JSON outputs keep every name exact.

An output folder (a run folder, ``ecc-lab bench --out``) is written into only when it is new, empty
or carries the marker :data:`OUTPUT_MARKER` that only ecc_lib writes (:func:`claim_output_folder`):
a user's folder holding a ``bench.tex`` or a ``run.json`` of the right shape is never taken for one.

A write that fails (no space left, read-only, permission denied) raises :class:`OutputError` with a
one-line message naming the file; the earlier file of that name is left as it was and no temporary
file is left behind.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

CSV_QUOTE = "'"
"""Prefix that makes a spreadsheet show such a cell as text."""
_FORMULA = re.compile(r"^'*[=+\-@\t\r]")
"""A formula start, after any single quotes (so that a name that itself starts with ``'=`` gets one
more quote and :func:`csv_restore_frame` gives back exactly what was written)."""
_QUOTED = re.compile(r"^'+[=+\-@\t\r]")
_NUMBER = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$|^\s*[-+]?(inf|nan)\s*$", re.I)


class OutputError(RuntimeError):
    """An output file cannot be written (no space left, read-only, permission denied, a link);
    the message is one line naming the file, and the earlier file of that name is kept."""


class LinkedOutputError(OutputError):
    """An output's name (or a folder on the way to it) is a symbolic link: never written through."""


class OutputFolderError(OutputError, ValueError):
    """An output folder is a file, or a non-empty folder without ecc_lib's marker."""


OUTPUT_MARKER = ".ecc_lib-run"
"""Marker file of a folder written by ecc_lib (a run folder, a bench folder): a small JSON object."""
OUTPUT_MARKER_FORMAT = "ecc_lib run folder"
"""The ``format`` the marker holds."""


# --------------------------------------------------------------------------------------------
# links


def refuse_links(path: str | os.PathLike, *, root: str | os.PathLike | None = None) -> Path:
    """``path`` when neither it nor a folder between ``root`` and it is a symbolic link.

    Parameters
    ----------
    path : path
        The file about to be written.
    root : path, optional
        The output folder ``path`` lies in (a run folder, a store); the folders below it on the
        way to ``path`` are checked too. ``root`` itself may be a link (the user named it).

    Returns
    -------
    Path

    Raises
    ------
    LinkedOutputError
        Naming the link and where it points.
    """
    path = Path(path)
    checked = [path]
    if root is not None:
        base = Path(root)
        parent = path.parent
        while parent != base and base in parent.parents:
            checked.append(parent)
            parent = parent.parent
    for item in checked:
        if item.is_symlink():
            try:
                target = os.readlink(item)
            except OSError:  # pragma: no cover - raced away
                target = "?"
            raise LinkedOutputError(
                f"{item} is a symbolic link (to {target!r}); ecc_lib never writes through a link: "
                "remove it or choose another folder. Nothing was written"
            )
    return path


def open_no_follow(path: str | os.PathLike, flags: int, mode: int = 0o644) -> int:
    """``os.open`` that refuses a symbolic link at ``path`` (``O_NOFOLLOW`` where the OS has it).

    Parameters
    ----------
    path : path
        The file.
    flags : int
        ``os.O_*`` flags.
    mode : int, default 0o644
        Permissions of a created file.

    Returns
    -------
    int
        The file descriptor.

    Raises
    ------
    LinkedOutputError
        ``path`` is a symbolic link.
    OSError
        Any other failure of ``os.open``.
    """
    path = Path(path)
    refuse_links(path)
    try:
        return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), mode)
    except OSError as error:
        if error.errno == errno.ELOOP and path.is_symlink():  # became a link meanwhile
            refuse_links(path)
        raise


# --------------------------------------------------------------------------------------------
# atomic writes


def os_error_sentence(error: OSError, path: str | os.PathLike) -> str:
    """A plain sentence for an OS error met while writing ``path`` (no traceback needed).

    Parameters
    ----------
    error : OSError
        The error.
    path : path
        The file being written.

    Returns
    -------
    str
    """
    code = error.errno
    kept = f"{Path(path).name} was not changed (an earlier file of that name is kept)"
    if code in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return (
            f"no space left on the device while writing {path}; {kept}: free some space and rerun"
        )
    if code == errno.EROFS:
        return f"cannot write {path}: read-only file system; {kept}: choose another folder"
    if code in (errno.EACCES, errno.EPERM):
        return f"cannot write {path}: permission denied; {kept}: fix the permissions or choose another folder"
    reason = error.strerror or type(error).__name__
    return f"cannot write {path}: {reason}; {kept}"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(
    path: str | os.PathLike, *, root: str | os.PathLike | None = None
) -> Iterator[Path]:
    """A temporary file beside ``path`` to write to; renamed over ``path`` when the block ends.

    The temporary file keeps ``path``'s suffix (so ``savefig`` or ``to_parquet`` see the format),
    is flushed to disk, gets the permissions of a plainly created file and replaces ``path`` in one
    rename. When the block raises, ``path`` is left as it was and the temporary file is removed.

    Parameters
    ----------
    path : path
        The file to write.
    root : path, optional
        The output folder (see :func:`refuse_links`).

    Yields
    ------
    Path
        The temporary file (it exists, empty).

    Raises
    ------
    LinkedOutputError
        ``path`` (or a folder below ``root`` on the way to it) is a symbolic link.
    OutputError
        The file cannot be written (no space left, read-only, permission denied): one line.
    """
    path = refuse_links(path, root=root)
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a folder; nothing was written")
    temporary: Path | None = None
    try:
        try:
            handle, name = tempfile.mkstemp(
                prefix=f".{path.name}.", suffix=f".tmp{path.suffix}", dir=path.parent
            )
            os.close(handle)
            temporary = Path(name)
            yield temporary
            with open(temporary, "rb+") as stream:
                os.fsync(stream.fileno())
            os.chmod(temporary, 0o666 & ~_umask())
            refuse_links(path, root=root)  # became a link meanwhile: replace nothing
            os.replace(temporary, path)
            temporary = None
        except OSError as error:  # the OS error stays reachable as __cause__
            raise OutputError(os_error_sentence(error, path)) from error
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                temporary.unlink()


def write_bytes(
    path: str | os.PathLike, data: bytes, *, root: str | os.PathLike | None = None
) -> Path:
    """Write ``data`` to ``path`` atomically, never through a link (see :func:`atomic_path`).

    Parameters
    ----------
    path : path
        The file.
    data : bytes
        Its content.
    root : path, optional
        The output folder (see :func:`refuse_links`).

    Returns
    -------
    Path
    """
    with atomic_path(path, root=root) as temporary:
        with open(temporary, "wb") as stream:
            stream.write(data)
    return Path(path)


def write_text(
    path: str | os.PathLike,
    text: str,
    *,
    root: str | os.PathLike | None = None,
    encoding: str = "utf-8",
) -> Path:
    """Write ``text`` to ``path`` atomically, never through a link (see :func:`atomic_path`).

    Parameters
    ----------
    path : path
        The file.
    text : str
        Its content.
    root : path, optional
        The output folder (see :func:`refuse_links`).
    encoding : str, default "utf-8"

    Returns
    -------
    Path
    """
    return write_bytes(path, text.encode(encoding), root=root)


# --------------------------------------------------------------------------------------------
# output folders


def is_marked_folder(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` carries the marker :data:`OUTPUT_MARKER` (a regular file, not a link,
    holding ``{"format": OUTPUT_MARKER_FORMAT}``).

    Parameters
    ----------
    folder : path

    Returns
    -------
    bool
    """
    marker = Path(folder) / OUTPUT_MARKER
    if not marker.is_file() or marker.is_symlink():
        return False
    try:
        payload = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(payload, dict) and payload.get("format") == OUTPUT_MARKER_FORMAT


def mark_folder(folder: str | os.PathLike) -> Path:
    """Write the marker :data:`OUTPUT_MARKER` into ``folder`` (left as it is when already there).

    Parameters
    ----------
    folder : path
        An existing folder.

    Returns
    -------
    Path
        The marker file.
    """
    path = Path(folder) / OUTPUT_MARKER
    if not is_marked_folder(folder):
        payload = {"format": OUTPUT_MARKER_FORMAT, "version": 1}
        write_text(path, json.dumps(payload, sort_keys=True) + "\n")
    return path


def claim_output_folder(folder: str | os.PathLike, *, what: str = "--out") -> Path:
    """``folder`` made ready for ecc_lib's outputs: created and marked when new or empty, reused
    when it carries the marker, refused otherwise.

    Parameters
    ----------
    folder : path
        The output folder.
    what : str, default "--out"
        How the message names it.

    Returns
    -------
    Path
        The folder (it exists and carries the marker).

    Raises
    ------
    OutputFolderError
        ``folder`` is a file, a dangling link, or a non-empty folder without the marker (a user's
        folder whose files would be overwritten); nothing is written.
    """
    folder = Path(folder).expanduser()
    if folder.is_symlink() and not folder.exists():
        raise OutputFolderError(
            f"{what} {folder} is a symbolic link to {os.readlink(folder)!r}, which does not exist"
        )
    if folder.exists() and not folder.is_dir():
        raise OutputFolderError(f"{what} {folder} is a file, not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not is_marked_folder(folder):
        shown = sorted(p.name for p in folder.iterdir())[:5]
        raise OutputFolderError(
            f"{what} {folder} is a non-empty folder that ecc_lib did not write (no {OUTPUT_MARKER} "
            f"marker; it holds {shown}); its files could be overwritten: choose a new or empty "
            "folder"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(os_error_sentence(error, folder)) from None
    mark_folder(folder)
    return folder


# --------------------------------------------------------------------------------------------
# CSV


def csv_safe_cell(value: object) -> object:
    """``value`` with a leading ``'`` when it is text a spreadsheet would run as a formula.

    Parameters
    ----------
    value : object
        A cell.

    Returns
    -------
    object
        Non-text values and numbers written as text (``"-1.5"``) are returned unchanged.

    Examples
    --------
    >>> csv_safe_cell("=1+2"), csv_safe_cell("-1.5"), csv_safe_cell(-3), csv_safe_cell("gpt-4o")
    ("'=1+2", '-1.5', -3, 'gpt-4o')
    """
    if isinstance(value, str) and _FORMULA.match(value) and not _NUMBER.match(value):
        return CSV_QUOTE + value
    return value


def csv_restore_cell(value: object) -> object:
    """The cell :func:`csv_safe_cell` was given: one leading ``'`` removed from a quoted formula.

    Parameters
    ----------
    value : object
        A cell read back from a spreadsheet-safe CSV.

    Returns
    -------
    object

    Examples
    --------
    >>> csv_restore_cell("'=1+2"), csv_restore_cell("''=x"), csv_restore_cell("'abc")
    ('=1+2', "'=x", "'abc")
    """
    if isinstance(value, str) and _QUOTED.match(value):
        return value[1:]
    return value


def csv_restore_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` read from a spreadsheet-safe CSV with its names as they were before quoting
    (:func:`csv_restore_cell` on every text cell, column name and index label).

    Parameters
    ----------
    frame : DataFrame

    Returns
    -------
    DataFrame
    """
    restored = frame.copy()
    for position, (_, column) in enumerate(frame.items()):
        if column.dtype.kind in "biufcmM":
            continue
        values = column.astype(object)
        if values.map(lambda v: isinstance(v, str) and _QUOTED.match(v) is not None).any():
            restored.isetitem(position, values.map(csv_restore_cell).astype(column.dtype))
    restored.columns = [csv_restore_cell(c) for c in frame.columns]
    return restored


def _safe_labels(labels: pd.Index) -> pd.Index:
    if isinstance(labels, pd.MultiIndex):
        return pd.MultiIndex.from_tuples(
            [tuple(csv_safe_cell(v) for v in item) for item in labels],
            names=[csv_safe_cell(n) for n in labels.names],
        )
    name = csv_safe_cell(labels.name)
    if labels.dtype.kind in "biufcmM":
        return labels.rename(name)
    return pd.Index([csv_safe_cell(v) for v in labels], name=name, dtype=object)


def csv_safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every formula-like text cell, column name and index label quoted
    (:func:`csv_safe_cell`); numeric columns are left as they are.

    Parameters
    ----------
    frame : DataFrame

    Returns
    -------
    DataFrame
        A copy when anything changed, else ``frame`` itself.
    """
    changed: dict[object, pd.Series] = {}
    for position, (_, column) in enumerate(frame.items()):
        if column.dtype.kind in "biufcmM":
            continue
        values = column.astype(object)
        text = values.map(lambda v: isinstance(v, str))
        if not text.any():
            continue
        strings = values[text].astype(str)
        risky = strings.str.match(_FORMULA) & ~strings.str.match(_NUMBER)
        if risky.any():
            values = values.copy()
            values.loc[risky[risky].index] = CSV_QUOTE + strings[risky]
            changed[position] = values
    columns, index = _safe_labels(frame.columns), _safe_labels(frame.index)
    same_names = list(columns.names) == list(frame.columns.names) and list(index.names) == list(
        frame.index.names
    )
    same_labels = list(columns) == list(frame.columns) and list(index) == list(frame.index)
    if not changed and same_names and same_labels:
        return frame
    safe = frame.copy()
    for position, values in changed.items():
        safe.isetitem(position, values)
    safe.columns, safe.index = columns, index
    return safe


def write_csv(
    frame: pd.DataFrame,
    path: str | os.PathLike,
    *,
    index: bool = False,
    float_format: str | None = None,
    root: str | os.PathLike | None = None,
) -> Path:
    """Write ``frame`` as a spreadsheet-safe CSV (:func:`csv_safe_frame`), atomically and never
    through a link.

    Parameters
    ----------
    frame : DataFrame
    path : path
        The ``.csv`` file.
    index : bool, default False
        Write the index too.
    float_format : str, optional
        As for ``DataFrame.to_csv``.
    root : path, optional
        The output folder (see :func:`refuse_links`).

    Returns
    -------
    Path
    """
    safe = csv_safe_frame(frame)
    # a carriage return inside a cell is not quoted by the csv module (its line ends are "\n"):
    # readers would split the row there, so such a table has every cell quoted
    quoting = csv.QUOTE_ALL if _holds_carriage_return(safe) else csv.QUOTE_MINIMAL
    with atomic_path(path, root=root) as temporary:
        safe.to_csv(temporary, index=index, float_format=float_format, quoting=quoting)
    return Path(path)


def _holds_carriage_return(frame: pd.DataFrame) -> bool:
    """Whether a text cell, column name or index label of ``frame`` holds a carriage return."""
    labels = [*map(str, frame.columns), *(str(v) for v in frame.index if isinstance(v, str))]
    if any("\r" in label for label in labels):
        return True
    for _, column in frame.items():
        if column.dtype.kind not in "biufcmM":
            values = column.astype(object)
            if values.map(lambda v: isinstance(v, str) and "\r" in v).any():
                return True
    return False


__all__ = [
    "csv_restore_frame",
]
