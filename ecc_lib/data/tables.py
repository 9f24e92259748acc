"""One table reader and writer: every file a user brings enters ecc_lib here.

- :func:`read_table` / :func:`write_table`: CSV, TSV, Parquet and JSONL by extension (pickles are
  refused); :func:`read_csv_keeping_text` keeps names such as ``NA`` as text;
- :func:`read_queries` and :func:`read_outcomes`: a validated queries or outcomes file, long or
  wide, in the data model of :mod:`ecc_lib.data.schema`;
- :func:`from_wide` and :func:`infer_model_columns`: a wide table (one score column per model)
  turned into long outcomes.

The named sources (bundled, public, dataset folders) are in :mod:`ecc_lib.data.sources`. Readers
never drop rows silently: when they leave rows out they log how many and why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ecc_lib.data.schema import (
    DataValidationError,
    check_models_have_observations,
    id_strings,
    validate_outcomes,
    validate_queries,
)
from ecc_lib.safe_output import atomic_path

logger = logging.getLogger(__name__)

QUERY_TEXT_COLUMNS: tuple[str, ...] = ("text", "prompt", "question", "query", "input")
"""Columns that may hold a query's text, in the order a reader looks for them."""

ID_COLUMNS: tuple[str, ...] = ("query_id", "sample_id", "id", "key", "question_id")
"""Columns read as strings from every file format (``"001"`` stays ``"001"``)."""


TEXT_COLUMNS: tuple[str, ...] = (
    *ID_COLUMNS,
    "model",
    "model_a",
    "model_b",
    "category",
    "source",
    "observation_type",
    "dataset",
    "benchmark",
    "task",
    "eval_name",
    "answer",
    "method",
    *QUERY_TEXT_COLUMNS,
)
"""Columns of a CSV read as text where only an empty cell is missing: a model or category named
``NA``, ``None`` or ``null`` keeps its name, a dataset named ``2024`` stays ``"2024"``."""


_MISSING_MARKERS = (
    *("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN"),
    *("<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"),
)
"""pandas' default missing-value markers, read as missing in the columns that hold numbers."""


def read_csv_keeping_text(path: str | Path, *, sep: str = ",", text_columns=TEXT_COLUMNS):
    """Read a CSV whose name columns (``text_columns``) hold text: only an empty cell is missing
    there, while the other columns read pandas' usual missing markers (``NA``, ``NaN`` ...).

    Spaces after a separator are skipped (``q0000, m-a, 1.0`` reads as ``q0000,m-a,1.0``; a
    quoted cell keeps its spaces), issue 36; :func:`read_table` also refuses a header that names
    a column twice (:func:`refuse_duplicate_header`).

    Parameters
    ----------
    path : str or Path
        The CSV (or TSV with ``sep="\\t"``) file, optionally compressed.
    sep : str, default ","
        Field separator.
    text_columns : iterable of str, default :data:`TEXT_COLUMNS`
        Columns read as strings.

    Returns
    -------
    DataFrame
    """
    header = pd.read_csv(path, sep=sep, nrows=0, skipinitialspace=True).columns
    text = set(text_columns)
    na_values = {c: ([""] if c in text else list(_MISSING_MARKERS)) for c in header}
    dtype = {c: str for c in header if c in text}
    return pd.read_csv(
        path,
        sep=sep,
        dtype=dtype,
        keep_default_na=False,
        na_values=na_values,
        skipinitialspace=True,
    )


def refuse_duplicate_header(path: str | Path, *, sep: str = ",") -> None:
    """Raise :class:`DataValidationError` when the header of a CSV names a column twice (pandas
    would rename the second ``score`` to ``score.1`` in silence, issue 36).

    Parameters
    ----------
    path : str or Path
    sep : str, default ","
    """
    names = pd.read_csv(
        path, sep=sep, nrows=1, header=None, dtype=str, keep_default_na=False, skipinitialspace=True
    )
    raw = [str(name) for name in names.iloc[0]] if len(names) else []
    twice = sorted({name for name in raw if raw.count(name) > 1})
    if twice:
        raise DataValidationError(
            f"{path}: the header names the column(s) {twice} more than once; rename or remove "
            "the extra column (which one is meant is not guessed)"
        )


def _read_delimited(
    path: Path, *, sep: str, options: Mapping[str, Any] | None = None
) -> pd.DataFrame:
    """A CSV or TSV with its header checked (:func:`refuse_duplicate_header`), read keeping text
    (:func:`read_csv_keeping_text`) or with the caller's :func:`pandas.read_csv` keywords
    (:func:`read_table`)."""
    refuse_duplicate_header(path, sep=sep)
    if options is None:
        return read_csv_keeping_text(path, sep=sep)
    return pd.read_csv(path, sep=sep, **options)


# dtype=False: strings stay strings ("001", "1e1"); numbers stay numbers
_read_json_lines = partial(pd.read_json, lines=True, dtype=False)
_write_parquet = partial(pd.DataFrame.to_parquet, index=False)
_write_json_lines = partial(pd.DataFrame.to_json, orient="records", lines=True, force_ascii=False)

_SEPARATORS = {".csv": ",", ".tsv": "\t"}

TABLE_READERS: dict[str, Callable[[Path], pd.DataFrame]] = {
    ".csv": partial(_read_delimited, sep=_SEPARATORS[".csv"]),
    ".tsv": partial(_read_delimited, sep=_SEPARATORS[".tsv"]),
    ".parquet": pd.read_parquet,
    ".pq": pd.read_parquet,
    ".jsonl": _read_json_lines,
    ".ndjson": _read_json_lines,
    ".json": partial(pd.read_json, lines=False, dtype=False),
}
"""The file types :func:`read_table` reads, by extension (one entry per type: a new input format
is a reader here, and a writer in :data:`TABLE_WRITERS` if tables are also written in it)."""

TABLE_WRITERS: dict[str, Callable[[pd.DataFrame, Path], None]] = {
    ".csv": partial(pd.DataFrame.to_csv, index=False),
    ".parquet": _write_parquet,
    ".pq": _write_parquet,
    ".jsonl": _write_json_lines,
    ".ndjson": _write_json_lines,
}
"""The file types :func:`write_table` writes (each read back by :func:`read_table`)."""

WRITE_SUFFIXES: tuple[str, ...] = tuple(TABLE_WRITERS)
"""Extensions :func:`write_table` writes (and :func:`read_table` reads)."""


PICKLE_SUFFIXES: tuple[str, ...] = (".pkl", ".pickle")
"""Pickles: unpickling runs code, so user data in them is refused (CSV, Parquet, JSONL only)."""

COMPRESSION_SUFFIXES: tuple[str, ...] = (".gz", ".bz2", ".zst")
"""Compression extensions looked through to the table's own extension (``outcomes.csv.gz``)."""


def table_suffix(path: str | Path) -> str:
    """The table extension of ``path``, lower case, behind any compression extension.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    str
        ``".csv"`` for ``outcomes.CSV.gz``; ``""`` without one.
    """
    suffixes = [s.lower() for s in Path(path).suffixes if s.lower() not in COMPRESSION_SUFFIXES]
    return suffixes[-1] if suffixes else ""


RESERVED_WIDE_COLUMNS: tuple[str, ...] = ("source", "variant_id", "decode_id", "cost")
"""Column names of the data model that a wide table's score columns never take by inference."""


def read_table(
    path: str | Path, *, allow_pickle: bool = False, csv_options: Mapping[str, Any] | None = None
) -> pd.DataFrame:
    """Read a table by its extension: CSV, TSV, Parquet, JSONL/NDJSON or JSON (see
    :data:`TABLE_READERS`).

    A pickle (``.pkl``, ``.pickle``) is refused with a message naming the file: unpickling runs
    whatever code the file holds, so a dataset folder or ``--outcomes`` file is never unpickled.

    Parameters
    ----------
    path : str or Path
        The file.
    allow_pickle : bool, default False
        Read a pickle anyway; only for the RouterBench release downloaded by
        :func:`ecc_lib.data.sources.load_public` (that dataset ships as a pickled DataFrame).
    csv_options : mapping, optional
        Keywords of :func:`pandas.read_csv` for a CSV or TSV whose format differs from the text
        keeping of :func:`read_csv_keeping_text` (the queries file of collection reads every
        column with only an empty cell missing, :func:`ecc_lib.collect.queries.read_queries_file`);
        the separator is the extension's, and the header is still checked
        (:func:`refuse_duplicate_header`). Other file types ignore it.

    Returns
    -------
    DataFrame

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    DataValidationError
        The extension is unknown, the file is a pickle, or it cannot be parsed (the message names
        the file).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    suffix = table_suffix(path)
    if suffix in PICKLE_SUFFIXES and not allow_pickle:
        raise DataValidationError(
            f"{path}: refusing to read a pickle (unpickling a file runs any code it holds); "
            "convert it to .parquet, .csv or .jsonl where you trust it, e.g. "
            "pd.read_pickle(path).to_parquet(...)"
        )
    reader = pd.read_pickle if suffix in PICKLE_SUFFIXES else TABLE_READERS.get(suffix)
    if csv_options is not None and suffix in _SEPARATORS:  # the built-in reader, with options
        reader = partial(_read_delimited, sep=_SEPARATORS[suffix], options=csv_options)
    if reader is None:
        raise DataValidationError(
            f"{path}: unknown file type '{suffix}'; use .csv, .tsv, .parquet (.pq), .jsonl "
            "(.ndjson) or .json"
        )
    try:
        return reader(path)
    except (ValueError, OSError, pd.errors.ParserError) as error:
        raise DataValidationError(f"{path}: could not be read as {suffix[1:]}: {error}") from error


def write_table(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write a table as CSV, Parquet or JSONL, chosen by the extension of ``path`` (see
    :data:`TABLE_WRITERS`).

    Parameters
    ----------
    frame : DataFrame
        The table.
    path : str or Path
        ``.csv``, ``.parquet`` / ``.pq`` or ``.jsonl`` / ``.ndjson`` file (each read back by
        :func:`read_table`); its folder is created.

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    writer = TABLE_WRITERS.get(path.suffix.lower())
    if writer is None:
        raise ValueError(f"{path}: write {', '.join(WRITE_SUFFIXES[:-1])} or {WRITE_SUFFIXES[-1]}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temporary:  # a full disk keeps an earlier file whole
        writer(frame, temporary)
    return path


def read_queries(path: str | Path) -> pd.DataFrame:
    """Read and validate a queries file (``query_id, text[, category, source]``).

    Parameters
    ----------
    path : str or Path
        Queries file.

    Returns
    -------
    DataFrame
        Validated queries.
    """
    return validate_queries(read_table(path), source=str(path))


def read_outcomes(
    path: str | Path,
    queries: pd.DataFrame | None = None,
    *,
    model_columns: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Read and validate an outcomes file, long or wide.

    A file with a ``model`` or ``score`` column is long (one row per observation). Otherwise it is
    read as wide: ``query_id`` plus one score column per model (``model_columns``, or every numeric
    column but ``query_id``, ``variant_id``, ``decode_id`` and ``cost``), see :func:`from_wide`.

    Parameters
    ----------
    path : str or Path
        Outcomes file.
    queries : DataFrame, optional
        Queries the outcomes must refer to.
    model_columns : sequence of str, optional
        Score columns of a wide table.

    Returns
    -------
    DataFrame
        Long, validated outcomes.
    """
    frame = read_table(path)
    if {"model", "score"} & set(frame.columns):
        return validate_outcomes(frame, queries, source=str(path))
    return from_wide(frame, model_columns=model_columns, source=str(path), queries=queries)[1]


def from_wide(
    frame: pd.DataFrame,
    *,
    model_columns: Sequence[str] | None = None,
    id_column: str = "query_id",
    text_column: str | None = None,
    category_column: str | None = None,
    cost_columns: dict[str, str] | None = None,
    source: str | None = None,
    queries: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Turn a wide table (one row per query, one score column per model) into the data model.

    Parameters
    ----------
    frame : DataFrame
    model_columns : sequence of str, optional
        Score columns; default every numeric or boolean column except ids and costs.
    id_column : str, default "query_id"
    text_column, category_column : str, optional
        Columns holding the query text and human label; default: the first of ``text``,
        ``prompt``, ``question``, ``query``, ``input`` present, and ``category`` if present.
    cost_columns : dict, optional
        Model column -> its cost column.
    source : str, optional
        Name used in messages (file name).
    queries : DataFrame, optional
        Known queries, to validate the outcomes against.

    Returns
    -------
    queries, outcomes : DataFrame
        Missing score cells (a model not run on a query) are left out with a logged count.
    """
    where = f"{source}: " if source else ""
    if id_column not in frame.columns:
        raise DataValidationError(
            f"{where}wide table needs an id column '{id_column}'; found {list(frame.columns)}"
        )
    cost_columns = dict(cost_columns or {})
    if text_column is None:
        text_column = next((c for c in QUERY_TEXT_COLUMNS if c in frame.columns), None)
    if category_column is None and "category" in frame.columns:
        category_column = "category"
    if model_columns is None:
        excluded = {
            id_column,
            text_column,
            category_column,
            *RESERVED_WIDE_COLUMNS,
            *cost_columns.values(),
        }
        model_columns = infer_model_columns(frame, excluded=excluded, source=source)
    model_columns = list(model_columns)
    if not model_columns:
        raise DataValidationError(
            f"{where}found no score columns: a long table needs 'model' and 'score' columns, a "
            f"wide one numeric score columns within [0, 1], one per model (or name them with "
            f"model_columns); found {list(frame.columns)}"
        )
    missing = [c for c in model_columns if c not in frame.columns]
    if missing:
        raise DataValidationError(f"{where}wide table is missing model column(s) {missing}")
    for column in model_columns:
        _check_numeric_cells(frame, column, source, what="model column")
    for model, column in cost_columns.items():
        if column in frame.columns:
            _check_numeric_cells(frame, column, source, what=f"cost column of {model!r}")

    ids = id_strings(frame[id_column])
    long = pd.DataFrame(
        {
            "query_id": np.repeat(ids.to_numpy(), len(model_columns)),
            "model": np.tile(np.asarray(model_columns, dtype=object), len(frame)),
            "score": frame[model_columns]
            .apply(pd.to_numeric, errors="coerce")
            .to_numpy(dtype=float)
            .reshape(-1),
        }
    )
    if cost_columns:
        costs = np.column_stack(
            [
                pd.to_numeric(frame[cost_columns[m]], errors="coerce").to_numpy(dtype=float)
                if m in cost_columns
                else np.full(len(frame), np.nan)
                for m in model_columns
            ]
        )
        long["cost"] = costs.reshape(-1)
    empty = long["score"].isna().to_numpy()
    if empty.any():
        logger.warning(
            "%sleft out %d empty score cell(s) of %d (a model without a result on a query)",
            where,
            int(empty.sum()),
            len(long),
        )
        long = long.loc[~empty]
    check_models_have_observations(long, model_columns, source=source)

    query_frame = pd.DataFrame({"query_id": ids})
    query_frame["text"] = frame[text_column].astype(str) if text_column else ids
    if category_column:
        query_frame["category"] = frame[category_column]
    query_frame["source"] = source
    query_frame = validate_queries(query_frame, source=source)
    outcomes = validate_outcomes(
        long, queries if queries is not None else query_frame, source=source
    )
    return query_frame, outcomes


def _check_numeric_cells(
    frame: pd.DataFrame, column: str, source: str | None, what: str = "model column"
) -> None:
    """Raise naming the first cell of ``column`` that is given but not a finite number."""
    values = frame[column]
    if pd.api.types.is_bool_dtype(values.dtype):
        return
    given = values.notna().to_numpy() & (values.astype(str).str.strip() != "").to_numpy()
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    bad = given & ~np.isfinite(numbers)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        where = f"{source}: " if source else ""
        raise DataValidationError(
            f"{where}{what} {column!r} must hold numbers; {int(bad.sum())} cell(s) do not, first "
            f"at row {row} (0-based, after the header): {values.iloc[row]!r}"
        )


def infer_model_columns(
    frame: pd.DataFrame, *, excluded: set | None = None, source: str | None = None
) -> list[str]:
    """The score columns of a wide table, inferred: numeric columns whose values lie in [0, 1].

    A column counts as numeric when most of its given cells parse as numbers (one stray text cell
    then raises in :func:`from_wide`, naming the cell, instead of silently removing the model).
    Boolean columns (``is_hard``) and numeric columns outside [0, 1] (``difficulty``) are metadata,
    not models: they are left out and listed in the log, as is the inferred list. A name with
    ``|`` is a model unless the part before the ``|`` is another column (RouterBench's
    ``gpt-4|total_cost`` describes the model ``gpt-4``). Score-like columns that are left out
    all the same are named in a warning, never dropped in silence: a column named like a column
    of the data model (``cost``, ``source``: pass ``model_columns`` to take it as a model), a
    side column ``model|...``, and a column without a single value.

    Parameters
    ----------
    frame : DataFrame
    excluded : set of str, optional
        Columns that are never models (ids, text, category, costs).
    source : str, optional
        Name used in the log.

    Returns
    -------
    list of str
    """
    where = f"{source}: " if source else ""
    excluded = {c for c in (excluded or set()) if c is not None}
    names = {str(c) for c in frame.columns}
    models, ignored, warned = [], [], []
    for column in frame.columns:
        values = frame[column]
        reserved = column in excluded and str(column) in RESERVED_WIDE_COLUMNS
        if column in excluded and not reserved:
            continue
        prefix = str(column).split("|", 1)[0]
        side = "|" in str(column) and prefix in names and prefix != str(column)
        if pd.api.types.is_bool_dtype(values.dtype):
            ignored.append(f"{column} (boolean)")
            continue
        given = values.dropna()
        if not pd.api.types.is_numeric_dtype(values.dtype):
            given = given[given.astype(str).str.strip() != ""]
        if given.empty:
            if not reserved:
                warned.append(f"{column!r} (no values at all)")
            continue
        numbers = pd.to_numeric(given, errors="coerce")
        if numbers.notna().mean() < 0.5:
            continue  # a text column
        finite = numbers[np.isfinite(numbers.to_numpy(dtype=float))]
        if len(finite) and (finite.min() < 0 or finite.max() > 1):
            ignored.append(f"{column} (values outside [0, 1])")
            small_scale = bool((finite == finite.round()).all() and finite.max() <= 10)
            if finite.min() >= 0 and finite.max() <= 100 and not small_scale and not reserved:
                # a score in percent (issue 36: dropped with an INFO line only)
                warned.append(
                    f"{column!r} (values in [{finite.min():g}, {finite.max():g}]: a score in "
                    "percent? divide it by 100)"
                )
            continue
        if reserved:
            warned.append(f"{column!r} (a column name of the data model)")
        elif side:
            warned.append(f"{column!r} (a side column of the model {prefix!r})")
        else:
            models.append(column)
    if ignored:
        logger.info("%snot taken as models: %s", where, ", ".join(ignored))
    if warned:
        logger.warning(
            "%sscore-like column(s) not taken as models: %s; name them in model_columns to "
            "take them as models",
            where,
            ", ".join(warned),
        )
    logger.info("%sinferred %d model column(s): %s", where, len(models), models)
    return models


def is_table_file(path: str | Path) -> bool:
    """True when ``path``'s suffix (before ``.gz``, ``.bz2``, ``.zst``) is a table type of
    :data:`TABLE_READERS`, or a pickle (found, then refused by :func:`read_table`).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    bool
    """
    suffix = table_suffix(path)
    return suffix in TABLE_READERS or suffix in PICKLE_SUFFIXES


__all__ = [
    "TABLE_READERS",
    "TABLE_WRITERS",
    "from_wide",
    "read_csv_keeping_text",
    "read_outcomes",
    "read_queries",
    "read_table",
]
