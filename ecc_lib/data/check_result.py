"""The result of a check before numbers (:class:`CheckResult`), the table the outcome checks read
(:class:`ScoreTable`, :func:`score_table`) and the helpers every check shares (:func:`timed`,
:func:`name_list`). The checks are in :mod:`ecc_lib.data.table_checks` and
:mod:`ecc_lib.data.text_checks`; :mod:`ecc_lib.data.checks` runs them."""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ecc_lib.data.comparisons import score_matrix

STATUSES: tuple[str, ...] = ("ok", "warn", "fail")
"""Statuses of a check, from best to worst."""
LISTED_NAMES = 10
"""Names listed in a sentence before "and N more"."""


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check.

    Attributes
    ----------
    name : str
        The check (``"item_alignment"`` ...).
    status : {"ok", "warn", "fail"}
    detail : str
        One plain sentence: what was found and why it matters.
    numbers : dict
        The numbers behind the sentence (JSON-ready).
    seconds : float
        Time the check took (not part of :meth:`to_dict`).
    """

    name: str
    status: str
    detail: str
    numbers: dict = field(default_factory=dict)
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")

    def to_dict(self) -> dict:
        """``{"status", "detail", "numbers"}``, JSON-ready.

        Returns
        -------
        dict
        """
        from ecc_lib.serialization import to_jsonable

        return to_jsonable({"status": self.status, "detail": self.detail, "numbers": self.numbers})


@dataclass(frozen=True)
class ScoreTable:
    """Mean score per (query, model) with the raw observed values.

    Attributes
    ----------
    scores : ndarray, shape (n_queries, n_models)
        Mean over a pair's observations; NaN where a model has none.
    query_ids : ndarray of str
    models : tuple of str
    raw : ndarray of float
        Every observed score (for the score type).
    categories : ndarray of object or None
        Category of each query (aligned to ``query_ids``), when the queries carry one.
    """

    scores: np.ndarray
    query_ids: np.ndarray
    models: tuple
    raw: np.ndarray
    categories: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_queries, n_models)``."""
        return self.scores.shape


def score_table(outcomes: pd.DataFrame, queries: pd.DataFrame | None = None) -> ScoreTable:
    """The :class:`ScoreTable` of a long outcomes table.

    Parameters
    ----------
    outcomes : DataFrame
        ``query_id, model, score`` (repeats are averaged).
    queries : DataFrame, optional
        ``query_id[, category]``: row order and categories.

    Returns
    -------
    ScoreTable
    """
    ids = None if queries is None else queries["query_id"].astype(str).to_numpy()
    scores, query_ids, models = score_matrix(outcomes, query_ids=ids)
    categories = None
    if queries is not None and "category" in queries.columns:
        categories = queries["category"].to_numpy(dtype=object)
    raw = pd.to_numeric(outcomes["score"], errors="coerce").to_numpy(float)
    return ScoreTable(scores, query_ids, models, raw[np.isfinite(raw)], categories)


def name_list(names: Sequence[str]) -> str:
    """Names joined by commas, the first :data:`LISTED_NAMES` of them, then ``"and N more"``.

    Parameters
    ----------
    names : sequence of str

    Returns
    -------
    str
    """
    names = [str(n) for n in names]
    return ", ".join(names[:LISTED_NAMES]) + (
        f" and {len(names) - LISTED_NAMES} more" if len(names) > LISTED_NAMES else ""
    )


def timed(function):
    """Record the wall time of a check in its result (a decorator of the check functions).

    Parameters
    ----------
    function : callable
        A check returning a :class:`CheckResult`.

    Returns
    -------
    callable
        The check, with ``seconds`` set in its result.
    """

    @functools.wraps(function)
    def wrapper(*args, **kwargs) -> CheckResult:
        start = time.perf_counter()
        result = function(*args, **kwargs)
        return replace(result, seconds=time.perf_counter() - start)

    return wrapper


__all__: list[str] = []
