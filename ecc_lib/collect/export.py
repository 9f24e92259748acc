"""Reading a collection store back: its records as a table, and their export to the long outcomes
format (a file, or a dataset folder that every ecc_lib loader reads).

Records whose scoring failed are left out of the outcomes, and their count is logged with the most
common reasons. A dataset folder also gets ``collection.json`` (:func:`collection_status`): whether
the store holds every record its last run planned, so that an analysis of an incomplete collection
says so (:func:`collection_notes`).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ecc_lib.collect.store import QUERY_FIELDS, RECORDS_FILE, CollectionStore
from ecc_lib.collect.summary import without_final_answer_sentence
from ecc_lib.data.schema import OBSERVATION_KEY, OUTCOME_COLUMNS
from ecc_lib.data.tables import WRITE_SUFFIXES, is_table_file, write_table
from ecc_lib.safe_output import atomic_path, write_text

logger = logging.getLogger(__name__)

EXPORT_EXTRA_COLUMNS: tuple[str, ...] = ("prompt_tokens", "completion_tokens", "latency_s")
EXPORT_SUFFIXES: tuple[str, ...] = WRITE_SUFFIXES
"""File endings written as one table (:func:`ecc_lib.data.tables.write_table`); any other output is a
dataset folder for the CLI."""


def _as_store(store: str | Path | CollectionStore, check: bool = False) -> CollectionStore:
    """An open store as it is; a folder read, after checking that it is a store when ``check``."""
    if isinstance(store, CollectionStore):
        return store
    directory = Path(store)
    if check and not directory.is_dir():
        raise FileNotFoundError(f"collection store {directory} does not exist")
    if check and not (directory / RECORDS_FILE).exists():
        raise FileNotFoundError(f"{directory} holds no {RECORDS_FILE}; is it a collection store?")
    return CollectionStore(store)


def records_frame(store: str | Path | CollectionStore) -> pd.DataFrame:
    """Every stored record as a table (scoring failures included, ``score`` missing there).

    Parameters
    ----------
    store : path or CollectionStore
        A collection store (folder) or an open store.

    Returns
    -------
    DataFrame
    """
    store = _as_store(store)
    frame = pd.DataFrame(list(store.records.values()))
    if frame.empty:
        return pd.DataFrame(columns=list(OBSERVATION_KEY) + ["score", "cost"])
    return frame.sort_values(list(OBSERVATION_KEY), kind="stable").reset_index(drop=True)


def collected_outcomes(store: str | Path | CollectionStore) -> pd.DataFrame:
    """The store's records in the long outcomes format.

    Columns :data:`ecc_lib.data.schema.OUTCOME_COLUMNS` plus ``prompt_tokens``, ``completion_tokens`` and
    ``latency_s``. Records whose scoring failed are left out, and their count is logged.

    Parameters
    ----------
    store : path or CollectionStore
        A collection store (folder) or an open store.

    Returns
    -------
    DataFrame
    """
    store = _as_store(store, check=True)
    frame = records_frame(store)
    columns = list(OUTCOME_COLUMNS) + list(EXPORT_EXTRA_COLUMNS)
    frame = frame.assign(**{column: np.nan for column in columns if column not in frame.columns})
    unscored = frame["score"].isna().to_numpy()
    if unscored.any():
        reasons = (
            frame.loc[unscored, "scoring_error"].fillna("unknown").value_counts().head(3).to_dict()
            if "scoring_error" in frame.columns
            else {}
        )
        logger.warning(
            "%s: left out %d record(s) whose scoring failed (most common reasons: %s)",
            store.directory,
            int(unscored.sum()),
            reasons,
        )
    out = frame.loc[~unscored, columns].reset_index(drop=True)
    key_types = dict(query_id=str, model=str, variant_id=np.int64, decode_id=np.int64)
    out = out.astype({**key_types, "score": float})
    numbers = dict(cost=float, prompt_tokens="Int64", completion_tokens="Int64", latency_s=float)
    for column, dtype in numbers.items():  # unreadable cells become missing
        out[column] = pd.to_numeric(out[column], errors="coerce").astype(dtype)
    return out


def collected_queries(store: str | Path | CollectionStore) -> pd.DataFrame:
    """The store's queries (``query_id, text, category, source`` plus ``answer``, ``choices``,
    ``passage``, ``scorer``); ``source`` is ``"collected"``.

    Parameters
    ----------
    store : path or CollectionStore
        A collection store (folder) or an open store.

    Returns
    -------
    DataFrame
    """
    store = _as_store(store)
    frame = pd.DataFrame(list(store.queries.values()), columns=list(QUERY_FIELDS))
    frame.insert(3, "source", "collected")
    frame["category"] = frame["category"].astype("string")
    frame["source"] = frame["source"].astype("string")
    return frame


def export_outcomes(store_dir: str | Path, out: str | Path | None = None) -> pd.DataFrame:
    """Export a store to the long outcomes format, optionally writing it to ``out``.

    Parameters
    ----------
    store_dir : str or Path
    out : str or Path, optional
        ``.csv``, ``.parquet`` or ``.jsonl`` file to write.

    Returns
    -------
    DataFrame
        See :func:`collected_outcomes`.
    """
    store = _as_store(store_dir, check=True)  # read once, for the outcomes and the status
    outcomes = collected_outcomes(store)
    checked_status(store)
    if out is not None:
        write_table(outcomes, out)
        logger.info("wrote %d outcome row(s) to %s", len(outcomes), out)
    return outcomes


COLLECTION_FILE = "collection.json"
"""File of a dataset folder exported from a store: :func:`collection_status` of that store."""


def collection_status(store: str | Path | CollectionStore) -> dict:
    """Whether a store holds what its last run planned, from the store's manifest.

    Parameters
    ----------
    store : str, Path or CollectionStore

    Returns
    -------
    dict
        ``store``, ``n_runs``, ``last_run_status`` (``"completed"``, ``"incomplete"``,
        ``"interrupted"``, ``"failed: ..."``; ``None`` without runs), ``complete`` (every planned
        record is there), ``n_planned`` and ``n_done`` (records of the last run's plan;
        ``None`` when the run recorded no summary, e.g. it was killed), ``n_missing_variants``
        (rewrites the rewriter did not provide, so their answers were not asked for),
        ``n_failed`` (answers that failed in the last run), ``n_records`` (all records) and
        ``n_without_final_answer`` (scored records whose answer has no ``Final answer:`` line).
    """
    store = _as_store(store, check=True)
    runs = store.manifest().get("runs", [])
    last = runs[-1] if runs else {}
    summary = last.get("summary") or {}
    return {
        "store": str(store.directory),
        "n_runs": len(runs),
        "last_run_status": last.get("status"),
        "complete": bool(summary.get("complete")) and last.get("status") == "completed",
        "n_planned": summary.get("n_planned"),
        "n_done": summary.get("n_done"),
        "n_missing_variants": summary.get("n_missing_variants"),
        "n_failed": summary.get("n_failed"),
        "n_records": len(store.records),
        "n_without_final_answer": sum(
            record.get("score") is not None and record.get("extracted_answer") is None
            for record in store.records.values()
        ),
    }


DATASET_QUERY_COLUMNS: tuple[str, ...] = ("query_id", "text", "category", "source", "scorer")
"""Query columns of an exported dataset folder (answers and options stay in the store)."""


def export_dataset(store_dir: str | Path, folder: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Export a store as a dataset folder that every loader (and ``ecc-lab run --dataset``) reads:
    ``queries.parquet`` and ``outcomes.parquet``, with :data:`COLLECTION_FILE` (the store's
    :func:`collection_status`; an incomplete collection is logged as a warning).

    Parameters
    ----------
    store_dir : str or Path
    folder : str or Path
        Created when missing; its ``queries.parquet`` and ``outcomes.parquet`` are replaced.

    Returns
    -------
    queries, outcomes : DataFrame
        As written (queries: :data:`DATASET_QUERY_COLUMNS`; outcomes: see
        :func:`collected_outcomes`).

    Raises
    ------
    FileNotFoundError
        ``store_dir`` is not a collection store.
    ValueError
        ``folder`` exists and is a file.
    FileExistsError
        ``folder`` holds another ``queries.*`` or ``outcomes.*`` table (``outcomes.csv``, say):
        nothing is written.
    """
    store = _as_store(store_dir, check=True)  # read once, for the tables and the status
    queries, outcomes = collected_queries(store), collected_outcomes(store)
    status = checked_status(store)
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is a file; give a folder to export the dataset into")
    if folder.is_dir():
        ours = {"queries.parquet", "outcomes.parquet"}
        others = sorted(
            p.name
            for kind in ("queries", "outcomes")
            for p in folder.glob(f"{kind}.*")
            if p.name not in ours and is_table_file(p)
        )
        if others:
            raise FileExistsError(
                f"{folder} already holds {', '.join(others)}; exporting queries.parquet and "
                "outcomes.parquet beside it would leave two tables of one kind (which the loaders "
                "refuse): remove it or export into another folder"
            )
    folder.mkdir(parents=True, exist_ok=True)
    queries = queries.loc[:, list(DATASET_QUERY_COLUMNS)]
    # each file whole or not at all (a full disk keeps the earlier one), never through a link
    for name, table in (("queries.parquet", queries), ("outcomes.parquet", outcomes)):
        with atomic_path(folder / name) as temporary:
            table.to_parquet(temporary, index=False)
    write_text(folder / COLLECTION_FILE, json.dumps(status, indent=2) + "\n")
    logger.info("wrote %d queries and %d outcome row(s) to %s", len(queries), len(outcomes), folder)
    return queries, outcomes


def incomplete_collection_sentence(status: dict) -> str:
    """One sentence on an incomplete collection (:func:`collection_status`), for logs and reports.

    Parameters
    ----------
    status : dict

    Returns
    -------
    str
    """
    planned, done = status.get("n_planned"), status.get("n_done")
    if planned:
        held = f"{done} of {planned} planned records ({100 * done / planned:.1f}%)"
    else:
        held = f"{status.get('n_records', 0)} records, of a plan the last run did not record"
    why = ""
    if status.get("n_missing_variants"):
        why += f"; {status['n_missing_variants']} rewrite(s) missing, so their answers were not asked for"
    if status.get("n_failed"):
        why += f"; {status['n_failed']} answer(s) failed"
    return (
        f"collection incomplete: the store holds {held}{why}; the last run ended "
        f"{status.get('last_run_status')!r}. Numbers from it describe what was collected, not "
        "the plan; rerun the collection to fill it in"
    )


def checked_status(store: str | Path | CollectionStore) -> dict:
    """:func:`collection_status`, logged as a warning when the collection is incomplete.

    Parameters
    ----------
    store : str, Path or CollectionStore

    Returns
    -------
    dict
    """
    status = collection_status(store)
    if not status["complete"]:
        logger.warning("%s", incomplete_collection_sentence(status))
    return status


def read_collected(store_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(queries, outcomes)`` of a store, like every ecc_lib loader.

    Parameters
    ----------
    store_dir : str or Path
        The store folder.

    Returns
    -------
    queries, outcomes : DataFrame
    """
    store = _as_store(store_dir, check=True)
    return collected_queries(store), collected_outcomes(store)


def collection_notes(folder: str | os.PathLike) -> list[str]:
    """Warnings for a dataset folder exported from a collection: an incomplete collection, and
    answers without a ``Final answer:`` line.

    ``ecc-lab collect-export`` writes ``collection.json`` (the store's
    :func:`ecc_lib.collect.export.collection_status`) beside the tables; a folder without it (not
    a collection) gives no note.

    Parameters
    ----------
    folder : str or PathLike
        A dataset folder.

    Returns
    -------
    list of str
    """
    path = Path(folder) / COLLECTION_FILE
    if not path.is_file():
        return []
    try:
        status = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(status, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as error:
        return [f"{path} cannot be read ({error}); whether the collection is complete is unknown"]
    notes = [] if status.get("complete") else [incomplete_collection_sentence(status)]
    without = status.get("n_without_final_answer")
    if without:
        notes.append(without_final_answer_sentence(without, status.get("n_records", without)))
    return notes


__all__ = [
    "read_collected",
    "records_frame",
]
