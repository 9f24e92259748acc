"""The collection store: append-only JSON-lines files in one folder, safe to crash and rerun.

Layout of ``DIR``
-----------------
``queries.jsonl``
    The queries collected (id, text, category, answer, choices, passage, scorer), one line each.
``rewrites.jsonl``
    One line per (query_id, variant_id): the question stem a variant asks. Variant 0 is the
    original text.
``rewrite_calls.jsonl``
    One line per call to the rewriting model (raw response, tokens, cost, latency).
``records.jsonl``
    One line per (query_id, model, variant_id, decode_id): raw response, extracted answer, score or
    scoring error, tokens, cost, latency, timestamps, decoding settings.
``failures.jsonl``
    Calls that failed for good; they are tried again by the next run.
``manifest.json``
    The settings and counts of each run (no secrets; the API key's environment variable name only).

Guarantees
----------
- Every line is written with one ``os.write`` on a file opened in append mode, then ``fsync``: a
  crash or kill loses at most the calls in flight.
- A torn last line (a crash in the middle of a write) is ignored and counted on reading, and cut
  off before the next append.
- Records are unique by key: the store refuses a second record for a key, reading keeps the first
  of any duplicates (and counts them), and an exclusive lock on ``DIR/.lock`` keeps a second
  collection process out of the folder while one runs.
- Secrets given to the store are replaced by ``[REDACTED]`` in every line before it is written.
- A store that cannot be written (read-only, permission denied, a full disk) or a store path that is
  a file raise :class:`~ecc_lib.collect.errors.StoreError` with the reason; a line whose write fails
  half-way is taken back, so every line on disk stays valid.
- Nothing is written through a symbolic link: a store file (``records.jsonl``, the lock, the
  manifest...) that is a link is refused with :class:`~ecc_lib.collect.errors.StoreError`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ecc_lib.collect.client import redact, utc_now
from ecc_lib.collect.errors import StoreError
from ecc_lib.safe_output import OutputError, refuse_links

logger = logging.getLogger(__name__)

QUERIES_FILE = "queries.jsonl"
REWRITES_FILE = "rewrites.jsonl"
REWRITE_CALLS_FILE = "rewrite_calls.jsonl"
RECORDS_FILE = "records.jsonl"
FAILURES_FILE = "failures.jsonl"
MANIFEST_FILE = "manifest.json"
LOCK_FILE = ".lock"
APPEND_FILES = (QUERIES_FILE, REWRITES_FILE, REWRITE_CALLS_FILE, RECORDS_FILE, FAILURES_FILE)
"""The files a store appends lines to (opened by :meth:`CollectionStore.open`)."""
STORE_FORMAT = "ecc_lib.collect/1"

QUERY_FIELDS: tuple[str, ...] = (
    "query_id",
    "text",
    "category",
    "answer",
    "choices",
    "passage",
    "scorer",
)
QUERY_IDENTITY_FIELDS: tuple[str, ...] = ("text", "answer", "choices", "passage")
"""Fields of a stored query that a rerun must not change (the records depend on them)."""

RecordKey = tuple[str, str, int, int]
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
"""Opening a store file never follows a symbolic link (where the OS can say so)."""


def observation_type(variant_id: int, decode_id: int) -> str:
    """``"rewrite"`` when ``variant_id > 0``, else ``"decode"`` when ``decode_id > 0``, else
    ``"original"`` (the first decode of the original query).

    Parameters
    ----------
    variant_id, decode_id : int
        Rewrite and decode numbers.

    Returns
    -------
    str
    """
    if variant_id > 0:
        return "rewrite"
    return "decode" if decode_id > 0 else "original"


def record_key(record: dict) -> RecordKey:
    """``(query_id, model, variant_id, decode_id)`` of a record.

    Parameters
    ----------
    record : dict
        An observation record.

    Returns
    -------
    RecordKey
    """
    return (
        str(record["query_id"]),
        str(record["model"]),
        int(record["variant_id"]),
        int(record["decode_id"]),
    )


def _rewrite_key(rewrite: dict) -> tuple[str, int]:
    return str(rewrite["query_id"]), int(rewrite["variant_id"])


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if value is pd.NA:
        return None
    return str(value)


def to_json_line(record: dict, *, secrets: Iterable[str] = ()) -> bytes:
    """One JSON line (newline-terminated, UTF-8) with secrets redacted.

    Parameters
    ----------
    record : dict
        A JSON-serialisable record.
    secrets : iterable of str
        Values replaced by ``[REDACTED]``.

    Returns
    -------
    bytes
    """
    line = json.dumps(record, ensure_ascii=False, default=_json_default, separators=(",", ":"))
    return (redact(line, list(secrets)) + "\n").encode("utf-8")


def _file_in_the_way(directory: Path) -> Path | None:
    """The first existing path among ``directory`` and its parents that is not a folder."""
    for path in (directory, *directory.parents):
        if path.exists() or path.is_symlink():
            return None if path.is_dir() else path
    return None


def os_error_message(error: OSError, directory: Path, path: Path | None = None) -> str:
    """A plain sentence for a file-system error met by the store (no traceback needed).

    Parameters
    ----------
    error : OSError
        The error.
    directory : Path
        The store's folder.
    path : Path, optional
        The file being written (default: ``directory``).

    Returns
    -------
    str
        The message (read-only file system, permission, no space, a file in the way, or the OS's
        own message).
    """
    target = path if path is not None else directory
    code = error.errno
    if code == errno.EROFS:
        return (
            f"cannot write to the store {directory}: read-only file system ({target.name}); "
            "use another --store"
        )
    if code in (errno.EACCES, errno.EPERM):
        return (
            f"cannot write to the store {directory}: permission denied ({target.name}); fix its "
            "permissions or use another --store"
        )
    if code in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return (
            f"no space left on the device of the store {directory} while writing {target.name}; "
            "every line written before is kept and valid: free some space and rerun the same "
            "command to resume"
        )
    blocker = _file_in_the_way(directory)
    if code in (errno.ENOTDIR, errno.EEXIST) and blocker is not None:
        return f"store path {directory}: {blocker} is a file, not a folder; give a folder"
    return f"cannot use the store {directory}: {error.strerror or error} ({target})"


def read_jsonl(path: str | Path) -> tuple[list[dict], int, int]:
    """Records of a JSON-lines file.

    Parameters
    ----------
    path : str or Path
        A JSON-lines file (absent: no records).

    Returns
    -------
    records : list of dict
    n_torn : int
        1 when the file ends with an unterminated line (ignored), else 0.
    n_bad : int
        Terminated lines that are not JSON objects (ignored, with a warning).
    """
    path = Path(path)
    if not path.exists():
        return [], 0, 0
    pieces = path.read_bytes().split(b"\n")
    n_torn = int(pieces[-1] != b"")
    records, n_bad = [], 0
    for piece in pieces[:-1]:
        if not piece.strip():
            continue
        try:
            record = json.loads(piece)
        except (json.JSONDecodeError, UnicodeDecodeError):
            record = None
        if isinstance(record, dict):
            records.append(record)
        else:
            n_bad += 1
    if n_torn:
        logger.warning("%s: ignored a torn last line (an interrupted write)", path)
    if n_bad:
        logger.warning("%s: ignored %d line(s) that are not JSON objects", path, n_bad)
    return records, n_torn, n_bad


def _write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to ``fd``: one ``os.write`` for a regular file; the loop only guards against
    short writes."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _AppendFile:
    """A file opened for appending whole lines; a torn tail is cut off first."""

    def __init__(self, path: Path, secrets: tuple[str, ...], fsync: bool) -> None:
        self.path = path
        self.secrets = secrets
        self.fsync = fsync
        refuse_links(path)  # before the tail is cut: never through a link
        self._repair_tail()
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NO_FOLLOW, 0o644)

    def _repair_tail(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb+") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return
            end, keep = size, 0
            while end > 0 and not keep:  # find the last newline, reading backwards 1 MiB at a time
                start = max(0, end - (1 << 20))
                handle.seek(start)
                index = handle.read(end - start).rfind(b"\n")
                keep = start + index + 1 if index >= 0 else 0
                end = start
            handle.truncate(keep)
            handle.flush()
            os.fsync(handle.fileno())
        logger.warning("%s: cut off a torn last line of %d byte(s)", self.path, size - keep)

    def write(self, record: dict) -> None:
        """Append one line; on a failed write (disk full) take back what reached the file.

        Raises
        ------
        OSError
            The write failed (the file is as it was before the call).
        """
        data = to_json_line(record, secrets=self.secrets)
        size = os.fstat(self.fd).st_size
        try:
            _write_all(self.fd, data)
            if self.fsync:
                os.fsync(self.fd)
        except OSError:
            try:
                os.ftruncate(self.fd, size)
            except OSError:  # pragma: no cover - the next open() cuts the torn line instead
                logger.warning("%s: could not take back a half-written line", self.path)
            raise

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class CollectionStore:
    """A collection folder: read it any time; ``open()`` it (or use ``with``) to append.

    Parameters
    ----------
    directory : str or Path
        Created when missing (on ``open``).
    secrets : iterable of str
        Strings never to be written (the API key): replaced by ``[REDACTED]``.
    fsync : bool, default True
        ``os.fsync`` after each line.
    read : bool, default True
        Read the folder now (``open()`` always reads it again once the lock is held).
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        secrets: Iterable[str] = (),
        fsync: bool = True,
        read: bool = True,
    ):
        self.directory = Path(directory)
        self.secrets = tuple(s for s in secrets if s)
        self.fsync = fsync
        self._files: dict[str, _AppendFile] = {}
        self._lock_handle = None
        self.queries: dict[str, dict] = {}
        self.rewrites: dict[tuple[str, int], dict] = {}
        self.records: dict[RecordKey, dict] = {}
        self.n_torn = 0
        self.n_bad = 0
        self.n_duplicates = 0
        if read:
            self.load()

    # -- reading -----------------------------------------------------------------------------

    def path(self, name: str) -> Path:
        """Path of a file of the store.

        Parameters
        ----------
        name : str
            File name inside the store folder.

        Returns
        -------
        Path
        """
        return self.directory / name

    def load(self) -> None:
        """(Re)read queries, rewrites and records; duplicates keep their first line."""
        self.n_torn = self.n_bad = self.n_duplicates = 0

        def first_by_key(name: str, key: Any) -> tuple[dict, int]:
            """The file's lines by key (the first of each key), and how many lines were dropped."""
            entries, torn, bad = read_jsonl(self.path(name))
            self.n_torn += torn
            self.n_bad += bad
            index: dict = {}
            for entry in entries:
                index.setdefault(key(entry), entry)
            return index, len(entries) - len(index)

        self.queries, _ = first_by_key(QUERIES_FILE, lambda query: str(query["query_id"]))
        self.rewrites, _ = first_by_key(REWRITES_FILE, _rewrite_key)
        self.records, self.n_duplicates = first_by_key(RECORDS_FILE, record_key)
        if self.n_duplicates:
            logger.warning(
                "%s: %d duplicate record line(s) ignored (first kept)",
                self.path(RECORDS_FILE),
                self.n_duplicates,
            )

    def failures(self) -> list[dict]:
        """Calls that failed for good, over all runs (later runs may have succeeded since).

        Returns
        -------
        list of dict
        """
        return read_jsonl(self.path(FAILURES_FILE))[0]

    def rewrite_calls(self) -> list[dict]:
        """Every rewriting call recorded (cost and token counts), over all runs.

        Returns
        -------
        list of dict
        """
        return read_jsonl(self.path(REWRITE_CALLS_FILE))[0]

    def manifest(self, *, repair: bool = False) -> dict:
        """The store's manifest (format, creation time, one entry per run); a fresh one when absent.

        A damaged manifest (not JSON, not an object with a list of runs) costs only the run history,
        never the store (issue 36): a warning names the file, and with ``repair`` it is moved
        aside as ``manifest.json.damaged`` before a fresh one is written.

        Parameters
        ----------
        repair : bool, default False
            Move a damaged manifest aside (the callers that write the manifest).

        Returns
        -------
        dict
        """
        path = self.path(MANIFEST_FILE)
        fresh = {"format": STORE_FORMAT, "created_at": utc_now(), "runs": []}
        if not path.exists():
            return fresh
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
            runs = manifest.get("runs", []) if isinstance(manifest, dict) else None
            if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
                raise ValueError("not a JSON object with a list of runs")
        except (ValueError, UnicodeDecodeError, RecursionError) as error:
            where = "left as it is"
            if repair:
                damaged = path.with_name(MANIFEST_FILE + ".damaged")
                try:
                    os.replace(path, damaged)
                    where = f"moved to {damaged.name}"
                except OSError as move_error:
                    raise StoreError(
                        f"{path} is damaged ({type(error).__name__}: {error}) and cannot be moved "
                        f"aside ({move_error.strerror}); move or delete it by hand (records.jsonl "
                        "holds the data, the manifest only the run history)"
                    ) from None
            logger.warning(
                "%s is damaged (%s: %s); %s, a new run history is started (the records are intact)",
                path,
                type(error).__name__,
                error,
                where,
            )
            return fresh
        return manifest

    def total_cost(self) -> float:
        """Known spend of the store in USD: records plus rewriting calls.

        Returns
        -------
        float
        """
        costs = [r.get("cost") for r in self.records.values()]
        costs += [c.get("cost") for c in self.rewrite_calls()]
        return float(sum(c for c in costs if isinstance(c, (int, float))))

    # -- writing -----------------------------------------------------------------------------

    def __enter__(self) -> CollectionStore:
        return self.open()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def open(self) -> CollectionStore:
        """Lock the folder for this process, reload, and open the files for appending.

        Returns
        -------
        CollectionStore
            ``self``.

        Raises
        ------
        StoreError
            Another process holds the lock.
        """
        blocker = _file_in_the_way(self.directory)
        if blocker is not None:
            raise StoreError(
                f"store path {self.directory}: {blocker} is a file, not a folder; give a folder"
            )
        with self._store_errors(self.directory):
            self.directory.mkdir(parents=True, exist_ok=True)
        self._lock()
        try:
            with self._store_errors():
                self.load()
                for name in APPEND_FILES:
                    self._files[name] = _AppendFile(self.path(name), self.secrets, self.fsync)
        except BaseException:
            self.close()
            raise
        return self

    @contextlib.contextmanager
    def _store_errors(self, path: Path | None = None) -> Iterator[None]:
        """An OS error (about ``path``, else the file it names) or a refused symbolic link met in
        the block, raised as :class:`StoreError` with a plain message."""
        try:
            yield
        except OSError as error:
            where = path or Path(error.filename or self.directory)
            raise StoreError(os_error_message(error, self.directory, where)) from None
        except OutputError as error:  # a store file is a symbolic link
            raise StoreError(f"store {self.directory}: {error}") from None

    def _lock(self) -> None:
        path = self.path(LOCK_FILE)
        with self._store_errors(path):
            refuse_links(path)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | _NO_FOLLOW, 0o644)  # held until close()
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no cross-process lock
            self._lock_handle = fd
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreError(
                f"{self.directory} is in use by another collection process; wait for it to "
                "finish or use another --store"
            ) from None
        self._lock_handle = fd

    def close(self) -> None:
        """Close the files and release the lock."""
        for file in self._files.values():
            file.close()
        self._files = {}
        if self._lock_handle is not None:
            os.close(self._lock_handle)  # closing releases the flock
            self._lock_handle = None

    def _append(self, name: str, record: dict) -> None:
        if name not in self._files:
            raise StoreError(f"{self.directory} is not open for writing; call open() first")
        with self._store_errors(self.path(name)):
            self._files[name].write(record)

    def _append_new(self, name: str, index: dict, key: Any, entry: dict) -> bool:
        """Append ``entry`` to file ``name`` and ``index`` unless ``key`` is there already."""
        if key in index:
            return False
        self._append(name, entry)
        index[key] = entry
        return True

    def add_queries(self, queries: Iterable[dict]) -> int:
        """Store new queries; check that already-stored ones are unchanged. Returns how many were
        added.

        Parameters
        ----------
        queries : iterable of dict
            Query records.

        Returns
        -------
        int
            Queries added.

        Raises
        ------
        StoreError
            A query with a stored id differs in text, answer, choices or passage.
        """
        added = 0
        for query in queries:
            entry = {field: query.get(field) for field in QUERY_FIELDS}
            entry = json.loads(to_json_line(entry, secrets=self.secrets))  # canonical JSON form
            stored = self.queries.get(entry["query_id"])
            if stored is None:
                added += self._append_new(QUERIES_FILE, self.queries, entry["query_id"], entry)
                continue
            changed = [f for f in QUERY_IDENTITY_FIELDS if stored.get(f) != entry.get(f)]
            if changed:
                raise StoreError(
                    f"query '{entry['query_id']}' differs from the one stored in "
                    f"{self.directory} (field(s) {changed}); its records would mix two questions. "
                    "Keep the query unchanged, give it a new query_id, or use another --store."
                )
        return added

    def add_rewrite(self, rewrite: dict) -> bool:
        """Store one variant; False (nothing written) when its (query_id, variant_id) exists.

        Parameters
        ----------
        rewrite : dict
            One query variant.

        Returns
        -------
        bool
            True when written.
        """
        return self._append_new(REWRITES_FILE, self.rewrites, _rewrite_key(rewrite), rewrite)

    def add_rewrite_call(self, call: dict) -> None:
        """Append one rewriting call (the prompt's cost and token counts).

        Parameters
        ----------
        call : dict
            The call's JSON record.
        """
        self._append(REWRITE_CALLS_FILE, call)

    def add_record(self, record: dict) -> bool:
        """Store one observation; False (nothing written) when its key is already stored.

        Parameters
        ----------
        record : dict
            One observation (query, model, variant, decode, response, score ...).

        Returns
        -------
        bool
            True when written.
        """
        return self._append_new(RECORDS_FILE, self.records, record_key(record), record)

    def add_failure(self, failure: dict) -> None:
        """Append one call that failed for good.

        Parameters
        ----------
        failure : dict
            The failure's JSON record (query, model, error).
        """
        self._append(FAILURES_FILE, failure)

    def update_manifest(self, run: dict) -> None:
        """Insert or replace the run entry with ``run["run_id"]`` and write the manifest
        atomically (temporary file, fsync, rename).

        Parameters
        ----------
        run : dict
            The run entry, with a ``run_id``.

        Raises
        ------
        StoreError
            The manifest cannot be written (the previous one is left as it was).
        """
        manifest = self.manifest(repair=True)
        runs = [r for r in manifest.get("runs", []) if r.get("run_id") != run["run_id"]]
        manifest["runs"] = runs + [run]
        self._write_manifest(manifest)

    def _write_manifest(self, manifest: dict) -> None:
        data = to_json_line(manifest, secrets=self.secrets)
        final = self.path(MANIFEST_FILE)
        temporary = self.path(MANIFEST_FILE + ".tmp")
        with self._store_errors(final):  # atomic (temporary file, fsync, rename), never via a link
            refuse_links(final)
            try:
                if temporary.is_symlink():  # a stale link: removed, never followed
                    os.unlink(temporary)
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NO_FOLLOW
                fd = os.open(temporary, flags, 0o644)
                try:
                    _write_all(fd, data)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(temporary, final)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise

    def close_stale_runs(self, current_run_id: str) -> int:
        """Mark runs still "started" (their process was killed: the lock is ours now) as
        "interrupted". Call with the lock held.

        Parameters
        ----------
        current_run_id : str
            The run holding the lock (never marked).

        Returns
        -------
        int
            How many runs were marked.
        """
        manifest = self.manifest(repair=True)
        stale = [
            r
            for r in manifest.get("runs", [])
            if r.get("status") == "started" and r.get("run_id") != current_run_id
        ]
        for run in stale:
            run["status"] = "interrupted"
            run["note"] = (
                f"the process ended without closing the run (killed); found by run {current_run_id}"
            )
        if stale:
            self._write_manifest(manifest)
            logger.warning(
                "%s: %d earlier run(s) ended without closing (killed); marked interrupted",
                self.directory,
                len(stale),
            )
        return len(stale)


__all__ = [
    "CollectionStore",
]
