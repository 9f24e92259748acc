"""Probe and scored pairs of the test queries, and the probe's leak.

In the ECC paper's protocol (Wu, Silwal & Zhang 2026, arXiv 2605.17110; ``docs/design.md`` section 3) a
test query's first sampled comparison is its probe and the others are scored
(:func:`probe_candidate_rows`). Pairs are drawn among non-tie pairs, so with binary scores a probe
"A beat B" decides every scored pair that contains A or B: the probe *leaks* (issue 16). This
module says which models a query's probe names (:func:`probe_models`), which scored pairs touch
them (:func:`touching_probe`) or share none of them (:func:`disjoint_from_probe`), and builds the
leak-free protocol (:func:`make_leak_free`), which redraws each test query's probe among pairs of
models that appear in none of its scored pairs. The gains on touching and disjoint pairs are read
by :func:`ecc_lib.protocol.scoring.score_methods`.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np

from ecc_lib import defaults
from ecc_lib.data.comparisons import Comparisons, snap_ties
from ecc_lib.data.splits import probe_models
from ecc_lib.protocol.data import ProtocolData

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------------
# which test comparisons are probes and which are scored


def probe_candidate_rows(
    data: ProtocolData, *, n_probes: int = defaults.N_PROBES, score_from: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Which rows of ``data.test`` may be probes and which are scored.

    In the paper's protocol (``data.probe_candidates is None``) a test query's first
    ``score_from`` comparisons (default ``n_probes``) are candidates and the others are scored; a
    leak-free :class:`~ecc_lib.protocol.data.ProtocolData` carries its own candidates.

    Parameters
    ----------
    data : ProtocolData
        The train/test split.
    n_probes : int, default 1
        Probes per test query (at least 0).
    score_from : int, optional
        Rank within its query from which a comparison is scored (default ``n_probes``; at least
        ``n_probes``); not allowed when ``data.probe_candidates`` is set.

    Returns
    -------
    candidates, scored : ndarray of bool
        Masks over the rows of ``data.test``; disjoint.
    """
    if n_probes < 0:
        raise ValueError(f"n_probes must be >= 0, got {n_probes}")
    test = data.test
    if data.probe_candidates is not None:
        if score_from is not None:
            raise ValueError("score_from applies to the paper's protocol, not to explicit probes")
        candidates = np.asarray(data.probe_candidates, dtype=bool)
        if candidates.shape != (len(test),):
            raise ValueError("probe_candidates must have one entry per test comparison")
        return candidates, ~candidates
    score_from = n_probes if score_from is None else score_from
    if score_from < n_probes:
        raise ValueError(f"score_from ({score_from}) must be >= n_probes ({n_probes})")
    candidates = rank_within_query(test.query) < score_from
    return candidates, ~candidates


def rank_within_query(query: np.ndarray) -> np.ndarray:
    """Position of each row among its query's rows.

    Parameters
    ----------
    query : ndarray of int
        Query index per row, grouped by query (sorted).

    Returns
    -------
    ndarray of int
        0 for a query's first row, 1 for its second ...
    """
    if len(query) and np.any(np.diff(query) < 0):
        raise ValueError("comparisons must be grouped by query (sorted query column)")
    starts = np.searchsorted(query, query, side="left")
    return np.arange(len(query)) - starts


# --------------------------------------------------------------------------------------------------
# the leak-free protocol


def make_leak_free(
    data: ProtocolData,
    *,
    n_probes: int = defaults.N_PROBES,
    random_state: int | np.random.Generator | None = defaults.SEED,
    outcomes=None,
) -> ProtocolData:
    """The leak-free protocol: redraw each test query's probe among pairs whose models appear in
    no scored pair.

    The scored pairs stay those of the paper's protocol (a test query's comparisons after its
    first ``n_probes``). The probes are drawn (uniformly, seeded) among the query's non-tie pairs
    of the full score matrix whose two models appear in none of its scored pairs, so a probe
    outcome decides no scored pair. Where fewer than ``n_probes`` such pairs exist the query gets
    as many as there are (possibly none: it is then scored from its embedding alone); the number
    of such queries is logged and kept in ``params["n_short_probe_queries"]``.

    Parameters
    ----------
    data : ProtocolData
        From :func:`~ecc_lib.protocol.data.prepare_protocol` (paper protocol).
    n_probes : int, default 1
        Probes per test query.
    random_state : int or Generator, optional
        Seed of the probe draw (default 42, the protocol's seed :data:`~ecc_lib.protocol.data.PAPER_SEED`).

    Returns
    -------
    ProtocolData
        A copy whose ``test`` holds the new probes first and the scored pairs after them, with
        ``probe_candidates`` marking the probes.
    """
    if n_probes < 1:
        raise ValueError(f"n_probes must be >= 1 for a leak-free probe, got {n_probes}")
    if data.probe_candidates is not None:
        raise ValueError("data already carry explicit probe candidates (leak-free twice?)")
    test = data.test
    candidates, scored_mask = probe_candidate_rows(data, n_probes=n_probes)
    scored = test.take(scored_mask)
    n_test, m = test.n_queries, test.n_models
    used = probe_models(scored)
    scores = snap_ties(
        data.scores[data.test_mask], tolerance=float(data.params.get("tie_tolerance", 0.0))
    )
    ia, ib = np.triu_indices(m, k=1)
    left, right = scores[:, ia], scores[:, ib]
    ok = np.isfinite(left) & np.isfinite(right) & (left != right)
    ok &= ~used[:, ia] & ~used[:, ib]
    rng = np.random.default_rng(random_state)
    keys = rng.random(ok.shape)
    keys[~ok] = np.inf
    order = np.argsort(keys, axis=1, kind="stable")[:, :n_probes]
    chosen = np.take_along_axis(ok, order, axis=1)
    rows, cols = np.nonzero(chosen)
    pair = order[rows, cols]
    y = (right[rows, pair] > left[rows, pair]).astype(float)
    n_short = int((chosen.sum(axis=1) < n_probes).sum())
    if n_short:
        logger.info(
            "leak-free probes: %d of %d test queries have fewer than %d pair(s) of models outside "
            "their scored pairs and get fewer probes",
            n_short,
            n_test,
            n_probes,
        )
    query = np.concatenate([rows, scored.query]).astype(np.int64)
    is_probe = np.concatenate([np.ones(len(rows), bool), np.zeros(len(scored), bool)])
    order_rows = np.lexsort((~is_probe, query))
    new_test = Comparisons(
        query=query[order_rows],
        model_a=np.concatenate([ia[pair], scored.model_a]).astype(np.int64)[order_rows],
        model_b=np.concatenate([ib[pair], scored.model_b]).astype(np.int64)[order_rows],
        y=np.concatenate([y, scored.y])[order_rows],
        query_ids=test.query_ids,
        models=test.models,
    )
    if data.params.get("evidence") == "soft":
        if outcomes is None:
            raise ValueError(
                "make_leak_free needs the outcomes under soft evidence (the probes' soft outcomes)"
            )
        from ecc_lib.ecc.soft_evidence import soft_outcomes

        new_test = soft_outcomes(outcomes, new_test)
    params = {
        **data.params,
        "leak_free": True,
        "leak_free_n_probes": n_probes,
        "n_short_probe_queries": n_short,
    }
    return replace(data, test=new_test, probe_candidates=is_probe[order_rows], params=params)


__all__ = [
    "make_leak_free",
]
