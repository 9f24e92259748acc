"""Planted regimes where the paper's ECC settings are not safe (issue 26).

:func:`make_axis_data` draws queries whose model strengths are one shared quality ladder (the
*dominant axis*, scale ``axis_scale``) plus a capability-cluster deviation (scale
``deviation_scale``); each query also has a human category, which names its capability cluster
with probability ``label_purity`` (otherwise a uniformly drawn category). Outcomes follow the
Bradley-Terry model exactly (score ``sigmoid(theta + Gumbel)``, as in
:mod:`ecc_lib.synthetic.capability`); embeddings carry the category direction, a weaker capability
direction and noise. The presets of :data:`REGIMES` mimic the outside rows of issue 26:

- ``"dominant"``: one quality axis dominates, few training queries (ECC at K = 30 overfits; one
  global BT is the right answer);
- ``"many_categories"``: many categories with few queries each, weakly tied to a small capability
  deviation (human labels overfit per category);
- ``"capability"``: strong capability clusters that the categories name (ECC and labels win);
- ``"hidden_capability"``: the same clusters, categories that say nothing about them (ECC wins,
  like the outside router benchmark's row).
"""

from __future__ import annotations

import numpy as np

from ecc_lib.synthetic.capability import CapabilityData, assemble_capability_data

REGIMES: dict[str, dict] = {
    "dominant": dict(
        n_queries=400,
        n_models=12,
        n_categories=5,
        n_capabilities=3,
        axis_scale=3.0,
        deviation_scale=0.3,
        label_purity=0.5,
    ),
    "many_categories": dict(
        n_queries=1200,
        n_models=12,
        n_categories=80,
        n_capabilities=4,
        axis_scale=2.0,
        deviation_scale=0.8,
        label_purity=0.3,
        dim=128,
    ),
    "capability": dict(
        n_queries=1200,
        n_models=8,
        n_categories=4,
        n_capabilities=4,
        axis_scale=0.5,
        deviation_scale=3.0,
        label_purity=0.9,
    ),
    "hidden_capability": dict(
        n_queries=1200,
        n_models=8,
        n_categories=4,
        n_capabilities=4,
        axis_scale=0.5,
        deviation_scale=3.0,
        label_purity=0.0,
    ),
}
"""Presets of :func:`make_axis_data` by regime name."""


def make_axis_data(
    *,
    n_queries: int = 400,
    n_models: int = 12,
    n_categories: int = 5,
    n_capabilities: int = 3,
    axis_scale: float = 3.0,
    deviation_scale: float = 0.3,
    label_purity: float = 0.5,
    dim: int = 64,
    topic_strength: float = 0.2,
    capability_strength: float = 0.1,
    noise: float = 1.0,
    n_pairs: int = 7,
    random_state: int | np.random.Generator | None = 0,
) -> CapabilityData:
    """Queries on a dominant quality axis with capability deviations and human categories.

    Parameters
    ----------
    n_queries, n_models : int
    n_categories : int
        Human categories (also the embedding topics).
    n_capabilities : int
        Capability clusters; cluster ``k`` has strengths ``axis_scale * ladder + deviation_scale
        * z_k`` (``ladder`` evenly spaced in ``[-1, 1]``, ``z_k`` standard normal per model).
    axis_scale, deviation_scale : float
    label_purity : float in [0, 1]
        Probability that a query's category is ``capability mod n_categories`` (else uniform);
        0 gives categories that carry no information about the capability.
    dim, topic_strength, capability_strength, noise : embedding as
        ``topic_strength * u_category + capability_strength * v_capability + noise * z /
        sqrt(dim)``, normalised.
    n_pairs : int
        Comparisons per query in ``comparisons``.
    random_state : int or Generator

    Returns
    -------
    CapabilityData
        ``topic`` holds the category, ``capability`` the planted cluster, ``theta`` the centred
        strengths per cluster.
    """
    if not 0.0 <= label_purity <= 1.0:
        raise ValueError(f"label_purity must lie in [0, 1], got {label_purity}")
    if dim < n_categories + n_capabilities:
        raise ValueError("dim must be at least n_categories + n_capabilities")
    if n_models < 2:
        raise ValueError("n_models must be >= 2")
    rng = np.random.default_rng(random_state)
    basis, _ = np.linalg.qr(rng.standard_normal((dim, n_categories + n_capabilities)))
    u, v = basis[:, :n_categories].T, basis[:, n_categories:].T
    capability = rng.integers(0, n_capabilities, n_queries)
    pure = rng.random(n_queries) < label_purity
    category = np.where(pure, capability % n_categories, rng.integers(0, n_categories, n_queries))
    ladder = np.linspace(-1.0, 1.0, n_models)
    theta = axis_scale * ladder + deviation_scale * rng.standard_normal((n_capabilities, n_models))
    theta -= theta.mean(axis=1, keepdims=True)
    emb = (
        topic_strength * u[category]
        + capability_strength * v[capability]
        + noise * rng.standard_normal((n_queries, dim)) / np.sqrt(dim)
    )
    emb = (emb / np.linalg.norm(emb, axis=1, keepdims=True)).astype(np.float32)
    return assemble_capability_data(
        embeddings=emb,
        theta=theta,
        capability=capability,
        topic=category,
        models=tuple(f"model_{j:02d}" for j in range(n_models)),
        texts=[f"synthetic query {i} of category {c}" for i, c in enumerate(category)],
        categories=[f"cat_{c}" for c in category],
        n_pairs=n_pairs,
        rng=rng,
    )


def make_regime(name: str, *, random_state: int | np.random.Generator | None = 0, **overrides):
    """The preset ``name`` of :data:`REGIMES` (keyword arguments override it).

    Parameters
    ----------
    name : str
    random_state : int or Generator
    **overrides
        Arguments of :func:`make_axis_data`.

    Returns
    -------
    CapabilityData
    """
    if name not in REGIMES:
        raise ValueError(f"unknown regime {name!r}; choose from {sorted(REGIMES)}")
    return make_axis_data(**{**REGIMES[name], **overrides}, random_state=random_state)


__all__ = [
    "make_regime",
]
