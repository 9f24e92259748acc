"""DARS: capability distributions, risk-aware utility, labels and single-shot draws.

Implements the supervision side of DARS (Lai, Hu, Chen, Li, Ye 2026, "From Sampled Outcomes to
Capability Distributions: Rethinking Supervision for LLM Routing", arXiv 2606.06924; see also
``docs/design.md`` section 4).

For every (query, model) pair with repeated observations (rewrites x decodes) we summarise

- ``mu_q``: mean score,
- ``sigma_q``: sample standard deviation of the scores (``ddof = 1``); a pair with a single
  observation has no measured spread and gets ``sigma_q = 0`` (its ``n_obs`` of 1 tells it apart),
- ``mu_c``: mean cost, min-max normalised within the dataset,

and score them with the risk-aware utility (paper, section 3)::

    U(x, m) = mu_q(x, m) - lambda * mu_c(x, m) - beta * sigma_q(x, m)

with ``lambda = 0.05`` and ``beta = 0.2`` by default. Labels are ``argmax_m U`` (hard),
``softmax(U / tau)`` (soft) or the three regression targets.

The single-shot baseline draws one observation per (query, model) pair with a seed (``sigma = 0``,
``beta`` has no effect); :mod:`ecc_lib.dars.label_instability` measures how unstable such labels are.

The observations come grouped by (query, model) pair from :mod:`ecc_lib.data.observations`, which also
defines the ``"input"``, ``"output"`` and ``"both"`` observation subsets; its
:class:`~ecc_lib.data.observations.RepeatedObservations`,
:func:`~ecc_lib.data.observations.repeated_observations`,
:func:`~ecc_lib.data.observations.observation_subsets` and ``SUBSETS`` stay importable from here.

Everything is vectorised: every statistic is a ``bincount`` over pair indices; random draws index
into each pair's slice with numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ecc_lib import defaults
from ecc_lib.data.observations import SUBSETS as SUBSETS
from ecc_lib.data.observations import RepeatedObservations, repeated_observations
from ecc_lib.data.observations import observation_subsets as observation_subsets
from ecc_lib.data.schema import QueryModelAxes

DEFAULT_LAMBDA = defaults.COST_WEIGHT
"""Cost weight of the utility (authors' default)."""
DEFAULT_BETA = defaults.BETA
"""Risk (sigma) weight of the utility (authors' default)."""
DEFAULT_TAU = 0.1
"""Temperature of soft labels ``softmax(U / tau)`` (our default; the paper leaves it open)."""

_TIE_TOL = 1e-12
_PER_PAIR = ("n_obs", "mu_q", "sigma_q", "mu_c")
"""The per-(query, model) arrays of :class:`CapabilityDistributions`, in its column order."""


# --------------------------------------------------------------------------------------------
# Capability distributions, utility and labels
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CapabilityDistributions(QueryModelAxes):
    """Per (query, model) capability summary: the DARS targets (or single-shot ones).

    Attributes
    ----------
    query_ids : ndarray of str, shape (n_queries,)
    models : tuple of str
    n_obs : ndarray of int64, shape (n_queries, n_models)
    mu_q : ndarray, shape (n_queries, n_models)
        Mean score.
    sigma_q : ndarray, shape (n_queries, n_models)
        Sample standard deviation (``ddof = 1``); 0 where ``n_obs == 1``.
    mu_c : ndarray, shape (n_queries, n_models)
        Mean normalised cost (0 everywhere when ``cost_available`` is false).
    cost_available : bool
    kind : str
        ``"dars"`` (all observations) or ``"single_shot"`` (one drawn observation per pair).
    subset : str
    """

    query_ids: np.ndarray
    models: tuple[str, ...]
    n_obs: np.ndarray
    mu_q: np.ndarray
    sigma_q: np.ndarray
    mu_c: np.ndarray
    cost_available: bool = True
    kind: str = "dars"
    subset: str = "both"

    def utility(
        self, *, cost_weight: float = DEFAULT_LAMBDA, beta: float = DEFAULT_BETA
    ) -> np.ndarray:
        """``U = mu_q - lambda * mu_c - beta * sigma_q``, shape (n_queries, n_models).

        Parameters
        ----------
        cost_weight : float, default 0.05
            Cost weight lambda.
        beta : float, default 0.2
            Weight of the score spread.

        Returns
        -------
        ndarray, shape (n_queries, n_models)
        """
        return utility(self.mu_q, self.mu_c, self.sigma_q, cost_weight=cost_weight, beta=beta)

    def _keep_queries(self, mask: np.ndarray) -> CapabilityDistributions:
        per_query = ("query_ids", *_PER_PAIR)
        return replace(self, **{name: getattr(self, name)[mask] for name in per_query})

    def to_frame(self) -> pd.DataFrame:
        """Long table ``query_id, model, n_obs, mu_q, sigma_q, mu_c``.

        Returns
        -------
        DataFrame
        """
        q, m = self.n_queries, self.n_models
        return pd.DataFrame(
            {
                "query_id": np.repeat(self.query_ids, m),
                "model": np.tile(np.asarray(self.models, dtype=object), q),
                **{name: getattr(self, name).reshape(-1) for name in _PER_PAIR},
            }
        )


def capability_distributions(
    outcomes: pd.DataFrame | RepeatedObservations, *, subset: str = "both"
) -> CapabilityDistributions:
    """Mean score, score spread and mean normalised cost of every (query, model) pair.

    Parameters
    ----------
    outcomes : DataFrame or RepeatedObservations
        Long outcomes, or observations already grouped by :func:`repeated_observations`.
    subset : {"both", "input", "output"}
        Which observations to summarise (see the module docstring).

    Returns
    -------
    CapabilityDistributions
        ``sigma_q`` uses ``ddof = 1`` and is 0 for a pair with one observation (documented choice:
        no spread was measured; ``n_obs`` tells such pairs apart). ``mu_c`` is the mean cost
        min-max normalised over the pair means of the whole dataset, 0 when there is no cost.
    """
    obs = repeated_observations(outcomes).subset_of(subset)
    q, m = obs.n_queries, obs.n_models
    n_pairs = q * m
    count = obs.count.reshape(-1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(obs.pair, weights=obs.score, minlength=n_pairs) / count
        deviation = obs.score - mean[obs.pair]
        ss = np.bincount(obs.pair, weights=deviation * deviation, minlength=n_pairs)
        sigma = np.where(count > 1, np.sqrt(ss / np.maximum(count - 1.0, 1.0)), 0.0)
        mu_c = np.bincount(obs.pair, weights=obs.cost, minlength=n_pairs) / count
    return CapabilityDistributions(
        query_ids=obs.query_ids,
        models=obs.models,
        n_obs=obs.count.copy(),
        mu_q=mean.reshape(q, m),
        sigma_q=sigma.reshape(q, m),
        mu_c=mu_c.reshape(q, m),
        cost_available=obs.cost_available,
        kind="dars",
        subset=obs.subset,
    )


def utility(
    mu_q: np.ndarray,
    mu_c: np.ndarray,
    sigma_q: np.ndarray,
    *,
    cost_weight: float = DEFAULT_LAMBDA,
    beta: float = DEFAULT_BETA,
) -> np.ndarray:
    """Risk-aware utility ``U = mu_q - lambda * mu_c - beta * sigma_q`` (DARS, section 3).

    Parameters
    ----------
    mu_q, mu_c, sigma_q : ndarray
        Mean score, mean normalised cost and score spread (same shape).
    cost_weight : float, default 0.05
        Cost weight lambda.
    beta : float, default 0.2
        Weight of the score spread.

    Returns
    -------
    ndarray
    """
    return (
        np.asarray(mu_q, float)
        - cost_weight * np.asarray(mu_c, float)
        - beta * np.asarray(sigma_q, float)
    )


def hard_labels(utilities: np.ndarray) -> np.ndarray:
    """``argmax_m U`` per row (ties go to the first model, as :func:`numpy.argmax`).

    Parameters
    ----------
    utilities : ndarray, shape (n_queries, n_models)
        Utilities ``U``.

    Returns
    -------
    ndarray of int, shape (n_queries,)
    """
    return np.argmax(np.asarray(utilities, float), axis=-1)


def argmax_sets(utilities: np.ndarray, *, tol: float = _TIE_TOL) -> np.ndarray:
    """Boolean mask of the models whose utility is within ``tol`` of the row maximum.

    Parameters
    ----------
    utilities : ndarray, shape (n_queries, n_models)
        Utilities ``U``.
    tol : float, default 1e-12
        Tolerance of a tie.

    Returns
    -------
    ndarray of bool, shape (n_queries, n_models)
    """
    u = np.asarray(utilities, float)
    return u >= u.max(axis=-1, keepdims=True) - tol


def soft_labels(utilities: np.ndarray, *, tau: float = DEFAULT_TAU) -> np.ndarray:
    """``softmax(U / tau)`` per row; rows sum to one.

    Parameters
    ----------
    utilities : ndarray, shape (n_queries, n_models)
        Utilities ``U``.
    tau : float, default 0.1
        Temperature (> 0).

    Returns
    -------
    ndarray, shape (n_queries, n_models)
    """
    if tau <= 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    z = np.asarray(utilities, float) / tau
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def label_shares(utilities: np.ndarray, models: tuple[str, ...] | list[str]) -> dict[str, float]:
    """Share of queries where each model is ``argmax U``; a tie among k models gives each 1/k.

    Parameters
    ----------
    utilities : ndarray, shape (n_queries, n_models)
        Utilities ``U``.
    models : sequence of str
        Model names, in column order.

    Returns
    -------
    dict of str to float
        Shares summing to one.
    """
    sets = argmax_sets(utilities).astype(float)
    shares = (sets / sets.sum(axis=1, keepdims=True)).mean(axis=0)
    return {str(name): float(v) for name, v in zip(models, shares, strict=True)}


def regression_targets(distributions: CapabilityDistributions) -> dict[str, np.ndarray]:
    """The three regression targets ``mu_q``, ``mu_c``, ``sigma_q`` (each n_queries x n_models).

    Parameters
    ----------
    distributions : CapabilityDistributions
        DARS or single-shot distributions.

    Returns
    -------
    dict of str to ndarray
    """
    return {
        "mu_q": distributions.mu_q,
        "mu_c": distributions.mu_c,
        "sigma_q": distributions.sigma_q,
    }


# --------------------------------------------------------------------------------------------
# Single-shot protocol
# --------------------------------------------------------------------------------------------


def _draw_indices(
    obs: RepeatedObservations, shape: tuple[int, ...], rng: np.random.Generator
) -> np.ndarray:
    """Indices of one uniformly drawn observation per pair, ``shape + (n_queries, n_models)``."""
    u = rng.random(shape + obs.count.shape)
    offset = np.minimum((u * obs.count).astype(np.int64), obs.count - 1)
    return obs.start + offset


def single_shot_draws(
    outcomes: pd.DataFrame | RepeatedObservations,
    *,
    n_draws: int = 1,
    random_state: int | np.random.Generator | None = 0,
    subset: str = "both",
) -> tuple[np.ndarray, np.ndarray]:
    """Draw one observation per (query, model), uniformly among the pair's observations, R times.

    Parameters
    ----------
    outcomes : DataFrame or RepeatedObservations
        Long outcomes table or grouped observations.
    n_draws : int, default 1
        Independent draws R.
    random_state : int, Generator or None, default 0
        Seed of the draws.
    subset : {"both", "input", "output"}, default "both"
        Observations drawn from (see :meth:`RepeatedObservations.subset_of`).

    Returns
    -------
    scores, costs : ndarray, shape (n_draws, n_queries, n_models)
        The drawn score and normalised cost.
    """
    if n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws}")
    obs = repeated_observations(outcomes).subset_of(subset)
    rng = np.random.default_rng(random_state)
    index = _draw_indices(obs, (n_draws,), rng)
    return obs.score[index], obs.cost[index]


def single_shot_distributions(
    outcomes: pd.DataFrame | RepeatedObservations,
    *,
    random_state: int | np.random.Generator | None = 0,
    subset: str = "both",
) -> CapabilityDistributions:
    """Single-shot targets: one drawn observation per pair as ``mu_q``, ``mu_c``; ``sigma_q = 0``.

    Drop-in replacement for :func:`capability_distributions`, so routers train on single-shot or
    DARS targets through the same code path.

    Parameters
    ----------
    outcomes : DataFrame or RepeatedObservations
        Long outcomes table or grouped observations.
    random_state : int, Generator or None, default 0
        Seed of the draw.
    subset : {"both", "input", "output"}, default "both"
        Observations drawn from (see :meth:`RepeatedObservations.subset_of`).

    Returns
    -------
    CapabilityDistributions
        ``kind`` records the single-shot origin.
    """
    obs = repeated_observations(outcomes).subset_of(subset)
    scores, costs = single_shot_draws(obs, n_draws=1, random_state=random_state)
    return CapabilityDistributions(
        query_ids=obs.query_ids,
        models=obs.models,
        n_obs=np.ones_like(obs.count),
        mu_q=scores[0],
        sigma_q=np.zeros_like(scores[0]),
        mu_c=costs[0],
        cost_available=obs.cost_available,
        kind="single_shot",
        subset=obs.subset,
    )


__all__ = [
    "DEFAULT_BETA",
    "DEFAULT_LAMBDA",
    "capability_distributions",
    "hard_labels",
    "label_shares",
    "single_shot_draws",
    "soft_labels",
]
