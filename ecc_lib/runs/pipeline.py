"""The notebook pipeline (``ecc-lab run``): run the parameterised notebooks in order into a run folder.

:func:`run_pipeline` resolves the parameters (:mod:`ecc_lib.runs.config`), executes each notebook
with papermill (:mod:`ecc_lib.runs.execute`) into a run folder (:mod:`ecc_lib.runs.folder`),
merges the metric fragments with their provenance (:mod:`ecc_lib.runs.provenance`) into ``metrics.json``
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
from ecc_lib.runs.config import (
    STANDALONE_NOTEBOOKS,
    discover_notebooks,
    load_config,
    notebook_parameters,
    recorded_parameters,
    resolve_parameters,
    select_notebooks,
)
from ecc_lib.runs.digests import DATA_DIGESTS_KEY, check_data_digests
from ecc_lib.runs.execute import (
    REPORT_NOTEBOOK_PREFIX,
    NotebookTimeoutError,
    RunInterrupted,
    execute_notebook,
    export_report,
)
from ecc_lib.runs.folder import (
    FIGURES,
    LOCK_FILE,
    MARKER_FILE,
    METRICS,
    METRICS_FILE,
    PROVENANCE,
    REPORT_FILE,
    RUN_FILE,
    TABLES,
    RunFolderBusyError,  # noqa: F401 - raised by run_pipeline, caught by callers
    default_run_name,
    is_run_folder,
    lock_run_folder,
    read_json,
    run_context,
    write_json,
    write_run_marker,
)
from ecc_lib.runs.provenance import write_metrics
from ecc_lib.safe_output import refuse_links

logger = logging.getLogger(__name__)


class OutFolderError(ValueError):
    """``--out`` names a folder the runner must not write into."""


class DatasetMixError(OutFolderError):
    """``--out`` holds another dataset's run and ``--append`` was not given."""


class DamagedRunRecordError(OutFolderError):
    """``run.json`` of ``--out`` is not readable JSON and ``--replace-damaged`` was not given: it
    records which datasets the folder holds, so going on could mix two datasets silently."""


KILLED_REASON = "the run stopped without finishing (killed?); found by the next run into the folder"
"""Why a notebook copy left ``running`` by a killed run is marked interrupted."""


def check_out_folder(run_dir: Path, *, notebooks_dir: str | os.PathLike | None = None) -> None:
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
        the marker :data:`ecc_lib.runs.folder.MARKER_FILE` that only ecc_lib writes (a user's
        folder that happens to hold ``metrics/`` or ``report.html`` is never written into).
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
    if run_dir.is_dir() and any(run_dir.iterdir()) and not is_run_folder(run_dir):
        shown = sorted(p.name for p in run_dir.iterdir())[:5]
        raise OutFolderError(
            f"--out {run_dir} is a non-empty folder that is not an earlier run folder (no "
            f"{MARKER_FILE} marker written by ecc_lib; it holds {shown}); its files could be "
            "overwritten: choose a new or empty folder"
        )


def _dataset_identity(name: Any) -> str:
    """A dataset as recorded in ``run.json``: a folder's absolute path, else the name."""
    text = str(name)
    try:
        path = Path(text).expanduser()
        if path.is_dir():
            return str(path.resolve())
    except OSError:
        pass
    return text


def notebook_datasets(parameters: Mapping[str, Any]) -> list[str]:
    """The datasets one notebook reads, from its resolved parameters.

    ``dataset`` when set, else the ``datasets`` list (notebook 01), or ``"collected"`` when it
    collects from an ``endpoint``; folders are given by their absolute path.

    Parameters
    ----------
    parameters : mapping
        The notebook's resolved parameters.

    Returns
    -------
    list of str
    """
    if parameters.get("endpoint"):
        return ["collected"]
    if parameters.get("dataset"):
        return [_dataset_identity(parameters["dataset"])]
    return [_dataset_identity(d) for d in parameters.get("datasets") or []]


def _previous_record(run_json: Path, *, replace_damaged: bool = False) -> dict[str, Any]:
    """The earlier ``run.json`` of the folder (empty when absent).

    A damaged one (not JSON, not an object) is refused (:class:`DamagedRunRecordError`) unless
    ``replace_damaged``: it is the only record of which datasets the folder holds.
    """
    if not run_json.exists() and not run_json.is_symlink():
        return {}
    refuse_links(run_json)
    try:
        record = read_json(run_json)
        problem = None if isinstance(record, dict) else f"a JSON {type(record).__name__}"
    except UnicodeDecodeError:
        problem = "not UTF-8 text"
    except ValueError as error:
        problem = f"not readable JSON ({error})"
    except OSError as error:
        problem = f"unreadable ({error.strerror or error})"
    if problem is None:
        return record
    if not replace_damaged:
        raise DamagedRunRecordError(
            f"{run_json} is damaged: {problem}; it records the datasets and notebooks of this run "
            "folder, so nothing was run. Restore it, choose another --out, or pass "
            "--replace-damaged to start a new record (the folder's earlier datasets are then not "
            "checked)"
        )
    logger.warning(
        "%s is damaged (%s); replaced by a new record (--replace-damaged)", run_json, problem
    )
    return {}


def _recorded_datasets(record: Mapping[str, Any]) -> dict[str, list[str]]:
    """``{notebook: datasets}`` of an earlier run record (older records: from its parameters)."""
    if isinstance(record.get("datasets"), Mapping):
        return {str(k): [str(d) for d in v] for k, v in record["datasets"].items()}
    parameters = record.get("parameters") or {}
    return {
        str(stem): notebook_datasets(params)
        for stem, params in parameters.items()
        if isinstance(params, Mapping) and notebook_datasets(params)
    }


def check_datasets(
    run_dir: Path, previous: Mapping[str, list[str]], planned: Mapping[str, list[str]], append: bool
) -> None:
    """Refuse a run that would put a second dataset into a run folder, unless ``append``.

    Parameters
    ----------
    run_dir : Path
        The run folder.
    previous : mapping
        ``{notebook: datasets}`` recorded in the folder's ``run.json``.
    planned : mapping
        ``{notebook: datasets}`` of this run.
    append : bool
        ``--append``: add the new datasets beside the folder's.

    Raises
    ------
    DatasetMixError
        A dataset of this run is not among the folder's and ``append`` is False. A standalone
        notebook (:data:`~ecc_lib.runs.config.STANDALONE_NOTEBOOKS`, the benchmark over datasets)
        compares datasets by design and writes only its own outputs: its datasets are neither
        held nor new.
    """

    def names(record: Mapping[str, list[str]]) -> set[str]:
        return {d for stem, ds in record.items() if stem not in STANDALONE_NOTEBOOKS for d in ds}

    held = sorted(names(previous))
    new = sorted(names(planned) - set(held))
    if held and new and not append:
        raise DatasetMixError(
            f"--out {run_dir} already holds a run on {held}; this run would add {new}, and the "
            "report would mix their figures and numbers: choose another --out, or pass --append "
            "to add the dataset(s) to this run folder"
        )


def _clear_notebook_outputs(run_dir: Path, stem: str) -> None:
    """Remove the figures and tables a notebook wrote in an earlier run (``NN_*``), so that a
    rerun never leaves another run's files beside its own."""
    prefix = stem.split("_", 1)[0] + "_"
    for folder in (run_dir / FIGURES, run_dir / TABLES):
        if folder.is_symlink() or not folder.is_dir():  # never delete through a link
            continue
        for path in folder.glob(f"{prefix}*"):
            if path.is_file() and not path.is_symlink():
                path.unlink()


def _mark_killed_copy(run_dir: Path, previous: Mapping[str, Any]) -> str | None:
    """Mark the notebook copy a killed run left behind (its ``run.json`` still says running)."""
    from ecc_lib.runs.execute import mark_interrupted

    running = previous.get("running")
    if previous.get("status") != "running" or not running:
        return None
    copy = run_dir / f"{Path(str(running)).name}.ipynb"
    mark_interrupted(copy, KILLED_REASON)
    logger.warning("%s: %s was left running by an earlier run; marked interrupted", run_dir, copy)
    return str(running)


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
    *,
    only: str | Iterable[str] | None = None,
    out: str | os.PathLike | None = None,
    dataset: str | None = None,
    notebooks_dir: str | os.PathLike | None = None,
    progress: bool = True,
    timeout: float | None = None,
    blas_threads: int | None = 1,
    append: bool = False,
    replace_damaged: bool = False,
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
        the notebooks folder and other non-empty folders are refused (:func:`check_out_folder`),
        and so is a second dataset unless ``append`` (:func:`check_datasets`). A rerun notebook's
        earlier figures and tables are removed first (kept with ``append``). ``run.json`` is
        merged: the parameters and durations of the notebooks that do not run are kept. The folder
        is locked while the run writes into it; a notebook copy left ``running`` by a killed run is
        marked interrupted.
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
    append : bool, default False
        ``--append``: allow datasets the run folder does not hold yet, keeping its other outputs.
    replace_damaged : bool, default False
        ``--replace-damaged``: start a new ``run.json`` when the folder's is damaged (not
        readable JSON); without it such a folder is refused (:class:`DamagedRunRecordError`).
        ``run.json`` is always written atomically, so only an outside hand damages it.

    Returns
    -------
    RunResult

    Raises
    ------
    UnknownParameterError, ParameterTypeError
        Before anything runs.
    NotebookExecutionError
        When a notebook fails; the run stops there (metrics.json holds what ran before).
    OutFolderError, DatasetMixError, DamagedRunRecordError, RunFolderBusyError
        Before anything runs: the folder is not a run folder, holds another dataset, has a
        damaged ``run.json``, or another run is writing into it.
    ecc_lib.safe_output.LinkedOutputError
        Before anything runs: an output of the folder (``run.json``, ``metrics.json``,
        ``report.html``, the lock file, ``tables/``, an executed copy...) is a symbolic link.
    """
    require("papermill", extra="notebooks", purpose="ecc-lab run")  # fail before anything runs
    all_notebooks = discover_notebooks(notebooks_dir)
    selected = select_notebooks(all_notebooks, only)
    declared = {nb.stem: notebook_parameters(nb) for nb in all_notebooks}
    for nb in selected:
        if "run_dir" not in declared[nb.stem]:
            raise ValueError(f"notebook {nb.name} must declare a 'run_dir' parameter")
    resolved = resolve_parameters(selected, load_config(config), declared, dataset=dataset)

    run_dir = Path(out).expanduser().resolve() if out else paths.runs_dir() / default_run_name()
    check_out_folder(run_dir.resolve(), notebooks_dir=notebooks_dir)
    context = run_context(run_dir.resolve())
    write_run_marker(context.run_dir)
    # the datasets a notebook reads: its resolved parameters over its declared defaults (the main
    # job passes none, and notebook 03 still reads dcrouter)
    effective = {
        nb.stem: {
            **{name: spec.get("default") for name, spec in declared[nb.stem].items()},
            **resolved[nb.stem],
        }
        for nb in selected
    }
    planned = {stem: notebook_datasets(params) for stem, params in effective.items()}
    _refuse_linked_outputs(context, selected)
    with lock_run_folder(context.run_dir):
        return _run_locked(
            context,
            selected,
            resolved,
            planned,
            progress,
            timeout,
            blas_threads,
            append,
            replace_damaged,
        )


def _refuse_linked_outputs(context, selected) -> None:
    """Refuse, before anything runs, a run folder whose outputs are symbolic links."""
    run_dir = context.run_dir
    names = [RUN_FILE, METRICS_FILE, REPORT_FILE, LOCK_FILE, *(nb.name for nb in selected)]
    for name in names:
        refuse_links(run_dir / name)
    for folder in (FIGURES, TABLES, METRICS, PROVENANCE):
        refuse_links(run_dir / folder)
        if (run_dir / folder).is_dir():
            for path in (run_dir / folder).iterdir():
                refuse_links(path)


def _run_locked(
    context, selected, resolved, planned, progress, timeout, blas_threads, append, replace_damaged
) -> RunResult:
    """The body of :func:`run_pipeline`, run while the folder's lock is held."""
    tqdm = require("tqdm.auto", extra="notebooks", purpose="ecc-lab run").tqdm

    result = RunResult(run_dir=context.run_dir)
    run_json = context.run_dir / RUN_FILE
    previous = _previous_record(run_json, replace_damaged=replace_damaged)
    killed = _mark_killed_copy(context.run_dir, previous)
    datasets = _recorded_datasets(previous)
    check_datasets(context.run_dir, datasets, planned, append)
    data_digests = check_data_digests(context.run_dir, previous, planned)
    started = _dt.datetime.now().isoformat(timespec="seconds")
    history = [h for h in previous.get("history", []) if isinstance(h, Mapping)]
    if previous and not previous.get("history"):  # an older run.json: keep its run as history
        history.append({k: previous.get(k) for k in ("started", "finished", "notebooks", "status")})
    elif killed and history:
        history[-1] = {**history[-1], "status": "killed", "stopped_in": killed}
    run_record: dict[str, Any] = {
        "started": started,
        "notebooks": sorted({*previous.get("notebooks", []), *(nb.stem for nb in selected)}),
        "last_notebooks": [nb.stem for nb in selected],
        "parameters": dict(previous.get("parameters") or {}),
        "durations_s": dict(previous.get("durations_s") or {}),
        "datasets": dict(datasets),
        DATA_DIGESTS_KEY: data_digests,
        "status": "running",
        "running": None,
        "history": history,
    }
    this_run = {"started": started, "notebooks": run_record["last_notebooks"], "status": "running"}
    history.append(this_run)
    bar = tqdm(selected, desc="ecc-lab run", unit="notebook", disable=not progress, file=sys.stderr)
    interrupt_guard = _sigterm_interrupts()
    try:
        interrupt_guard.__enter__()
        for notebook in bar:
            bar.set_postfix_str(notebook.stem)
            params = {**resolved[notebook.stem], "run_dir": str(context.run_dir)}
            run_record["parameters"][notebook.stem] = recorded_parameters(params)
            result.parameters[notebook.stem] = recorded_parameters(params)
            if planned[notebook.stem]:
                previous_names = run_record["datasets"].get(notebook.stem, []) if append else []
                run_record["datasets"][notebook.stem] = list(
                    dict.fromkeys([*previous_names, *planned[notebook.stem]])
                )
            if not append:
                _clear_notebook_outputs(context.run_dir, notebook.stem)
            run_record["running"] = notebook.stem
            write_json(run_json, run_record)  # a killed run leaves this behind
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
        run_record["running"] = None
        this_run.update(status=run_record["status"], finished=run_record["finished"])
        write_json(run_json, run_record)
    result.metrics_path = context.metrics_path
    return result


__all__: list[str] = []
