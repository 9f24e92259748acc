"""Routers: learn per-model capability targets from query embeddings and route by utility.

Every router is a scikit-learn estimator sharing one interface (:class:`Router`):

- ``fit(query_embeddings, targets)``, where ``targets`` is a
  :class:`ecc_lib.dars.distributions.CapabilityDistributions` (DARS targets from
  :func:`~ecc_lib.dars.distributions.capability_distributions`, or single-shot targets from
  :func:`~ecc_lib.dars.distributions.single_shot_distributions`; the same code path for both), a mapping with
  ``mu_q``, ``mu_c``, ``sigma_q``, or a plain utility matrix;
- ``predict(X)``: per-model ``mu_q``, ``mu_c``, ``sigma_q`` (``target="components"``, default) or
  ``utility`` (``target="utility"``);
- ``route(X, cost_weight, beta)``: ``argmax_m U`` with ``U = mu_q - cost_weight mu_c - beta
  sigma_q`` (DARS, Lai et al. 2026, arXiv 2606.06924, section 3).

Router families (as listed in the DARS paper's experiments; our own implementations), one module
each:

- :class:`KNNRouter` (:mod:`~ecc_lib.routers.classic`): k nearest training queries (k = 16),
  inverse-distance weights, on :mod:`sklearn.neighbors`;
- :class:`MLPRouter` (:mod:`~ecc_lib.routers.classic`): a multi-output MLP regressor;
- :class:`ClusterRouter` (:mod:`~ecc_lib.routers.classic`): Avengers-Pro-style k-means profiles
  (32 clusters), averaging the 3 nearest clusters;
- :class:`MatrixFactorizationRouter` and :class:`MIRTRouter`
  (:mod:`~ecc_lib.routers.factorisation`): EmbedLLM-style factorisation and multidimensional IRT
  with a 16-d latent, on one torch factorisation core;
- :class:`SoftmaxRankingRouter` (:mod:`~ecc_lib.routers.ranking`): listwise cross-entropy against
  the soft labels ``softmax(U / tau)``;
- :class:`GraphRouter` (:mod:`~ecc_lib.routers.graph`): message passing on the query-model
  bipartite graph;
- :class:`ECCRouter` (:mod:`~ecc_lib.routers.ecc_router`): ECC capability clusters,
  embedding-only responsibilities;
- references :class:`BestFixedRouter` and :class:`RandomRouter`; the per-query oracle needs the
  held-out truth and lives in :mod:`ecc_lib.routing_evaluation`.

The torch families share one base, :class:`~ecc_lib.routers.training.TorchRouter` (training
settings, seeding, early stopping, the one training path); their networks
(:mod:`~ecc_lib.routers.networks`) are imported on first fit.
"""

from __future__ import annotations

import numpy as np

from ecc_lib.routers.base import Router
from ecc_lib.routers.classic import ClusterRouter, KNNRouter, MLPRouter
from ecc_lib.routers.ecc_router import ECCRouter
from ecc_lib.routers.factorisation import MatrixFactorizationRouter, MIRTRouter
from ecc_lib.routers.graph import GraphRouter
from ecc_lib.routers.ranking import SoftmaxRankingRouter

__all__ = [
    "ROUTER_FAMILIES",
    "Router",
    "router_families",
]

ROUTER_FAMILIES: dict[str, type[Router]] = {
    "kNN": KNNRouter,
    "MLP": MLPRouter,
    "EmbedLLM-MF": MatrixFactorizationRouter,
    "MIRT": MIRTRouter,
    "Avengers-Pro": ClusterRouter,
    "ECC": ECCRouter,
    "Softmax-ranking": SoftmaxRankingRouter,
    "GraphRouter": GraphRouter,
}
"""Learned router families by display name."""


def router_families() -> dict[str, type[Router]]:
    """The learned router families (display name to class).

    Returns
    -------
    dict of str to type
        A copy of :data:`ROUTER_FAMILIES`.
    """
    return dict(ROUTER_FAMILIES)


def make_router(
    name: str, *, random_state: int | np.random.Generator | None = None, **kwargs
) -> Router:
    """Instantiate a router family by display name.

    Parameters
    ----------
    name : str
        A key of :func:`router_families`.
    random_state : int, Generator or None
        Seed of the router's fit.
    **kwargs
        Further constructor arguments.

    Returns
    -------
    Router
        Unfitted.
    """
    families = router_families()
    if name not in families:
        raise ValueError(f"unknown router {name!r}; choose from {sorted(families)}")
    return families[name](random_state=random_state, **kwargs)
