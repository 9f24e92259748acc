"""The notebook pipeline: run folders, figure/table/metric writers and the papermill runner.

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
    fingerprints (sha256) of the dataset files the notebooks loaded, written by :func:`load_dataset`;
``metrics.json``
    the fragments merged: ``{section: values, "parameters": {section: parameters},
    "provenance": {packages, datasets, git, python}}``, with sorted keys and no time stamps, so that
    the same seed gives the same file;
``run.json``
    what is not reproducible: start time, duration of each notebook, the resolved parameters;
``report.html``
    the executed ``05_report`` notebook exported to HTML (input cells hidden).

Notebooks call :func:`run_context`, :func:`save_figure`, :func:`save_table`, :func:`record_metrics`
and :func:`load_dataset`; :func:`run_pipeline` (``ecc-lab run``) executes them in order.

Configuration (YAML or a mapping)
    top-level keys that are valid Python identifiers are parameters applied to every notebook that
    declares them; keys that start with a digit name a notebook (``"03_clustering"`` or ``"03"``) and
    hold a mapping of parameters for that notebook only::

        seed: 0
        max_queries: 0
        03_clustering:
          n_clusters: 10

    A top-level parameter that no notebook declares, a per-notebook parameter that this notebook does
    not declare, or a section naming no notebook is an error (:class:`UnknownParameterError`).
"""

from __future__ import annotations

import ast
import datetime as _dt
import hashlib
import importlib
import json
import logging
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ecc_lib import paths

logger = logging.getLogger(__name__)

FIGURES = "figures"
TABLES = "tables"
METRICS = "metrics"
PROVENANCE = "provenance"
METRICS_FILE = "metrics.json"
RUN_FILE = "run.json"
REPORT_FILE = "report.html"
REPORT_NOTEBOOK_PREFIX = "05"
RESERVED_PARAMETERS = ("run_dir",)
FIGURE_FORMATS = ("png", "pdf")
SIGNIFICANT_DIGITS = 10
PACKAGES = (
    "ecc_lib",
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "scikit-learn",
    "torch",
    "sentence-transformers",
    "matplotlib",
    "seaborn",
    "papermill",
    "nbconvert",
    "nbformat",
    "ipykernel",
)
NOTEBOOK_TITLES = {
    "01": "Data: scores per model and category",
    "02": "Label instability (DARS diagnostics)",
    "03": "Capability clustering (ECC against baselines)",
    "04": "Routing: single-shot versus DARS labels, ECC router",
    "05": "Report",
}
"""Section titles of the report, by notebook number."""
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


class UnknownParameterError(ValueError):
    """A configuration names a parameter (or a notebook) that the notebooks do not declare."""


class ParameterTypeError(ValueError):
    """A configured value does not have the type of the notebook's default."""


class NotebookExecutionError(RuntimeError):
    """A notebook failed; the message names the notebook, the cell and the exception.

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


# --------------------------------------------------------------------------------------------
# run folder


@dataclass(frozen=True)
class RunContext:
    """Folders of one run; :func:`run_context` creates them."""

    run_dir: Path

    @property
    def figures_dir(self) -> Path:
        return self.run_dir / FIGURES

    @property
    def tables_dir(self) -> Path:
        return self.run_dir / TABLES

    @property
    def metrics_dir(self) -> Path:
        return self.run_dir / METRICS

    @property
    def provenance_dir(self) -> Path:
        return self.run_dir / PROVENANCE

    @property
    def metrics_path(self) -> Path:
        return self.run_dir / METRICS_FILE

    @property
    def report_path(self) -> Path:
        return self.run_dir / REPORT_FILE

    def create(self) -> RunContext:
        for folder in (self.figures_dir, self.tables_dir, self.metrics_dir, self.provenance_dir):
            folder.mkdir(parents=True, exist_ok=True)
        return self


def default_run_name(now: _dt.datetime | None = None) -> str:
    """A time stamp such as ``20260521-143005`` (local time)."""
    return (now or _dt.datetime.now()).strftime("%Y%m%d-%H%M%S")


def resolve_run_dir(run_dir: str | os.PathLike | None) -> Path:
    """``run_dir`` as an absolute path; empty or None means ``runs/interactive``."""
    if run_dir is None or str(run_dir) == "":
        return (paths.runs_dir() / "interactive").resolve()
    return Path(run_dir).expanduser().resolve()


def run_context(run_dir: str | os.PathLike | RunContext | None) -> RunContext:
    """The :class:`RunContext` of ``run_dir`` with its folders created."""
    if isinstance(run_dir, RunContext):
        return run_dir.create()
    return RunContext(resolve_run_dir(run_dir)).create()


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"file name {name!r} must be a plain name (letters, digits, '_', '-', '.'), "
            "without folders or an extension"
        )
    return name


def save_figure(
    fig,
    run_dir: str | os.PathLike | RunContext,
    name: str,
    caption: str | None = None,
    dpi: int = 150,
) -> list[Path]:
    """Write ``fig`` as ``figures/NAME.png`` and ``figures/NAME.pdf`` of the run.

    Parameters
    ----------
    fig : matplotlib Figure
    run_dir : path or RunContext
    name : str
        File name without extension; prefix it with the notebook number (``"03_gain"``) so that
        the report groups figures by notebook.
    caption : str, optional
        One line for the report, stored in ``figures/captions.json``.
    dpi : int, default 150
        Resolution of the PNG.

    Returns
    -------
    list of Path
        The PNG and PDF paths. The figure is left open (the notebook displays it).
    """
    context = run_context(run_dir)
    _check_name(name)
    written = []
    for fmt in FIGURE_FORMATS:
        path = context.figures_dir / f"{name}.{fmt}"
        # no creation date in the PDF: the same run gives the same file
        metadata = {"CreationDate": None} if fmt == "pdf" else None
        fig.savefig(path, dpi=dpi, bbox_inches="tight", metadata=metadata)
        written.append(path)
    captions_path = context.figures_dir / "captions.json"
    captions = _read_captions(captions_path)
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
    """Write ``table`` as ``tables/NAME.csv`` of the run and return the path."""
    context = run_context(run_dir)
    _check_name(name)
    if not isinstance(table, pd.DataFrame):
        table = pd.DataFrame(table)
    path = context.tables_dir / f"{name}.csv"
    table.to_csv(path, index=index, float_format="%.10g")
    return path


def to_jsonable(value: Any) -> Any:
    """``value`` with numpy/pandas scalars and arrays turned into JSON types.

    Floats are rounded to 10 significant digits; NaN and infinities become ``None``.
    """
    if isinstance(value, Mapping):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [to_jsonable(item) for item in items]
    if isinstance(value, np.ndarray):
        return [to_jsonable(item) for item in value.tolist()]
    if isinstance(value, pd.Series):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if not math.isfinite(number):
            return None
        return float(f"{number:.{SIGNIFICANT_DIGITS}g}")
    if value is None or value is pd.NA or isinstance(value, str):
        return None if value is pd.NA else value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"cannot store a {type(value).__name__} in metrics JSON: {value!r}")


def _write_json(path: Path, payload: Any) -> None:
    text = json.dumps(to_jsonable(payload), indent=2, sort_keys=True, allow_nan=False)
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
    """
    context = run_context(run_dir)
    _check_name(section)
    if section in ("parameters", "provenance"):
        raise ValueError(f"section name {section!r} is reserved")
    if not isinstance(mapping, Mapping):
        raise TypeError(f"metrics of section {section!r} must be a mapping")
    path = context.metrics_dir / f"{section}.json"
    _write_json(path, {"values": mapping, "parameters": dict(parameters or {})})
    return path


def collect_metrics(run_dir: str | os.PathLike | RunContext) -> dict:
    """Merge the fragments under ``metrics/`` into ``{section: values, "parameters": {...}}``."""
    context = (
        RunContext(resolve_run_dir(run_dir)) if not isinstance(run_dir, RunContext) else run_dir
    )
    merged: dict[str, Any] = {"parameters": {}}
    if not context.metrics_dir.is_dir():
        return merged
    for path in sorted(context.metrics_dir.glob("*.json")):
        fragment = _read_json(path)
        merged[path.stem] = fragment.get("values", {})
        merged["parameters"][path.stem] = fragment.get("parameters", {})
    return merged


def flatten_metrics(metrics: Mapping[str, Any], prefix: str = "") -> pd.DataFrame:
    """Nested metrics as a two-column table ``metric`` (dotted key), ``value`` (scalars only)."""
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
    """The value at ``"ecc.ranking_quality_gain.over_global"``-style keys (KeyError names the key)."""
    node: Any = metrics
    for part in dotted_key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(f"metric {dotted_key!r} not found (missing part {part!r})")
        node = node[part]
    return node


def list_figures(run_dir: str | os.PathLike | RunContext) -> pd.DataFrame:
    """The run's figures: ``name``, ``notebook`` (prefix), ``png``, ``pdf``, ``caption``.

    Ordered by notebook, then in the order the notebook saved them.
    """
    context = (
        RunContext(resolve_run_dir(run_dir)) if not isinstance(run_dir, RunContext) else run_dir
    )
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
    """The run's tables: ``name``, ``notebook`` (prefix), ``csv``."""
    context = (
        RunContext(resolve_run_dir(run_dir)) if not isinstance(run_dir, RunContext) else run_dir
    )
    rows = [
        {"name": csv.stem, "notebook": csv.stem.split("_", 1)[0], "csv": str(csv)}
        for csv in sorted(context.tables_dir.glob("*.csv"))
    ]
    return pd.DataFrame(rows, columns=["name", "notebook", "csv"])


# --------------------------------------------------------------------------------------------
# datasets and provenance


def sha256_file(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    """Hex sha256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


def dataset_fingerprint(name: str) -> dict[str, str]:
    """sha256 of the data files of dataset ``name`` (file name -> hex digest).

    A bundled dataset contributes its bundled files, a folder every file in it; anything else
    (a public dataset downloaded on demand) gives ``{}``.
    """
    loaders = importlib.import_module("ecc_lib.loaders")
    folder = Path(name).expanduser()
    if name in getattr(loaders, "BUNDLED_DATASETS", ()) and not folder.is_dir():
        files = [Path(f) for f in loaders.bundled_files(name)]
        root = paths.data_dir()
    elif folder.is_dir():
        files = sorted(p for p in folder.rglob("*") if p.is_file())
        root = folder.parent
    else:
        return {}
    return {Path(os.path.relpath(f, root)).as_posix(): sha256_file(f) for f in files if f.is_file()}


def subsample_queries(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    max_queries: int | None,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """At most ``max_queries`` queries drawn without replacement (seeded), with their outcomes.

    ``max_queries`` of 0 or None keeps everything. Queries keep their original order.
    """
    if not max_queries or max_queries >= len(queries):
        return queries, outcomes
    if max_queries < 0:
        raise ValueError(f"max_queries must be >= 0, got {max_queries}")
    rng = np.random.default_rng(random_state)
    keep = np.sort(rng.choice(len(queries), size=int(max_queries), replace=False))
    kept = queries.iloc[keep].reset_index(drop=True)
    logger.info("subsample_queries: kept %d of %d queries", len(kept), len(queries))
    mask = outcomes["query_id"].isin(set(kept["query_id"]))
    return kept, outcomes.loc[mask].reset_index(drop=True)


def dataset_label(name: str) -> str:
    """Short label of a dataset: the bundled name, or the folder's name."""
    return Path(str(name)).name or str(name)


def load_dataset(
    name: str,
    run_dir: str | os.PathLike | RunContext | None = None,
    max_queries: int | None = 0,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Load a dataset with :func:`ecc_lib.loaders.load_dataset`, subsample it, record its hashes.

    Parameters
    ----------
    name : str
        A bundled dataset name (``"dcrouter"``, ``"re2"``, ``"mmlu2"``), a public one, or a folder
        holding ``queries.*`` and ``outcomes.*`` tables in the ecc_lib data model.
    run_dir : path or RunContext, optional
        When given, the sha256 of the dataset's files is recorded under ``provenance/`` of the run
        (and from there in ``metrics.json["provenance"]["datasets"]``).
    max_queries : int, default 0
        Keep at most this many queries (seeded draw); 0 keeps all.
    random_state : int or Generator, optional

    Returns
    -------
    queries, outcomes : DataFrame
        Validated, in the ecc_lib data model.
    """
    loaders = importlib.import_module("ecc_lib.loaders")
    queries, outcomes = loaders.load_dataset(str(name))
    queries, outcomes = subsample_queries(queries, outcomes, max_queries, random_state)
    if run_dir is not None:
        record_dataset(run_dir, dataset_label(name), dataset_fingerprint(str(name)))
    return queries, outcomes


def record_dataset(
    run_dir: str | os.PathLike | RunContext, label: str, fingerprint: Mapping[str, str]
) -> Path:
    """Store the file hashes of a dataset a notebook used (``provenance/datasets.json``)."""
    context = run_context(run_dir)
    path = context.provenance_dir / "datasets.json"
    recorded = _read_json(path) if path.exists() else {}
    recorded[str(label)] = dict(fingerprint)
    _write_json(path, recorded)
    return path


def package_versions(packages: Iterable[str] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each package (None when absent)."""
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for package in packages:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def git_state(repo: str | os.PathLike | None = None) -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of the repository (read-only git calls)."""
    repo = Path(repo or paths.REPO_ROOT)

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=repo, capture_output=True, text=True, timeout=20, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def provenance(run_dir: str | os.PathLike | RunContext) -> dict[str, Any]:
    """Package versions, dataset fingerprints recorded by the notebooks, git commit, Python."""
    context = (
        RunContext(resolve_run_dir(run_dir)) if not isinstance(run_dir, RunContext) else run_dir
    )
    datasets_path = context.provenance_dir / "datasets.json"
    return {
        "packages": package_versions(),
        "datasets": _read_json(datasets_path) if datasets_path.exists() else {},
        "git": git_state(),
        "python": ".".join(str(part) for part in sys.version_info[:3]),
    }


def write_metrics(run_dir: str | os.PathLike | RunContext) -> Path:
    """Merge the fragments and the provenance into ``metrics.json`` (sorted keys, no times)."""
    context = run_context(run_dir)
    merged = collect_metrics(context)
    merged["provenance"] = provenance(context)
    _write_json(context.metrics_path, merged)
    return context.metrics_path


# --------------------------------------------------------------------------------------------
# notebooks and parameters


def discover_notebooks(notebooks_dir: str | os.PathLike | None = None) -> list[Path]:
    """The pipeline notebooks ``NN_name.ipynb`` in order."""
    folder = Path(notebooks_dir) if notebooks_dir else paths.notebooks_dir()
    found = sorted(p for p in folder.glob("*.ipynb") if re.match(r"^\d{2}_", p.name))
    if not found:
        raise FileNotFoundError(f"no notebooks named NN_*.ipynb in {folder}")
    return found


def select_notebooks(notebooks: Sequence[Path], only: str | Iterable[str] | None) -> list[Path]:
    """The notebooks named by ``only`` ("02,03", ["02", "03_clustering"]), in pipeline order."""
    if only is None or only == "" or only == []:
        return list(notebooks)
    wanted = [part.strip() for part in only.split(",")] if isinstance(only, str) else list(only)
    wanted = [part for part in wanted if part]
    chosen = set()
    for part in wanted:
        matches = [nb for nb in notebooks if _matches(nb, part)]
        if not matches:
            raise ValueError(
                f"--only: no notebook matches {part!r}; available: {[nb.stem for nb in notebooks]}"
            )
        chosen.update(matches)
    return [nb for nb in notebooks if nb in chosen]


def _matches(notebook: Path, key: str) -> bool:
    key = key.removesuffix(".ipynb")
    return notebook.stem == key or notebook.stem.split("_", 1)[0] == key


def notebook_parameters(notebook: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """Parameters declared in the ``parameters`` cell: name -> {default, type, help}.

    ``default`` is the Python value of the literal, ``type`` the annotated type name.
    """
    import papermill

    declared = papermill.inspect_notebook(str(notebook))
    result = {}
    for name, info in declared.items():
        try:
            default = ast.literal_eval(info["default"])
        except (ValueError, SyntaxError):
            default = info["default"]
        result[name] = {
            "default": default,
            "type": info.get("inferred_type_name") or "None",
            "help": info.get("help") or "",
        }
    return result


def load_config(config: str | os.PathLike | Mapping[str, Any] | None) -> dict[str, Any]:
    """Read a YAML configuration (a path) or copy a mapping; None gives ``{}``."""
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return dict(config)
    import yaml

    path = Path(config)
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    if loaded is None:
        return {}
    if not isinstance(loaded, Mapping):
        raise ValueError(f"{path}: the configuration must be a mapping of parameters")
    return {str(key): value for key, value in loaded.items()}


_TYPES = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,), "list": (list,)}
_TYPES["dict"] = (dict,)


def _check_type(notebook: str, name: str, value: Any, declared: Mapping[str, Any]) -> None:
    type_name = declared["type"]
    expected = _TYPES.get(type_name)
    if expected is None:
        type_name = type(declared["default"]).__name__
        expected = _TYPES.get(type_name)
        if expected is None:
            return
    ok = isinstance(value, expected)
    if ok and isinstance(value, bool) and bool not in expected:
        ok = False
    if not ok:
        raise ParameterTypeError(
            f"parameter {name!r} of {notebook} must be {type_name} (default "
            f"{declared['default']!r}), got {type(value).__name__} {value!r}"
        )


def resolve_parameters(
    notebooks: Sequence[Path],
    config: Mapping[str, Any],
    declared: Mapping[str, Mapping[str, Mapping[str, Any]]],
    dataset: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Parameters passed to each notebook (only those that differ from nothing: set explicitly).

    Parameters
    ----------
    notebooks : sequence of Path
        The notebooks to run.
    config : mapping
        Global parameters and per-notebook sections (see the module docstring).
    declared : mapping
        ``{notebook stem: notebook_parameters(...)}`` for every pipeline notebook (also those not
        run, so that a shared configuration stays valid with ``--only``).
    dataset : str, optional
        Sets ``dataset`` in every notebook that declares it (overrides the configuration).

    Raises
    ------
    UnknownParameterError
        A parameter or section that no notebook declares.
    ParameterTypeError
        A value of another type than the notebook's declared type.
    """
    stems = list(declared)
    known_anywhere = sorted({name for params in declared.values() for name in params})
    globals_: dict[str, Any] = {}
    sections: dict[str, dict[str, Any]] = {}
    for key, value in config.items():
        key = str(key)
        if key[:1].isdigit():
            matches = [stem for stem in stems if _matches(Path(stem + ".ipynb"), key)]
            if not matches:
                raise UnknownParameterError(
                    f"configuration section {key!r} names no notebook; notebooks: {stems}"
                )
            if not isinstance(value, Mapping):
                raise ValueError(f"configuration section {key!r} must be a mapping of parameters")
            sections.setdefault(matches[0], {}).update({str(k): v for k, v in value.items()})
        else:
            globals_[key] = value
    for key in globals_:
        if key in RESERVED_PARAMETERS:
            raise UnknownParameterError(f"parameter {key!r} is set by the runner (use --out)")
        if key not in known_anywhere:
            raise UnknownParameterError(
                f"unknown parameter {key!r}: no notebook declares it; known parameters: "
                f"{known_anywhere}"
            )
    for stem, values in sections.items():
        for key in values:
            if key in RESERVED_PARAMETERS:
                raise UnknownParameterError(f"parameter {key!r} is set by the runner (use --out)")
            if key not in declared[stem]:
                raise UnknownParameterError(
                    f"unknown parameter {key!r} for notebook {stem}; its parameters are "
                    f"{sorted(declared[stem])}"
                )
    resolved: dict[str, dict[str, Any]] = {}
    for notebook in notebooks:
        stem = notebook.stem
        params = declared[stem]
        chosen = {key: value for key, value in globals_.items() if key in params}
        chosen.update(sections.get(stem, {}))
        if dataset is not None and "dataset" in params:
            chosen["dataset"] = dataset
        for key, value in chosen.items():
            _check_type(stem, key, value, params[key])
        resolved[stem] = chosen
    return resolved


# --------------------------------------------------------------------------------------------
# execution


def kernel_environment(blas_threads: int | None = 1) -> dict[str, str]:
    """Environment variables set in the notebook kernels.

    ``OPENBLAS_NUM_THREADS`` is set to ``blas_threads`` unless the caller's environment sets it:
    on a small shared machine multi-threaded OpenBLAS spins and runs several times slower than one
    thread (the routers and the 2-D map in 04 and 03 took three times as long on a busy 2-core
    machine). ``None`` leaves it to OpenBLAS.
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
    """
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from traitlets import default

    extra_env = dict(env or {})

    class InterpreterKernelSpecManager(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
            return KernelSpec(
                # the kernel listens on loopback only; its log level hides the start-up notice
                # about unencrypted TCP, which papermill's local kernels always print
                argv=[
                    sys.executable,
                    "-m",
                    "ipykernel_launcher",
                    "-f",
                    "{connection_file}",
                    "--IPKernelApp.log_level=ERROR",
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
    cwd: str | os.PathLike | None = None,
    timeout: float | None = None,
    start_timeout: float = 120,
    blas_threads: int | None = 1,
) -> None:
    """Execute one notebook with papermill in the current interpreter.

    ``blas_threads`` limits OpenBLAS threads in the kernel (see :func:`kernel_environment`).

    Raises
    ------
    NotebookExecutionError
        Naming the notebook, the failing cell (index in the source notebook) and the exception.
    """
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    notebook, output = Path(notebook), Path(output)
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
            kernel_manager_class=interpreter_kernel_manager_class(kernel_environment(blas_threads)),
        )
    except PapermillExecutionError as error:
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


def export_report(executed_notebook: str | os.PathLike, html_path: str | os.PathLike) -> Path:
    """Export an executed notebook to HTML without its input cells."""
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True
    )
    body, _ = exporter.from_notebook_node(nbformat.read(str(executed_notebook), as_version=4))
    html_path = Path(html_path)
    html_path.write_text(body, encoding="utf-8")
    return html_path


@dataclass
class RunResult:
    """What :func:`run_pipeline` wrote."""

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
        Run folder; default ``runs/<time stamp>``. An existing folder is reused (its fragments of
        other notebooks are kept), so ``--only 05 --out runs/X`` rebuilds the report of run X.
    dataset : str, optional
        Sets the ``dataset`` parameter of every notebook that declares it.
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
    from tqdm.auto import tqdm

    all_notebooks = discover_notebooks(notebooks_dir)
    selected = select_notebooks(all_notebooks, only)
    declared = {nb.stem: notebook_parameters(nb) for nb in all_notebooks}
    for nb in selected:
        if "run_dir" not in declared[nb.stem]:
            raise ValueError(f"notebook {nb.name} must declare a 'run_dir' parameter")
    resolved = resolve_parameters(selected, load_config(config), declared, dataset=dataset)

    run_dir = Path(out).expanduser().resolve() if out else paths.runs_dir() / default_run_name()
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
    try:
        for notebook in bar:
            bar.set_postfix_str(notebook.stem)
            params = dict(resolved[notebook.stem])
            params["run_dir"] = str(context.run_dir)
            run_record["parameters"][notebook.stem] = params
            result.parameters[notebook.stem] = params
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
    except BaseException as error:
        run_record["status"] = f"failed: {type(error).__name__}"
        raise
    finally:
        bar.close()
        run_record["finished"] = _dt.datetime.now().isoformat(timespec="seconds")
        _write_json(run_json, run_record)
    result.metrics_path = context.metrics_path
    return result
