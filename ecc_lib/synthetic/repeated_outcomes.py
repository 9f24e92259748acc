"""Synthetic repeated outcomes (N rewrites x M decodes per query and model) with known truth.

The planted structure, for tests and teaching of DARS (``ecc_lib.dars.distributions``) and routers:

- queries fall into ``n_clusters`` latent clusters; their embedding-like features are a noisy copy
  of the cluster centre on the unit sphere;
- cluster ``k`` favours model ``k mod n_models``: its skill is ``skill_gap`` above the others
  (plus a small random profile), so the best model depends on the cluster;
- query ``q`` has a difficulty ``d_q``; rewrite ``v`` of it shifts each model's logit by
  ``rewrite_noise * eps`` (input-side uncertainty); decodes are independent draws given the rewrite
  (output-side uncertainty);
- success probability of rewrite ``v`` for model ``m``:
  ``p_qvm = sigmoid(base + skill[c(q), m] - d_q + query_noise * eta_qm + rewrite_noise * eps_qvm)``
  where ``eta_qm`` is a per-pair shift the features do not reveal;
- scores: ``Bernoulli(p_qvm)`` (``score_type="binary"``) or ``Beta`` with mean ``p_qvm`` and
  concentration ``beta_concentration`` (``"continuous"``);
- cost: a per-model price level times a per-query length factor times a small per-observation noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

SCORE_TYPES = ("binary", "continuous")


@dataclass(frozen=True)
class RepeatedOutcomesTruth:
    """Ground truth of :func:`make_repeated_outcomes`.

    Attributes
    ----------
    cluster : ndarray of int, shape (n_queries,)
        Latent cluster of each query.
    skill : ndarray, shape (n_clusters, n_models)
        Cluster skill profiles (logit scale).
    difficulty : ndarray, shape (n_queries,)
    p : ndarray, shape (n_queries, n_rewrites, n_models)
        Success probability (expected score) of each rewrite for each model.
    p_mean : ndarray, shape (n_queries, n_models)
        Expected score of the pair over rewrites (the true ``mu_q``).
    expected_cost : ndarray, shape (n_queries, n_models)
        Expected raw cost of the pair.
    model_price : ndarray, shape (n_models,)
    best_model : ndarray of int, shape (n_queries,)
        ``argmax_m p_mean`` per query.
    """

    cluster: np.ndarray
    skill: np.ndarray
    difficulty: np.ndarray
    p: np.ndarray
    p_mean: np.ndarray
    expected_cost: np.ndarray
    model_price: np.ndarray
    best_model: np.ndarray


@dataclass(frozen=True)
class RepeatedOutcomesData:
    """Output of :func:`make_repeated_outcomes`.

    Attributes
    ----------
    queries : DataFrame
        ``query_id, text, category, source`` (category names the latent cluster).
    outcomes : DataFrame
        Long outcomes ``query_id, model, score, cost, variant_id, decode_id, observation_type``.
    embeddings : ndarray of float32, shape (n_queries, embedding_dim)
        Unit-norm features aligned to ``queries``.
    models : tuple of str
    truth : RepeatedOutcomesTruth
    """

    queries: pd.DataFrame
    outcomes: pd.DataFrame
    embeddings: np.ndarray
    models: tuple[str, ...]
    truth: RepeatedOutcomesTruth


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _check_grid(
    score_type: str,
    n_queries: int,
    n_models: int,
    n_rewrites: int,
    n_decodes: int,
    n_clusters: int,
    embedding_dim: int,
) -> None:
    """Refuse an unknown score type and grid sizes below 1 (``n_models`` below 2)."""
    if score_type not in SCORE_TYPES:
        raise ValueError(f"score_type must be one of {SCORE_TYPES}, got {score_type!r}")
    for name, value in (
        ("n_queries", n_queries),
        ("n_models", n_models),
        ("n_rewrites", n_rewrites),
        ("n_decodes", n_decodes),
        ("n_clusters", n_clusters),
        ("embedding_dim", embedding_dim),
    ):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if n_models < 2:
        raise ValueError(f"n_models must be >= 2, got {n_models}")


def _draw_scores(
    p: np.ndarray,
    shape: tuple[int, ...],
    score_type: str,
    beta_concentration: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Scores of every observation, shape ``(Q, V, D, M)``: Bernoulli or Beta around ``p``."""
    p_obs = np.broadcast_to(p[:, :, None, :], shape)
    if score_type == "binary":
        return (rng.random(shape) < p_obs).astype(float)
    a = np.clip(p_obs * beta_concentration, 1e-3, None)
    b = np.clip((1.0 - p_obs) * beta_concentration, 1e-3, None)
    return rng.beta(a, b)


def _tables(
    score: np.ndarray, cost: np.ndarray, cluster: np.ndarray, models: tuple[str, ...]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The queries and the long outcomes (one row per observation) of the ``(Q, V, D, M)`` grid."""
    shape = score.shape
    n_queries = shape[0]
    query_ids = np.array([f"q{i:05d}" for i in range(n_queries)], dtype=object)
    qi, vi, di, mi = (a.reshape(-1) for a in np.indices(shape))
    kinds = np.array(["original", "decode", "rewrite", "rewrite_decode"])
    observation_type = kinds[2 * (vi > 0) + (di > 0)]  # by (is a rewrite, is a repeated decode)
    outcomes = pd.DataFrame(
        {
            "query_id": query_ids[qi],
            "model": np.asarray(models, dtype=object)[mi],
            "score": score.reshape(-1),
            "cost": cost.reshape(-1),
            "variant_id": vi.astype(np.int64),
            "decode_id": di.astype(np.int64),
            "observation_type": observation_type,
        }
    )
    queries = pd.DataFrame(
        {
            "query_id": query_ids,
            "text": [f"synthetic query {i} of cluster {k}" for i, k in enumerate(cluster)],
            "category": [f"cluster_{k}" for k in cluster],
            "source": "synthetic",
        }
    )
    return queries, outcomes


def make_repeated_outcomes(
    *,
    n_queries: int = 400,
    n_models: int = 4,
    n_rewrites: int = 5,
    n_decodes: int = 5,
    n_clusters: int = 4,
    embedding_dim: int = 16,
    embedding_noise: float = 0.6,
    skill_gap: float = 2.0,
    skill_noise: float = 0.3,
    base_logit: float = 0.0,
    difficulty_scale: float = 1.0,
    query_noise: float = 0.5,
    rewrite_noise: float = 0.5,
    score_type: str = "binary",
    beta_concentration: float = 4.0,
    with_cost: bool = True,
    random_state: int | np.random.Generator | None = 0,
) -> RepeatedOutcomesData:
    """Generate repeated outcomes with planted cluster-dependent best models.

    Parameters
    ----------
    n_queries, n_models, n_rewrites, n_decodes : int
        Grid size; each (query, model) pair gets ``n_rewrites * n_decodes`` observations
        (``variant_id`` 0 is the original query, ``decode_id`` 0 the first decode).
    n_clusters : int
        Latent query clusters; cluster ``k`` favours model ``k mod n_models``.
    embedding_dim : int
        Dimension of the features.
    embedding_noise : float
        Spread of a query's feature around its cluster centre (before normalisation; the centres are
        unit vectors and the noise has expected norm about ``embedding_noise``).
    skill_gap : float
        Logit advantage of a cluster's favoured model.
    skill_noise : float
        Standard deviation of the random part of the skill profiles.
    base_logit, difficulty_scale : float
        Mean logit and spread of query difficulties.
    query_noise : float
        Standard deviation of a per-(query, model) logit shift shared by all rewrites: structure
        the features cannot reveal, so the per-query oracle stays above any router.
    rewrite_noise : float
        Standard deviation of the per-rewrite logit shift (input-side uncertainty).
    score_type : {"binary", "continuous"}
    beta_concentration : float
        Concentration of the Beta scores (``"continuous"`` only).
    with_cost : bool
        Whether to fill the ``cost`` column (else it is NaN).
    random_state : int or Generator, optional

    Returns
    -------
    RepeatedOutcomesData
    """
    _check_grid(score_type, n_queries, n_models, n_rewrites, n_decodes, n_clusters, embedding_dim)
    rng = np.random.default_rng(random_state)

    cluster = rng.integers(0, n_clusters, size=n_queries)
    skill = skill_noise * rng.standard_normal((n_clusters, n_models))
    skill[np.arange(n_clusters), np.arange(n_clusters) % n_models] += skill_gap
    difficulty = difficulty_scale * rng.standard_normal(n_queries)

    centres = rng.standard_normal((n_clusters, embedding_dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    features = centres[cluster] + embedding_noise * rng.standard_normal(
        (n_queries, embedding_dim)
    ) / np.sqrt(embedding_dim)
    features /= np.linalg.norm(features, axis=1, keepdims=True)

    logit = (
        base_logit
        + skill[cluster][:, None, :]
        - difficulty[:, None, None]
        + query_noise * rng.standard_normal((n_queries, 1, n_models))
        + rewrite_noise * rng.standard_normal((n_queries, n_rewrites, n_models))
    )
    p = _sigmoid(logit)  # (Q, V, M)
    shape = (n_queries, n_rewrites, n_decodes, n_models)
    score = _draw_scores(p, shape, score_type, beta_concentration, rng)
    price = rng.uniform(0.2, 2.0, size=n_models)
    length = np.exp(0.3 * rng.standard_normal(n_queries))
    expected_cost = length[:, None] * price[None, :]
    cost = expected_cost[:, None, None, :] * np.exp(0.1 * rng.standard_normal(shape))
    if not with_cost:
        cost = np.full(shape, np.nan)
    models = tuple(f"model_{m}" for m in range(n_models))
    queries, outcomes = _tables(score, cost, cluster, models)
    p_mean = p.mean(axis=1)
    truth = RepeatedOutcomesTruth(
        cluster=cluster,
        skill=skill,
        difficulty=difficulty,
        p=p,
        p_mean=p_mean,
        expected_cost=expected_cost,
        model_price=price,
        best_model=np.argmax(p_mean, axis=1),
    )
    return RepeatedOutcomesData(
        queries=queries,
        outcomes=outcomes,
        embeddings=features.astype(np.float32),
        models=models,
        truth=truth,
    )


__all__ = [
    "make_repeated_outcomes",
]
