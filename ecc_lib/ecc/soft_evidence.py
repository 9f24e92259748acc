"""ECC on score distributions: soft comparisons from repeated observations.

Beyond the ECC paper (``docs/design.md`` section 5). Where a (query, model) pair has several
observations (rewrites, decodes), the evidence of a model pair is the probability that ``b`` beats
``a`` under the two empirical score distributions, ties counting half:

    y_soft = P(X_b > X_a) + 0.5 * P(X_b = X_a),  X_m ~ the observations of (query, m)

(the Mann-Whitney statistic of the two samples divided by ``n_a n_b``). ECC's E-step and M-step
already take fractional outcomes (a comparison adds ``y`` to "b beat a" and ``1 - y`` to "a beat
b" in :func:`ecc_lib.bradley_terry.count_matrix`), so soft-evidence ECC is ECC fitted on soft
comparisons. With one observation per pair the soft outcome is 1, 0 or 0.5: exactly the sampled
comparison.

:func:`sampled_outcomes` draws the sampled comparison the soft one replaces;
:func:`true_win_probability` is the truth of synthetic Bernoulli data. The experiment that splits,
fits and bootstraps soft against sampled evidence is
:func:`ecc_lib.protocol.experiments.soft_evidence.soft_evidence_comparison`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from ecc_lib.data.comparisons import Comparisons


def _observation_groups(outcomes: pd.DataFrame, comparisons: Comparisons):
    """Observations sorted by (query, model) group: ``(group, score)`` of each observation, the
    observations and the first position of each group, and the groups of the comparisons'
    ``model_a`` and ``model_b``."""
    q = pd.Index(comparisons.query_ids).get_indexer(outcomes["query_id"].astype(str))
    m = pd.Index(comparisons.models).get_indexer(outcomes["model"].astype(str))
    keep = (q >= 0) & (m >= 0)
    group = q[keep].astype(np.int64) * comparisons.n_models + m[keep]
    score = outcomes["score"].to_numpy(dtype=float)[keep]
    order = np.lexsort((score, group))
    group, score = group[order], score[order]
    counts = np.bincount(group, minlength=comparisons.n_queries * comparisons.n_models)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    ga = comparisons.query * comparisons.n_models + comparisons.model_a
    gb = comparisons.query * comparisons.n_models + comparisons.model_b
    return group, score, counts, starts, ga, gb


def has_repeats(outcomes: pd.DataFrame) -> bool:
    """Whether some (query, model) pair has more than one observation.

    Parameters
    ----------
    outcomes : DataFrame
        Long outcomes with ``query_id, model``.

    Returns
    -------
    bool
    """
    return bool(outcomes.duplicated(["query_id", "model"]).any())


def soft_outcomes(outcomes: pd.DataFrame, comparisons: Comparisons) -> Comparisons:
    """The same pairs as ``comparisons`` with soft outcomes from the score distributions.

    Parameters
    ----------
    outcomes : DataFrame
        Long outcomes ``query_id, model, score`` (any number of observations per pair).
    comparisons : Comparisons
        The pairs (``query_ids`` and ``models`` name the outcomes' queries and models).

    Returns
    -------
    Comparisons
        ``y = P(X_b > X_a) + 0.5 P(X_b = X_a)`` under the empirical distributions.

    Raises
    ------
    ValueError
        When a pair's query has no observation of one of its models.
    """
    group, score, counts, starts, ga, gb = _observation_groups(outcomes, comparisons)
    n_a, n_b = counts[ga], counts[gb]
    if (n_a == 0).any() or (n_b == 0).any():
        bad = int(np.flatnonzero((n_a == 0) | (n_b == 0))[0])
        raise ValueError(
            f"comparison row {bad} (query {comparisons.query_ids[comparisons.query[bad]]!r}) "
            "names a model without observations in outcomes"
        )
    # one row per (comparison, observation of a): how many of b's observations lie below / at it
    row = np.repeat(np.arange(len(comparisons)), n_a)
    within = np.arange(len(row)) - np.repeat(np.cumsum(n_a) - n_a, n_a)
    x_a = score[starts[ga][row] + within]
    # sorted (group, score) keys: searchsorted inside b's block
    key_group, key_score = group, score
    gb_row = gb[row]
    lo = np.searchsorted(key_group, gb_row, side="left")
    below = _count_in_block(key_group, key_score, gb_row, x_a, side="left") - lo
    at_or_below = _count_in_block(key_group, key_score, gb_row, x_a, side="right") - lo
    # P(X_b > x) + 0.5 P(X_b = x) = 1 - (below + at_or_below) / (2 n_b)
    per_obs = 1.0 - (below + at_or_below) / (2.0 * n_b[row])
    y = np.bincount(row, weights=per_obs, minlength=len(comparisons)) / n_a
    return replace(comparisons, y=np.clip(y, 0.0, 1.0))


def _count_in_block(group, score, g, x, side):
    """Position in the (group, score)-sorted arrays of ``(g, x)`` (lexicographic searchsorted)."""
    # rank scores globally so that (group, score) maps to one sortable float key
    uniq = np.unique(np.concatenate([score, x]))
    n_u = len(uniq)
    key = group * n_u + np.searchsorted(uniq, score)
    probe = g * n_u + np.searchsorted(uniq, x)
    return np.searchsorted(key, probe, side=side)


def sampled_outcomes(
    outcomes: pd.DataFrame,
    comparisons: Comparisons,
    random_state: int | np.random.Generator | None = None,
) -> Comparisons:
    """The same pairs with outcomes from one sampled observation per (query, model).

    Parameters
    ----------
    outcomes : DataFrame
    comparisons : Comparisons
    random_state : int or Generator, optional

    Returns
    -------
    Comparisons
        ``y`` in {0, 0.5, 1} (a tie of the two draws counts half).
    """
    rng = np.random.default_rng(random_state)
    group, score, counts, starts, ga, gb = _observation_groups(outcomes, comparisons)
    pick = starts + np.floor(rng.random(len(counts)) * counts).astype(np.int64)
    draw = np.where(counts > 0, score[np.minimum(pick, len(score) - 1)], np.nan)
    sa, sb = draw[ga], draw[gb]
    if np.isnan(sa).any() or np.isnan(sb).any():
        raise ValueError("a comparison names a model without observations in outcomes")
    return replace(comparisons, y=np.where(sb > sa, 1.0, np.where(sb < sa, 0.0, 0.5)))


def true_win_probability(p: np.ndarray) -> np.ndarray:
    """True ``P(i beats j) + 0.5 P(tie)`` per query for Bernoulli scores with success
    probabilities ``p`` per rewrite (observations drawn uniformly over rewrites).

    Parameters
    ----------
    p : ndarray, shape (n_queries, n_rewrites, M)

    Returns
    -------
    ndarray, shape (n_queries, M, M)
        Entry ``[q, i, j]`` for ``i`` beating ``j``; the two observations compared come from
        independent uniformly drawn rewrites.
    """
    p = np.asarray(p, dtype=float)
    mean = p.mean(axis=1)  # independent draws over rewrites: P(X_i = 1) = mean_v p_qvi
    win = mean[:, :, None] * (1.0 - mean[:, None, :])
    tie = mean[:, :, None] * mean[:, None, :] + (1 - mean[:, :, None]) * (1 - mean[:, None, :])
    return win + 0.5 * tie


__all__ = [
    "has_repeats",
    "true_win_probability",
]
