"""Checks before numbers: is an outcome table sane enough for clustering and routing? (issue 27)

A clustering or routing result on a broken table is meaningless, and nothing downstream notices.
Each check is one vectorised function over a
:class:`~ecc_lib.data.check_result.ScoreTable` (mean score per (query, model),
:mod:`ecc_lib.data.table_checks`) or over the query texts (:mod:`ecc_lib.data.text_checks`), and
returns a :class:`~ecc_lib.data.check_result.CheckResult` with a status (``ok``,
``warn``, ``fail``), one plain sentence and the numbers behind it. :func:`run_checks` runs them all
(``ecc-lab check``, notebook 01, ``ecc-lab bench``); ``metrics.json["checks"][<dataset>][<check>]``
holds their :meth:`~ecc_lib.data.check_result.CheckResult.to_dict`.

- ``item_alignment``: across a benchmark, item difficulty makes every pair of real models correlate
  positively on item-level scores. Blocks of models that correlate within but not across
  (``r ~ 0``) mean that the item columns were permuted between groups of models: **fail**, with the
  blocks listed (``docs/design.md`` section 8).
- ``near_identical_models``: pairs with item-level correlation above 0.98, or identical score
  vectors (a model listed twice, or its own copy).
- ``constant_models``: a model with the same score on every query.
- ``never_or_always_wins``: a model that loses (or wins) every decisive pair it is in.
- ``all_ties``: share of queries where every model has the same score (left out by the protocol,
  which keeps only decisive pairs), queries with fewer than 2 decisive pairs, per-category counts.
- ``score_type``: binary, graded or continuous, and the tolerance for a "decisive" pair.
- ``texts``: empty and duplicate texts, also duplicates that fall on both sides of the protocol's
  train/test split.
- ``text_length``: texts longer than the embedder's maximum sequence length.
- ``embedding_collapse``: distinct texts sharing one vector (the round-2 check of
  :func:`ecc_lib.embed.check.count_duplicate_vectors`) and the spread of the vectors.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ecc_lib.data.check_result import STATUSES, CheckResult, score_table
from ecc_lib.data.table_checks import (
    DECISIVE_TOLERANCE,
    check_all_ties,
    check_constant_models,
    check_item_alignment,
    check_near_identical_models,
    check_never_or_always_wins,
    check_score_type,
)
from ecc_lib.data.text_checks import check_embedding_collapse, check_text_length, check_texts

TABLE_CHECKS = {
    "item_alignment": check_item_alignment,
    "near_identical_models": check_near_identical_models,
    "constant_models": check_constant_models,
    "never_or_always_wins": check_never_or_always_wins,
    "all_ties": check_all_ties,
    "score_type": check_score_type,
}
"""The checks of the outcome table, by name, in report order."""
TIE_TOLERANCE_CHECKS = ("all_ties", "score_type")
"""The checks that read the protocol's tie tolerance (``run_checks(tie_tolerance=...)``)."""
CHECK_NAMES: tuple[str, ...] = (*TABLE_CHECKS, "texts", "text_length", "embedding_collapse")
"""Every check, in report order."""


def run_checks(
    outcomes: pd.DataFrame,
    queries: pd.DataFrame | None = None,
    *,
    embeddings: np.ndarray | None = None,
    train_ids: Sequence[str] | None = None,
    test_ids: Sequence[str] | None = None,
    model_name: str | None = None,
    text_length: bool = True,
    tie_tolerance: float = DECISIVE_TOLERANCE,
) -> dict[str, CheckResult]:
    """Every check that the inputs allow.

    Parameters
    ----------
    outcomes : DataFrame
        Long outcomes.
    queries : DataFrame, optional
        Queries (texts, categories): adds ``texts`` and ``text_length``.
    embeddings : ndarray, optional
        One row per query of ``queries``: adds ``embedding_collapse``.
    train_ids, test_ids : sequence of str, optional
        The protocol's split, for duplicates across it.
    model_name : str, optional
        The embedder for ``text_length``.
    text_length : bool, default True
        Run ``text_length`` (it tokenises the long texts).
    tie_tolerance : float, default :data:`~ecc_lib.data.table_checks.DECISIVE_TOLERANCE`
        Mean scores of a query closer than this tie, as in the protocol
        (``Protocol(tie_tolerance=...)``, ``ecc-lab check --tie-tolerance``); read by
        :data:`TIE_TOLERANCE_CHECKS`.

    Returns
    -------
    dict
        ``{check name: CheckResult}`` in :data:`CHECK_NAMES` order.
    """
    table = score_table(outcomes, queries)
    if not (np.isfinite(tie_tolerance) and tie_tolerance >= 0):
        raise ValueError(f"tie_tolerance must be a finite number >= 0, got {tie_tolerance}")
    results = {
        name: check(table, tie_tolerance=tie_tolerance)
        if name in TIE_TOLERANCE_CHECKS
        else check(table)
        for name, check in TABLE_CHECKS.items()
    }
    if queries is not None and "text" in queries.columns:
        results["texts"] = check_texts(queries, train_ids=train_ids, test_ids=test_ids)
        if text_length:
            results["text_length"] = check_text_length(queries, model_name=model_name)
        if embeddings is not None:
            results["embedding_collapse"] = check_embedding_collapse(
                embeddings, queries["text"].astype(str).tolist()
            )
    return results


def worst_status(results: dict[str, CheckResult] | dict[str, dict]) -> str:
    """The worst status among check results (``"ok"`` for none).

    Parameters
    ----------
    results : dict
        ``{name: CheckResult}`` or ``{name: {"status": ...}}``.

    Returns
    -------
    str
    """
    statuses = [r.status if isinstance(r, CheckResult) else r["status"] for r in results.values()]
    return max(statuses, key=STATUSES.index, default="ok")


def failures(results: dict[str, CheckResult] | dict[str, dict]) -> dict[str, str]:
    """``{check: detail}`` of the failed checks.

    Parameters
    ----------
    results : dict
        ``{name: CheckResult}`` or ``{name: {"status", "detail", ...}}``.

    Returns
    -------
    dict
    """
    statuses = {
        name: (r.status, r.detail) if isinstance(r, CheckResult) else (r["status"], r["detail"])
        for name, r in results.items()
    }
    return {name: detail for name, (status, detail) in statuses.items() if status == "fail"}


def checks_to_dict(results: dict[str, CheckResult]) -> dict:
    """``{check: {"status", "detail", "numbers"}}`` (the ``metrics.json["checks"][<dataset>]``
    entry).

    Parameters
    ----------
    results : dict of CheckResult

    Returns
    -------
    dict
    """
    return {name: r.to_dict() for name, r in results.items()}


def format_checks(results: dict[str, CheckResult], *, label: str = "") -> str:
    """One line per check: status, name, sentence.

    Parameters
    ----------
    results : dict of CheckResult
    label : str, optional
        Dataset label for the heading.

    Returns
    -------
    str
    """
    lines = [f"  {r.status.upper():<4} {name}: {r.detail}" for name, r in results.items()]
    return "\n".join([f"checks{' of ' + label if label else ''}: {worst_status(results)}", *lines])


__all__ = [
    "format_checks",
    "run_checks",
]
