"""Loaders: every dataset enters ecc_lib as ``(queries, outcomes)`` in the data model of
:mod:`ecc_lib.data.schema`.

- bundled real datasets (:func:`load_bundled`: ``dcrouter``, ``re2``, ``mmlu2``);
- files a user brings: generic long or wide CSV / Parquet / JSONL (:func:`read_queries`,
  :func:`read_outcomes`, :func:`from_wide`), RouterBench's wide table (:func:`from_routerbench`),
  SPROUT (:func:`from_sprout`), the DARS release JSONL (:func:`from_dars_release`);
- the same public sets downloaded from the Hugging Face Hub when online (:func:`load_public`).

Loaders never drop rows silently: when they leave rows out they log how many and why.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ecc_lib import paths
from ecc_lib._optional import require
from ecc_lib.data.schema import (
    OUTCOME_COLUMNS,
    DataValidationError,
    check_models_have_observations,
    id_strings,
    validate_outcomes,
    validate_queries,
)

logger = logging.getLogger(__name__)

BUNDLED_DATASETS: tuple[str, ...] = ("dcrouter", "re2", "mmlu2")
BUNDLED_DESCRIPTIONS = {
    "dcrouter": "LLMRouter dcrouter: 9 open LLMs on 14 benchmarks, one 0/1 (or coverage) score each",
    "re2": "Re2: 3 OpenAI models x 4 prompt variants on GSM8K and CommonsenseQA",
    "mmlu2": "RouteLLM MMLU: GPT-4-1106 vs Mixtral-8x7B on 57 subjects",
}

# Hugging Face Hub datasets for the public formats (repository id, file patterns, parser name)
PUBLIC_DATASETS = {
    "routerbench": ("withmartian/routerbench", ["routerbench_0shot.pkl"], "routerbench"),
    "sprout": ("CARROT-LLM-Routing/SPROUT", ["*.parquet", "**/*.parquet"], "sprout"),
}

_TEXT_COLUMNS = ("text", "prompt", "question", "query", "input")
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
    *_TEXT_COLUMNS,
)
"""Columns of a CSV read as text where only an empty cell is missing: a model or category named
``NA``, ``None`` or ``null`` keeps its name, a dataset named ``2024`` stays ``"2024"``."""


_MISSING_MARKERS = (
    *("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN"),
    *("<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"),
)
"""pandas' default missing-value markers, read as missing in the columns that hold numbers."""


def read_csv_keeping_text(path: str | Path, sep: str = ",", text_columns=TEXT_COLUMNS):
    """Read a CSV whose name columns (``text_columns``) hold text: only an empty cell is missing
    there, while the other columns read pandas' usual missing markers (``NA``, ``NaN`` ...).

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
    header = pd.read_csv(path, sep=sep, nrows=0).columns
    text = set(text_columns)
    na_values = {c: ([""] if c in text else list(_MISSING_MARKERS)) for c in header}
    dtype = {c: str for c in header if c in text}
    return pd.read_csv(path, sep=sep, dtype=dtype, keep_default_na=False, na_values=na_values)


WRITE_SUFFIXES: tuple[str, ...] = (".csv", ".parquet", ".pq", ".jsonl", ".ndjson")
"""Extensions :func:`write_table` writes (and :func:`read_table` reads)."""


PICKLE_SUFFIXES: tuple[str, ...] = (".pkl", ".pickle")
"""Pickles: unpickling runs code, so user data in them is refused (CSV, Parquet, JSONL only)."""


def read_table(path: str | Path, *, allow_pickle: bool = False) -> pd.DataFrame:
    """Read a CSV, TSV, Parquet or JSONL/NDJSON/JSON file by its extension.

    A pickle (``.pkl``, ``.pickle``) is refused with a message naming the file: unpickling runs
    whatever code the file holds, so a dataset folder or ``--outcomes`` file is never unpickled.

    Parameters
    ----------
    path : str or Path
        The file.
    allow_pickle : bool, default False
        Read a pickle anyway; only for the RouterBench release downloaded by
        :func:`load_public` (that dataset ships as a pickled DataFrame).

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
    suffixes = [s.lower() for s in path.suffixes if s.lower() not in (".gz", ".bz2", ".zst")]
    suffix = suffixes[-1] if suffixes else ""
    if suffix in PICKLE_SUFFIXES and not allow_pickle:
        raise DataValidationError(
            f"{path}: refusing to read a pickle (unpickling a file runs any code it holds); "
            "convert it to .parquet, .csv or .jsonl where you trust it, e.g. "
            "pd.read_pickle(path).to_parquet(...)"
        )
    try:
        if suffix in (".csv", ".tsv"):
            return read_csv_keeping_text(path, sep="\t" if suffix == ".tsv" else ",")
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(path)
        if suffix in (".jsonl", ".ndjson", ".json"):
            # dtype=False: strings stay strings ("001", "1e1"); numbers stay numbers
            return pd.read_json(path, lines=suffix != ".json", dtype=False)
        if suffix in PICKLE_SUFFIXES:  # allow_pickle: the downloaded RouterBench release only
            return pd.read_pickle(path)
    except (ValueError, OSError, pd.errors.ParserError) as error:
        raise DataValidationError(f"{path}: could not be read as {suffix[1:]}: {error}") from error
    raise DataValidationError(
        f"{path}: unknown file type '{suffix}'; use .csv, .tsv, .parquet (.pq), .jsonl (.ndjson) "
        "or .json"
    )


def write_table(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write a table as CSV, Parquet or JSONL, chosen by the extension of ``path``.

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
    suffix = path.suffix.lower()
    if suffix not in WRITE_SUFFIXES:
        raise ValueError(f"{path}: write {', '.join(WRITE_SUFFIXES[:-1])} or {WRITE_SUFFIXES[-1]}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix in (".parquet", ".pq"):
        frame.to_parquet(path, index=False)
    else:
        frame.to_json(path, orient="records", lines=True, force_ascii=False)
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
        text_column = next((c for c in _TEXT_COLUMNS if c in frame.columns), None)
    if category_column is None and "category" in frame.columns:
        category_column = "category"
    if model_columns is None:
        excluded = {
            id_column,
            text_column,
            category_column,
            "source",
            "variant_id",
            "decode_id",
            "cost",
            *cost_columns.values(),
        }
        model_columns = infer_model_columns(frame, excluded, source)
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
    check_models_have_observations(long, model_columns, source)

    query_frame = pd.DataFrame({"query_id": ids})
    query_frame["text"] = frame[text_column].astype(str) if text_column else ids
    if category_column:
        query_frame["category"] = frame[category_column]
    query_frame["source"] = source
    query_frame = validate_queries(query_frame, source=source)
    outcomes = validate_outcomes(long, queries if queries is not None else query_frame, source)
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


RESERVED_WIDE_COLUMNS: tuple[str, ...] = ("source", "variant_id", "decode_id", "cost")
"""Column names of the data model that a wide table's score columns never take by inference."""


def infer_model_columns(
    frame: pd.DataFrame, excluded: set | None = None, source: str | None = None
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


def load_bundled(
    name: str, data_dir: str | Path | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Load a bundled dataset: ``"dcrouter"``, ``"re2"`` or ``"mmlu2"``.

    Returns validated ``(queries, outcomes)``. See ``data/README.md`` for origins and licences.

    Parameters
    ----------
    name : str
        Dataset name.
    data_dir : path, optional
        Folder holding the bundled datasets (default: the package's).

    Returns
    -------
    queries, outcomes : DataFrame
        Validated tables in the package's schema.
    """
    if name not in BUNDLED_DATASETS:
        raise ValueError(
            f"unknown bundled dataset '{name}'; choose one of {list(BUNDLED_DATASETS)}"
        )
    folder = Path(data_dir) if data_dir is not None else paths.data_dir() / name
    if data_dir is not None and (Path(data_dir) / name).is_dir():
        folder = Path(data_dir) / name
    files = {kind: folder / f"{kind}.parquet" for kind in ("queries", "outcomes")}
    for file in files.values():
        if not file.is_file():
            raise FileNotFoundError(
                f"bundled dataset '{name}' is missing {file}; rebuild it with "
                "`python scripts/build_bundled_data.py`"
            )
    queries = validate_queries(pd.read_parquet(files["queries"]), source=str(files["queries"]))
    outcomes = validate_outcomes(
        pd.read_parquet(files["outcomes"]), queries, source=str(files["outcomes"])
    )
    return queries, outcomes


def bundled_files(name: str) -> list[Path]:
    """The data files of a bundled dataset (for provenance hashes).

    Parameters
    ----------
    name : str
        A bundled dataset.

    Returns
    -------
    list of Path
    """
    folder = paths.data_dir() / name
    return [folder / "queries.parquet", folder / "outcomes.parquet"]


def from_routerbench(
    frame: pd.DataFrame, source: str = "routerbench"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """RouterBench's wide table: ``sample_id``, ``prompt``, ``eval_name``, one score column per
    model and ``<model>|total_cost`` (other ``<model>|...`` columns are ignored).

    Parameters
    ----------
    frame : DataFrame
        The release table as read from its files.
    source : str
        Named in validation errors.

    Returns
    -------
    queries, outcomes : DataFrame
        Validated tables in the package's schema.
    """
    required = ("sample_id", "prompt", "eval_name")
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise DataValidationError(f"{source}: RouterBench table is missing column(s) {missing}")
    meta = {"sample_id", "prompt", "eval_name", "oracle_model_to_route_to"}
    models = [c for c in frame.columns if "|" not in c and c not in meta]
    cost_columns = {m: f"{m}|total_cost" for m in models if f"{m}|total_cost" in frame.columns}
    renamed = frame.rename(columns={"sample_id": "query_id", "eval_name": "category"})
    return from_wide(
        renamed,
        model_columns=models,
        text_column="prompt",
        category_column="category",
        cost_columns=cost_columns,
        source=source,
    )


def from_sprout(frame: pd.DataFrame, source: str = "sprout") -> tuple[pd.DataFrame, pd.DataFrame]:
    """SPROUT: one row per query, one column per model holding a dict with ``score`` (and
    optionally token counts or cost). The query text is in ``prompt`` (or another text column), the
    benchmark in ``dataset`` or ``category``, the id in ``id`` / ``query_id`` (row number if none).

    Parameters
    ----------
    frame : DataFrame
        The release table as read from its files.
    source : str
        Named in validation errors.

    Returns
    -------
    queries, outcomes : DataFrame
        Validated tables in the package's schema.
    """
    model_columns = [
        c
        for c in frame.columns
        if frame[c].map(lambda v: isinstance(v, dict) and "score" in v).any()
    ]
    if not model_columns:
        raise DataValidationError(
            f"{source}: no model column holds dicts with a 'score' key (SPROUT format)"
        )
    wide = pd.DataFrame(index=frame.index)
    id_column = next((c for c in ("query_id", "id", "key") if c in frame.columns), None)
    wide["query_id"] = frame[id_column].astype(str) if id_column else frame.index.astype(str)
    text_column = next((c for c in _TEXT_COLUMNS if c in frame.columns), None)
    if text_column is None:
        raise DataValidationError(f"{source}: SPROUT table has no text column {_TEXT_COLUMNS}")
    wide["text"] = frame[text_column]
    category_column = next((c for c in ("category", "dataset") if c in frame.columns), None)
    if category_column:
        wide["category"] = frame[category_column]
    cost_columns = {}
    for model in model_columns:
        cells = frame[model]
        wide[model] = cells.map(lambda v: v.get("score") if isinstance(v, dict) else np.nan)
        costs = cells.map(lambda v: v.get("cost") if isinstance(v, dict) else None)
        if costs.notna().any():
            wide[f"{model}|cost"] = costs.astype(float)
            cost_columns[model] = f"{model}|cost"
    return from_wide(
        wide,
        model_columns=model_columns,
        text_column="text",
        category_column="category" if category_column else None,
        cost_columns=cost_columns,
        source=source,
    )


def from_dars_release(
    frame: pd.DataFrame, source: str = "dars-release"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The DARS release JSONL: one row per observation with ``query_id``, ``model``, ``score``,
    ``cost``, ``prompt_variant_id``, ``decode_id``, ``observation_type`` and question fields.

    Parameters
    ----------
    frame : DataFrame
        The release table as read from its files.
    source : str
        Named in validation errors.

    Returns
    -------
    queries, outcomes : DataFrame
        Validated tables in the package's schema.
    """
    required = ("query_id", "model", "score", "prompt_variant_id", "decode_id")
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise DataValidationError(f"{source}: DARS release table is missing column(s) {missing}")
    outcomes = frame.rename(columns={"prompt_variant_id": "variant_id"})
    text_column = next((c for c in _TEXT_COLUMNS if c in frame.columns), None)
    original = outcomes.sort_values(["variant_id", "decode_id"], kind="stable")
    firsts = original.drop_duplicates("query_id", keep="first")
    queries = pd.DataFrame({"query_id": firsts["query_id"].astype(str)})
    queries["text"] = firsts[text_column].astype(str) if text_column else queries["query_id"]
    category_column = next(
        (c for c in ("category", "dataset", "benchmark", "task") if c in frame.columns), None
    )
    if category_column:
        queries["category"] = firsts[category_column].to_numpy()
    queries["source"] = source
    queries = validate_queries(queries, source=source)
    keep = [c for c in OUTCOME_COLUMNS if c in outcomes.columns]
    return queries, validate_outcomes(outcomes[keep], queries, source=source)


def download_public(
    name: str, cache_dir: str | Path | None = None, patterns: Sequence[str] | None = None
) -> Path:
    """Download a public dataset's files from the Hugging Face Hub; return the local folder.

    ``name`` is a key of :data:`PUBLIC_DATASETS` or a Hub dataset id (``owner/name``).

    Parameters
    ----------
    name : str
        A public dataset key or a Hub dataset id.
    cache_dir : path, optional
        Hugging Face cache folder (default: the Hub's).
    patterns : sequence of str, optional
        File patterns to fetch (default: the dataset's, else every file).

    Returns
    -------
    Path
        The local folder.

    Raises
    ------
    ConnectionError
        When the Hub cannot be reached (offline machine), naming the dataset.
    """
    repo_id, default_patterns, _ = PUBLIC_DATASETS.get(name, (name, None, None))
    snapshot_download = require(
        "huggingface_hub", extra="hf", purpose="downloading public datasets"
    ).snapshot_download
    try:
        folder = snapshot_download(
            repo_id=repo_id,
            repo_type="dataset",
            allow_patterns=list(patterns or default_patterns or ["*"]),
            cache_dir=str(cache_dir) if cache_dir else None,
        )
    except Exception as error:
        raise ConnectionError(
            f"could not download the dataset '{repo_id}' from the Hugging Face Hub "
            f"({type(error).__name__}: {error}). This needs a network connection; offline, "
            "download it elsewhere and read the file with ecc_lib.data.loaders "
            "(from_routerbench / from_sprout / from_dars_release on read_table(path))."
        ) from error
    return Path(folder)


def load_public(
    name: str, cache_dir: str | Path | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Download (when online) and parse a public dataset: ``"routerbench"`` or ``"sprout"``.

    Parameters
    ----------
    name : str
        ``"routerbench"`` or ``"sprout"``.
    cache_dir : path, optional
        Download cache.

    Returns
    -------
    queries, outcomes : DataFrame
        Validated tables in the package's schema.
    """
    if name not in PUBLIC_DATASETS:
        raise ValueError(f"unknown public dataset '{name}'; choose one of {list(PUBLIC_DATASETS)}")
    folder = download_public(name, cache_dir)
    parser = {"routerbench": from_routerbench, "sprout": from_sprout}[PUBLIC_DATASETS[name][2]]
    files = sorted(p for p in folder.rglob("*") if p.suffix in (".pkl", ".parquet"))
    if not files:
        raise FileNotFoundError(f"no data file found for '{name}' under {folder}")
    frame = pd.concat([read_table(f, allow_pickle=True) for f in files], ignore_index=True)
    return parser(frame, source=name)


def dataset_files(folder: str | Path) -> dict[str, Path] | None:
    """``{"queries": path, "outcomes": path}`` of a dataset folder, or None when it is not one.

    Parameters
    ----------
    folder : str or Path
        The folder to look in (for ``queries.*`` and ``outcomes.*`` files).

    Returns
    -------
    dict or None
        The table of each kind (a file ``queries.<table suffix>``, see :data:`TABLE_SUFFIXES`);
        None when ``folder`` is not a folder or lacks either file.

    Raises
    ------
    DataValidationError
        The folder holds two tables of one kind (``outcomes.csv`` and ``outcomes.parquet``, say):
        which one is meant is not guessed.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return None
    found: dict[str, Path | None] = {}
    for kind in ("queries", "outcomes"):
        tables = sorted(p for p in folder.glob(f"{kind}.*") if p.is_file() and is_table_file(p))
        if len(tables) > 1:
            raise DataValidationError(
                f"folder {folder} holds {len(tables)} {kind} tables "
                f"({', '.join(p.name for p in tables)}); keep one (which one is meant is not "
                "guessed)"
            )
        found[kind] = tables[0] if tables else None
    return found if all(found.values()) else None  # type: ignore[return-value]


TABLE_SUFFIXES: tuple[str, ...] = (
    ".csv", ".tsv", ".parquet", ".pq", ".jsonl", ".ndjson", ".json", *PICKLE_SUFFIXES,
)  # fmt: skip
"""Suffixes of the files :func:`dataset_files` takes for tables (a pickle is found, then refused)."""


def is_table_file(path: str | Path) -> bool:
    """True when ``path``'s suffix (before ``.gz``, ``.bz2``, ``.zst``) is a table suffix.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    bool
    """
    suffixes = [s.lower() for s in Path(path).suffixes if s.lower() not in (".gz", ".bz2", ".zst")]
    return bool(suffixes) and suffixes[-1] in TABLE_SUFFIXES


def load_dataset(name_or_path: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Load by name: a folder holding ``queries.*`` and ``outcomes.*`` files in the generic
    format (a relative path is taken from the current working directory; an existing folder wins
    over a bundled or public name), a bundled dataset, or a public one (downloaded).

    Parameters
    ----------
    name_or_path : str
        Bundled name, public name, or folder.

    Returns
    -------
    queries, outcomes : DataFrame
        Validated tables in the package's schema.
    """
    folder = Path(name_or_path).expanduser()
    found = dataset_files(folder)
    if found is not None:  # an existing local folder wins over a bundled or public name
        queries = read_queries(found["queries"])
        return queries, read_outcomes(found["outcomes"], queries)
    if name_or_path in BUNDLED_DATASETS:
        return load_bundled(name_or_path)
    if name_or_path in PUBLIC_DATASETS:
        return load_public(name_or_path)
    if folder.is_dir():
        raise DataValidationError(
            f"folder {folder} holds no queries.* and outcomes.* tables (found "
            f"{sorted(p.name for p in folder.iterdir())[:10]})"
        )
    raise ValueError(
        f"'{name_or_path}' is neither a bundled dataset {list(BUNDLED_DATASETS)}, a public one "
        f"{list(PUBLIC_DATASETS)}, nor a folder with queries.* and outcomes.* files"
    )


__all__ = [
    "BUNDLED_DATASETS",
    "BUNDLED_DESCRIPTIONS",
    "ID_COLUMNS",
    "PICKLE_SUFFIXES",
    "PUBLIC_DATASETS",
    "RESERVED_WIDE_COLUMNS",
    "TABLE_SUFFIXES",
    "TEXT_COLUMNS",
    "WRITE_SUFFIXES",
    "bundled_files",
    "dataset_files",
    "download_public",
    "from_dars_release",
    "from_routerbench",
    "from_sprout",
    "from_wide",
    "infer_model_columns",
    "is_table_file",
    "load_bundled",
    "load_dataset",
    "load_public",
    "read_csv_keeping_text",
    "read_outcomes",
    "read_queries",
    "read_table",
    "write_table",
]
