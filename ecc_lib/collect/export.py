"""Reading a collection store back: its records as a table, and their export to the long outcomes
format (a file, or a dataset folder that every ecc_lib loader reads).

Records whose scoring failed are left out of the outcomes, and their count is logged with the most
common reasons.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from ecc_lib.collect.store import QUERY_FIELDS, RECORDS_FILE, CollectionStore
from ecc_lib.loaders import WRITE_SUFFIXES, write_table
from ecc_lib.schema import OBSERVATION_KEY, OUTCOME_COLUMNS

logger = logging.getLogger(__name__)

EXPORT_EXTRA_COLUMNS: tuple[str, ...] = ("prompt_tokens", "completion_tokens", "latency_s")
EXPORT_SUFFIXES: tuple[str, ...] = WRITE_SUFFIXES
"""File endings written as one table (:func:`ecc_lib.loaders.write_table`); any other output is a
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

    Columns :data:`ecc_lib.schema.OUTCOME_COLUMNS` plus ``prompt_tokens``, ``completion_tokens`` and
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
    for column in columns:
        if column not in frame.columns:
            frame[column] = np.nan
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
    out["query_id"] = out["query_id"].astype(str)
    out["model"] = out["model"].astype(str)
    out["score"] = out["score"].astype(float)
    out["cost"] = pd.to_numeric(out["cost"], errors="coerce").astype(float)
    for column in ("variant_id", "decode_id"):
        out[column] = out[column].astype(np.int64)
    for column in ("prompt_tokens", "completion_tokens"):
        out[column] = pd.to_numeric(out[column], errors="coerce").astype("Int64")
    out["latency_s"] = pd.to_numeric(out["latency_s"], errors="coerce").astype(float)
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
    outcomes = collected_outcomes(store_dir)
    if out is not None:
        write_table(outcomes, out)
        logger.info("wrote %d outcome row(s) to %s", len(outcomes), out)
    return outcomes


DATASET_QUERY_COLUMNS: tuple[str, ...] = ("query_id", "text", "category", "source", "scorer")
"""Query columns of an exported dataset folder (answers and options stay in the store)."""


def export_dataset(store_dir: str | Path, folder: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Export a store as a dataset folder that every loader (and ``ecc-lab run --dataset``) reads:
    ``queries.parquet`` and ``outcomes.parquet``.

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
    """
    queries, outcomes = read_collected(store_dir)
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is a file; give a folder to export the dataset into")
    folder.mkdir(parents=True, exist_ok=True)
    queries = queries.loc[:, list(DATASET_QUERY_COLUMNS)]
    queries.to_parquet(folder / "queries.parquet", index=False)
    outcomes.to_parquet(folder / "outcomes.parquet", index=False)
    logger.info("wrote %d queries and %d outcome row(s) to %s", len(queries), len(outcomes), folder)
    return queries, outcomes


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
