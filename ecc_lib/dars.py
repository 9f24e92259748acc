"""DARS: capability distributions, risk-aware utility, labels and single-shot draws.

Implements the supervision side of DARS (Lai, Hu, Chen, Li, Ye 2026, "From Sampled Outcomes to
Capability Distributions: Rethinking Supervision for LLM Routing", arXiv 2606.06924; see also
``shared/DESIGN.md`` section 4).

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
``beta`` has no effect); :mod:`ecc_lib.dars_diagnostics` measures how unstable such labels are.

Observation subsets (project decision): ``"input"`` = observations with ``decode_id == 0``
(rewrites of the query, first decode), ``"output"`` = observations with ``variant_id == 0``
(repeated decodes of the original), ``"both"`` = all observations.

Everything is vectorised: observations are sorted once by (query, model) pair and every statistic is
a ``bincount`` over pair indices; random draws index into each pair's slice with numpy.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ecc_lib.schema import (
    REQUIRED_OUTCOME_COLUMNS,
    DataValidationError,
    QueryModelAxes,
    _require_columns,
    _where,
    validate_outcomes,
)

logger = logging.getLogger(__name__)

DEFAULT_LAMBDA = 0.05
"""Cost weight of the utility (authors' default)."""
DEFAULT_BETA = 0.2
"""Risk (sigma) weight of the utility (authors' default)."""
DEFAULT_TAU = 0.1
"""Temperature of soft labels ``softmax(U / tau)`` (our default; the paper leaves it open)."""
SUBSETS = ("input", "output", "both")
"""Observation subsets: rewrites only, decodes only, all."""

_TIE_TOL = 1e-12


# --------------------------------------------------------------------------------------------
# Observations grouped by (query, model) pair
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RepeatedObservations(QueryModelAxes):
    """Observations of a complete (query x model) grid, sorted by pair.

    Build with :func:`repeated_observations`. Observation ``i`` belongs to pair ``pair[i]`` =
    ``query * n_models + model``; the observations of pair ``(q, m)`` are
    ``score[start[q, m] : start[q, m] + count[q, m]]``.

    Attributes
    ----------
    query_ids : ndarray of str, shape (n_queries,)
    models : tuple of str
    score : ndarray of float64, shape (n_observations,)
    cost : ndarray of float64, shape (n_observations,)
        Cost normalised with the dataset's min-max scale of pair mean costs (an affine map, so a
        single observation may fall slightly outside [0, 1]); a missing cost is replaced by its
        pair's mean; all zero when the data hold no cost.
    variant_id, decode_id : ndarray of int64, shape (n_observations,)
    pair : ndarray of int64, shape (n_observations,)
    start, count : ndarray of int64, shape (n_queries, n_models)
    cost_available : bool
        False when the outcomes hold no cost at all (then ``mu_c = 0`` everywhere).
    cost_scale : tuple of float
        ``(low, high)`` of the pair mean raw costs used for the normalisation.
    subset : str
        ``"input"``, ``"output"`` or ``"both"``.
    dropped_query_ids : tuple of str
        Queries left out because some model had no observation of them (in this subset).
    """

    query_ids: np.ndarray
    models: tuple[str, ...]
    score: np.ndarray
    cost: np.ndarray
    variant_id: np.ndarray
    decode_id: np.ndarray
    pair: np.ndarray
    start: np.ndarray
    count: np.ndarray
    cost_available: bool
    cost_scale: tuple[float, float]
    subset: str = "both"
    dropped_query_ids: tuple[str, ...] = field(default=())

    @property
    def n_observations(self) -> int:
        """Number of observations."""
        return int(len(self.score))

    @property
    def is_binary(self) -> bool:
        """Whether every score is 0 or 1."""
        return bool(np.all((self.score == 0.0) | (self.score == 1.0)))

    @property
    def has_repeats(self) -> bool:
        """Whether at least one pair has two or more observations (else diagnostics do not apply)."""
        return bool(self.n_queries and self.count.max() >= 2)

    @property
    def has_rewrites(self) -> bool:
        """Whether some observation is of a rewrite (``variant_id > 0``)."""
        return bool(np.any(self.variant_id > 0))

    @property
    def has_decodes(self) -> bool:
        """Whether some observation is a repeated decode (``decode_id > 0``)."""
        return bool(np.any(self.decode_id > 0))

    def subset_of(self, name: str) -> RepeatedObservations:
        """Observations of one subset: ``"input"`` (``decode_id == 0``), ``"output"``
        (``variant_id == 0``) or ``"both"`` (all).

        Queries where some model has no observation left are dropped (logged, listed in
        ``dropped_query_ids``). The cost scale of the full dataset is kept.

        Parameters
        ----------
        name : {"input", "output", "both"}
            The subset.

        Returns
        -------
        RepeatedObservations
        """
        if name not in SUBSETS:
            raise ValueError(f"subset must be one of {SUBSETS}, got {name!r}")
        if name in ("both", self.subset):
            return self
        if self.subset != "both":
            raise ValueError(f"cannot take subset {name!r} of subset {self.subset!r}")
        keep = self.decode_id == 0 if name == "input" else self.variant_id == 0
        return _regroup(self, keep, name)

    def select_queries(self, query_mask: np.ndarray) -> RepeatedObservations:
        """Keep the queries where ``query_mask`` (aligned to :attr:`query_ids`) is true.

        Parameters
        ----------
        query_mask : ndarray of bool, shape (n_queries,)
            Queries to keep.

        Returns
        -------
        RepeatedObservations
        """
        query_mask = self._query_mask(query_mask)
        keep = query_mask[self.pair // self.n_models]
        out = _regroup(self, keep, self.subset, query_mask=query_mask)
        return replace(out, dropped_query_ids=())

    def to_frame(self) -> pd.DataFrame:
        """Observations as a long outcomes table (cost normalised).

        Returns
        -------
        DataFrame
            ``query_id, model, score, cost, variant_id, decode_id``.
        """
        models = np.asarray(self.models, dtype=object)
        return pd.DataFrame(
            {
                "query_id": self.query_ids[self.pair // self.n_models],
                "model": models[self.pair % self.n_models],
                "score": self.score,
                "cost": self.cost,
                "variant_id": self.variant_id,
                "decode_id": self.decode_id,
            }
        )


def _group_counts(pair: np.ndarray, n_pairs: int) -> tuple[np.ndarray, np.ndarray]:
    count = np.bincount(pair, minlength=n_pairs).astype(np.int64)
    start = np.cumsum(count) - count
    return start, count


def _regroup(
    obs: RepeatedObservations,
    keep: np.ndarray,
    subset: str,
    query_mask: np.ndarray | None = None,
) -> RepeatedObservations:
    """Keep observations ``keep`` (sorted order is preserved), recode queries, drop incomplete."""
    n_models = obs.n_models
    query_of = obs.pair // n_models
    if query_mask is None:
        query_mask = np.ones(obs.n_queries, dtype=bool)
    counts = np.bincount(obs.pair[keep], minlength=obs.n_queries * n_models).reshape(
        obs.n_queries, n_models
    )
    complete = (counts > 0).all(axis=1)
    incomplete = query_mask & ~complete
    dropped = obs.query_ids[incomplete]
    if len(dropped):
        logger.info(
            "subset %r: %d of %d queries dropped because some model has no observation",
            subset,
            len(dropped),
            int(query_mask.sum()),
        )
    query_mask = query_mask & complete
    keep = keep & query_mask[query_of]
    new_query = np.cumsum(query_mask) - 1
    pair = new_query[query_of[keep]] * n_models + obs.pair[keep] % n_models
    n_queries = int(query_mask.sum())
    start, count = _group_counts(pair, n_queries * n_models)
    return RepeatedObservations(
        query_ids=obs.query_ids[query_mask],
        models=obs.models,
        score=obs.score[keep],
        cost=obs.cost[keep],
        variant_id=obs.variant_id[keep],
        decode_id=obs.decode_id[keep],
        pair=pair,
        start=start.reshape(n_queries, n_models),
        count=count.reshape(n_queries, n_models),
        cost_available=obs.cost_available,
        cost_scale=obs.cost_scale,
        subset=subset,
        dropped_query_ids=tuple(dropped.tolist()),
    )


def repeated_observations(
    outcomes: pd.DataFrame | RepeatedObservations,
    *,
    validate: bool = True,
    source: str | None = None,
    incomplete: str = "drop",
) -> RepeatedObservations:
    """Group a long outcomes table by (query, model) pair.

    Parameters
    ----------
    outcomes : DataFrame or RepeatedObservations
        Long outcomes (``query_id, model, score`` and optionally ``cost, variant_id, decode_id``).
        A :class:`RepeatedObservations` is returned unchanged.
    validate : bool, default True
        Run :func:`ecc_lib.schema.validate_outcomes` first (missing columns, scores outside
        [0, 1], negative costs, duplicate observations raise :class:`DataValidationError`).
    source : str, optional
        File or dataset name for error messages.
    incomplete : {"drop", "raise"}
        What to do with a query that some (but at least two) models lack: drop it (logged, listed
        in ``dropped_query_ids``) or raise. A query observed for a single model always raises.

    Returns
    -------
    RepeatedObservations
        Queries in order of first appearance, models sorted by name.
    """
    if isinstance(outcomes, RepeatedObservations):
        return outcomes
    if incomplete not in ("drop", "raise"):
        raise ValueError(f"incomplete must be 'drop' or 'raise', got {incomplete!r}")
    where = _where(source)
    if validate:
        frame = validate_outcomes(outcomes, source=source)
    else:
        _require_columns(outcomes, REQUIRED_OUTCOME_COLUMNS, "outcomes", source)
        frame = outcomes
    qcode, query_ids = pd.factorize(frame["query_id"].astype(str), sort=False)
    mcode, models = pd.factorize(frame["model"].astype(str), sort=True)
    query_ids = np.asarray(query_ids, dtype=object)
    models = tuple(str(m) for m in models)
    n_queries, n_models = len(query_ids), len(models)
    if n_models < 2:
        raise DataValidationError(f"{where}DARS needs at least 2 models, got {list(models)}")
    qcode = qcode.astype(np.int64)
    pair = qcode * n_models + mcode.astype(np.int64)
    present = (np.bincount(pair, minlength=n_queries * n_models) > 0).reshape(n_queries, n_models)
    models_per_query = present.sum(axis=1)
    lonely = models_per_query < 2
    if lonely.any():
        first = int(np.flatnonzero(lonely)[0])
        raise DataValidationError(
            f"{where}{int(lonely.sum())} query(ies) are observed for a single model, so no model "
            f"can be compared on them; first: query_id {query_ids[first]!r} (model "
            f"{models[int(np.flatnonzero(present[first])[0])]!r} only)"
        )
    partial = models_per_query < n_models
    if partial.any() and incomplete == "raise":
        first = int(np.flatnonzero(partial)[0])
        lacking = [models[m] for m in np.flatnonzero(~present[first])]
        raise DataValidationError(
            f"{where}{int(partial.sum())} query(ies) lack some model; first: query_id "
            f"{query_ids[first]!r} has no observation of {lacking}"
        )

    score = frame["score"].to_numpy(dtype=float)
    raw_cost = (
        pd.to_numeric(frame["cost"], errors="coerce").to_numpy(dtype=float)
        if "cost" in frame.columns
        else np.full(len(frame), np.nan)
    )
    variant = (
        frame["variant_id"].to_numpy(dtype=np.int64)
        if "variant_id" in frame.columns
        else np.zeros(len(frame), dtype=np.int64)
    )
    decode = (
        frame["decode_id"].to_numpy(dtype=np.int64)
        if "decode_id" in frame.columns
        else np.zeros(len(frame), dtype=np.int64)
    )
    if np.any(np.isfinite(raw_cost) & (raw_cost < 0)):
        bad = int(np.flatnonzero(np.isfinite(raw_cost) & (raw_cost < 0))[0])
        raise DataValidationError(f"{where}outcomes column 'cost' must be >= 0; first at row {bad}")

    order = np.argsort(pair, kind="stable")
    pair = pair[order]
    score, raw_cost, variant, decode = score[order], raw_cost[order], variant[order], decode[order]
    cost, cost_available, cost_scale = _normalise_cost(pair, raw_cost, n_queries, n_models, models)

    start, count = _group_counts(pair, n_queries * n_models)
    full = RepeatedObservations(
        query_ids=query_ids,
        models=models,
        score=score,
        cost=cost,
        variant_id=variant,
        decode_id=decode,
        pair=pair,
        start=start.reshape(n_queries, n_models),
        count=count.reshape(n_queries, n_models),
        cost_available=cost_available,
        cost_scale=cost_scale,
    )
    if partial.any():
        logger.info(
            "%s%d of %d queries dropped because some model has no observation of them",
            where,
            int(partial.sum()),
            n_queries,
        )
        return _regroup(full, np.ones(full.n_observations, dtype=bool), "both")
    return full


def _normalise_cost(
    pair: np.ndarray, raw_cost: np.ndarray, n_queries: int, n_models: int, models: tuple[str, ...]
) -> tuple[np.ndarray, bool, tuple[float, float]]:
    """Min-max normalise costs by the range of pair means; fill missing costs."""
    finite = np.isfinite(raw_cost)
    if not finite.any():
        logger.info("outcomes hold no cost: mu_c = 0 for every pair")
        return np.zeros(len(raw_cost)), False, (0.0, 0.0)
    n_pairs = n_queries * n_models
    sums = np.bincount(pair, weights=np.where(finite, raw_cost, 0.0), minlength=n_pairs)
    counts = np.bincount(pair, weights=finite.astype(float), minlength=n_pairs)
    with np.errstate(invalid="ignore", divide="ignore"):
        pair_mean = (sums / counts).reshape(n_queries, n_models)
    if np.isnan(pair_mean).any():
        known = np.isfinite(pair_mean)
        with np.errstate(invalid="ignore", divide="ignore"):
            model_mean = np.where(known, pair_mean, 0.0).sum(axis=0) / known.sum(axis=0)
        without = [models[m] for m in np.flatnonzero(np.isnan(model_mean))]
        if without:
            raise DataValidationError(
                f"outcomes column 'cost' is missing for every observation of model(s) {without} "
                "while other models have costs; supply them or drop the cost column"
            )
        n_filled = int(np.isnan(pair_mean).sum())
        logger.info("%d (query, model) pair(s) without cost get their model's mean cost", n_filled)
        pair_mean = np.where(np.isnan(pair_mean), model_mean[None, :], pair_mean)
    low, high = float(pair_mean.min()), float(pair_mean.max())
    scale = high - low if high > low else 1.0
    cost = np.where(finite, raw_cost, pair_mean.reshape(-1)[pair])
    return (cost - low) / scale, True, (low, high)


def observation_subsets(
    outcomes: pd.DataFrame | RepeatedObservations,
) -> dict[str, RepeatedObservations | None]:
    """The three observation subsets; a subset where no pair has two observations is ``None``.

    ``"input"``: rewrites (``decode_id == 0``); ``"output"``: decodes of the original
    (``variant_id == 0``); ``"both"``: all observations.

    Parameters
    ----------
    outcomes : DataFrame or RepeatedObservations
        Long outcomes table or grouped observations.

    Returns
    -------
    dict
        ``{"input", "output", "both"}`` to :class:`RepeatedObservations` or None.
    """
    obs = repeated_observations(outcomes)
    out: dict[str, RepeatedObservations | None] = {}
    for name in SUBSETS:
        part = obs.subset_of(name)
        out[name] = part if part.n_queries and part.has_repeats else None
    return out


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
        self, cost_weight: float = DEFAULT_LAMBDA, beta: float = DEFAULT_BETA
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

    def select_queries(self, query_mask: np.ndarray) -> CapabilityDistributions:
        """Keep the queries where ``query_mask`` is true (rows in the same order).

        Parameters
        ----------
        query_mask : ndarray of bool, shape (n_queries,)
            Queries to keep.

        Returns
        -------
        CapabilityDistributions
        """
        mask = np.asarray(query_mask)
        return replace(
            self,
            query_ids=self.query_ids[mask],
            n_obs=self.n_obs[mask],
            mu_q=self.mu_q[mask],
            sigma_q=self.sigma_q[mask],
            mu_c=self.mu_c[mask],
        )

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
                "n_obs": self.n_obs.reshape(-1),
                "mu_q": self.mu_q.reshape(-1),
                "sigma_q": self.sigma_q.reshape(-1),
                "mu_c": self.mu_c.reshape(-1),
            }
        )


def capability_distributions(
    outcomes: pd.DataFrame | RepeatedObservations, subset: str = "both"
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


def argmax_sets(utilities: np.ndarray, tol: float = _TIE_TOL) -> np.ndarray:
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


def soft_labels(utilities: np.ndarray, tau: float = DEFAULT_TAU) -> np.ndarray:
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
    scores, costs = single_shot_draws(obs, 1, random_state)
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
