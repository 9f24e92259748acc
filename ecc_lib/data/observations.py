"""Observations grouped by (query, model) pair: the input of DARS and its diagnostics.

:func:`repeated_observations` turns a long outcomes table (:mod:`ecc_lib.data.schema`) into a
:class:`RepeatedObservations`: one complete (query x model) grid whose pairs may hold several
observations (rewrites x decodes), with costs min-max normalised over the pair means of the dataset.
:mod:`ecc_lib.dars.distributions` summarises it into capability distributions and labels,
:mod:`ecc_lib.dars.label_instability` measures how unstable single-shot labels drawn from it are.

Observation subsets (project decision): ``"input"`` = observations with ``decode_id == 0``
(rewrites of the query, first decode), ``"output"`` = observations with ``variant_id == 0``
(repeated decodes of the original), ``"both"`` = all observations.

Everything is vectorised: observations are sorted once by (query, model) pair and every statistic is
a ``bincount`` over pair indices.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ecc_lib.data.schema import (
    REQUIRED_OUTCOME_COLUMNS,
    DataValidationError,
    QueryModelAxes,
    require_columns,
    source_prefix,
    validate_outcomes,
)

logger = logging.getLogger(__name__)

SUBSETS = ("input", "output", "both")
"""Observation subsets: rewrites only, decodes only, all."""


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

    def _keep_queries(self, query_mask: np.ndarray) -> RepeatedObservations:
        # queries left out by the mask are not incomplete ones: ``dropped_query_ids`` is empty
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


def _group_counts(pair: np.ndarray, n_queries: int, n_models: int) -> tuple[np.ndarray, np.ndarray]:
    # start and count of each (query, model) pair's observations, shape (n_queries, n_models)
    count = np.bincount(pair, minlength=n_queries * n_models).astype(np.int64)
    start = np.cumsum(count) - count
    return start.reshape(n_queries, n_models), count.reshape(n_queries, n_models)


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
    start, count = _group_counts(pair, int(query_mask.sum()), n_models)
    return replace(
        obs,
        query_ids=obs.query_ids[query_mask],
        score=obs.score[keep],
        cost=obs.cost[keep],
        variant_id=obs.variant_id[keep],
        decode_id=obs.decode_id[keep],
        pair=pair,
        start=start,
        count=count,
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
        Run :func:`ecc_lib.data.schema.validate_outcomes` first (missing columns, scores outside
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
    where = source_prefix(source)
    if validate:
        frame = validate_outcomes(outcomes, source=source)
    else:
        require_columns(outcomes, REQUIRED_OUTCOME_COLUMNS, "outcomes", source)
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
    if partial.any():
        first = int(np.flatnonzero(partial)[0])
        lacking = [models[m] for m in np.flatnonzero(~present[first])]
    if partial.all():  # nothing would be left (issue 36: a traceback further on)
        raise DataValidationError(
            f"{where}no query is answered by every model ({n_queries} queries, {n_models} "
            f"models), and DARS compares every model on each query; leave out the models that "
            f"answered few queries or collect the missing answers; first: query_id "
            f"{query_ids[first]!r} has no observation of {lacking}"
        )
    if partial.any() and incomplete == "raise":
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
    variant, decode = (
        frame[c].to_numpy(dtype=np.int64)
        if c in frame.columns
        else np.zeros(len(frame), dtype=np.int64)
        for c in ("variant_id", "decode_id")
    )
    if np.any(np.isfinite(raw_cost) & (raw_cost < 0)):
        bad = int(np.flatnonzero(np.isfinite(raw_cost) & (raw_cost < 0))[0])
        raise DataValidationError(f"{where}outcomes column 'cost' must be >= 0; first at row {bad}")

    order = np.argsort(pair, kind="stable")
    pair, score, raw_cost, variant, decode = (
        values[order] for values in (pair, score, raw_cost, variant, decode)
    )
    cost, cost_available, cost_scale = normalise_cost(pair, raw_cost, n_queries, n_models, models)
    start, count = _group_counts(pair, n_queries, n_models)
    full = RepeatedObservations(
        query_ids=query_ids,
        models=models,
        score=score,
        cost=cost,
        variant_id=variant,
        decode_id=decode,
        pair=pair,
        start=start,
        count=count,
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


def normalise_cost(
    pair: np.ndarray, raw_cost: np.ndarray, n_queries: int, n_models: int, models: tuple[str, ...]
) -> tuple[np.ndarray, bool, tuple[float, float]]:
    """Min-max normalise costs by the range of pair means; fill missing costs.

    Parameters
    ----------
    pair : ndarray of int
        Flat (query, model) pair index of each observation (``query * n_models + model``).
    raw_cost : ndarray of float
        Cost of each observation (NaN where not given).
    n_queries, n_models : int
        The axes.
    models : tuple of str
        Model names (for the log).

    Returns
    -------
    cost : ndarray of float
        Costs scaled to [0, 1] by the lowest and highest pair mean; missing ones filled.
    cost_available : bool
        Whether any cost was given.
    scale : (float, float)
        The ``(low, high)`` pair means used for the scaling.
    """
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


def rescale_cost(
    obs: RepeatedObservations, reference: RepeatedObservations | None = None
) -> RepeatedObservations:
    """``obs`` with its costs min-max normalised by the pair mean costs of ``reference``.

    Routing evaluation fits the cost scale on the training queries only (issue 23: a scale
    computed with the test queries lets them shape what the router is trained on); the test
    queries are mapped with the same affine map, so they may fall outside [0, 1].

    Parameters
    ----------
    obs : RepeatedObservations
    reference : RepeatedObservations, optional
        The observations whose pair mean costs give ``(low, high)`` (default ``obs``).

    Returns
    -------
    RepeatedObservations
        With ``cost`` and ``cost_scale`` replaced (unchanged without costs).
    """
    reference = obs if reference is None else reference
    if not obs.cost_available or reference.n_observations == 0:
        return obs

    def raw(o: RepeatedObservations) -> np.ndarray:
        low, high = o.cost_scale
        return o.cost * (high - low if high > low else 1.0) + low

    # a complete grid: every pair of the reference has an observation, and every raw cost
    _, _, (low, high) = normalise_cost(
        reference.pair, raw(reference), reference.n_queries, reference.n_models, reference.models
    )
    width = high - low if high > low else 1.0
    return replace(obs, cost=(raw(obs) - low) / width, cost_scale=(low, high))


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


__all__ = [
    "observation_subsets",
    "repeated_observations",
]
