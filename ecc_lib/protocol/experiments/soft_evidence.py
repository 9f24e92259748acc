"""Soft-evidence ECC against ECC on sampled comparisons, on held-out queries (an experiment).

Beyond the ECC paper (``docs/design.md`` section 5). Where a (query, model) pair has several
observations (rewrites, decodes), soft-evidence ECC is ECC fitted on comparisons whose outcome is
the probability that ``b`` beats ``a`` under the two empirical score distributions
(:func:`ecc_lib.ecc.soft_evidence.soft_outcomes`, the estimator-side maths).
:func:`soft_evidence_comparison` splits the queries, fits soft-evidence ECC and ECC on one sampled
observation per (query, model) (several draws, :func:`ecc_lib.ecc.soft_evidence.sampled_outcomes`)
and scores both by the log-loss against the test queries' empirical win probabilities, with paired
bootstrap intervals over test queries.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import clone

from ecc_lib.data.comparisons import Comparisons, make_comparisons
from ecc_lib.data.splits import split_queries
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.mixture import comparison_nll
from ecc_lib.ecc.soft_evidence import has_repeats, sampled_outcomes, soft_outcomes
from ecc_lib.protocol.leak_free import rank_within_query
from ecc_lib.protocol.methods import prototype_parameters
from ecc_lib.protocol.settings import Protocol
from ecc_lib.stats import bootstrap_indices, mean_ratio, percentile_interval


def soft_evidence_comparison(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    embeddings: np.ndarray,
    *,
    protocol: Protocol | None = None,
    estimator: ECC | None = None,
    n_draws: int = 5,
    truth: np.ndarray | None = None,
    every_pair: bool = True,
) -> dict:
    """Soft-evidence ECC against ECC on sampled comparisons, on held-out queries.

    Every pair of models observed on a query is used (``every_pair``; otherwise at most
    ``protocol.n_pairs`` per query, drawn seeded). Training queries give the fits; on test
    queries each pair's target is its empirical win probability (:func:`~ecc_lib.ecc.soft_evidence.soft_outcomes`) and the
    score is the mean log-loss ``-(y log p + (1 - y) log(1 - p))``.

    Parameters
    ----------
    queries : DataFrame
        ``query_id`` (row order of ``embeddings``).
    outcomes : DataFrame
        Long outcomes with repeated observations.
    embeddings : ndarray, shape (len(queries), d)
    protocol : Protocol, optional
        The settings (default ``Protocol(seeds=(0,), mode="embedding")``); read here:
        ``protocol.seed`` (seeds the split, the draws, the EM starts and the bootstrap),
        ``test_size``, ``n_boot``, ``n_pairs`` (only without ``every_pair``) and ``mode``:
        ``"embedding"`` (inference on test queries from the embedding only) or ``"both"`` (with
        the first comparison of each test query as a probe carrying the evidence kind of the
        fit, soft or sampled).
    estimator : ECC, optional
        The unfitted ECC prototype (default ``ECC(n_clusters=10)``); both fits are its clones.
    n_draws : int, default 5
        Sampled-evidence fits (one sampled observation per (query, model) each).
    truth : ndarray, shape (len(queries), M, M), optional
        True ``P(i beats j)`` per query (synthetic data): adds the log-loss against the truth.
    every_pair : bool, default True
        Use every observed pair of a query (else ``protocol.n_pairs`` per query).

    Returns
    -------
    dict
        ``n_train, n_test, n_test_pairs``, ``logloss`` (``soft``, ``sampled_mean``,
        ``sampled_sd``, ``sampled`` per draw, ``target_entropy``), ``difference`` (sampled mean
        minus soft, with a paired bootstrap ``ci95``), and the same under ``vs_truth`` when
        ``truth`` is given.
    """
    protocol = _DEFAULT_PROTOCOL if protocol is None else protocol
    estimator = ECC(n_clusters=10) if estimator is None else estimator
    mode, test_size, random_state = protocol.mode, protocol.test_size, protocol.seed
    n_boot, n_pairs = protocol.n_boot, None if every_pair else protocol.n_pairs
    recorded = prototype_parameters(estimator)
    n_clusters = recorded.pop("n_clusters")
    _check_arguments(mode, n_draws, outcomes)
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
    # the probes: each test query's first pair (none with the embedding alone)
    first = (rank_within_query(test_soft.query) == 0) & (mode == "both")
    scored = test_soft.take(~first)

    def fit_and_score(train: Comparisons, probe: Comparisons | None) -> np.ndarray:
        model = clone(estimator).set_params(random_state=random_state)
        model.fit(x[train_mask], train)
        return model.predict_proba(scored, embeddings=x[test_mask], probe=probe, mode="both")

    p_soft = fit_and_score(
        soft.select_queries(train_mask), test_soft.take(first) if mode == "both" else None
    )
    sampled_p = []
    for _ in range(int(n_draws)):
        draw = sampled_outcomes(outcomes, pairs, rng)
        probe = draw.select_queries(test_mask).take(first) if mode == "both" else None
        sampled_p.append(fit_and_score(draw.select_queries(train_mask), probe))
    index = bootstrap_indices(n_test, n_boot=n_boot, random_state=random_state)
    counts = np.bincount(scored.query, minlength=n_test).astype(float)

    def summary(target: np.ndarray) -> dict:
        return _logloss_summary(target, p_soft, sampled_p, scored.query, counts, index)

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
        "ecc_params": recorded,
        "logloss": summary(scored.y),
    }
    if truth is not None:
        t = np.asarray(truth, dtype=float)[rows][test_mask]
        target = t[scored.query, scored.model_b, scored.model_a]
        out["vs_truth"] = summary(target)
    return out


_DEFAULT_PROTOCOL = Protocol(seeds=(0,), mode="embedding")
"""The experiment's settings when no protocol is given (seed 0, embedding-only inference)."""


def _check_arguments(mode: str, n_draws: int, outcomes: pd.DataFrame) -> None:
    """Refuse an unknown mode, no draws, and outcomes without repeated observations."""
    if mode not in ("embedding", "both"):
        raise ValueError(f"mode must be 'embedding' or 'both', got {mode!r}")
    if n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws}")
    if not has_repeats(outcomes):
        raise ValueError(
            "soft evidence needs repeated observations of some (query, model) pair; these "
            "outcomes hold one observation per pair"
        )


def _logloss_summary(
    target: np.ndarray,
    p_soft: np.ndarray,
    sampled_p: list[np.ndarray],
    query: np.ndarray,
    counts: np.ndarray,
    index: np.ndarray,
) -> dict:
    """Log-loss of the soft fit and of each sampled fit against ``target`` (per scored pair of
    test query ``query``), with bootstrap intervals over the test queries (resamples ``index``)."""
    n_test = len(counts)

    def per_query(losses: np.ndarray) -> np.ndarray:
        return np.bincount(query, weights=losses, minlength=n_test)

    soft_q = per_query(comparison_nll(p_soft, target))
    sampled_q = np.array([per_query(comparison_nll(p, target)) for p in sampled_p])
    floor_q = per_query(comparison_nll(target, target))
    mean_sampled_q = sampled_q.mean(axis=0)
    n = counts.sum()
    reps_diff = (mean_sampled_q[index].sum(1) - soft_q[index].sum(1)) / counts[index].sum(1)
    soft_ci = mean_ratio(soft_q, counts, index)[1]
    sampled_ci = mean_ratio(mean_sampled_q, counts, index)[1]
    per_draw = sampled_q.sum(axis=1) / n
    return {
        "soft": float(soft_q.sum() / n),
        "soft_ci95": soft_ci,
        "sampled": [float(v) for v in per_draw],
        "sampled_mean": float(per_draw.mean()),
        "sampled_sd": float(per_draw.std(ddof=1)) if len(per_draw) > 1 else float("nan"),
        "sampled_mean_ci95": sampled_ci,
        "target_entropy": float(floor_q.sum() / n),
        "sampled_minus_soft": float((mean_sampled_q.sum() - soft_q.sum()) / n),
        "sampled_minus_soft_ci95": percentile_interval(reps_diff),
    }


__all__ = [
    "soft_evidence_comparison",
]
