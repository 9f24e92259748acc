"""ECC on score distributions: soft comparisons from repeated observations.

Beyond the ECC paper (``DESIGN.md`` section 5). Where a (query, model) pair has several
observations (rewrites, decodes), the evidence of a model pair is the probability that ``b`` beats
``a`` under the two empirical score distributions, ties counting half:

    y_soft = P(X_b > X_a) + 0.5 * P(X_b = X_a),  X_m ~ the observations of (query, m)

(the Mann-Whitney statistic of the two samples divided by ``n_a n_b``). ECC's E-step and M-step
already take fractional outcomes (a comparison adds ``y`` to "b beat a" and ``1 - y`` to "a beat
b" in :func:`ecc_lib.bradley_terry.count_matrix`), so soft-evidence ECC is ECC fitted on soft
comparisons. With one observation per pair the soft outcome is 1, 0 or 0.5: exactly the sampled
comparison.

:func:`soft_evidence_comparison` evaluates it on held-out queries by the log-loss against their
empirical win probabilities, against ECC fitted on one sampled observation per (query, model)
(several draws), with paired bootstrap intervals over test queries.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from ecc_lib.data.comparisons import Comparisons, make_comparisons
from ecc_lib.data.splits import split_queries
from ecc_lib.ecc.estimator import ECC, comparison_nll
from ecc_lib.stats import DEFAULT_N_BOOT, bootstrap_indices, percentile_interval

logger = logging.getLogger(__name__)

EVIDENCE_KINDS: tuple[str, ...] = ("sampled", "soft")


def _observation_groups(outcomes: pd.DataFrame, comparisons: Comparisons):
    """Observations sorted by (query, model) group with the group of each (query, model)."""
    q = pd.Index(comparisons.query_ids).get_indexer(outcomes["query_id"].astype(str))
    m = pd.Index(comparisons.models).get_indexer(outcomes["model"].astype(str))
    keep = (q >= 0) & (m >= 0)
    group = q[keep].astype(np.int64) * comparisons.n_models + m[keep]
    score = outcomes["score"].to_numpy(dtype=float)[keep]
    order = np.lexsort((score, group))
    return group[order], score[order]


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
    group, score = _observation_groups(outcomes, comparisons)
    size = comparisons.n_queries * comparisons.n_models
    counts = np.bincount(group, minlength=size)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    ga = comparisons.query * comparisons.n_models + comparisons.model_a
    gb = comparisons.query * comparisons.n_models + comparisons.model_b
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
    return Comparisons(
        query=comparisons.query,
        model_a=comparisons.model_a,
        model_b=comparisons.model_b,
        y=np.clip(y, 0.0, 1.0),
        query_ids=comparisons.query_ids,
        models=comparisons.models,
        dropped_query_ids=comparisons.dropped_query_ids,
    )


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
    group, score = _observation_groups(outcomes, comparisons)
    size = comparisons.n_queries * comparisons.n_models
    counts = np.bincount(group, minlength=size)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pick = starts + np.floor(rng.random(size) * counts).astype(np.int64)
    draw = np.where(counts > 0, score[np.minimum(pick, len(score) - 1)], np.nan)
    ga = comparisons.query * comparisons.n_models + comparisons.model_a
    gb = comparisons.query * comparisons.n_models + comparisons.model_b
    sa, sb = draw[ga], draw[gb]
    if np.isnan(sa).any() or np.isnan(sb).any():
        raise ValueError("a comparison names a model without observations in outcomes")
    y = np.where(sb > sa, 1.0, np.where(sb < sa, 0.0, 0.5))
    return Comparisons(
        query=comparisons.query,
        model_a=comparisons.model_a,
        model_b=comparisons.model_b,
        y=y,
        query_ids=comparisons.query_ids,
        models=comparisons.models,
        dropped_query_ids=comparisons.dropped_query_ids,
    )


def soft_evidence_comparison(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    embeddings: np.ndarray,
    n_draws: int = 5,
    n_clusters: int = 10,
    test_size: float = 0.2,
    mode: str = "embedding",
    truth: np.ndarray | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int = 0,
    n_pairs: int | None = None,
    **ecc_params,
) -> dict:
    """Soft-evidence ECC against ECC on sampled comparisons, on held-out queries.

    Every pair of models observed on a query is used (at most ``n_pairs`` per query, drawn
    seeded, when given). Training queries give the fits; on test
    queries each pair's target is its empirical win probability (:func:`soft_outcomes`) and the
    score is the mean log-loss ``-(y log p + (1 - y) log(1 - p))``.

    Parameters
    ----------
    queries : DataFrame
        ``query_id`` (row order of ``embeddings``).
    outcomes : DataFrame
        Long outcomes with repeated observations.
    embeddings : ndarray, shape (len(queries), d)
    n_draws : int, default 5
        Sampled-evidence fits (one sampled observation per (query, model) each).
    n_clusters : int, default 10
    test_size : float, default 0.2
    mode : {"embedding", "both"}
        Inference on test queries: embedding only (default), or with the first comparison of
        each test query as a probe carrying the evidence kind of the fit (soft or sampled).
    truth : ndarray, shape (len(queries), M, M), optional
        True ``P(i beats j)`` per query (synthetic data): adds the log-loss against the truth.
    n_boot : int
    random_state : int
        Seeds the split, the draws, the EM starts and the bootstrap.
    n_pairs : int, optional
        Pairs per query (default: all observed pairs).
    **ecc_params
        Passed to :class:`ecc_lib.ecc.estimator.ECC` (``lam``, ``temperature``, ``max_iter`` ...).

    Returns
    -------
    dict
        ``n_train, n_test, n_test_pairs``, ``logloss`` (``soft``, ``sampled_mean``,
        ``sampled_sd``, ``sampled`` per draw, ``target_entropy``), ``difference`` (sampled mean
        minus soft, with a paired bootstrap ``ci95``), and the same under ``vs_truth`` when
        ``truth`` is given.
    """
    if mode not in ("embedding", "both"):
        raise ValueError(f"mode must be 'embedding' or 'both', got {mode!r}")
    if n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws}")
    if not has_repeats(outcomes):
        raise ValueError(
            "soft evidence needs repeated observations of some (query, model) pair; these "
            "outcomes hold one observation per pair"
        )
    query_ids = queries["query_id"].astype(str).to_numpy()
    pairs = make_comparisons(
        outcomes,
        n_pairs=n_pairs,
        ties="half",
        min_pairs=1,
        query_ids=query_ids,
        random_state=random_state,
    )
    rows = pd.Index(query_ids).get_indexer(pairs.query_ids)
    x = np.asarray(embeddings, dtype=np.float32)[rows]
    soft = soft_outcomes(outcomes, pairs)
    train_mask, test_mask = split_queries(
        pairs.n_queries, test_size=test_size, random_state=random_state
    )
    rng = np.random.default_rng(random_state)
    test_soft = soft.select_queries(test_mask)
    n_test = test_soft.n_queries
    if mode == "both":
        first = np.ones(len(test_soft), dtype=bool)
        first[1:] = test_soft.query[1:] != test_soft.query[:-1]
        scored = test_soft.take(~first)
    else:
        first = np.zeros(len(test_soft), dtype=bool)
        scored = test_soft

    def fit_and_score(train: Comparisons, probe: Comparisons | None) -> np.ndarray:
        model = ECC(n_clusters=n_clusters, random_state=random_state, **ecc_params)
        model.fit(x[train_mask], train)
        p = model.predict_proba(scored, embeddings=x[test_mask], probe=probe, mode="both")
        return p

    def per_query(losses: np.ndarray) -> np.ndarray:
        return np.bincount(scored.query, weights=losses, minlength=n_test)

    results = {}
    p_soft = fit_and_score(
        soft.select_queries(train_mask), test_soft.take(first) if mode == "both" else None
    )
    results["soft"] = p_soft
    sampled_p = []
    for _ in range(int(n_draws)):
        draw = sampled_outcomes(outcomes, pairs, rng)
        probe = draw.select_queries(test_mask).take(first) if mode == "both" else None
        sampled_p.append(fit_and_score(draw.select_queries(train_mask), probe))
    index = bootstrap_indices(n_test, n_boot=n_boot, random_state=random_state)
    counts = np.bincount(scored.query, minlength=n_test).astype(float)

    def summary(target: np.ndarray) -> dict:
        soft_q = per_query(comparison_nll(p_soft, target))
        sampled_q = np.array([per_query(comparison_nll(p, target)) for p in sampled_p])
        floor_q = per_query(comparison_nll(target, target))
        mean_sampled_q = sampled_q.mean(axis=0)
        n = counts.sum()
        reps_diff = (mean_sampled_q[index].sum(1) - soft_q[index].sum(1)) / counts[index].sum(1)
        reps_soft = soft_q[index].sum(1) / counts[index].sum(1)
        reps_sampled = mean_sampled_q[index].sum(1) / counts[index].sum(1)
        per_draw = sampled_q.sum(axis=1) / n
        return {
            "soft": float(soft_q.sum() / n),
            "soft_ci95": percentile_interval(reps_soft),
            "sampled": [float(v) for v in per_draw],
            "sampled_mean": float(per_draw.mean()),
            "sampled_sd": float(per_draw.std(ddof=1)) if len(per_draw) > 1 else float("nan"),
            "sampled_mean_ci95": percentile_interval(reps_sampled),
            "target_entropy": float(floor_q.sum() / n),
            "sampled_minus_soft": float((mean_sampled_q.sum() - soft_q.sum()) / n),
            "sampled_minus_soft_ci95": percentile_interval(reps_diff),
        }

    out = {
        "n_queries": int(pairs.n_queries),
        "n_train": int(train_mask.sum()),
        "n_test": int(n_test),
        "n_test_pairs": int(len(scored)),
        "n_draws": int(n_draws),
        "mode": mode,
        "n_clusters": int(n_clusters),
        "n_pairs": n_pairs,
        "test_size": float(test_size),
        "ecc_params": dict(ecc_params),
        "logloss": summary(scored.y),
    }
    if truth is not None:
        t = np.asarray(truth, dtype=float)[rows][test_mask]
        target = t[scored.query, scored.model_b, scored.model_a]
        out["vs_truth"] = summary(target)
    return out


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
    "EVIDENCE_KINDS",
    "has_repeats",
    "sampled_outcomes",
    "soft_evidence_comparison",
    "soft_outcomes",
    "true_win_probability",
]
