"""The sizes, weights and notes that go beside the protocol's numbers (see
:mod:`ecc_lib.data.policy` for the whole policy): errors for splits, K and embeddings too small to
give numbers (:func:`check_protocol_sizes`, :func:`check_embedding_dims`) and for bad utility
weights (:func:`check_utility_weights`); the warnings for two models, no human baseline, unseen
test categories, duplicate texts and small data (:func:`protocol_notes`)."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)


class DataPolicyError(ValueError):
    """The data (or a parameter) cannot give meaningful numbers; the message says why."""


MIN_TRAIN_QUERIES = 10
"""Fewest training queries a split may leave (fewer is an error)."""
SMALL_DATA_TRAIN_QUERIES = 100
"""Below this many training queries the numbers carry a small-data warning."""
MIN_EMBEDDING_DIMS = 2
"""Fewest embedding dimensions (a 1-d embedding cannot separate directions on the sphere)."""


def _distinct(labels) -> set:
    return set(pd.Series(np.asarray(labels, dtype=object)).dropna().astype(str))


def human_baseline_reason(
    n_categories: int | Sequence | np.ndarray | None, *, train_mask: np.ndarray | None = None
) -> str | None:
    """Why the human-label baseline does not apply, or None.

    It does not apply with fewer than 2 categories, nor (given ``train_mask``) when no test
    query's category occurs among the training queries: every test query would then be placed
    by the fallback mixture (embedding and probe), not by its label.

    Parameters
    ----------
    n_categories : int, or the labels themselves (array of str / None)
        The number of distinct categories, or labels whose distinct non-missing values are
        counted; ``None`` counts as 0.
    train_mask : ndarray of bool, optional
        Training queries among the labels (only with labels).

    Returns
    -------
    str or None
        The reason when the baseline does not apply, else None.
    """
    given = [] if n_categories is None else n_categories
    counted = isinstance(given, (int, np.integer))
    n = int(given) if counted else len(_distinct(given))
    if n < 2:
        return (
            f"the queries carry {n} human categor{'y' if n == 1 else 'ies'}: the human-label "
            "baseline needs at least 2 and is reported as n/a"
        )
    if train_mask is None or counted:
        return None
    labels = np.asarray(n_categories, dtype=object)
    train_mask = np.asarray(train_mask, dtype=bool)
    test = labels[~train_mask]
    if len(test) and not _distinct(test) & _distinct(labels[train_mask]):
        return (
            f"no test query's category occurs among the training queries ({n} categories): the "
            "human-label baseline would place every test query by another mixture, not by its "
            "label, and is reported as n/a"
        )
    return None


def unseen_category_note(labels, train_mask: np.ndarray) -> str | None:
    """How many test queries carry a category no training query has (placed by the fallback
    mixture in the human-label baseline), or None when every test category occurs in training.

    Parameters
    ----------
    labels : array of str or None
        Categories of the kept queries.
    train_mask : ndarray of bool
        Training queries.

    Returns
    -------
    str or None
    """
    if labels is None:
        return None
    labels = pd.Series(np.asarray(labels, dtype=object)).astype(object)
    train_mask = np.asarray(train_mask, dtype=bool)
    seen = _distinct(labels[train_mask])
    test = labels[~train_mask].dropna().astype(str)
    unseen = int((~test.isin(seen)).sum())
    if not unseen or unseen == len(test):  # none, or all (then the baseline is skipped)
        return None
    return (
        f"{unseen} of {len(test)} test queries carry a category no training query has: the "
        "human-label baseline places them by the embedding and probe evidence instead"
    )


def _normalised_texts(texts) -> pd.Series:
    return pd.Series(np.asarray(texts, dtype=object)).astype(str).str.split().str.join(" ")


def duplicate_text_note(queries: pd.DataFrame) -> str | None:
    """A note naming query texts that occur under several ids (they embed to one vector and may
    fall on both sides of a split), or None.

    Texts are compared with their white space collapsed.

    Parameters
    ----------
    queries : DataFrame
        ``query_id`` and ``text``.

    Returns
    -------
    str or None
    """
    if queries is None or "text" not in queries.columns or queries.empty:
        return None
    texts = _normalised_texts(queries["text"])
    repeated = texts.duplicated(keep=False).to_numpy()
    if not repeated.any():
        return None
    ids = queries["query_id"].astype(str).to_numpy()[repeated][:4]
    return (
        f"{int(repeated.sum())} queries share their text with another query under a different id "
        f"({texts[repeated].nunique()} distinct texts; e.g. ids {list(ids)}): they embed to the "
        "same vector, and a split by query can put copies in training and test"
    )


def split_duplicate_note(texts, train_mask: np.ndarray) -> str | None:
    """How many test queries have the same text as a training query, or None.

    Parameters
    ----------
    texts : array of str
        Texts of the kept queries.
    train_mask : ndarray of bool
        Training queries.

    Returns
    -------
    str or None
    """
    if texts is None:
        return None
    texts = _normalised_texts(texts)
    train_mask = np.asarray(train_mask, dtype=bool)
    shared = texts[~train_mask].isin(set(texts[train_mask]))
    if not shared.any():
        return None
    return (
        f"{int(shared.sum())} of {len(shared)} test queries have the same text as a training "
        "query (duplicates under different ids): their scores partly measure recall of training "
        "queries"
    )


def two_models_note(n_models: int) -> str | None:
    """Warning for two models (one comparison pair per query), or None.

    Parameters
    ----------
    n_models : int
        Number of models in the data.

    Returns
    -------
    str or None
        The warning when ``n_models == 2``, else None.
    """
    if n_models != 2:
        return None
    return (
        "only 2 models: each query offers a single comparison pair, too few for ECC's per-query "
        "evidence (the paper samples up to 7 pairs from 9 or more models); read its gain with care"
    )


def check_utility_weights(cost_weight: float, beta: float) -> None:
    """Raise :class:`DataPolicyError` unless lambda and beta are finite numbers >= 0.

    Parameters
    ----------
    cost_weight : float
        Cost weight of the DARS utility.
    beta : float
        Risk weight on the score spread.
    """
    for name, value in (("lambda", cost_weight), ("beta", beta)):
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise DataPolicyError(f"{name} must be a number >= 0, got {value!r}") from None
        if not math.isfinite(number) or number < 0:
            raise DataPolicyError(f"{name} must be a finite number >= 0, got {value!r}")


def check_protocol_sizes(
    n_train: int,
    n_test: int,
    *,
    embedding_dim: int | None = None,
    n_clusters: int | Sequence[int] | None = None,
    what: str = "ECC protocol",
) -> list[str]:
    """Check that a split and a model size can give meaningful numbers.

    Parameters
    ----------
    n_train, n_test : int
        Training and test queries of the split.
    embedding_dim : int, optional
        Dimension of the query embeddings.
    n_clusters : int or sequence of int, optional
        Cluster counts K to be fitted.
    what : str
        Name used in the messages.

    Returns
    -------
    list of str
        Warnings (logged): the small-data warning when ``n_train < 100``.

    Raises
    ------
    DataPolicyError
        Fewer than 10 training queries, no test query, fewer than 2 embedding dimensions, or K
        above the number of training queries.
    """
    if n_train < MIN_TRAIN_QUERIES:
        raise DataPolicyError(
            f"{what}: the split leaves {n_train} training queries; at least {MIN_TRAIN_QUERIES} "
            "are needed (use more data or a smaller test size)"
        )
    if n_test < 1:
        raise DataPolicyError(f"{what}: the split leaves no test query (use a larger test size)")
    if embedding_dim is not None:
        check_embedding_dims(embedding_dim)
    if n_clusters is not None:
        ks = [n_clusters] if isinstance(n_clusters, (int, np.integer)) else list(n_clusters)
        too_many = sorted({int(k) for k in ks if int(k) > n_train})
        if too_many:
            raise DataPolicyError(
                f"{what}: K = {too_many} clusters exceed the {n_train} training queries; "
                f"choose K <= {n_train}"
            )
    note = small_data_warning(n_train)
    if note:
        logger.warning("%s: %s", what, note)
    return [note] if note else []


def check_embedding_dims(embedding_dim: int) -> None:
    """Raise :class:`DataPolicyError` for embeddings with fewer than 2 dimensions.

    Parameters
    ----------
    embedding_dim : int
    """
    if int(embedding_dim) < MIN_EMBEDDING_DIMS:
        raise DataPolicyError(
            f"embeddings have {int(embedding_dim)} dimension(s); at least {MIN_EMBEDDING_DIMS} are "
            "needed"
        )


def protocol_notes(
    outcomes: pd.DataFrame,
    labels: np.ndarray | None,
    n_train: int,
    *,
    train_mask: np.ndarray | None = None,
    texts: np.ndarray | None = None,
) -> list[str]:
    """The warnings that go beside the ECC numbers: two models, no human baseline, small data,
    test categories unseen in training and test texts that are also training texts.

    Parameters
    ----------
    outcomes : DataFrame
        Long outcomes (for the number of models).
    labels : ndarray of str or None
        Human categories of the kept queries.
    n_train : int
        Training queries of the split.
    train_mask : ndarray of bool, optional
        The split (training queries), for the category and text overlap notes.
    texts : ndarray of str, optional
        Texts of the kept queries.

    Returns
    -------
    list of str
    """
    notes = [
        two_models_note(int(outcomes["model"].nunique())),
        human_baseline_reason(labels, train_mask=train_mask),
        None if train_mask is None else unseen_category_note(labels, train_mask),
        None if train_mask is None else split_duplicate_note(texts, train_mask),
        small_data_warning(n_train),
    ]
    return [note for note in notes if note]


def small_data_warning(n_train: int) -> str | None:
    """The small-data warning printed beside the numbers (fewer than 100 training queries).

    Parameters
    ----------
    n_train : int
        Number of training queries.

    Returns
    -------
    str or None
        The warning when ``n_train < SMALL_DATA_TRAIN_QUERIES``, else None.
    """
    if n_train >= SMALL_DATA_TRAIN_QUERIES:
        return None
    return (
        f"small data: {n_train} training queries (< {SMALL_DATA_TRAIN_QUERIES}); the gains and "
        "their intervals are rough"
    )


__all__ = [
    "check_utility_weights",
]
