"""Splits of the comparisons: queries into train and test (:func:`split_queries`), each test
query's comparisons into its probe and the scored rest (:func:`split_probe`), and which scored
pairs touch or avoid the probe's models (:func:`touching_probe`, :func:`disjoint_from_probe`)."""

from __future__ import annotations

import numpy as np

from ecc_lib import defaults
from ecc_lib.data.comparisons import Comparisons


def split_queries(
    n_queries: int,
    *,
    test_size: float = defaults.TEST_SIZE,
    random_state: int | np.random.Generator | None = defaults.SEED,
) -> tuple[np.ndarray, np.ndarray]:
    """Random train/test split of query positions.

    Returns boolean masks ``(train, test)`` of length ``n_queries``; the test part holds
    ``round(test_size * n_queries)`` queries (at least one of each side when ``n_queries >= 2``).

    Parameters
    ----------
    n_queries : int
        Number of queries.
    test_size : float, default 0.2
        Share of queries in the test part.
    random_state : int, Generator or None, default 42
        Seed of the split (the paper's is 42).

    Returns
    -------
    train, test : ndarray of bool, shape (n_queries,)
    """
    if not 0.0 < test_size < 1.0:
        raise ValueError(f"test_size must lie in (0, 1), got {test_size}")
    if n_queries < 2:
        raise ValueError(f"a train/test split needs at least 2 queries, got {n_queries}")
    rng = np.random.default_rng(random_state)
    n_test = int(np.clip(round(test_size * n_queries), 1, n_queries - 1))
    test = np.zeros(n_queries, dtype=bool)
    test[rng.permutation(n_queries)[:n_test]] = True
    return ~test, test


def split_probe(comparisons: Comparisons, *, n_probes: int = 1) -> tuple[Comparisons, Comparisons]:
    """Split each query's comparisons into its first ``n_probes`` (probe) and the rest (scored).

    Queries are kept in both parts with the same coding, so a query without scored pairs simply has
    no rows in the second part.

    Parameters
    ----------
    comparisons : Comparisons
        Comparisons of the test queries.
    n_probes : int, default 1
        Probe comparisons per query.

    Returns
    -------
    probe, scored : Comparisons
        Same query and model coding as ``comparisons``.
    """
    if n_probes < 0:
        raise ValueError(f"n_probes must be >= 0, got {n_probes}")
    query = comparisons.query
    if len(query) and np.any(np.diff(query) < 0):
        order = np.argsort(query, kind="stable")
        comparisons = comparisons.take(order)
        query = comparisons.query
    starts = np.searchsorted(query, query, side="left")
    rank = np.arange(len(query)) - starts
    is_probe = rank < n_probes
    return comparisons.take(is_probe), comparisons.take(~is_probe)


def probe_models(probe: Comparisons) -> np.ndarray:
    """Which models appear in each query's probe (or in any other comparisons of the queries).

    Parameters
    ----------
    probe : Comparisons

    Returns
    -------
    ndarray of bool, shape (n_queries, M)
    """
    touched = np.zeros((probe.n_queries, probe.n_models), dtype=bool)
    touched[probe.query, probe.model_a] = True
    touched[probe.query, probe.model_b] = True
    return touched


def touching_probe(probe: Comparisons | None, scored: Comparisons) -> np.ndarray:
    """Whether each scored comparison shares a model with its query's probe comparisons.

    Parameters
    ----------
    probe : Comparisons or None
        Probe comparisons, coded like ``scored`` (same queries and models); ``None``: no probe.
    scored : Comparisons

    Returns
    -------
    ndarray of bool, shape (len(scored),)
    """
    if probe is None or len(probe) == 0:
        return np.zeros(len(scored), dtype=bool)
    if probe.n_queries != scored.n_queries or probe.n_models != scored.n_models:
        raise ValueError("probe and scored comparisons must share query and model coding")
    seen = probe_models(probe)
    return seen[scored.query, scored.model_a] | seen[scored.query, scored.model_b]


def disjoint_from_probe(scored: Comparisons, probe: Comparisons) -> np.ndarray:
    """Mask of the scored comparisons that share no model with their query's probe (the
    complement of :func:`touching_probe`).

    Parameters
    ----------
    scored, probe : Comparisons
        Same query and model coding.

    Returns
    -------
    ndarray of bool, shape (len(scored),)
    """
    return ~touching_probe(probe, scored)


__all__ = [
    "disjoint_from_probe",
    "split_probe",
]
