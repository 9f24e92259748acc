"""The one data model of ecc_lib: query and outcome tables, and their validators.

Every loader returns ``(queries, outcomes)`` in this shape, and every analysis takes it.

queries
    ``query_id`` (str, unique), ``text`` (str), ``category`` (str or missing: a human label such as
    a benchmark name or subject), ``source`` (str: where the query came from).
outcomes
    long form, one row per observation: ``query_id``, ``model`` (str), ``score`` (float in [0, 1]),
    ``cost`` (float >= 0 or missing), ``variant_id`` (int, which rewrite; 0 is the original query),
    ``decode_id`` (int, which repeated decode), ``observation_type`` (str, free text such as
    ``"original"``, ``"rewrite"``, ``"decode"``). A plain benchmark table is the special case of one
    observation per (query, model).
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Iterable
from typing import Self

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

QUERY_COLUMNS: tuple[str, ...] = ("query_id", "text", "category", "source")
REQUIRED_QUERY_COLUMNS: tuple[str, ...] = ("query_id", "text")
OUTCOME_COLUMNS: tuple[str, ...] = (
    "query_id",
    "model",
    "score",
    "cost",
    "variant_id",
    "decode_id",
    "observation_type",
)
REQUIRED_OUTCOME_COLUMNS: tuple[str, ...] = ("query_id", "model", "score")
OBSERVATION_KEY: tuple[str, ...] = ("query_id", "model", "variant_id", "decode_id")


class DataValidationError(ValueError):
    """Input data does not follow the ecc_lib data model.

    The message names the file (when known), the column and the first offending row.
    """


class QueryModelAxes:
    """The two axes shared by the package's containers of per-(query, model) data.

    Mixed into frozen dataclasses that hold ``query_ids`` (one entry per query) and ``models`` (one
    name per model): :class:`ecc_lib.data.comparisons.Comparisons`,
    :class:`ecc_lib.data.observations.RepeatedObservations` and
    :class:`ecc_lib.dars.distributions.CapabilityDistributions`. Each says how it keeps a subset of its queries
    (``_keep_queries``); :meth:`select_queries` checks the mask for all of them.
    """

    query_ids: np.ndarray
    models: tuple[str, ...]

    @property
    def n_queries(self) -> int:
        """Number of queries in :attr:`query_ids`."""
        return int(len(self.query_ids))

    @property
    def n_models(self) -> int:
        """Number of models."""
        return len(self.models)

    def select_queries(self, query_mask: np.ndarray) -> Self:
        """The same container restricted to the queries where ``query_mask`` is true.

        Parameters
        ----------
        query_mask : ndarray of bool, shape (n_queries,)
            Queries to keep, aligned to :attr:`query_ids`.

        Returns
        -------
        same type as the container
            Its ``query_ids`` are ``query_ids[query_mask]`` in their original order; the data of
            the kept queries follow them, re-coded where they index queries.
        """
        query_mask = np.asarray(query_mask, dtype=bool)
        if query_mask.shape != (self.n_queries,):
            raise ValueError(f"query_mask must have shape ({self.n_queries},)")
        return self._keep_queries(query_mask)

    def _keep_queries(self, query_mask: np.ndarray) -> Self:
        raise NotImplementedError(f"{type(self).__name__} does not say how it keeps queries")


def source_prefix(source: str | None) -> str:
    """``"<source>: "`` to open a message about a file, or ``""`` without one.

    Parameters
    ----------
    source : str or None
        File or table name.

    Returns
    -------
    str
    """
    return f"{source}: " if source else ""


def _first_row(frame: pd.DataFrame, mask: np.ndarray | pd.Series) -> str:
    mask = np.asarray(mask, dtype=bool)
    position = int(np.flatnonzero(mask)[0])
    row = frame.iloc[position].to_dict()
    shown = {key: row[key] for key in list(row)[:6]}
    return f"row {position} (0-based, after the header) {shown}"


def _refuse_rows(
    frame: pd.DataFrame, bad: np.ndarray, source: str | None, message: str, n: int | None = None
) -> None:
    """Raise when some row is ``bad``: ``message`` (its ``{n}`` the number of bad rows, or ``n``)
    and the first bad row."""
    if bad.any():
        count = int(bad.sum()) if n is None else n
        raise DataValidationError(
            f"{source_prefix(source)}{message.format(n=count)}; first at {_first_row(frame, bad)}"
        )


def id_strings(values: pd.Series) -> pd.Series:
    """Query ids as strings, the same whichever file format they came from.

    Strings are kept as written (``"001"`` stays ``"001"``); integer-valued floats (a numeric id
    column with a missing cell, read by pandas as float) lose their ``".0"``.

    Parameters
    ----------
    values : Series
        The query id column.

    Returns
    -------
    Series of str
        Same index as ``values``.
    """
    if pd.api.types.is_float_dtype(values.dtype):
        numbers = values.to_numpy(dtype=float)
        integral = np.isfinite(numbers) & (numbers % 1 == 0)
        if integral.all():
            huge = np.abs(numbers) >= 2.0**63  # beyond int64: astype would wrap (issue 36)
            text = np.empty(len(numbers), dtype=object)
            text[~huge] = numbers[~huge].astype(np.int64).astype(str)
            text[huge] = [str(int(x)) for x in numbers[huge]]  # the rare huge ids only
            inexact = np.abs(numbers) > 2.0**53
            if inexact.any():
                logger.warning(
                    "%d query id(s) are numbers above 2^53 read as floats (first: %s), which "
                    "cannot hold every digit: ids that differ only in the last digits may have "
                    "merged; store the ids as text",
                    int(inexact.sum()),
                    text[np.flatnonzero(inexact)[0]],
                )
            return pd.Series(text.astype(str), index=values.index)
    return values.astype(str)


def normalise_model_names(
    models: pd.Series, *, source: str | None = None, what: str = "model"
) -> pd.Series:
    """Model names in one form: Unicode NFC, without surrounding whitespace (issue 36:
    ``"gpt-4 "`` and ``"gpt\u20114"`` in NFD were separate models). Names that are then equal up
    to case stay separate models, with a warning naming them.

    Parameters
    ----------
    models : Series
        The model column (str).
    source : str, optional
        File or dataset name for the log.
    what : str, default "model"
        What the names are (for the log).

    Returns
    -------
    Series of str
        Same index as ``models``.
    """
    codes, uniques = pd.factorize(models.astype(str), sort=False)
    names = [str(name) for name in uniques]
    cleaned = [unicodedata.normalize("NFC", name).strip() for name in names]
    changed = [(a, b) for a, b in zip(names, cleaned, strict=True) if a != b]
    if changed:
        logger.info(
            "%s%d %s name(s) normalised (Unicode NFC, surrounding whitespace), e.g. %r -> %r",
            source_prefix(source),
            len(changed),
            what,
            *changed[0],
        )
    empty = [name for name, clean in zip(names, cleaned, strict=True) if not clean]
    if empty:
        raise DataValidationError(
            f"{source_prefix(source)}{what} name {empty[0]!r} is empty once its whitespace is "
            "stripped"
        )
    folded: dict[str, set[str]] = {}
    for clean in cleaned:
        folded.setdefault(clean.casefold(), set()).add(clean)
    clashes = [sorted(group) for group in folded.values() if len(group) > 1]
    if clashes:
        logger.warning(
            "%s%d group(s) of %s names differ only by case and are kept as separate models: %s",
            source_prefix(source),
            len(clashes),
            what,
            "; ".join(", ".join(repr(n) for n in group) for group in clashes[:5]),
        )
    if not changed:
        return models.astype(str)
    return pd.Series(np.asarray(cleaned, dtype=object)[codes], index=models.index).astype(str)


def require_columns(
    frame: pd.DataFrame, required: Iterable[str], what: str, source: str | None
) -> None:
    """Raise a :class:`DataValidationError` unless ``frame`` is a DataFrame with the ``required``
    columns.

    Parameters
    ----------
    frame : DataFrame
        The table.
    required : iterable of str
        Columns it must have.
    what : str
        Names the table in the message (``"outcomes"``).
    source : str or None
        File name for the message.

    Raises
    ------
    DataValidationError
        Not a DataFrame, or a column is missing.
    """
    if not isinstance(frame, pd.DataFrame):
        raise DataValidationError(
            f"{source_prefix(source)}{what} must be a pandas DataFrame, got {type(frame).__name__}"
        )
    missing = [column for column in required if column not in frame.columns]
    if missing:
        raise DataValidationError(
            f"{source_prefix(source)}{what} table is missing column(s) {missing}; "
            f"found columns {list(frame.columns)}"
        )


def _require_values(
    frame: pd.DataFrame, columns: Iterable[str], what: str, source: str | None
) -> None:
    """Raise when a cell of ``columns`` is missing, naming the column and the first row."""
    for column in columns:
        missing = frame[column].isna().to_numpy()
        _refuse_rows(frame, missing, source, f"{what} column '{column}' has {{n}} missing value(s)")


def validate_queries(queries: pd.DataFrame, *, source: str | None = None) -> pd.DataFrame:
    """Check a queries table and return it in canonical form.

    Parameters
    ----------
    queries : DataFrame
        Must hold ``query_id`` and ``text``; ``category`` and ``source`` are optional.
    source : str, optional
        File or dataset name, used in error messages.

    Returns
    -------
    DataFrame
        Columns ``query_id, text, category, source`` (extra columns kept after them), ``query_id``
        and ``text`` as str, ``category`` and ``source`` as str with missing values kept as NA.

    Raises
    ------
    DataValidationError
        Missing columns, missing ids or texts, empty or whitespace-only texts, duplicate ids.
    """
    require_columns(queries, REQUIRED_QUERY_COLUMNS, "queries", source)
    frame = queries.copy()
    _require_values(frame, ("query_id", "text"), "queries", source)
    frame["query_id"] = id_strings(frame["query_id"])
    frame["text"] = frame["text"].astype(str)
    _refuse_rows(
        frame,
        (frame["text"].str.strip() == "").to_numpy(),
        source,
        "queries column 'text' has {n} empty or whitespace-only text(s) (they would all embed to "
        "one vector)",
    )
    duplicated = frame["query_id"].duplicated(keep="first").to_numpy()
    _refuse_rows(frame, duplicated, source, "queries column 'query_id' has {n} duplicate id(s)")
    for column in ("category", "source"):
        missing = pd.Series(pd.NA, index=frame.index, dtype="string")
        frame[column] = frame[column].astype("string") if column in frame.columns else missing
    ordered = list(QUERY_COLUMNS) + [c for c in frame.columns if c not in QUERY_COLUMNS]
    return frame[ordered].reset_index(drop=True)


def validate_outcomes(
    outcomes: pd.DataFrame,
    queries: pd.DataFrame | None = None,
    *,
    source: str | None = None,
    min_models: int = 2,
) -> pd.DataFrame:
    """Check a long outcomes table and return it in canonical form.

    Parameters
    ----------
    outcomes : DataFrame
        Must hold ``query_id``, ``model`` and ``score``; ``cost``, ``variant_id``, ``decode_id`` and
        ``observation_type`` are filled with NA, 0, 0 and ``"original"`` when absent.
    queries : DataFrame, optional
        When given, every outcome must refer to one of its ``query_id`` values.
    source : str, optional
        File or dataset name, used in error messages.
    min_models : int, default 2
        Fewest distinct models the table must hold.

    Returns
    -------
    DataFrame
        Columns in :data:`OUTCOME_COLUMNS` order (extra columns kept after them).

    Raises
    ------
    DataValidationError
        Missing columns; scores that are NaN or outside [0, 1]; negative costs; duplicate
        (query, model, variant, decode) rows; outcomes for unknown queries; a model with no
        observations (a categorical level without rows); fewer than ``min_models`` models.
    """
    require_columns(outcomes, REQUIRED_OUTCOME_COLUMNS, "outcomes", source)
    frame = outcomes.copy()
    declared_models = None
    if isinstance(frame["model"].dtype, pd.CategoricalDtype):
        declared_models = [
            unicodedata.normalize("NFC", str(m)).strip() for m in frame["model"].cat.categories
        ]
    _require_values(frame, ("query_id", "model"), "outcomes", source)
    frame["query_id"] = id_strings(frame["query_id"])
    frame["model"] = normalise_model_names(frame["model"], source=source)

    frame["score"] = _checked_scores(frame, source)
    frame["cost"] = _checked_costs(frame, source)
    for column in ("variant_id", "decode_id"):
        frame[column] = _checked_ids(frame, column, source)
    if "observation_type" in frame.columns:
        frame["observation_type"] = frame["observation_type"].fillna("original").astype(str)
    else:
        frame["observation_type"] = "original"

    _refuse_rows(
        frame,
        frame.duplicated(list(OBSERVATION_KEY), keep="first").to_numpy(),
        source,
        "outcomes have {n} duplicate (query_id, model, variant_id, decode_id) row(s)",
    )
    _check_queries_and_models(frame, queries, declared_models, min_models, source)
    ordered = list(OUTCOME_COLUMNS) + [c for c in frame.columns if c not in OUTCOME_COLUMNS]
    return frame[ordered].reset_index(drop=True)


def _checked_scores(frame: pd.DataFrame, source: str | None) -> np.ndarray:
    """The ``score`` column as floats; NaN, non-numeric and out-of-[0, 1] scores are refused."""
    score = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=float)
    message = "outcomes column 'score' has {n} NaN or non-numeric value(s)"
    _refuse_rows(frame, ~np.isfinite(score), source, message)
    message = "outcomes column 'score' must lie in [0, 1]; {n} value(s) outside"
    _refuse_rows(frame, (score < 0.0) | (score > 1.0), source, message)
    return score


def _checked_costs(frame: pd.DataFrame, source: str | None) -> np.ndarray | float:
    """The ``cost`` column as floats (NaN where empty; NaN without the column); text, infinite
    and negative costs are refused."""
    if "cost" not in frame.columns:
        return np.nan
    given = frame["cost"].notna().to_numpy() & (frame["cost"].astype(str).str.strip() != "")
    cost = pd.to_numeric(frame["cost"], errors="coerce").to_numpy(dtype=float)
    for bad, what in (
        (given & np.isnan(cost), "text (not a number)"),
        (np.isinf(cost), "infinite"),
        (np.isfinite(cost) & (cost < 0), "negative"),
    ):
        message = "outcomes column 'cost' must hold numbers >= 0 or be empty; {n} value(s) are "
        _refuse_rows(frame, bad, source, message + what)
    return cost


def _checked_ids(frame: pd.DataFrame, column: str, source: str | None) -> pd.Series | np.int64:
    """``variant_id`` or ``decode_id`` as integers numbered from 0 (0 without the column)."""
    if column not in frame.columns:
        return np.int64(0)
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = values.isna().to_numpy() | (values.to_numpy(dtype=float) % 1 != 0)
    if bad.any():
        raise DataValidationError(
            f"{source_prefix(source)}outcomes column '{column}' must hold integers; first bad "
            f"value at {_first_row(frame, bad)}"
        )
    values = values.astype(np.int64)
    low = int(values.min()) if len(values) else 0
    if low != 0:
        # ids numbered from 1 (or any other start): the smallest is the original (0)
        logger.info(
            "%soutcomes column '%s' starts at %d; renumbered from 0 (the smallest id is "
            "the original query / the first decode)",
            source_prefix(source),
            column,
            low,
        )
        values = values - low
    return values


def _check_queries_and_models(
    frame: pd.DataFrame,
    queries: pd.DataFrame | None,
    declared_models: list[str] | None,
    min_models: int,
    source: str | None,
) -> None:
    """Refuse outcomes of unknown queries, declared models without observations and fewer than
    ``min_models`` models."""
    if queries is not None:
        known = set(queries["query_id"].astype(str))
        unknown = ~frame["query_id"].isin(known).to_numpy()
        n_unknown = int(frame.loc[unknown, "query_id"].nunique())
        message = "outcomes refer to {n} query id(s) not in the queries table"
        _refuse_rows(frame, unknown, source, message, n=n_unknown)
    observed_models = sorted(frame["model"].unique())
    if declared_models is not None:
        empty = [m for m in declared_models if m not in set(observed_models)]
        if empty:
            raise DataValidationError(
                f"{source_prefix(source)}model(s) {empty} have no observations in the outcomes table"
            )
    if len(observed_models) < min_models:
        raise DataValidationError(
            f"{source_prefix(source)}outcomes hold {len(observed_models)} model(s) {observed_models}; "
            f"at least {min_models} are needed to compare models"
        )


def check_models_have_observations(
    outcomes: pd.DataFrame, models: Iterable[str], *, source: str | None = None
) -> None:
    """Raise when a model the caller expects (a wide-table column, a price-table entry) has no rows.

    Parameters
    ----------
    outcomes : DataFrame
        Long outcomes table with a ``model`` column.
    models : iterable of str
        Models that must have rows.
    source : str, optional
        File or table named in the error message.

    Raises
    ------
    DataValidationError
        Naming the models without observations.
    """
    present = set(outcomes["model"].astype(str))
    empty = [m for m in models if m not in present]
    if empty:
        raise DataValidationError(
            f"{source_prefix(source)}model(s) {empty} have no observations (all values missing?)"
        )


def summarise(queries: pd.DataFrame, outcomes: pd.DataFrame) -> dict:
    """Counts of a dataset: queries, models, observations, categories, mean score per model.

    Parameters
    ----------
    queries : DataFrame
        Validated queries table.
    outcomes : DataFrame
        Validated long outcomes table.

    Returns
    -------
    dict
        ``n_queries, n_models, n_observations, n_categories, n_variants`` and further counts
        (``min_observations_per_pair`` and ``max_observations_per_pair`` over the observed
        (query, model) pairs), and the mean score per model.
    """
    categories = queries["category"].dropna() if "category" in queries else pd.Series([])
    per_pair = outcomes.groupby(["query_id", "model"]).size()
    return {
        "n_queries": int(queries["query_id"].nunique()),
        "n_models": int(outcomes["model"].nunique()),
        "n_observations": int(len(outcomes)),
        "n_categories": int(categories.nunique()),
        "n_variants": int(outcomes["variant_id"].nunique()),
        "n_decodes": int(outcomes["decode_id"].nunique()),
        "min_observations_per_pair": int(per_pair.min()) if len(per_pair) else 0,
        "max_observations_per_pair": int(per_pair.max()) if len(per_pair) else 0,
        "mean_score": outcomes.groupby("model")["score"].mean().round(4).to_dict(),
    }


__all__ = [
    "DataValidationError",
    "summarise",
    "validate_outcomes",
    "validate_queries",
]
