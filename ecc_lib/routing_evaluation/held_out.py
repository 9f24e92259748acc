"""Held-out truth of the test queries and the per-query metrics of a routing choice.

On each test query the chosen model is scored with the held-out observations of that query
(DARS, Lai et al. 2026, arXiv 2606.06924, section 4): its mean score (overall, over rewrites and
over decodes), the spread of its decodes, its mean normalised cost and its utility
``mu_q - lambda mu_c - beta sigma_q``. The references (best fixed model, a uniformly random model,
the per-query oracle) and the gap closed are scored the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ecc_lib.dars.distributions import (
    DEFAULT_BETA,
    DEFAULT_LAMBDA,
    CapabilityDistributions,
    RepeatedObservations,
    capability_distributions,
)

METRICS = ("score", "score_rewrite", "score_decode", "decode_instability", "cost", "utility")

"""Per-query metrics of a routing choice, as returned by :func:`evaluate_choices`."""


@dataclass(frozen=True)
class HeldOut:
    """Held-out truth of the test queries, every matrix aligned to ``query_ids``.

    Attributes
    ----------
    query_ids : ndarray of str
        The test queries, in row order.
    both : CapabilityDistributions
        All observations.
    rewrites, decodes : CapabilityDistributions or None
        Rewrite observations (``decode_id == 0``) and decode observations (``variant_id == 0``),
        present when the data hold rewrites (``variant_id > 0``) or decodes (``decode_id > 0``);
        rows of queries missing from a subset are NaN.
    """

    query_ids: np.ndarray
    both: CapabilityDistributions
    rewrites: CapabilityDistributions | None
    decodes: CapabilityDistributions | None


def _align(dist: CapabilityDistributions, query_ids: np.ndarray) -> CapabilityDistributions:
    """Rows of ``dist`` re-ordered to ``query_ids``; NaN rows where a query is missing."""
    position = pd.Index(dist.query_ids).get_indexer(query_ids)
    found = position >= 0

    def take(a: np.ndarray) -> np.ndarray:
        out = np.full((len(query_ids), a.shape[1]), np.nan)
        out[found] = a[position[found]]
        return out

    return replace(
        dist,
        query_ids=np.asarray(query_ids),
        n_obs=np.where(found[:, None], dist.n_obs[np.maximum(position, 0)], 0),
        mu_q=take(dist.mu_q),
        sigma_q=take(dist.sigma_q),
        mu_c=take(dist.mu_c),
    )


def held_out_truth(test: RepeatedObservations) -> HeldOut:
    """Capability distributions of the test queries, overall and per observation subset.

    Parameters
    ----------
    test : RepeatedObservations
        Observations of the test queries.

    Returns
    -------
    HeldOut
        All observations, and the rewrite / decode subsets where the data hold them.
    """
    both = capability_distributions(test)
    rewrites = decodes = None
    if test.has_rewrites:
        rewrites = _align(capability_distributions(test, subset="input"), both.query_ids)
    if test.has_decodes:
        decodes = _align(capability_distributions(test, subset="output"), both.query_ids)
    return HeldOut(query_ids=both.query_ids, both=both, rewrites=rewrites, decodes=decodes)


def evaluate_choices(
    choice: np.ndarray,
    truth: HeldOut,
    *,
    cost_weight: float = DEFAULT_LAMBDA,
    beta: float = DEFAULT_BETA,
) -> dict[str, np.ndarray]:
    """Per-query metrics of the chosen models (one model index per test query).

    Parameters
    ----------
    choice : ndarray of int, shape (n_test,)
        Index of the chosen model per test query.
    truth : HeldOut
        Held-out truth (:func:`held_out_truth`).
    cost_weight, beta : float
        Utility weights of ``U = mu_q - cost_weight mu_c - beta sigma_q``.

    Returns
    -------
    dict
        ``score, score_rewrite, score_decode, decode_instability, cost, utility``, each of shape
        (n_test,); a metric that does not apply (no rewrites, no repeated decodes) is all NaN.
    """
    choice = np.asarray(choice, dtype=np.int64)
    n = len(truth.query_ids)
    if choice.shape != (n,):
        raise ValueError(f"choice must have shape ({n},), got {choice.shape}")
    rows = np.arange(n)
    both = truth.both
    nan = np.full(n, np.nan)
    out = {
        "score": both.mu_q[rows, choice],
        "score_rewrite": truth.rewrites.mu_q[rows, choice] if truth.rewrites else nan,
        "score_decode": truth.decodes.mu_q[rows, choice] if truth.decodes else nan,
        "decode_instability": nan,
        "cost": both.mu_c[rows, choice],
        "utility": both.utility(cost_weight=cost_weight, beta=beta)[rows, choice],
    }
    if truth.decodes is not None:
        repeated = truth.decodes.n_obs[rows, choice] >= 2
        out["decode_instability"] = np.where(repeated, truth.decodes.sigma_q[rows, choice], np.nan)
    return out


def expected_random_metrics(
    truth: HeldOut, *, cost_weight: float = DEFAULT_LAMBDA, beta: float = DEFAULT_BETA
) -> dict[str, np.ndarray]:
    """Per-query metrics of a uniformly random choice, as exact expectations over models.

    Parameters
    ----------
    truth : HeldOut
        Held-out truth.
    cost_weight, beta : float
        Utility weights of ``U = mu_q - cost_weight mu_c - beta sigma_q``.

    Returns
    -------
    dict
        The metrics of :func:`evaluate_choices`, averaged over the models.
    """
    per_model = [
        evaluate_choices(
            np.full(len(truth.query_ids), m), truth, cost_weight=cost_weight, beta=beta
        )
        for m in range(truth.both.n_models)
    ]
    return {key: np.mean([pm[key] for pm in per_model], axis=0) for key in METRICS}


def oracle_choices(
    truth: HeldOut, *, cost_weight: float = DEFAULT_LAMBDA, beta: float = DEFAULT_BETA
) -> np.ndarray:
    """Per-query oracle: ``argmax`` of the held-out utility.

    Parameters
    ----------
    truth, cost_weight, beta
        As in :func:`expected_random_metrics`.

    Returns
    -------
    ndarray of int, shape (n_test,)
        The model with the highest held-out utility on each test query.
    """
    return np.argmax(truth.both.utility(cost_weight=cost_weight, beta=beta), axis=1)


def best_fixed_model(
    train: CapabilityDistributions,
    *,
    cost_weight: float = DEFAULT_LAMBDA,
    beta: float = DEFAULT_BETA,
) -> int:
    """Index of the model with the highest mean training utility.

    Parameters
    ----------
    train : CapabilityDistributions
        Training targets.
    cost_weight, beta : float
        Utility weights of ``U = mu_q - cost_weight mu_c - beta sigma_q``.

    Returns
    -------
    int
    """
    return int(np.argmax(train.utility(cost_weight=cost_weight, beta=beta).mean(axis=0)))


def gap_closed(value: float, fixed: float, oracle: float) -> float:
    """``(value - fixed) / (oracle - fixed)``: 0 at the best fixed model, 1 at the oracle.

    Parameters
    ----------
    value, fixed, oracle : float
        Mean utility of a router, of the best fixed model and of the oracle.

    Returns
    -------
    float
        NaN when the oracle does no better than the best fixed model.
    """
    span = oracle - fixed
    return float((value - fixed) / span) if abs(span) > 1e-12 else float("nan")


__all__: list[str] = []
