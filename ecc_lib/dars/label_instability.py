"""DARS label-instability diagnostics: per-subset summaries of the winner flip rates.

How unstable is a label learned from one sampled answer per (query, model)? (Lai, Hu, Chen, Li, Ye
2026, arXiv 2606.06924; ``docs/design.md`` section 4.) The single-shot winner of a query is the
model with the highest drawn score, ties broken uniformly at random. From the probability ``w_m``
that model ``m`` is that winner we report the three readings of the winner flip rate
(``docs/design.md`` section 4), each beside its chance level:

- *pairwise*: two independent draws name different winners, ``1 - sum_m w_m^2`` (on binary scores
  it mostly counts random tie-breaks among several correct models);
- *strict*: the two draws' sets of top-scoring models are disjoint, so a tie never counts as a
  flip; for binary scores ``prod_m (1 - p_m^2) - 2 z + z^2`` with ``z = prod_m (1 - p_m)``;
- *change over R draws*: the winner is not the same in all of ``R`` independent draws,
  ``1 - sum_m w_m^R`` (the paper's "how often the best model changes across samples");
- *chance*: the same statistic for ``M`` identical models with every score tied:
  ``1 - 1/M``, ``0`` and ``1 - M^(1 - R)``.

All are exact for binary scores and seeded Monte Carlo otherwise (scores compared in float64, so
near-equal scores are not ties), averaged over queries with bootstrap intervals over queries.

The distributions, utility and labels these diagnostics compare against are in
:mod:`ecc_lib.dars.distributions`; the winner probabilities and flip rates in
:mod:`ecc_lib.dars.winners`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ecc_lib.dars.distributions import (
    DEFAULT_BETA,
    DEFAULT_LAMBDA,
    capability_distributions,
    label_shares,
)
from ecc_lib.dars.winners import (
    DEFAULT_N_DRAWS,
    chance_flip_rates,
    default_change_draws,
    single_shot_winners,
)
from ecc_lib.data.observations import (
    RepeatedObservations,
    observation_subsets,
    repeated_observations,
)
from ecc_lib.stats import DEFAULT_N_BOOT, bootstrap_mean_ci

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------
# Diagnostics
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SubsetDiagnostics:
    """Label-instability diagnostics of one observation subset.

    Attributes
    ----------
    subset : str
    per_query : DataFrame
        One row per query: ``query_id, flip, flip_strict, change, tied_top, disagreement,
        unstable_pair_share, mean_sigma`` (the last two NaN for a query with no repeated pair).
    summary : dict
        Means over queries with 95 % bootstrap intervals (``*_ci95``), counts, the flip-rate
        method, the label shares, and ``None`` for anything that does not apply.
    """

    subset: str
    per_query: pd.DataFrame
    summary: dict


def subset_diagnostics(
    obs: RepeatedObservations,
    *,
    cost_weight: float = DEFAULT_LAMBDA,
    beta: float = DEFAULT_BETA,
    method: str = "auto",
    n_draws: int = DEFAULT_N_DRAWS,
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | None = 0,
    change_draws: int | None = None,
) -> SubsetDiagnostics:
    """Diagnostics of one subset of observations (see :func:`label_instability`).

    Parameters
    ----------
    obs : RepeatedObservations
        One subset's observations.
    cost_weight, beta : float
        Utility weights of the distribution-aware label.
    method : {"auto", "exact", "monte_carlo"}
        Flip-rate computation (see :func:`single_shot_winners`).
    n_draws : int
        Monte Carlo draw pairs per query.
    n_boot : int
        Bootstrap resamples of queries.
    random_state : int, optional
        Seed of the Monte Carlo draws and the bootstrap.
    change_draws : int, optional
        ``R`` of the change reading; default :func:`default_change_draws` of ``obs``.

    Returns
    -------
    SubsetDiagnostics
    """
    dist = capability_distributions(obs, subset=obs.subset)
    u = dist.utility(cost_weight=cost_weight, beta=beta)
    winners = single_shot_winners(
        obs, u, method=method, n_draws=n_draws, random_state=random_state, change_draws=change_draws
    )
    q, m = obs.count.shape
    repeated = obs.count >= 2
    low = np.full(q * m, np.inf)
    high = np.full(q * m, -np.inf)
    np.minimum.at(low, obs.pair, obs.score)
    np.maximum.at(high, obs.pair, obs.score)
    disagree = (high > low).reshape(q, m) & repeated
    n_repeated = repeated.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        unstable_share = np.where(n_repeated > 0, disagree.sum(axis=1) / n_repeated, np.nan)
        mean_sigma = np.where(
            n_repeated > 0, (dist.sigma_q * repeated).sum(axis=1) / n_repeated, np.nan
        )
    per_query = pd.DataFrame(
        {
            "query_id": obs.query_ids,
            "flip": winners.flip,
            "flip_strict": winners.strict,
            "change": winners.change,
            "tied_top": winners.tied_top,
            "disagreement": winners.disagreement,
            "unstable_pair_share": unstable_share,
            "mean_sigma": mean_sigma,
        }
    )
    summary: dict = {
        "subset": obs.subset,
        "n_queries": obs.n_queries,
        "n_models": obs.n_models,
        "n_observations": obs.n_observations,
        "observations_per_pair": {
            "min": int(obs.count.min()),
            "median": float(np.median(obs.count)),
            "max": int(obs.count.max()),
        },
        "n_dropped_queries": len(obs.dropped_query_ids),
        "flip_rate_method": winners.method,
        "flip_rate_draws": winners.n_draws,
        "winner_change_rate_r": winners.change_draws,
        "flip_rate_chance": chance_flip_rates(obs.n_models, winners.change_draws),
    }
    for key, column in (
        ("winner_flip_rate", "flip"),
        ("winner_flip_rate_strict", "flip_strict"),
        ("winner_change_rate", "change"),
        ("tied_top_share", "tied_top"),
        ("single_vs_distribution_disagreement", "disagreement"),
        ("unstable_pair_share", "unstable_pair_share"),
        ("mean_sigma", "mean_sigma"),
    ):
        estimate, low, high = bootstrap_mean_ci(
            per_query[column].to_numpy(float), n_boot=n_boot, random_state=random_state
        )
        summary[key] = estimate
        summary[f"{key}_ci95"] = [low, high]
    summary["labels"] = label_shares(u, obs.models)
    return SubsetDiagnostics(subset=obs.subset, per_query=per_query, summary=summary)


def label_instability(
    outcomes: pd.DataFrame | RepeatedObservations,
    *,
    cost_weight: float = DEFAULT_LAMBDA,
    beta: float = DEFAULT_BETA,
    method: str = "auto",
    n_draws: int = DEFAULT_N_DRAWS,
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | None = 0,
    change_draws: int | None = None,
) -> dict[str, SubsetDiagnostics | None]:
    """Single-shot label-instability diagnostics, split by observation subset.

    For each subset (``"input"``: rewrites only, ``"output"``: decodes only, ``"both"``) reports,
    as means over queries with percentile-bootstrap 95 % intervals over queries
    (:func:`ecc_lib.stats.bootstrap_ci`):

    - outcome instability: share of (query, model) pairs whose observations disagree, and mean
      ``sigma_q`` (both over pairs with two or more observations);
    - the three readings of the winner flip rate (DARS paper, section 4; ``docs/design.md``
      section 4): pairwise ``winner_flip_rate`` (two draws name different winners), strict
      ``winner_flip_rate_strict`` (their top sets are disjoint) and ``winner_change_rate`` (the
      winner is not the same in all of ``winner_change_rate_r`` draws), with ``flip_rate_chance``
      (the same for identical, always tied models); exact for binary scores, Monte Carlo
      (``n_draws`` seeded draw pairs) otherwise, named in ``flip_rate_method``;
    - share of single-shot draws whose top score is tied;
    - disagreement of the single-shot winner with ``argmax U`` at ``cost_weight``, ``beta``.

    ``change_draws`` (``R``) defaults to the median number of observations per (query, model) pair
    over all observations and is the same on every side, so the sides compare.

    Parameters
    ----------
    outcomes : DataFrame or RepeatedObservations
        Repeated observations of every (query, model) pair.
    cost_weight : float, default 0.05
        Cost weight lambda of the utility ``U = mu_q - lambda mu_c - beta sigma_q``.
    beta : float, default 0.2
        Weight of the score spread in the utility.
    method : {"auto", "exact", "monte_carlo"}
        Flip-rate computation (see :func:`single_shot_winners`).
    n_draws : int
        Monte Carlo draw pairs per query.
    n_boot : int
        Bootstrap resamples of queries for the 95% intervals.
    random_state : int or None, default 0
        Seed of draws and bootstraps.

    Returns
    -------
    dict
        ``{"input": ..., "output": ..., "both": ...}`` with a :class:`SubsetDiagnostics`, or
        ``None`` for a subset where no (query, model) pair has two observations.
    """
    obs = repeated_observations(outcomes)
    if change_draws is None and obs.n_queries:
        change_draws = default_change_draws(obs.count)
    settings = dict(
        cost_weight=cost_weight,
        beta=beta,
        method=method,
        n_draws=n_draws,
        n_boot=n_boot,
        random_state=random_state,
        change_draws=change_draws,
    )
    return {
        name: None if part is None else subset_diagnostics(part, **settings)
        for name, part in observation_subsets(obs).items()
    }


__all__ = [
    "label_instability",
    "subset_diagnostics",
]
