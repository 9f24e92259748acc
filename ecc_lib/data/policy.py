"""One policy for imperfect data, shared by the notebooks, ``ecc-lab ecc`` and ``ecc-lab dars``.

Outside data are rarely complete. Rather than fail in one place and print numbers that mean nothing
in another, every entry point applies the same rules (issue 9):

- **queries seen for fewer than 2 models are left out** (no model can be compared on them), with a
  logged count and reason (:func:`apply_data_policy`, recorded as ``data_policy.<dataset>``);
- **without repeated observations** (one observation per (query, model) pair) the DARS
  label-instability diagnostics do not apply: they are skipped with one plain sentence
  (:func:`no_repeats_reason`) instead of an all-"n/a" figure and a disagreement headline;
- **one category** (or none) means no human-label baseline: it is reported as n/a, not +0.00%
  (:func:`human_baseline_reason`); so does a split where no test query's category occurs in
  training (the baseline would only fall back to another mixture), and a partial overlap is said;
- **duplicate texts** under different ids are named (:func:`duplicate_text_note`), and so are
  test queries whose text is also a training query's (:func:`split_duplicate_note`); empty texts
  are refused when the queries are read (:func:`ecc_lib.data.schema.validate_queries`);
- **two models** give one pair per query, too few for ECC's per-query evidence: a warning
  (:func:`two_models_note`);
- **sizes**: K above the number of training queries, fewer than 2 embedding dimensions and splits
  that leave fewer than 10 training queries (or no test query) are errors; fewer than 100 training
  queries print a small-data warning beside the numbers (:func:`check_protocol_sizes`);
- **utility weights** lambda and beta must be finite and >= 0 (:func:`check_utility_weights`);
- **costs**: a dataset without costs has its cost sections skipped with one sentence
  (:func:`cost_reason`);
- **an incomplete collection** (a dataset folder exported from a collection store that lacks
  records its last run planned) carries a loud note into the metrics and the report
  (:func:`ecc_lib.collect.export.collection_notes`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

MIN_MODELS_PER_QUERY = 2
"""Fewest models a query must be observed for to be kept."""
MIN_TRAIN_QUERIES = 10
"""Fewest training queries a split may leave (fewer is an error)."""
SMALL_DATA_TRAIN_QUERIES = 100
"""Below this many training queries the numbers carry a small-data warning."""
MIN_EMBEDDING_DIMS = 2
"""Fewest embedding dimensions (a 1-d embedding cannot separate directions on the sphere)."""

REASON_FEWER_THAN_2_MODELS = "observed for fewer than 2 models (no model can be compared on them)"


class DataPolicyError(ValueError):
    """The data (or a parameter) cannot give meaningful numbers; the message says why."""


@dataclass
class DataPolicyReport:
    """What :func:`apply_data_policy` kept, left out and noticed about one dataset.

    Attributes
    ----------
    dataset : str or None
    n_input_queries, n_queries : int
        Queries before and after the policy.
    n_models : int
    left_out : dict
        ``{reason: number of queries}``.
    left_out_examples : dict
        ``{reason: up to 5 query ids}``.
    has_repeats : bool
        Whether some (query, model) pair has two or more observations.
    has_cost : bool
        Whether some observation has a cost.
    n_categories : int
    notes : list of str
        Plain sentences (the skips and warnings that apply).
    """

    dataset: str | None
    n_input_queries: int
    n_queries: int
    n_models: int
    left_out: dict = field(default_factory=dict)
    left_out_examples: dict = field(default_factory=dict)
    has_repeats: bool = False
    has_cost: bool = False
    n_categories: int = 0
    notes: list = field(default_factory=list)

    @property
    def n_left_out(self) -> int:
        """Queries left out, all reasons together."""
        return int(sum(self.left_out.values()))

    def to_dict(self) -> dict:
        """JSON-ready dictionary (recorded as ``data_policy.<dataset>`` in ``metrics.json``).

        Returns
        -------
        dict
            The fields plus ``n_left_out``.
        """
        out = asdict(self)
        out["n_left_out"] = self.n_left_out
        return out


def models_per_query(outcomes: pd.DataFrame) -> pd.Series:
    """Number of distinct models observed for each query id.

    Parameters
    ----------
    outcomes : DataFrame
        Outcome rows with ``query_id`` and ``model`` columns.

    Returns
    -------
    Series of int
        Indexed by query id (as strings), in order of first appearance.
    """
    return outcomes.groupby(outcomes["query_id"].astype(str), sort=False)["model"].nunique()


def has_repeated_observations(outcomes: pd.DataFrame) -> bool:
    """Whether some (query, model) pair has two or more observations.

    Parameters
    ----------
    outcomes : DataFrame
        Outcome rows with ``query_id`` and ``model`` columns.

    Returns
    -------
    bool
        False for an empty table.
    """
    if outcomes.empty:
        return False
    keys = outcomes["query_id"].astype(str) + "\x1f" + outcomes["model"].astype(str)
    return bool(keys.duplicated().any())


def apply_data_policy(
    queries: pd.DataFrame | None,
    outcomes: pd.DataFrame,
    *,
    dataset: str | None = None,
) -> tuple[pd.DataFrame | None, pd.DataFrame, DataPolicyReport]:
    """Leave out queries seen for fewer than 2 models and describe what else applies.

    Parameters
    ----------
    queries : DataFrame or None
        Queries table (``query_id`` ...); queries without any outcome count as seen for 0 models.
    outcomes : DataFrame
        Long outcomes (``query_id, model, score`` ...).
    dataset : str, optional
        Label used in messages.

    Returns
    -------
    queries, outcomes : DataFrame
        Without the left-out queries (order kept).
    report : DataPolicyReport
        Counts, reasons, the notes that apply; every left-out count is also logged (warning).
    """
    where = f"{dataset}: " if dataset else ""
    counts = models_per_query(outcomes)
    if queries is not None:
        all_ids = queries["query_id"].astype(str)
        counts = counts.reindex(pd.Index(all_ids), fill_value=0)
    lonely = counts[counts < MIN_MODELS_PER_QUERY]
    left_out, examples = {}, {}
    if len(lonely):
        left_out[REASON_FEWER_THAN_2_MODELS] = int(len(lonely))
        examples[REASON_FEWER_THAN_2_MODELS] = [str(q) for q in lonely.index[:5]]
        logger.warning(
            "%sleft out %d of %d queries %s; first: %s",
            where,
            len(lonely),
            len(counts),
            REASON_FEWER_THAN_2_MODELS,
            examples[REASON_FEWER_THAN_2_MODELS],
        )
        drop = set(lonely.index.astype(str))
        outcomes = outcomes.loc[~outcomes["query_id"].astype(str).isin(drop)].reset_index(drop=True)
        if queries is not None:
            queries = queries.loc[~queries["query_id"].astype(str).isin(drop)].reset_index(
                drop=True
            )
    n_models = int(outcomes["model"].nunique())
    categories = 0
    if queries is not None and "category" in queries.columns:
        categories = int(queries["category"].dropna().nunique())
    has_cost = "cost" in outcomes.columns and bool(
        pd.to_numeric(outcomes["cost"], errors="coerce").notna().any()
    )
    report = DataPolicyReport(
        dataset=dataset,
        n_input_queries=int(len(counts)),
        n_queries=int(len(counts) - len(lonely)),
        n_models=n_models,
        left_out=left_out,
        left_out_examples=examples,
        has_repeats=has_repeated_observations(outcomes),
        has_cost=has_cost,
        n_categories=categories,
    )
    for note in (
        _left_out_sentence(report),
        no_repeats_reason(outcomes, has_repeats=report.has_repeats),
        human_baseline_reason(categories) if queries is not None else None,
        duplicate_text_note(queries),
        two_models_note(n_models),
        None if has_cost else cost_reason(outcomes),
    ):
        if note:
            report.notes.append(note)
    return queries, outcomes, report


def _left_out_sentence(report: DataPolicyReport) -> str | None:
    if not report.left_out:
        return None
    parts = [f"{n} {reason}" for reason, n in report.left_out.items()]
    return (
        f"{report.n_left_out} of {report.n_input_queries} queries were left out: "
        + "; ".join(parts)
        + "."
    )


def no_repeats_reason(outcomes: pd.DataFrame | None = None, *, has_repeats: bool | None = None):
    """One sentence saying why the DARS diagnostics are skipped, or None when they apply.

    Parameters
    ----------
    outcomes : DataFrame, optional
        Long outcomes (used when ``has_repeats`` is not given).
    has_repeats : bool, optional

    Returns
    -------
    str or None
    """
    if has_repeats is None:
        has_repeats = has_repeated_observations(outcomes)
    if has_repeats:
        return None
    return (
        "no repeated observations: every (query, model) pair has one observation (no rewrites, no "
        "repeated decodes), so the winner flip rate and the single-shot label diagnostics do not "
        "apply and are skipped"
    )


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
    if n_categories is None:
        n = 0
    elif isinstance(n_categories, (int, np.integer)):
        n = int(n_categories)
    else:
        n = len(_distinct(n_categories))
    if n < 2:
        return (
            f"the queries carry {n} human categor{'y' if n == 1 else 'ies'}: the human-label "
            "baseline needs at least 2 and is reported as n/a"
        )
    if train_mask is None or isinstance(n_categories, (int, np.integer)):
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


def cost_reason(outcomes: pd.DataFrame | None = None) -> str:
    """Sentence saying that cost sections are skipped because the data hold no cost.

    Parameters
    ----------
    outcomes : DataFrame, optional
        Not read: the sentence is the same whatever is passed.

    Returns
    -------
    str
        The sentence.
    """
    return (
        "the outcomes hold no cost: mu_c = 0 for every pair and the cost-quality sections are "
        "skipped"
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
    warnings = []
    note = small_data_warning(n_train)
    if note:
        logger.warning("%s: %s", what, note)
        warnings.append(note)
    return warnings


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
    "DataPolicyError",
    "DataPolicyReport",
    "apply_data_policy",
    "check_embedding_dims",
    "check_protocol_sizes",
    "check_utility_weights",
    "cost_reason",
    "duplicate_text_note",
    "has_repeated_observations",
    "human_baseline_reason",
    "models_per_query",
    "no_repeats_reason",
    "protocol_notes",
    "small_data_warning",
    "split_duplicate_note",
    "two_models_note",
    "unseen_category_note",
]
