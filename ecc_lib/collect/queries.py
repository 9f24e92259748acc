"""Reading the queries to collect: a table with ``query_id``, ``text`` and optional extras.

Columns used by collection (all optional besides the first two):

``query_id``, ``text``
    The question stem (the only part a rewriter changes).
``category``
    Chooses the scorer (see :func:`ecc_lib.collect.scorers.choose_scorer`).
``answer``
    Reference answer: an option letter / option text / 0-based index for multiple choice, a number,
    a string, or a list (or JSON list string) of acceptable strings.
``choices``
    Multiple-choice options, kept verbatim and shown as ``A. ...`` lines: a list, a JSON list or
    object string (or a Python list literal, as ``DataFrame.to_csv`` writes lists), or one string
    with the options separated by newlines or ``|``.
``passage``
    Context shown before the question and kept verbatim (reading comprehension).
``scorer``
    Scorer name for this query (overrides the category rule).
``temperature``, ``top_p``, ``max_tokens``
    Per-query (per-task) decoding settings overriding the collection's.
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ecc_lib.data.schema import DataValidationError, validate_queries
from ecc_lib.data.tables import read_table

QUERY_FILE_SUFFIXES: tuple[str, ...] = (".csv", ".tsv", ".parquet", ".pq", ".jsonl", ".ndjson")
TEXT_COLUMNS: tuple[str, ...] = ("query_id", "text", "category", "answer", "choices", "passage")
_CSV_OPTIONS = {
    "dtype": {column: str for column in TEXT_COLUMNS},
    "keep_default_na": False,
    "na_values": [""],
}
"""How :func:`read_queries_file` reads a CSV or TSV through the one table reader
(:func:`ecc_lib.data.tables.read_table`): the text columns as strings, and in every column only an
empty cell is missing."""


def is_missing(value: Any) -> bool:
    """True for a missing cell: None, NaN, ``pd.NA`` or ``pd.NaT``.

    Parameters
    ----------
    value : object
        One cell of a queries table.

    Returns
    -------
    bool
    """
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and math.isnan(value)


def parse_choices(value: Any) -> list[str] | None:
    """Options of one query as a list of strings, or None when the query has none.

    Parameters
    ----------
    value : object
        A list, a JSON list string, or a missing value.

    Returns
    -------
    list of str or None

    Raises
    ------
    ValueError
        Fewer than two options, or an unreadable JSON string.
    """
    if is_missing(value):
        return None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text[0] in "[{":
            try:
                value = json.loads(text)
            except json.JSONDecodeError as error:
                try:  # a Python list written by DataFrame.to_csv: "['a', 'b']"
                    value = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    raise ValueError(
                        f"choices {text[:60]!r} are neither JSON nor a Python literal: {error}"
                    ) from None
        elif "\n" in text:
            value = [line for line in text.splitlines() if line.strip()]
        else:
            value = text.split("|")
    if isinstance(value, dict):
        value = [value[key] for key in sorted(value)]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"choices must be a list, got {type(value).__name__}")
    options = [str(option).strip() for option in value if not is_missing(option)]
    if len(options) < 2:
        raise ValueError(f"choices need at least 2 options, got {options}")
    return options


def read_queries_file(path: str | Path) -> pd.DataFrame:
    """Read a queries table by extension (CSV, TSV, Parquet, JSON lines) and validate it.

    Text columns are read as strings (``"001"`` stays ``"001"``; the literal ``"NA"`` is not a
    missing value); empty CSV cells are missing.

    Parameters
    ----------
    path : str or Path
        A ``.csv``, ``.tsv``, ``.parquet`` or ``.jsonl`` file.

    Returns
    -------
    DataFrame
        The validated queries (:func:`check_queries`).

    Raises
    ------
    FileNotFoundError, DataValidationError
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"queries file {path} does not exist")
    if path.suffix.lower() not in QUERY_FILE_SUFFIXES:
        raise DataValidationError(
            f"{path}: queries file must end in one of {list(QUERY_FILE_SUFFIXES)}"
        )
    frame = read_table(path, csv_options=_CSV_OPTIONS)
    return check_queries(frame, source=str(path))


def check_queries(queries: pd.DataFrame, *, source: str | None = None) -> pd.DataFrame:
    """Validate a queries table for collection (ids, texts, readable options, decoding settings).

    Parameters
    ----------
    queries : DataFrame
        Queries table (``query_id``, ``text``, optional ``choices``, ``passage``, ``answer``,
        decoding settings).
    source : str, optional
        File named in error messages.

    Returns
    -------
    DataFrame
        A validated copy.
    """
    frame = validate_queries(queries, source=source)
    where = f"{source}: " if source else ""
    if frame.empty:
        raise DataValidationError(f"{where}queries table is empty")
    if "choices" in frame.columns:
        parsed = []
        for position, value in enumerate(frame["choices"].tolist()):
            try:
                parsed.append(parse_choices(value))
            except ValueError as error:
                raise DataValidationError(
                    f"{where}queries column 'choices', row {position} "
                    f"(query_id {frame['query_id'].iloc[position]!r}): {error}"
                ) from None
        frame["choices"] = pd.Series(parsed, index=frame.index, dtype=object)
    for column, low in (("temperature", 0.0), ("top_p", 0.0), ("max_tokens", 1.0)):
        if column not in frame.columns:
            continue
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = (frame[column].notna() & values.isna()) | (values < low)
        if bool(bad.any()):
            position = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataValidationError(
                f"{where}queries column '{column}' has an invalid value at row {position}: "
                f"{frame[column].iloc[position]!r}"
            )
    return frame


__all__: list[str] = []
