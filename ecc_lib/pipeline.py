"""The notebook pipeline (``ecc-lab run``): run the parameterised notebooks in order into a run folder.

:func:`run_pipeline` resolves the parameters (:mod:`ecc_lib.run_config`), executes each notebook
with papermill (:mod:`ecc_lib.notebook_execution`) into a run folder (:mod:`ecc_lib.run_folder`),
merges the metric fragments with their provenance (:mod:`ecc_lib.provenance`) into ``metrics.json``
and exports ``report.html``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ecc_lib import paths
from ecc_lib._optional import require
from ecc_lib.notebook_execution import (
    REPORT_NOTEBOOK_PREFIX,
    NotebookTimeoutError,
    RunInterrupted,
    execute_notebook,
    export_report,
)
from ecc_lib.provenance import write_metrics
from ecc_lib.run_config import (
    _TYPES,
    discover_notebooks,
    load_config,
    notebook_parameters,
    recorded_parameters,
    resolve_parameters,
    select_notebooks,
)
from ecc_lib.run_folder import RUN_FILE, _write_json, default_run_name, run_context

RUN_FOLDER_MARKERS = (RUN_FILE, "metrics")
"""Entries that identify an earlier run folder (``--out`` may reuse such a folder)."""

logger = logging.getLogger(__name__)
_TYPES["dict"] = (dict,)


class OutFolderError(ValueError):
    """``--out`` names a folder the runner must not write into."""


def check_out_folder(run_dir: Path, notebooks_dir: str | os.PathLike | None = None) -> None:
    """Refuse a run folder that would overwrite files that are not an earlier run's.

    Parameters
    ----------
    run_dir : Path
        The resolved run folder.
    notebooks_dir : path, optional
        The source notebooks' folder (default ``notebooks/`` of the repository).

    Raises
    ------
    OutFolderError
        ``run_dir`` is the notebooks folder or inside it, a file, or a non-empty folder without
        ``run.json`` or ``metrics/`` (not an earlier run folder).
    """
    sources = {paths.notebooks_dir().resolve()}
    if notebooks_dir:
        sources.add(Path(notebooks_dir).expanduser().resolve())
    source = next((s for s in sources if run_dir == s or s in run_dir.parents), None)
    if source is not None:
        raise OutFolderError(
            f"--out {run_dir} is the notebooks folder {source} (or inside it): the executed copies "
            "would overwrite the source notebooks; choose another folder such as runs/NAME"
        )
    if run_dir.exists() and not run_dir.is_dir():
        raise OutFolderError(f"--out {run_dir} is a file, not a folder")
    if run_dir.is_dir() and any(run_dir.iterdir()):
        if not any((run_dir / marker).exists() for marker in RUN_FOLDER_MARKERS):
            shown = sorted(p.name for p in run_dir.iterdir())[:5]
            raise OutFolderError(
                f"--out {run_dir} is a non-empty folder that is not an earlier run folder (no "
                f"{RUN_FILE} or metrics/; it holds {shown}); its files could be overwritten: "
                "choose a new or empty folder"
            )


@contextlib.contextmanager
def _sigterm_interrupts():
    """Turn SIGTERM into :class:`RunInterrupted` while the run lasts (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise RunInterrupted(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass
class RunResult:
    """What :func:`run_pipeline` wrote.

    Attributes
    ----------
    run_dir : Path
        The run folder.
    executed : list of Path
        Executed notebooks, in order.
    metrics_path, report_path : Path or None
        ``metrics.json`` and the report, when written.
    parameters : dict
        Parameters injected into each notebook.
    durations : dict of str to float
        Seconds per notebook.
    """

    run_dir: Path
    executed: list[Path] = field(default_factory=list)
    metrics_path: Path | None = None
    report_path: Path | None = None
    parameters: dict[str, dict[str, Any]] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)


def run_pipeline(
    config: str | os.PathLike | Mapping[str, Any] | None = None,
    only: str | Iterable[str] | None = None,
    out: str | os.PathLike | None = None,
    dataset: str | None = None,
    notebooks_dir: str | os.PathLike | None = None,
    progress: bool = True,
    timeout: float | None = None,
    blas_threads: int | None = 1,
) -> RunResult:
    """Execute the notebooks in order into a run folder (``ecc-lab run``).

    Parameters
    ----------
    config : path, mapping or None
        YAML file or mapping of parameters (see the module docstring).
    only : str or iterable of str, optional
        Notebooks to run, by number or name (``"02,03"``); default all.
    out : path, optional
        Run folder; default ``runs/<time stamp>``. An earlier run folder is reused (its fragments
        of other notebooks are kept), so ``--only 05 --out runs/X`` rebuilds the report of run X;
        the notebooks folder and other non-empty folders are refused (:func:`check_out_folder`).
    dataset : str, optional
        Sets the ``dataset`` parameter of every notebook that declares it; a relative path is
        taken from the working directory of the caller.
    notebooks_dir : path, optional
        Where the notebooks are; default ``notebooks/`` of the repository.
    progress : bool, default True
        Show a tqdm bar over notebooks (on stderr).
    timeout : float, optional
        Per-cell execution limit in seconds.
    blas_threads : int or None, default 1
        OpenBLAS threads of the kernels unless ``OPENBLAS_NUM_THREADS`` is set
        (:func:`kernel_environment`).

    Returns
    -------
    RunResult

    Raises
    ------
    UnknownParameterError, ParameterTypeError
        Before anything runs.
    NotebookExecutionError
        When a notebook fails; the run stops there (metrics.json holds what ran before).
    """
    require("papermill", extra="notebooks", purpose="ecc-lab run")  # fail before anything runs
    tqdm = require("tqdm.auto", extra="notebooks", purpose="ecc-lab run").tqdm

    all_notebooks = discover_notebooks(notebooks_dir)
    selected = select_notebooks(all_notebooks, only)
    declared = {nb.stem: notebook_parameters(nb) for nb in all_notebooks}
    for nb in selected:
        if "run_dir" not in declared[nb.stem]:
            raise ValueError(f"notebook {nb.name} must declare a 'run_dir' parameter")
    resolved = resolve_parameters(selected, load_config(config), declared, dataset=dataset)

    run_dir = Path(out).expanduser().resolve() if out else paths.runs_dir() / default_run_name()
    check_out_folder(run_dir.resolve(), notebooks_dir)
    context = run_context(run_dir.resolve())
    result = RunResult(run_dir=context.run_dir)
    started = _dt.datetime.now().isoformat(timespec="seconds")
    run_record: dict[str, Any] = {
        "started": started,
        "notebooks": [nb.stem for nb in selected],
        "parameters": {},
        "durations_s": {},
        "status": "running",
    }
    run_json = context.run_dir / RUN_FILE
    bar = tqdm(selected, desc="ecc-lab run", unit="notebook", disable=not progress, file=sys.stderr)
    interrupt_guard = _sigterm_interrupts()
    try:
        interrupt_guard.__enter__()
        for notebook in bar:
            bar.set_postfix_str(notebook.stem)
            params = dict(resolved[notebook.stem])
            params["run_dir"] = str(context.run_dir)
            run_record["parameters"][notebook.stem] = recorded_parameters(params)
            result.parameters[notebook.stem] = recorded_parameters(params)
            executed = context.run_dir / notebook.name
            tick = time.perf_counter()
            try:
                execute_notebook(
                    notebook,
                    executed,
                    params,
                    cwd=context.run_dir,
                    timeout=timeout,
                    blas_threads=blas_threads,
                )
            finally:
                seconds = round(time.perf_counter() - tick, 2)
                run_record["durations_s"][notebook.stem] = seconds
                result.durations[notebook.stem] = seconds
                result.executed.append(executed)
                write_metrics(context)
            if notebook.stem.startswith(REPORT_NOTEBOOK_PREFIX):
                result.report_path = export_report(executed, context.report_path)
        run_record["status"] = "finished"
    except NotebookTimeoutError:
        run_record["status"] = "timed out"
        raise
    except KeyboardInterrupt as error:
        run_record["status"] = (
            "interrupted: SIGTERM" if isinstance(error, RunInterrupted) else "interrupted"
        )
        raise
    except BaseException as error:
        run_record["status"] = f"failed: {type(error).__name__}"
        raise
    finally:
        interrupt_guard.__exit__(None, None, None)
        bar.close()
        run_record["finished"] = _dt.datetime.now().isoformat(timespec="seconds")
        _write_json(run_json, run_record)
    result.metrics_path = context.metrics_path
    return result
