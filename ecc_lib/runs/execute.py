"""Executing notebooks: the kernel (always the running interpreter), papermill, HTML export."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ecc_lib._optional import require
from ecc_lib.safe_output import refuse_links, write_text

logger = logging.getLogger(__name__)
REPORT_NOTEBOOK_PREFIX = "05"
NOTEBOOK_TITLES = {
    "00": "Tour: planted capability clusters and unstable labels (synthetic data)",
    "01": "Data: scores per model and category",
    "02": "Label instability (DARS diagnostics)",
    "03": "Capability clustering (ECC against baselines)",
    "04": "Routing: single-shot versus DARS labels, ECC router",
    "05": "Report",
}
"""Section titles of the report, by notebook number."""
NOTEBOOK_SECTIONS = {"00": "tour", "01": "data", "02": "dars", "03": "ecc", "04": "routing"}
"""The ``metrics.json`` section each notebook records, by notebook number."""


def notebook_of(section: str) -> str:
    """The number of the notebook that records a ``metrics.json`` section (:data:`NOTEBOOK_SECTIONS`).

    Parameters
    ----------
    section : str
        ``"tour"``, ``"data"``, ``"dars"``, ``"ecc"`` or ``"routing"``.

    Returns
    -------
    str
        ``"03"`` for ``"ecc"``.

    Raises
    ------
    KeyError
        When no notebook records the section.
    """
    for number, key in NOTEBOOK_SECTIONS.items():
        if key == section:
            return number
    raise KeyError(f"no notebook records the metrics section {section!r}")


class NotebookExecutionError(RuntimeError):
    """A notebook failed; the message names the notebook, the cell and the exception.

    Parameters
    ----------
    notebook, cell_index, execution_count, ename, evalue, executed_path
        Stored as the attributes below.
    first_line : str, optional
        First line of the failing cell, quoted in the message.

    Attributes
    ----------
    notebook : str
        File name of the source notebook.
    cell_index : int
        0-based index of the failing cell in the source notebook.
    execution_count : int or None
        ``In [n]`` number of the failing cell in the executed copy.
    ename, evalue : str
        Exception class name and message raised in the notebook.
    executed_path : Path
        The executed copy holding the full traceback.
    """

    def __init__(
        self,
        notebook: str,
        cell_index: int,
        execution_count: int | None,
        ename: str,
        evalue: str,
        executed_path: Path,
        first_line: str = "",
    ) -> None:
        self.notebook = notebook
        self.cell_index = cell_index
        self.execution_count = execution_count
        self.ename = ename
        self.evalue = evalue
        self.executed_path = executed_path
        where = f"cell {cell_index}"
        if execution_count is not None:
            where += f" (In [{execution_count}])"
        line = f"; the cell starts with {first_line!r}" if first_line else ""
        super().__init__(
            f"notebook {notebook} failed in {where}: {ename}: {evalue}{line}. "
            f"The executed copy with the traceback is {executed_path}"
        )


class NotebookTimeoutError(NotebookExecutionError):
    """A cell ran past ``timeout`` seconds; the executed copy is marked as interrupted."""


class RunInterrupted(KeyboardInterrupt):
    """The run was stopped by a signal (SIGTERM) or Ctrl-C."""


INTERRUPTED_TAG = "interrupted"


def mark_interrupted(executed: str | os.PathLike, reason: str) -> int | None:
    """Mark an executed copy that did not finish, so that it never looks completed.

    Inserts a first markdown cell (tagged ``interrupted``) saying where and why execution
    stopped and sets ``metadata.ecc_lib.status = "interrupted"``.

    Parameters
    ----------
    executed : path
        The executed copy written by papermill (nothing happens when it does not exist).
    reason : str
        Why it stopped ("timed out after 60 s in a cell", "interrupted by SIGTERM").

    Returns
    -------
    int or None
        Index (in the source notebook) of the first cell that did not complete, when known.
    """
    nbformat = require("nbformat", extra="notebooks")

    executed = Path(executed)
    if not executed.is_file():
        return None
    try:
        nb = nbformat.read(executed, as_version=4)
    except Exception:  # a copy torn by the interruption itself: replace it by a stub
        nb = nbformat.v4.new_notebook()
    if nb.metadata.get("ecc_lib", {}).get("status") == "interrupted":
        return nb.metadata["ecc_lib"].get("stopped_at_cell")
    cells = [c for c in nb.cells if INTERRUPTED_TAG not in c.metadata.get("tags", [])]
    states = [c.metadata.get("papermill", {}) for c in cells]
    stopped = next(
        (i for i, m in enumerate(states) if m.get("status") in ("running", "pending")), None
    )
    if stopped is None:  # papermill's clean-up marks every cell completed: take the last started
        started = [i for i, m in enumerate(states) if m.get("start_time")]
        stopped = started[-1] if started else None
    if stopped is not None:  # index in the source notebook: skip the cells papermill added
        added = ("injected-parameters", "papermill-error-cell-tag")
        stopped = sum(
            1 for c in cells[:stopped] if not set(added) & set(c.metadata.get("tags", []))
        )
    where = f" at cell {stopped}" if stopped is not None else ""
    note = nbformat.v4.new_markdown_cell(
        f"**Interrupted: this copy is incomplete.** Execution stopped{where} ({reason}); the cells "
        "after it did not run and their outputs are missing or stale."
    )
    note.metadata["tags"] = [INTERRUPTED_TAG]
    nb.cells = [note, *cells]
    nb.metadata["ecc_lib"] = {"status": "interrupted", "reason": reason, "stopped_at_cell": stopped}
    write_text(executed, nbformat.writes(nb))
    return stopped


def scrub_credentials(executed: str | os.PathLike, parameters: Mapping[str, Any]) -> int:
    """Redact, in an executed copy, every URL of ``parameters`` that carries credentials.

    papermill writes the injected parameters (cell source and ``metadata.papermill``) and the
    outputs verbatim; the copy is rewritten with :func:`ecc_lib.redaction.redact_url`'s form of
    each such URL (also JSON- and ``repr``-escaped, percent-encoded, and the bare credential
    values of 8 characters or more).

    Parameters
    ----------
    executed : path
        The executed copy (nothing happens when it does not exist).
    parameters : mapping
        The parameters it was executed with.

    Returns
    -------
    int
        Replacements made.
    """
    from ecc_lib.redaction import secret_replacements

    executed = Path(executed)
    pairs = secret_replacements(parameters)
    if not pairs or not executed.is_file():
        return 0
    text = executed.read_text(encoding="utf-8")
    count = 0
    for raw, clean in pairs.items():
        count += text.count(raw)
        text = text.replace(raw, clean)
    if count:
        write_text(executed, text)
    return count


# --------------------------------------------------------------------------------------------
# execution


def kernel_environment(*, blas_threads: int | None = 1) -> dict[str, str]:
    """Environment variables set in the notebook kernels.

    ``OPENBLAS_NUM_THREADS`` is set to ``blas_threads`` unless the caller's environment sets it:
    on a small shared machine multi-threaded OpenBLAS spins and runs several times slower than one
    thread (the routers and the 2-D map in 04 and 03 took three times as long on a busy 2-core
    machine). ``None`` leaves it to OpenBLAS.

    Parameters
    ----------
    blas_threads : int or None, default 1
        OpenBLAS threads (None leaves the variable alone).

    Returns
    -------
    dict of str to str
        Variables to add to the kernel's environment.
    """
    env: dict[str, str] = {}
    if blas_threads is not None and "OPENBLAS_NUM_THREADS" not in os.environ:
        env["OPENBLAS_NUM_THREADS"] = str(int(blas_threads))
    return env


def interpreter_kernel_manager_class(env: Mapping[str, str] | None = None):
    """An ``AsyncKernelManager`` whose kernel is always the running interpreter.

    papermill would otherwise look up the notebook's kernelspec (``python3``) on the Jupyter path,
    where a user-wide spec may point at another Python. With this class the kernel runs
    ``sys.executable -m ipykernel_launcher``, so a fresh virtual environment needs no kernelspec.

    Parameters
    ----------
    env : mapping, optional
        Extra environment variables of the kernel process (see :func:`kernel_environment`).

    Parameters
    ----------
    env : mapping, optional
        Extra environment variables of the kernel.

    Returns
    -------
    type
        A subclass of ``jupyter_client.AsyncKernelManager``.
    """
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from traitlets import default

    extra_env = dict(env or {})

    class InterpreterKernelSpecManager(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
            return KernelSpec(
                # the kernel listens on loopback only; its log level hides the start-up notice
                # about unencrypted TCP, which papermill's local kernels always print, and the
                # socket errors of a kernel shut down after a cell timeout
                argv=[
                    sys.executable,
                    "-m",
                    "ipykernel_launcher",
                    "-f",
                    "{connection_file}",
                    "--IPKernelApp.log_level=CRITICAL",
                ],
                display_name=f"Python ({sys.executable})",
                language="python",
                env=extra_env,
                metadata={"debugger": False, "supported_encryption": ["curve"]},
                resource_dir="",
            )

    class InterpreterKernelManager(AsyncKernelManager):
        @default("kernel_spec_manager")
        def _kernel_spec_manager_default(self) -> KernelSpecManager:
            return InterpreterKernelSpecManager(data_dir=self.data_dir)

    return InterpreterKernelManager


def execute_notebook(
    notebook: str | os.PathLike,
    output: str | os.PathLike,
    parameters: Mapping[str, Any],
    *,
    cwd: str | os.PathLike | None = None,
    timeout: float | None = None,
    start_timeout: float = 120,
    blas_threads: int | None = 1,
) -> None:
    """Execute one notebook with papermill in the current interpreter.

    ``blas_threads`` limits OpenBLAS threads in the kernel (see :func:`kernel_environment`).
    The executed copy never keeps credentials found in URLs of ``parameters`` (see
    :func:`scrub_credentials`), whether the run succeeds or not.

    Parameters
    ----------
    notebook : path
        Source notebook.
    output : path
        Executed copy written here.
    parameters : mapping
        Values injected after the ``parameters`` cell.
    cwd : path, optional
        Working directory of the kernel.
    timeout : float, optional
        Seconds allowed per cell (None: no limit).
    start_timeout : float, default 120
        Seconds allowed for the kernel to start.
    blas_threads : int or None, default 1
        OpenBLAS threads in the kernel.

    Raises
    ------
    NotebookExecutionError
        Naming the notebook, the failing cell (index in the source notebook) and the exception.
    NotebookTimeoutError
        A cell ran past ``timeout`` seconds (the copy is marked with :func:`mark_interrupted`).
    KeyboardInterrupt
        Re-raised after marking the copy as interrupted (also :class:`RunInterrupted`).
    """
    notebook, output = Path(notebook), Path(output)
    refuse_links(output)  # papermill would write through a link
    try:
        _execute(notebook, output, parameters, cwd, timeout, start_timeout, blas_threads)
    finally:
        scrub_credentials(output, parameters)


def _execute(
    notebook: Path,
    output: Path,
    parameters: Mapping[str, Any],
    cwd: str | os.PathLike | None,
    timeout: float | None,
    start_timeout: float,
    blas_threads: int | None,
) -> None:
    """:func:`execute_notebook` without the scrubbing."""
    papermill = require("papermill", extra="notebooks", purpose="running notebooks")
    nbformat = require("nbformat", extra="notebooks", purpose="running notebooks")
    CellTimeoutError = require("nbclient.exceptions", extra="notebooks").CellTimeoutError
    PapermillExecutionError = require(
        "papermill.exceptions", extra="notebooks"
    ).PapermillExecutionError

    try:
        papermill.execute_notebook(
            str(notebook),
            str(output),
            parameters=dict(parameters),
            kernel_name="python3",
            progress_bar=False,
            cwd=str(cwd) if cwd else None,
            start_timeout=int(start_timeout),
            execution_timeout=timeout,
            kernel_manager_class=interpreter_kernel_manager_class(
                kernel_environment(blas_threads=blas_threads)
            ),
        )
    except CellTimeoutError:
        reason = f"a cell ran longer than the timeout of {timeout:g} s"
        stopped = mark_interrupted(output, reason)
        raise NotebookTimeoutError(
            notebook.name,
            -1 if stopped is None else stopped,
            None,
            "CellTimeoutError",
            reason,
            output,
        ) from None
    except BaseException as error:
        if not isinstance(error, PapermillExecutionError):
            name = "SIGTERM" if isinstance(error, RunInterrupted) else type(error).__name__
            mark_interrupted(output, f"interrupted by {name}")
            raise
        source = nbformat.read(notebook, as_version=4)
        index = next(
            (i for i, cell in enumerate(source.cells) if cell.source == error.source),
            error.cell_index,
        )
        first_line = next((ln for ln in str(error.source).splitlines() if ln.strip()), "")
        raise NotebookExecutionError(
            notebook.name,
            index,
            error.exec_count,
            error.ename,
            error.evalue,
            output,
            first_line=first_line[:80],
        ) from None


REPORT_CSS = """
body { max-width: 62rem; margin: 0 auto; padding: 1rem 1.5rem; }
.jp-Notebook { padding: 0; }
.report-section { margin-bottom: 2.5rem; }
p.findings { font-size: 1.05em; line-height: 1.5; }
p.note, p.skipped { color: #444; font-style: italic; }
table.report-table { border-collapse: collapse; margin: 0.8rem 0 1.2rem; font-size: 0.85em;
  width: auto; max-width: 100%; table-layout: auto; }
table.report-table tr { text-align: left !important; }
table.report-table caption { caption-side: top; text-align: left; font-weight: 600;
  padding-bottom: 0.3rem; }
table.report-table th, table.report-table td { padding: 0.25rem 0.6rem; text-align: left !important;
  vertical-align: top; border-bottom: 1px solid #ddd; overflow-wrap: break-word; }
table.report-table td:first-child { white-space: nowrap; }
table.report-table thead th { border-bottom: 2px solid #444; }
figure { margin: 1.2rem 0 2rem; }
figure img { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 0.9em; color: #333; margin-top: 0.4rem; }
body { font-family: "DejaVu Sans", Arial, sans-serif; line-height: 1.4; color: #111; }
#summary li { margin-bottom: 0.35rem; }
table.summary-table { border-collapse: collapse; margin: 0.6rem 0 1rem; font-size: 0.92em; }
table.summary-table caption { text-align: left; font-size: 0.9em; color: #333; padding-bottom: 0.3rem; }
table.summary-table th, table.summary-table td { padding: 0.25rem 0.6rem; text-align: left;
  vertical-align: top; border-bottom: 1px solid #ddd; }
table.summary-table th { border-bottom: 2px solid #444; }
table.summary-table td.number { white-space: nowrap; font-variant-numeric: tabular-nums; }
details.appendix > summary { font-size: 1.3em; font-weight: 600; cursor: pointer; margin: 1rem 0; }
"""
"""Style of ``report.html``: a readable column, tables that wrap rather than overflow."""
_NO_ALT = "No description has been provided for this image"


def _first_heading(notebook) -> str:
    """Text of the first level-1 heading the notebook shows: in its outputs first (the report's
    own title), else in its markdown cells."""
    import re

    html_h1 = re.compile(r"<h1[^>]*>(.*?)</h1>", re.S)
    markdown_h1 = re.compile(r"^# (.+)$", re.M)

    def heading(text: str) -> str:
        found = html_h1.search(text) or markdown_h1.search(text)
        return re.sub(r"<[^>]+>", "", found.group(1)).strip() if found else ""

    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            for kind in ("text/html", "text/markdown"):
                text = data.get(kind, "")
                found = heading("".join(text) if isinstance(text, list) else str(text))
                if found:
                    return found
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            found = heading(cell.source)
            if found:
                return found
    return ""


def export_report(
    executed_notebook: str | os.PathLike, html_path: str | os.PathLike, *, title: str | None = None
) -> Path:
    """Export an executed notebook to HTML without its input cells.

    Parameters
    ----------
    executed_notebook : path
    html_path : path
    title : str, optional
        The page title (``<title>``); default: the first level-1 heading the notebook shows.

    Returns
    -------
    Path
        ``html_path``. The page is self-contained: no script, no request to another host (a
        Content-Security-Policy allows only inline styles and ``data:`` images); it carries
        :data:`REPORT_CSS`; an image without a description (a plain image output) gets an empty
        alt text.
    """
    import html as html_lib

    nbformat = require("nbformat", extra="notebooks", purpose="exporting notebooks")

    notebook = nbformat.read(str(executed_notebook), as_version=4)
    title = title or _first_heading(notebook) or Path(executed_notebook).stem
    # A page of its own rather than nbconvert's template: no script of any kind (nbconvert's loads
    # require.js, MathJax and mermaid from a CDN, and MathJax would typeset any $...$ of user
    # text). The outputs' HTML is the report's own, built with every user string escaped; the
    # notebook's markdown (its description for Jupyter users) is not part of the report.
    parts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/html" in data:
                text = data["text/html"]
                parts.append("".join(text) if isinstance(text, list) else str(text))
            elif "image/png" in data:
                png = str(data["image/png"]).strip()
                parts.append(f'<img src="data:image/png;base64,{png}" alt="">')
            elif output.get("output_type") == "stream" or "text/plain" in data:
                text = output.get("text", "") or data.get("text/plain", "")
                text = "".join(text) if isinstance(text, list) else str(text)
                if text.strip():
                    parts.append(f"<pre>{html_lib.escape(text)}</pre>")
    body = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1.0">\n'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'\">\n"
        f"<title>{html_lib.escape(title)}</title>\n<style>{REPORT_CSS}</style>\n</head>\n"
        "<body>\n<main>\n" + "\n".join(parts) + "\n</main>\n</body>\n</html>\n"
    )
    html_path = Path(html_path)
    write_text(html_path, body)  # atomic: a full disk keeps the earlier report whole
    return html_path


__all__ = [
    "NOTEBOOK_SECTIONS",
    "NOTEBOOK_TITLES",
]
