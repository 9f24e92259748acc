"""Named data sources: every dataset enters ecc_lib as ``(queries, outcomes)`` in the data model
of :mod:`ecc_lib.data.schema`.

- bundled real datasets (:func:`load_bundled`: ``dcrouter``, ``re2``, ``mmlu2``);
- the public releases' formats: RouterBench's wide table (:func:`from_routerbench`), SPROUT
  (:func:`from_sprout`), the DARS release JSONL (:func:`from_dars_release`), downloaded from the
  Hugging Face Hub when online (:func:`load_public`);
- a dataset folder holding ``queries.*`` and ``outcomes.*`` tables (:func:`dataset_files`), and
  :func:`load_dataset`, which takes any of these by name.

The files themselves are read by :mod:`ecc_lib.data.tables`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ecc_lib import paths
from ecc_lib._optional import require
from ecc_lib.data.schema import (
    OUTCOME_COLUMNS,
    DataValidationError,
    validate_outcomes,
    validate_queries,
)
from ecc_lib.data.tables import (
    QUERY_TEXT_COLUMNS,
    from_wide,
    is_table_file,
    read_outcomes,
    read_queries,
    read_table,
)

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


def load_bundled(
    name: str, *, data_dir: str | Path | None = None
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
    queries = validate_queries(read_table(files["queries"]), source=str(files["queries"]))
    outcomes = validate_outcomes(
        read_table(files["outcomes"]), queries, source=str(files["outcomes"])
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
    frame: pd.DataFrame, *, source: str = "routerbench"
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


def from_sprout(
    frame: pd.DataFrame, *, source: str = "sprout"
) -> tuple[pd.DataFrame, pd.DataFrame]:
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
    text_column = next((c for c in QUERY_TEXT_COLUMNS if c in frame.columns), None)
    if text_column is None:
        raise DataValidationError(f"{source}: SPROUT table has no text column {QUERY_TEXT_COLUMNS}")
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
    frame: pd.DataFrame, *, source: str = "dars-release"
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
    text_column = next((c for c in QUERY_TEXT_COLUMNS if c in frame.columns), None)
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
    name: str, *, cache_dir: str | Path | None = None, patterns: Sequence[str] | None = None
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
            "download it elsewhere and read the file with ecc_lib.data.sources "
            "(from_routerbench / from_sprout / from_dars_release on read_table(path))."
        ) from error
    return Path(folder)


def load_public(
    name: str, *, cache_dir: str | Path | None = None
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
    folder = download_public(name, cache_dir=cache_dir)
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
        The table of each kind (a file ``queries.<table suffix>``, see
        :func:`ecc_lib.data.tables.is_table_file`);
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
    if found["queries"] is not None and found["outcomes"] is None:
        if (folder / DECISIONS_TABLE).is_file():
            raise DataValidationError(logged_decisions_message(folder))
    return found if all(found.values()) else None  # type: ignore[return-value]


DECISIONS_TABLE = "decisions.csv"
"""The routing decisions of a folder exported from ``ecc-lab serve-router``'s log."""


def logged_decisions_message(folder: str | Path) -> str:
    """The one-line error for a folder of logged router decisions that holds no outcomes yet.

    Parameters
    ----------
    folder : str or Path
        The exported folder (``queries.csv`` and ``decisions.csv``).

    Returns
    -------
    str
    """
    folder = Path(folder)
    return (
        f"folder {folder} holds logged router decisions (queries.csv, decisions.csv) but no "
        "outcomes: the scores of the routed replies are unknown; collect them first with "
        f"`ecc-lab collect --queries {folder / 'queries.csv'} --models M1,M2 --base-url URL "
        "--store STORE` (add an answer column for the scorer), then `ecc-lab collect-export "
        "--store STORE --out DATASET_DIR`"
    )


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
    "PUBLIC_DATASETS",
    "from_dars_release",
    "from_routerbench",
    "from_sprout",
    "load_bundled",
    "load_dataset",
]
