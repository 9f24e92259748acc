"""One policy for imperfect data, shared by the notebooks, ``ecc-lab ecc`` and ``ecc-lab dars``.

This module applies the dataset-level rules (:func:`apply_data_policy`, :func:`no_repeats_reason`,
:func:`cost_reason`); the sizes, weights and notes that go beside the protocol's numbers are in
:mod:`ecc_lib.data.protocol_policy`.

Outside data are rarely complete. Rather than fail in one place and print numbers that mean nothing
in another, every entry point applies the same rules (issue 9):

- **queries seen for fewer than 2 models are left out** (no model can be compared on them), with a
  logged count and reason (:func:`apply_data_policy`, recorded as ``data_policy.<dataset>``);
- **without repeated observations** (one observation per (query, model) pair) the DARS
  label-instability diagnostics do not apply: they are skipped with one plain sentence
  (:func:`no_repeats_reason`) instead of an all-"n/a" figure and a disagreement headline;
- **one category** (or none) means no human-label baseline: it is reported as n/a, not +0.00%
  (:func:`~ecc_lib.data.protocol_policy.human_baseline_reason`); so does a split where no test query's category occurs in
  training (the baseline would only fall back to another mixture), and a partial overlap is said;
- **duplicate texts** under different ids are named (:func:`~ecc_lib.data.protocol_policy.duplicate_text_note`), and so are
  test queries whose text is also a training query's (:func:`~ecc_lib.data.protocol_policy.split_duplicate_note`); empty texts
  are refused when the queries are read (:func:`ecc_lib.data.schema.validate_queries`);
- **two models** give one pair per query, too few for ECC's per-query evidence: a warning
  (:func:`~ecc_lib.data.protocol_policy.two_models_note`);
- **sizes**: K above the number of training queries, fewer than 2 embedding dimensions and splits
  that leave fewer than 10 training queries (or no test query) are errors; fewer than 100 training
  queries print a small-data warning beside the numbers (:func:`~ecc_lib.data.protocol_policy.check_protocol_sizes`);
- **utility weights** lambda and beta must be finite and >= 0 (:func:`~ecc_lib.data.protocol_policy.check_utility_weights`);
- **costs**: a dataset without costs has its cost sections skipped with one sentence
  (:func:`cost_reason`);
- **an incomplete collection** (a dataset folder exported from a collection store that lacks
  records its last run planned) carries a loud note into the metrics and the report
  (:func:`ecc_lib.collect.export.collection_notes`).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field

import pandas as pd

from ecc_lib.data.protocol_policy import (
    duplicate_text_note,
    human_baseline_reason,
    two_models_note,
)

logger = logging.getLogger(__name__)

MIN_MODELS_PER_QUERY = 2
"""Fewest models a query must be observed for to be kept."""
REASON_FEWER_THAN_2_MODELS = "observed for fewer than 2 models (no model can be compared on them)"


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
        return {**asdict(self), "n_left_out": self.n_left_out}


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
        counts = counts.reindex(pd.Index(queries["query_id"].astype(str)), fill_value=0)
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
    notes = (
        _left_out_sentence(report),
        no_repeats_reason(outcomes, has_repeats=report.has_repeats),
        human_baseline_reason(categories) if queries is not None else None,
        duplicate_text_note(queries),
        two_models_note(n_models),
        None if has_cost else cost_reason(outcomes),
    )
    report.notes.extend(note for note in notes if note)
    return queries, outcomes, report


def _left_out_sentence(report: DataPolicyReport) -> str | None:
    if not report.left_out:
        return None
    parts = "; ".join(f"{n} {reason}" for reason, n in report.left_out.items())
    return f"{report.n_left_out} of {report.n_input_queries} queries were left out: {parts}."


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


__all__ = [
    "no_repeats_reason",
]
