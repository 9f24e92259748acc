"""Planted data where embedding (topic) clusters and capability clusters disagree.

Each query has a *topic* (what its text is about, visible in its embedding and in its human label)
and, drawn independently, a *capability* cluster (which models do well on it). Model outcomes follow
a Bradley-Terry profile per capability cluster: with ``u_qm = theta_{c(q), m} + Gumbel noise``, the
score ``sigmoid(u_qm)`` makes ``P(b beats a) = sigmoid(theta_cb - theta_ca)`` exactly (the difference
of two standard Gumbel variables is standard logistic). Embeddings are dominated by the topic
direction, with only a weak capability direction, so clustering embeddings finds topics while the
comparisons reveal capabilities: the setting ECC (Wu, Silwal & Zhang 2026, arXiv 2605.17110) is
designed for.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

import numpy as np
import pandas as pd

from ecc_lib.data.comparisons import Comparisons, make_comparisons


@dataclass(frozen=True)
class CapabilityData:
    """A planted dataset and its ground truth.

    Attributes
    ----------
    queries : DataFrame
        ``query_id, text, category`` (category = topic name, the "human label").
    outcomes : DataFrame
        ``query_id, model, score``; one observation per (query, model).
    embeddings : ndarray, shape (n_queries, dim), float32
        Unit rows aligned to ``queries``.
    comparisons : Comparisons
        ``n_pairs`` non-tie pairs per query (seeded), aligned to ``queries``.
    topic : ndarray of int, shape (n_queries,)
        Embedding cluster of each query.
    capability : ndarray of int, shape (n_queries,)
        Capability cluster of each query (independent of the topic).
    theta : ndarray, shape (n_capabilities, n_models)
        True BT profile of each capability cluster (centred).
    models : tuple of str
    """

    queries: pd.DataFrame
    outcomes: pd.DataFrame
    embeddings: np.ndarray
    comparisons: Comparisons
    topic: np.ndarray
    capability: np.ndarray
    theta: np.ndarray
    models: tuple[str, ...]


def _distinct_profiles(n_capabilities: int, n_models: int, scale: float, rng) -> np.ndarray:
    """Profiles that rank the models differently: permutations of one evenly spaced ladder, the
    first ones as far apart as possible (reversed, shifted)."""
    ladder = np.linspace(-scale, scale, n_models)
    orders = [np.arange(n_models), np.arange(n_models)[::-1]]
    shift = n_models // 2
    orders += [np.roll(np.arange(n_models), shift), np.roll(np.arange(n_models)[::-1], shift)]
    if n_models <= 7:
        pool = [np.array(p) for p in permutations(range(n_models))]
        rng.shuffle(pool)
        orders += pool
    else:
        orders += [rng.permutation(n_models) for _ in range(4 * n_capabilities)]
    chosen: list[np.ndarray] = []
    for order in orders:
        if not any(np.array_equal(order, c) for c in chosen):
            chosen.append(order)
        if len(chosen) == n_capabilities:
            break
    if len(chosen) < n_capabilities:
        raise ValueError(f"cannot make {n_capabilities} distinct profiles of {n_models} models")
    return np.stack([ladder[np.argsort(o)] for o in chosen])


def make_capability_data(
    *,
    n_queries: int = 1200,
    n_models: int = 8,
    n_topics: int = 4,
    n_capabilities: int = 4,
    dim: int = 256,
    n_pairs: int = 7,
    topic_strength: float = 0.2,
    capability_strength: float = 0.1,
    noise: float = 1.0,
    profile_scale: float = 4.0,
    random_state: int | np.random.Generator | None = 0,
) -> CapabilityData:
    """Generate queries whose topic clusters and capability clusters disagree.

    Parameters
    ----------
    n_queries, n_models : int
    n_topics : int
        Embedding clusters (also the human category).
    n_capabilities : int
        Capability clusters, each with its own BT profile; assigned independently of topics.
    dim : int
        Embedding dimension (needs ``dim >= n_topics + n_capabilities``).
    n_pairs : int
        Comparisons per query in :attr:`CapabilityData.comparisons`.
    topic_strength, capability_strength, noise : float
        Embedding = ``topic_strength * u_topic + capability_strength * v_capability +
        noise * z / sqrt(dim)``, then normalised; ``u``, ``v`` orthonormal directions.
    profile_scale : float
        True scores span ``[-profile_scale, profile_scale]`` in every profile.
    random_state : int or Generator

    Returns
    -------
    CapabilityData
    """
    if dim < n_topics + n_capabilities:
        raise ValueError("dim must be at least n_topics + n_capabilities")
    if n_models < 2:
        raise ValueError("n_models must be >= 2")
    rng = np.random.default_rng(random_state)
    basis, _ = np.linalg.qr(rng.standard_normal((dim, n_topics + n_capabilities)))
    u, v = basis[:, :n_topics].T, basis[:, n_topics:].T
    topic = rng.integers(0, n_topics, n_queries)
    capability = rng.integers(0, n_capabilities, n_queries)
    emb = (
        topic_strength * u[topic]
        + capability_strength * v[capability]
        + noise * rng.standard_normal((n_queries, dim)) / np.sqrt(dim)
    )
    emb = (emb / np.linalg.norm(emb, axis=1, keepdims=True)).astype(np.float32)

    theta = _distinct_profiles(n_capabilities, n_models, profile_scale, rng)
    theta = theta - theta.mean(axis=1, keepdims=True)
    return assemble_capability_data(
        embeddings=emb,
        theta=theta,
        capability=capability,
        topic=topic,
        models=tuple(f"model_{j}" for j in range(n_models)),
        texts=[f"synthetic query {i} about topic {t}" for i, t in enumerate(topic)],
        categories=[f"topic_{t}" for t in topic],
        n_pairs=n_pairs,
        rng=rng,
    )


def assemble_capability_data(
    *,
    embeddings: np.ndarray,
    theta: np.ndarray,
    capability: np.ndarray,
    topic: np.ndarray,
    models: tuple[str, ...],
    texts: list[str],
    categories: list[str],
    n_pairs: int,
    rng: np.random.Generator,
) -> CapabilityData:
    """Outcomes, tables and comparisons of planted data: each query's score of model ``m`` is
    ``sigmoid(theta[capability, m] + Gumbel noise)`` (drawn from ``rng``), query ids ``q000...``.

    Shared by :func:`make_capability_data` and :func:`ecc_lib.synthetic.regimes.make_axis_data`.

    Parameters
    ----------
    embeddings : ndarray, shape (n_queries, dim)
        Unit embeddings.
    theta : ndarray, shape (n_capabilities, n_models)
        Planted BT profiles.
    capability, topic : ndarray of int, shape (n_queries,)
        Planted capability cluster and topic of each query.
    models : tuple of str
        Model names.
    texts, categories : list of str
        Each query's text and human category.
    n_pairs : int
        Comparisons sampled per query.
    rng : numpy Generator

    Returns
    -------
    CapabilityData
    """
    n_queries, n_models = len(capability), len(models)
    utility = theta[capability] + rng.gumbel(size=(n_queries, n_models))
    score = 1.0 / (1.0 + np.exp(-utility))
    width = len(str(n_queries - 1))
    query_ids = np.array([f"q{i:0{width}d}" for i in range(n_queries)])
    queries = pd.DataFrame({"query_id": query_ids, "text": texts, "category": categories})
    outcomes = pd.DataFrame(
        {
            "query_id": np.repeat(query_ids, n_models),
            "model": np.tile(np.array(models), n_queries),
            "score": score.ravel(),
        }
    )
    comparisons = make_comparisons(
        outcomes,
        n_pairs=n_pairs,
        ties="drop",
        min_pairs=1,
        query_ids=query_ids,
        models=models,
        random_state=rng,
    )
    return CapabilityData(
        queries=queries,
        outcomes=outcomes,
        embeddings=embeddings,
        comparisons=comparisons,
        topic=topic,
        capability=capability,
        theta=theta,
        models=models,
    )


__all__ = [
    "make_capability_data",
]
