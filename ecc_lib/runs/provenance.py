"""Dataset loading for notebooks, and the provenance recorded with every run.

:func:`load_dataset` loads a bundled or local dataset and records the sha256 of every file it read
in the run folder; :func:`provenance` gathers package versions, those fingerprints, the git state
and the Python version; :func:`write_metrics` merges the notebooks' metric fragments with it into
``metrics.json``.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ecc_lib import paths
from ecc_lib.metrics_schema import validate_metrics
from ecc_lib.runs.folder import RunContext, read_json, run_context, write_json
from ecc_lib.runs.metrics import collect_metrics
from ecc_lib.serialization import to_jsonable

logger = logging.getLogger(__name__)
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
    "papermill",
    "nbconvert",
    "nbformat",
    "ipykernel",
)


# --------------------------------------------------------------------------------------------
# datasets and provenance


def sha256_file(path: str | os.PathLike, *, chunk_size: int = 1 << 20) -> str:
    """Hex sha256 of a file.

    Parameters
    ----------
    path : path
        A file.
    chunk_size : int, default 1 MiB
        Bytes read at a time.

    Returns
    -------
    str
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


def dataset_fingerprint(name: str) -> dict[str, str]:
    """sha256 of the data files of dataset ``name`` (file name -> hex digest).

    A bundled dataset contributes its bundled files, a folder every file in it; anything else
    (a public dataset downloaded on demand) gives ``{}``.

    Parameters
    ----------
    name : str
        A bundled dataset name or a folder.

    Returns
    -------
    dict of str to str
    """
    sources = importlib.import_module("ecc_lib.data.sources")
    folder = Path(name).expanduser()
    if name in getattr(sources, "BUNDLED_DATASETS", ()) and not folder.is_dir():
        files = [Path(f) for f in sources.bundled_files(name)]
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
    *,
    max_queries: int | None,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """At most ``max_queries`` queries drawn without replacement (seeded), with their outcomes.

    ``max_queries`` of 0 or None keeps everything. Queries keep their original order.

    Parameters
    ----------
    queries : DataFrame
        Queries table.
    outcomes : DataFrame
        Long outcomes table.
    max_queries : int or None
        Queries kept at most.
    random_state : int, Generator or None, default 0
        Seed of the draw.

    Returns
    -------
    queries, outcomes : DataFrame
        The kept queries and their outcomes.
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
    """Short label of a dataset: the bundled name, or the folder's name (``"."`` and ``"../x/"``
    give the name of the folder they point to).

    Parameters
    ----------
    name : str
        A bundled dataset name or a folder.

    Returns
    -------
    str
    """
    path = Path(str(name)).expanduser()
    if path.name in ("", ".", "..") and path.is_dir():
        path = path.resolve()
    return path.name or str(name)


def load_dataset(
    name: str,
    *,
    run_dir: str | os.PathLike | RunContext | None = None,
    max_queries: int | None = 0,
    random_state: int | np.random.Generator | None = 0,
    policy: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Load a dataset with :func:`ecc_lib.data.sources.load_dataset`, apply the imperfect-data policy,
    subsample it, record its hashes.

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
    policy : bool, default True
        Apply :func:`ecc_lib.data.policy.apply_data_policy` (queries seen for fewer than 2 models
        are left out, logged); with ``run_dir`` its report is recorded as
        ``data_policy.<dataset label>`` in ``metrics.json``. The warnings of a folder exported from
        a collection (:func:`ecc_lib.collect.export.collection_notes`: incomplete, answers without a
        final-answer line) are logged and come first in that report.

    Returns
    -------
    queries, outcomes : DataFrame
        Validated, in the ecc_lib data model.
    """
    sources = importlib.import_module("ecc_lib.data.sources")
    label = dataset_label(name)
    queries, outcomes = sources.load_dataset(str(name))
    from ecc_lib.collect.export import collection_notes
    from ecc_lib.data.policy import apply_data_policy
    from ecc_lib.runs.inputs import record_data_policy

    collection = collection_notes(name) if Path(name).is_dir() else []
    for note in collection:
        logger.warning("%s: %s", label, note)
    if policy:
        queries, outcomes, report = apply_data_policy(queries, outcomes, dataset=label)
        report.notes[:0] = collection
        if run_dir is not None:
            record_data_policy(run_dir, report)
    queries, outcomes = subsample_queries(
        queries, outcomes, max_queries=max_queries, random_state=random_state
    )
    if run_dir is not None:
        record_dataset(run_dir, label, dataset_fingerprint(str(name)))
    return queries, outcomes


def record_dataset(
    run_dir: str | os.PathLike | RunContext, label: str, fingerprint: Mapping[str, str]
) -> Path:
    """Store the file hashes of a dataset a notebook used (``provenance/datasets.json``).

    Parameters
    ----------
    run_dir : path or RunContext
        The run folder.
    label : str
        Dataset label.
    fingerprint : mapping of str to str
        File name to sha256 (:func:`dataset_fingerprint`).

    Returns
    -------
    Path
        The updated ``provenance/datasets.json``.
    """
    context = run_context(run_dir)
    path = context.provenance_dir / "datasets.json"
    recorded = read_json(path) if path.exists() else {}
    recorded[str(label)] = dict(fingerprint)
    write_json(path, recorded)
    return path


def package_versions(packages: Iterable[str] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each package (None when absent).

    Parameters
    ----------
    packages : iterable of str
        Distribution names.

    Returns
    -------
    dict of str to str or None
    """
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for package in packages:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def git_state(repo: str | os.PathLike | None = None) -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of the repository (read-only git calls).

    Parameters
    ----------
    repo : path, optional
        Repository folder (default: the project's).

    Returns
    -------
    dict
    """
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
    """Package versions, dataset fingerprints recorded by the notebooks, git commit, Python.

    Parameters
    ----------
    run_dir : path or RunContext
        The run folder.

    Returns
    -------
    dict
        JSON-safe provenance record.
    """
    context = run_context(run_dir, create=False)
    datasets_path = context.provenance_dir / "datasets.json"
    return {
        "packages": package_versions(),
        "datasets": read_json(datasets_path) if datasets_path.exists() else {},
        "git": git_state(),
        "python": ".".join(str(part) for part in sys.version_info[:3]),
    }


def write_metrics(run_dir: str | os.PathLike | RunContext) -> Path:
    """Merge the fragments and the provenance into ``metrics.json`` (sorted keys, no times).

    Parameters
    ----------
    run_dir : path or RunContext
        The run folder.

    Returns
    -------
    Path
        ``metrics.json``.
    """
    context = run_context(run_dir)
    merged = collect_metrics(context)
    merged["provenance"] = provenance(context)
    validate_metrics(to_jsonable(merged))  # the written contract (ecc_lib/metrics_schema.json)
    write_json(context.metrics_path, merged)
    return context.metrics_path


@dataclass(frozen=True)
class CostInputs:
    """The dataset whose prices draw the cost-quality curves (see :func:`cost_inputs`).

    Attributes
    ----------
    label : str or None
        Its label; None where the curves are skipped.
    queries, outcomes : DataFrame
    embeddings : ndarray
    skipped : str or None
        Why the curves are skipped (the dataset holds no cost), else None.
    """

    label: str | None
    queries: pd.DataFrame
    outcomes: pd.DataFrame
    embeddings: np.ndarray
    skipped: str | None


def cost_inputs(
    run_dir,
    cost_dataset: str,
    routed: tuple[str, pd.DataFrame, pd.DataFrame, np.ndarray],
    *,
    max_queries: int,
    seed: int,
    embedder: str,
) -> CostInputs:
    """The routed dataset's own prices unless ``cost_dataset`` names another dataset (notebook 04).

    Parameters
    ----------
    run_dir : path or RunContext
    cost_dataset : str
        A dataset name or folder, or ``""`` for the routed dataset's own prices.
    routed : tuple
        ``(label, queries, outcomes, embeddings)`` of the routed dataset.
    max_queries, seed : int
        As the routed dataset was loaded with.
    embedder : str
        The embedder of the routed dataset's texts.

    Returns
    -------
    CostInputs
    """
    from ecc_lib.data import policy
    from ecc_lib.embed.encode import embed_texts

    label, queries, outcomes, embeddings = routed
    if cost_dataset and dataset_label(cost_dataset) != label:
        label = dataset_label(cost_dataset)
        queries, outcomes = load_dataset(
            cost_dataset, run_dir=run_dir, max_queries=max_queries, random_state=seed
        )
        embeddings = embed_texts(queries["text"].tolist(), model_name=embedder, show_progress=False)
    has_cost = policy.apply_data_policy(None, outcomes)[2].has_cost
    skipped = None if has_cost else f"{label}: {policy.cost_reason()}"
    return CostInputs(None if skipped else label, queries, outcomes, embeddings, skipped)


__all__ = [
    "cost_inputs",
    "dataset_fingerprint",
    "dataset_label",
    "load_dataset",
    "record_dataset",
]
