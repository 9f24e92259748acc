"""Which comparison of a test query is revealed as its probe, and how its evidence counts.

In the ECC paper's protocol (Wu, Silwal & Zhang 2026, arXiv 2605.17110; ``docs/design.md`` section 3)
a test query's first sampled comparison is its probe. Here the choice is a pluggable function
(:data:`PROBE_STRATEGIES`, signature of :func:`probe_first`): ``"first"`` (the paper),
``"random"`` (uniform among the candidates, seeded) and ``"active"`` (the candidate whose outcome
is expected to reduce the uncertainty of the query's cluster posterior the most,
:mod:`ecc_lib.protocol.active_probes`). :func:`select_probes` applies a strategy to a
:class:`~ecc_lib.protocol.data.ProtocolData` split; :func:`probe_responsibilities` turns the probes
into responsibilities with an explicit choice of how several probes count (``"mean"``, the
authors' code, or ``"sum"``, the Bayesian choice).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ecc_lib import defaults
from ecc_lib.data.comparisons import Comparisons
from ecc_lib.ecc.mixture import evidence
from ecc_lib.protocol.active_probes import active_steps, probe_temperature, probes_from_scores
from ecc_lib.protocol.data import ProtocolData
from ecc_lib.protocol.leak_free import probe_candidate_rows, rank_within_query

PROBE_EVIDENCE: tuple[str, ...] = ("mean", "sum")


def probe_first(
    test: Comparisons,
    n_probes: int,
    candidates: np.ndarray,
    *,
    model=None,
    embeddings: np.ndarray | None = None,
    labels: np.ndarray | None = None,
    random_state: int | np.random.Generator | None = None,
) -> np.ndarray:
    """Probe strategy of the paper: a test query's first ``n_probes`` candidate comparisons.

    Every probe strategy has this signature (register new ones in :data:`PROBE_STRATEGIES`, or
    pass the function itself as ``probe_strategy``).

    Parameters
    ----------
    test : Comparisons
        The test queries' comparisons, grouped by query.
    n_probes : int
        Probes per query (fewer where a query has fewer candidates).
    candidates : ndarray of bool, shape (len(test),)
        Rows that may be revealed (scored rows never are).
    model : fitted estimator, optional
        The method whose probe is chosen (an active strategy may use its profiles); ignored here.
    embeddings, labels : ndarray, optional
        Of the test queries (rows aligned to ``test.query_ids``); ignored here.
    random_state : int or Generator, optional
        For randomised strategies; ignored here.

    Returns
    -------
    ndarray of bool, shape (len(test),)
        The probe rows, a subset of ``candidates`` with at most ``n_probes`` rows per query.
    """
    return _first_rows(test, n_probes, np.flatnonzero(np.asarray(candidates, dtype=bool)))


def _first_rows(test: Comparisons, n_probes: int, rows: np.ndarray) -> np.ndarray:
    """The mask of the first ``n_probes`` of ``rows`` per query (rows grouped by query)."""
    chosen = np.zeros(len(test), dtype=bool)
    chosen[rows[rank_within_query(test.query[rows]) < n_probes]] = True
    return chosen


def probe_random(
    test: Comparisons,
    n_probes: int,
    candidates: np.ndarray,
    *,
    model=None,
    embeddings: np.ndarray | None = None,
    labels: np.ndarray | None = None,
    random_state: int | np.random.Generator | None = None,
) -> np.ndarray:
    """Probe strategy: ``n_probes`` candidate comparisons per query drawn uniformly (seeded).

    Parameters
    ----------
    test, n_probes, candidates, model, embeddings, labels
        As in :func:`probe_first` (``model``, ``embeddings`` and ``labels`` are ignored).
    random_state : int or Generator, optional
        Seed of the draw.

    Returns
    -------
    ndarray of bool, shape (len(test),)
        The chosen probe rows.
    """
    rows = np.flatnonzero(np.asarray(candidates, dtype=bool))
    rng = np.random.default_rng(random_state)
    order = np.lexsort((rng.random(len(rows)), test.query[rows]))  # shuffled within each query
    return _first_rows(test, n_probes, rows[order])


def probe_active(
    test: Comparisons,
    n_probes: int,
    candidates: np.ndarray,
    *,
    model=None,
    embeddings: np.ndarray | None = None,
    labels: np.ndarray | None = None,
    random_state: int | np.random.Generator | None = None,
    criterion: str = "entropy",
) -> np.ndarray:
    """Probe strategy ``"active"`` of the protocol (signature of
    :func:`probe_first`): among a query's candidate rows of ``test``, greedily the ones with the
    smallest expected posterior entropy under ``model``
    (:func:`ecc_lib.protocol.active_probes.active_steps`).

    Parameters
    ----------
    test, n_probes, candidates, embeddings, labels, random_state
        As in :func:`probe_first` (``random_state`` is ignored).
    model : fitted estimator
        Needs ``theta_``, ``temperature`` and ``predict_responsibilities``; a model without
        ``temperature`` (the global BT model) has nothing to choose and gets the first candidates.
    criterion : {"entropy", "predictive"}
        See :func:`ecc_lib.protocol.active_probes.expected_entropy`.

    Returns
    -------
    ndarray of bool, shape (len(test),)
    """
    candidates = np.asarray(candidates, dtype=bool)
    if probe_temperature(model) is None or n_probes < 1:
        return probe_first(test, n_probes, candidates)
    chosen = np.zeros(len(test), dtype=bool)
    steps = active_steps(
        test, candidates, model, embeddings, labels, n_probes=n_probes, criterion=criterion
    )
    for rows in steps:
        chosen[rows] = True
    return chosen


ProbeStrategy = Callable[..., np.ndarray]
PROBE_STRATEGIES: dict[str, ProbeStrategy] = {
    "first": probe_first,
    "random": probe_random,
    "active": probe_active,
}


def resolve_probe_strategy(strategy: str | ProbeStrategy) -> ProbeStrategy:
    """The probe-selection function named ``strategy`` (or ``strategy`` itself if callable).

    Parameters
    ----------
    strategy : str or callable
        A key of :data:`PROBE_STRATEGIES`, or a function with the signature of
        :func:`probe_first`.

    Returns
    -------
    callable
        The strategy function.

    Raises
    ------
    ValueError
        An unknown name.
    """
    if callable(strategy):
        return strategy
    if strategy not in PROBE_STRATEGIES:
        raise ValueError(
            f"unknown probe_strategy {strategy!r}; choose from {sorted(PROBE_STRATEGIES)} or pass "
            "a function with the signature of probe_first"
        )
    return PROBE_STRATEGIES[strategy]


def select_probes(
    data: ProtocolData,
    model,
    *,
    n_probes: int = defaults.N_PROBES,
    score_from: int | None = None,
    probe_strategy: str | ProbeStrategy = defaults.PROBE_STRATEGY,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[Comparisons | None, Comparisons, np.ndarray | None, np.ndarray]:
    """The probe and scored comparisons of the test queries for one fitted method.

    ``"first"`` and strategy functions choose among the protocol's candidate rows of
    ``data.test`` (:func:`probe_candidate_rows`). The named strategies ``"random"`` and
    ``"active"`` choose among every pair of models observed on the query that is not scored
    (ties included, read from the score matrix; under the leak-free protocol only pairs of models
    outside the scored pairs): the candidate set of the strategy comparison
    (:func:`ecc_lib.protocol.active_probes.probes_from_scores`), so the main table and the comparison block
    read the same probes (issue 23).

    Parameters
    ----------
    data : ProtocolData
        The train/test split.
    model : fitted estimator or None
        The method whose probes are chosen (passed to the strategy). ``"active"`` needs
        ``theta_`` and ``temperature``; a model without them (the global BT model, which ignores
        probes) gets the first candidates.
    n_probes : int, default 1
        Probes per test query.
    score_from : int, optional
        See :func:`probe_candidate_rows`.
    probe_strategy : str or callable, default "first"
        See :func:`resolve_probe_strategy`.
    random_state : int or Generator, optional
        Passed to the strategy (default 0).

    Returns
    -------
    probe : Comparisons or None
        ``None`` when ``n_probes == 0``.
    scored : Comparisons
    probe_mask : ndarray of bool or None
        Over the rows of ``data.test``; ``None`` when the probes come from the score matrix
        (``"random"`` / ``"active"``).
    scored_mask : ndarray of bool
        Over the rows of ``data.test``.
    """
    candidates, scored_mask = probe_candidate_rows(data, n_probes=n_probes, score_from=score_from)
    scored = data.test.take(scored_mask)
    if n_probes == 0:
        return None, scored, np.zeros(len(data.test), bool), scored_mask
    strategy = resolve_probe_strategy(probe_strategy)
    if isinstance(probe_strategy, str) and probe_strategy in ("random", "active"):
        if probe_strategy == "random" or probe_temperature(model) is not None:
            probe = probes_from_scores(
                model,
                data.scores[data.test_mask],
                data.test,
                n_probes=n_probes,
                strategy=probe_strategy,
                embeddings=data.x_test,
                labels=data.labels_test,
                random_state=random_state,
                scored=scored,
                outside_scored=data.probe_candidates is not None,
                tie_tolerance=float(data.params.get("tie_tolerance", 0.0)),
            )
            return probe, scored, None, scored_mask
        strategy = probe_first
    probe_mask = np.asarray(
        strategy(
            data.test,
            n_probes,
            candidates,
            model=model,
            embeddings=data.x_test,
            labels=data.labels_test,
            random_state=random_state,
        ),
        dtype=bool,
    )
    if probe_mask.shape != (len(data.test),) or (probe_mask & ~candidates).any():
        raise ValueError("a probe strategy must return a boolean mask inside the candidates")
    return data.test.take(probe_mask), scored, probe_mask, scored_mask


def probe_responsibilities(
    model,
    embeddings: np.ndarray | None,
    probe: Comparisons | None,
    *,
    mode: str = "both",
    labels: np.ndarray | None = None,
    probe_evidence: str = defaults.PROBE_EVIDENCE,
) -> np.ndarray:
    """Responsibilities of test queries with an explicit choice of how probes count.

    ``probe_evidence="mean"`` (the authors' code, the default) uses the probe log-likelihood
    averaged over the query's ``n`` probes, ``l_q = (1/n) sum log P_k(outcome)``, as the
    estimators do; ``"sum"`` adds them, ``l_q = sum log P_k(outcome)``, the Bayesian posterior of
    the cluster given ``n`` independent outcomes. With one probe both agree. ``"sum"`` is computed
    from the estimator's own responsibilities ``r`` as ``softmax(log r + (n - 1) l_q / T)``, which
    equals ``softmax((n l_q + lam cos) / T)`` for ECC and its baselines (and leaves the one-hot
    rows of known human labels unchanged).

    Parameters
    ----------
    model : fitted estimator of :mod:`ecc_lib.ecc.estimator`
    embeddings, probe, mode, labels
        As in ``predict_responsibilities``.
    probe_evidence : {"mean", "sum"}

    Returns
    -------
    ndarray, shape (n, K)
    """
    if probe_evidence not in PROBE_EVIDENCE:
        raise ValueError(f"probe_evidence must be one of {PROBE_EVIDENCE}, got {probe_evidence!r}")
    resp = model.predict_responsibilities(embeddings, probe, mode, labels=labels)
    if probe_evidence == "mean" or probe is None or mode == "embedding" or resp.shape[1] == 1:
        return resp
    n_q = probe.pairs_per_query().astype(float)
    if np.all(n_q <= 1):
        return resp
    temperature = getattr(model, "temperature", None)
    if temperature is None:
        raise ValueError(
            f"probe_evidence='sum' needs the estimator's temperature; {type(model).__name__} has "
            "none"
        )
    extra = (n_q - 1.0)[:, None] * evidence(model.theta_, probe) / float(temperature)
    with np.errstate(divide="ignore"):
        score = np.log(resp) + extra
    score -= score.max(axis=1, keepdims=True)
    out = np.exp(score)
    return out / out.sum(axis=1, keepdims=True)


__all__ = [
    "PROBE_STRATEGIES",
    "probe_first",
    "select_probes",
]
