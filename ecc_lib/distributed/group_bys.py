"""DARS distributions, labels and the three flip readings from one ``dask.dataframe`` group-by
over partitioned outcomes."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ecc_lib import defaults
from ecc_lib._optional import require

logger = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------------
# DARS statistics as dask.dataframe group-bys


@dataclass(frozen=True)
class DarsStatistics:
    """DARS targets, labels and the three flip readings computed from partitioned outcomes.

    Attributes
    ----------
    distributions : ecc_lib.dars.distributions.CapabilityDistributions
        Queries in sorted ``query_id`` order, models sorted by name.
    utility : ndarray (n_queries, n_models)
    labels : dict
        Share of queries whose ``argmax U`` is each model (:func:`ecc_lib.dars.distributions.label_shares`).
    flip_rates : dict or None
        Per-query means with bootstrap 95 % intervals of the pairwise, strict and change readings
        (exact for binary scores; ``None`` for other scores), with the chance level; over queries
        where every model has an observation.
    """

    distributions: object
    utility: np.ndarray
    labels: dict
    flip_rates: dict | None


def dars_statistics(
    outcomes,
    *,
    cost_weight: float | None = None,
    beta: float | None = None,
    change_draws: int | None = None,
    client=None,
    n_boot: int = defaults.N_BOOT,
    random_state: int | None = 0,
) -> DarsStatistics:
    """DARS distributions, labels and flip readings with one Dask group-by over the outcomes.

    The group-by on ``(query_id, model)`` reduces each partition to sums (count, sum and sum of
    squares of the score, sum and count of the cost, count of binary scores); everything after it
    is a ``queries x models`` table and reuses the in-memory functions (:mod:`ecc_lib.dars.distributions`,
    :mod:`ecc_lib.dars.label_instability`).

    Parameters
    ----------
    outcomes : dask.dataframe.DataFrame or pandas.DataFrame
        Long outcomes with ``query_id, model, score`` and optional ``cost`` (e.g.
        ``dd.read_parquet(folder)`` over many Parquet partitions).
    cost_weight, beta : float, optional
        Utility weights (default: the DARS defaults).
    change_draws : int, optional
        ``R`` of the change reading (default: the median observations per pair, at least 2).
    client : distributed.Client, optional
    n_boot : int
    random_state : int, optional
        Seed of the bootstrap intervals.

    Returns
    -------
    DarsStatistics
    """
    from ecc_lib.dars.distributions import DEFAULT_BETA, DEFAULT_LAMBDA, label_shares

    table, has_cost = _pair_sums(outcomes, client)
    cost_weight = DEFAULT_LAMBDA if cost_weight is None else cost_weight
    beta = DEFAULT_BETA if beta is None else beta
    dist = _distributions(table, has_cost)
    n_obs, models = dist.n_obs, dist.models
    u = dist.utility(cost_weight=cost_weight, beta=beta)
    complete = (n_obs > 0).all(axis=1)
    labels = label_shares(u[complete], models) if complete.any() else {}
    flip = None
    binary = int(table["binary_sum"].sum()) == int(table["score_count"].sum())
    if binary and complete.any():
        flip = _flip_readings(dist, complete, change_draws, n_boot, random_state)
    elif not binary:
        logger.info("dars_statistics: scores are not binary, so no exact flip readings")
    return DarsStatistics(dist, u, labels, flip)


def _pair_sums(outcomes, client) -> tuple:
    """The one group-by: per ``(query_id, model)`` the count, sum and sum of squares of the score,
    the count of binary scores and the cost's count and sum; ``(pandas table, has_cost)``."""
    dd = require("dask.dataframe", extra="dask", purpose="the distributed DARS statistics")
    import pandas as pd

    if isinstance(outcomes, pd.DataFrame):
        outcomes = dd.from_pandas(outcomes, npartitions=4)
    missing = [c for c in ("query_id", "model", "score") if c not in outcomes.columns]
    if missing:
        raise ValueError(f"outcomes are missing column(s) {missing}")
    has_cost = "cost" in outcomes.columns
    frame = outcomes[["query_id", "model", "score"] + (["cost"] if has_cost else [])]
    frame = frame.assign(
        query_id=frame["query_id"].astype(str),
        model=frame["model"].astype(str),
        score2=frame["score"] * frame["score"],
        binary=frame["score"].isin([0.0, 1.0]).astype("int64"),
    )
    aggregations = {"score": ["count", "sum"], "score2": "sum", "binary": "sum"}
    if has_cost:
        aggregations["cost"] = ["count", "sum"]
    grouped = frame.groupby(["query_id", "model"]).agg(aggregations)
    table = client.compute(grouped).result() if client is not None else grouped.compute()
    table.columns = ["_".join(c) if isinstance(c, tuple) else c for c in table.columns]
    return table.reset_index(), has_cost


def _distributions(table, has_cost: bool):
    """The DARS distributions of the group-by's sums (queries and models sorted)."""
    import pandas as pd

    from ecc_lib.dars.distributions import CapabilityDistributions
    from ecc_lib.data.observations import normalise_cost

    query_ids = np.sort(table["query_id"].unique()).astype(str)
    models = tuple(sorted(table["model"].unique()))
    qi = pd.Index(query_ids).get_indexer(table["query_id"])
    mi = pd.Index(models).get_indexer(table["model"])
    shape = (len(query_ids), len(models))

    def dense(column, fill=0.0):
        out = np.full(shape, fill, dtype=float)
        out[qi, mi] = table[column].to_numpy(dtype=float)
        return out

    n_obs = dense("score_count")
    with np.errstate(invalid="ignore", divide="ignore"):
        mu_q = np.where(n_obs > 0, dense("score_sum") / n_obs, np.nan)
        ss = np.maximum(dense("score2_sum") - n_obs * mu_q * mu_q, 0.0)
        sigma_q = np.where(n_obs > 1, np.sqrt(ss / np.maximum(n_obs - 1.0, 1.0)), 0.0)
        if has_cost:
            cost_mean = dense("cost_sum") / dense("cost_count")  # NaN without cost
    if has_cost:
        normalised, cost_available, _ = normalise_cost(
            np.arange(cost_mean.size), cost_mean.reshape(-1), *shape, models
        )
        mu_c = np.where(n_obs > 0, normalised.reshape(shape), np.nan)
    else:
        mu_c, cost_available = np.where(n_obs > 0, 0.0, np.nan), False
    return CapabilityDistributions(
        query_ids=query_ids,
        models=models,
        n_obs=n_obs.astype(np.int64),
        mu_q=mu_q,
        sigma_q=sigma_q,
        mu_c=mu_c if cost_available else np.where(n_obs > 0, 0.0, np.nan),
        cost_available=cost_available,
    )


def _flip_readings(dist, complete: np.ndarray, change_draws, n_boot: int, random_state) -> dict:
    """The exact pairwise, strict and change readings (binary scores) over the ``complete``
    queries, with bootstrap intervals and the chance levels."""
    from ecc_lib.dars.winners import (
        chance_flip_rates,
        change_probability,
        default_change_draws,
        flip_probability,
        strict_flip_probability_exact,
        winner_probabilities_exact,
    )
    from ecc_lib.stats import bootstrap_ci

    n_obs = dist.n_obs.astype(float)
    r = change_draws or default_change_draws(n_obs[n_obs > 0])
    p = dist.mu_q[complete]
    w = winner_probabilities_exact(p)
    readings = {
        "pairwise": flip_probability(w),
        "strict": strict_flip_probability_exact(p),
        "change": change_probability(w, r),
    }
    flip = {"change_draws": int(r), "n_queries": int(complete.sum())}
    chance = chance_flip_rates(len(dist.models), r)
    for name, values in readings.items():
        estimate, low, high = bootstrap_ci(values, n_boot=n_boot, random_state=random_state)
        flip[name] = {"mean": estimate, "ci95": [low, high], "chance": chance[name]}
    return flip


def flip_rate_agreement(stats: DarsStatistics, summary: dict):
    """The Dask flip readings beside the in-memory ones, and their differences.

    Parameters
    ----------
    stats : DarsStatistics
        From :func:`dars_statistics`.
    summary : dict
        ``summary`` of the in-memory :func:`ecc_lib.dars.label_instability.label_instability` result on
        the same observations (the side that pools rewrites and decodes when both exist).

    Returns
    -------
    pandas.DataFrame
        One row per reading (pairwise, strict, change): ``in_memory``, ``dask`` and
        ``difference`` (dask minus in memory); empty when the scores are not binary (Dask gives
        exact readings only for binary scores).
    """
    import pandas as pd

    keys = {
        "pairwise": "winner_flip_rate",
        "strict": "winner_flip_rate_strict",
        "change": "winner_change_rate",
    }
    columns = ["reading", "in_memory", "dask", "difference"]
    if not stats.flip_rates:
        return pd.DataFrame(columns=columns)
    rows = []
    for reading, key in keys.items():
        here, there = summary.get(key), stats.flip_rates[reading]["mean"]
        difference = None if here is None else float(there) - float(here)
        rows.append((reading, here, there, difference))
    return pd.DataFrame(rows, columns=columns)


__all__ = [
    "dars_statistics",
    "flip_rate_agreement",
]
