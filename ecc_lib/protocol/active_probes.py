"""Active probes: choose which comparison a new query spends its probe on.

Beyond the ECC paper (``docs/design.md`` section 5). The paper's protocol reveals the *first* sampled
(non-tie) pair of a test query as its probe. Here a probe strategy picks the pair:

- ``"first"``: the protocol's first sampled comparisons (today's behaviour);
- ``"random"``: uniformly among the candidate pairs (seeded);
- ``"active"``: greedily, the candidate whose outcome is expected to reduce the entropy of the
  query's cluster posterior the most, given its embedding and the probes already revealed.

Candidates of a query are all pairs of models observed on it (a deployed router does not know
which pairs tie, so a tie spends the probe and is evidence too, issue 23; ``ties="drop"`` keeps
only pairs with a winner) that are neither among its scored pairs nor already probed; a
candidate's outcome is read from the score matrix (``y = 1`` when ``b`` scored higher, ``0.5``
for a tie).

Expected entropy of candidate ``(a, b)`` for query ``q`` with current posterior ``r_q``
(``softmax(base_q + L_q / (n_q T))``, ``base_q`` the log responsibilities without a probe,
``L_q`` the summed log-likelihood of the ``n_q`` revealed probes, averaged as in ECC's inference):

    p_k = sigmoid(theta_kb - theta_ka),  P(b wins) = sum_k r_qk p_k
    r^y_q = softmax(base_q + (L_q + log P_k(y)) / ((n_q + 1) T)),  y in {a wins, b wins}
    EH(a, b) = P(b wins) H(r^1_q) + (1 - P(b wins)) H(r^0_q)

Everything runs over candidate rows (one row per query and pair), never a loop over pairs.
The greedy choice (:func:`active_steps`) serves both :func:`probes_from_scores` here (candidates: every
existing pair of the score matrix that is not scored) and the protocol's ``"active"`` strategy
:func:`ecc_lib.protocol.probes.probe_active` (candidates: the protocol's candidate rows).
"""

from __future__ import annotations

import functools
import logging

import numpy as np
from scipy.special import expit, log_softmax

from ecc_lib import defaults
from ecc_lib.bradley_terry import log_sigmoid
from ecc_lib.data.comparisons import DEFAULT_TIE_TOLERANCE, Comparisons, snap_ties
from ecc_lib.data.splits import probe_models, split_probe
from ecc_lib.ecc.mixture import evidence

logger = logging.getLogger(__name__)

SCORE_MATRIX_STRATEGIES: tuple[str, ...] = ("first", "random", "active")
"""Strategies :func:`probes_from_scores` knows (the registry of every strategy is
:data:`ecc_lib.protocol.probes.PROBE_STRATEGIES`)."""
ACTIVE_CRITERIA: tuple[str, ...] = ("entropy", "predictive")
ROW_BLOCK = 65536
CELL_BLOCK = 4_000_000  # rows x model pairs per block of the predictive criterion


def _entropy(log_r: np.ndarray) -> np.ndarray:
    r = np.exp(log_r)
    return -np.einsum("ij,ij->i", r, np.where(r > 0, log_r, 0.0))


def _binary_entropy(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-12, 1.0 - 1e-12)
    return -(p * np.log(p) + (1.0 - p) * np.log1p(-p))


def candidate_pairs(
    scores: np.ndarray,
    exclude: list[Comparisons] | tuple[Comparisons, ...] = (),
    *,
    ties: str = "half",
    exclude_models: np.ndarray | None = None,
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
) -> Comparisons:
    """Every model pair that exists for each query, minus excluded pairs, with its outcome.

    Parameters
    ----------
    scores : ndarray, shape (n_queries, M)
        Mean score per (query, model), NaN where missing.
    exclude : sequence of Comparisons
        Pairs (in either orientation) to leave out, e.g. the scored pairs and the revealed probes.
    ties : {"half", "drop"}, default "half"
        ``"half"``: every pair of models observed on the query is a candidate, a tied pair with
        ``y = 0.5`` (a deployed router does not know in advance which pairs tie; a tie spends
        the probe and is evidence too, issue 23); ``"drop"``: only pairs with a winner.
    exclude_models : ndarray of bool, shape (n_queries, M), optional
        Models a query's candidates must not contain (the leak-free rule: the models of its
        scored pairs).
    tie_tolerance : float, default 1e-4
        Scores within this distance tie (:func:`ecc_lib.data.comparisons.snap_ties`).

    Returns
    -------
    Comparisons
        One row per candidate, ``model_a < model_b``, ``y`` from the scores (0.5 for a tie).
        ``query_ids`` are positions ``"0" .. "n-1"``.
    """
    s = snap_ties(np.asarray(scores, dtype=float), tolerance=tie_tolerance)
    n, m = s.shape
    ia, ib = np.triu_indices(m, k=1)
    if ties not in ("drop", "half"):
        raise ValueError(f"ties must be 'drop' or 'half', got {ties!r}")
    ok = np.isfinite(s[:, ia]) & np.isfinite(s[:, ib])
    if ties == "drop":
        ok &= s[:, ia] != s[:, ib]
    if exclude_models is not None:
        ok &= ~exclude_models[:, ia] & ~exclude_models[:, ib]
    code = np.full((m, m), -1, dtype=np.int64)
    code[ia, ib] = np.arange(len(ia))
    code[ib, ia] = np.arange(len(ia))
    for comp in exclude:
        ok[comp.query, code[comp.model_a, comp.model_b]] = False
    q, p = np.nonzero(ok)
    a, b = ia[p], ib[p]
    sa, sb = s[q, a], s[q, b]
    y = np.where(sb > sa, 1.0, np.where(sb < sa, 0.0, 0.5))
    return Comparisons(
        query=q.astype(np.int64),
        model_a=a.astype(np.int64),
        model_b=b.astype(np.int64),
        y=y,
        query_ids=np.arange(n).astype(str),
        models=tuple(str(i) for i in range(m)),
    )


def expected_entropy(
    theta: np.ndarray,
    base_log_r: np.ndarray,
    probe_loglik: np.ndarray,
    n_revealed: np.ndarray,
    temperature: float,
    query: np.ndarray,
    model_a: np.ndarray,
    model_b: np.ndarray,
    *,
    criterion: str = "entropy",
) -> np.ndarray:
    """Expected posterior entropy after revealing each candidate pair.

    Parameters
    ----------
    theta : ndarray, shape (K, M)
        Cluster BT scores.
    base_log_r : ndarray, shape (n, K)
        Log responsibilities of each query without a probe (embedding, prior).
    probe_loglik : ndarray, shape (n, K)
        Summed log-likelihood of each query's revealed probes under each cluster.
    n_revealed : ndarray of int, shape (n,)
        Probes revealed so far per query.
    temperature : float
    query, model_a, model_b : ndarray of int, shape (R,)
        Candidate rows.
    criterion : {"entropy", "predictive"}, default "entropy"
        ``"entropy"``: entropy of the cluster posterior ``H(r^y_q)``. ``"predictive"``: summed
        binary entropy of the predicted outcomes of all model pairs,
        ``sum_{i<j} h(sum_k r^y_qk sigmoid(theta_ki - theta_kj))``, i.e. the uncertainty left
        about the query's comparisons rather than about its cluster (clusters with near-equal
        profiles then no longer count as uncertainty). Costs ``R x M(M-1)/2`` per block.

    Returns
    -------
    ndarray, shape (R,)
    """
    if criterion not in ACTIVE_CRITERIA:
        raise ValueError(f"criterion must be one of {ACTIVE_CRITERIA}, got {criterion!r}")
    n_rev = np.asarray(n_revealed, dtype=float)
    block = ROW_BLOCK
    if criterion == "predictive":
        m = theta.shape[1]
        ia, ib = np.triu_indices(m, k=1)
        pair_win = expit(theta[:, ia] - theta[:, ib])  # (K, P)
        block = max(1, min(ROW_BLOCK, CELL_BLOCK // max(len(ia), 1)))

        def uncertainty(log_r):
            return _binary_entropy(np.exp(log_r) @ pair_win).sum(axis=1)
    else:
        uncertainty = _entropy
    now = base_log_r + probe_loglik / (np.maximum(n_rev, 1.0)[:, None] * temperature)
    log_r_now = log_softmax(now, axis=1)
    out = np.empty(len(query))
    for start in range(0, len(query), block):
        rows = slice(start, start + block)
        q, a, b = query[rows], model_a[rows], model_b[rows]
        diff = (theta[:, b] - theta[:, a]).T  # (R, K): logit that b wins
        p_b = np.einsum("rk,rk->r", np.exp(log_r_now[q]), expit(diff))
        scale = 1.0 / ((n_rev[q] + 1.0) * temperature)
        base, ll = base_log_r[q], probe_loglik[q]
        h_b = uncertainty(log_softmax(base + (ll + log_sigmoid(diff)) * scale[:, None], axis=1))
        h_a = uncertainty(log_softmax(base + (ll + log_sigmoid(-diff)) * scale[:, None], axis=1))
        out[rows] = p_b * h_b + (1.0 - p_b) * h_a
    return out


def probe_temperature(model) -> float | None:
    """The softmax temperature an active probe choice reads from ``model``, or ``None``.

    ``None`` where the model has no usable temperature: it has no ``temperature`` attribute (the
    global BT model), the attribute is ``None`` (an :class:`~ecc_lib.ecc.cv.ECCCV` whose chosen
    candidate is the global or human-label model, issue 36), or it is not a finite positive
    number. Such a model has nothing to choose: its active probes are the first candidates.

    Parameters
    ----------
    model : estimator or None

    Returns
    -------
    float or None
    """
    value = getattr(model, "temperature", None) if model is not None else None
    if value is None or isinstance(value, bool):
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if np.isfinite(value) and value > 0 else None


def _first_per_query(query: np.ndarray, key: np.ndarray, n_queries: int) -> np.ndarray:
    """Row index of the smallest ``key`` per query (-1 where a query has no row)."""
    order = np.lexsort((key, query))
    q_sorted = query[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = q_sorted[1:] != q_sorted[:-1]
    pick = np.full(n_queries, -1, dtype=np.int64)
    pick[q_sorted[first]] = order[first]
    return pick


def active_steps(
    comparisons: Comparisons,
    candidates: np.ndarray,
    model,
    embeddings: np.ndarray | None,
    labels,
    *,
    n_probes: int,
    criterion: str = "entropy",
) -> list[np.ndarray]:
    """Greedy active probes: at each of ``n_probes`` steps, the candidate row of each query whose
    outcome leaves the smallest expected uncertainty (:func:`expected_entropy`), given the probes
    revealed at the earlier steps.

    Parameters
    ----------
    comparisons : Comparisons
        Rows to choose from (with their outcomes), grouped by query.
    candidates : ndarray of bool, shape (len(comparisons),)
        Rows that may be chosen.
    model : fitted ECC-like estimator
        Needs ``theta_``, ``temperature`` and ``predict_responsibilities``; a model without a
        temperature (:func:`probe_temperature` is ``None``) gets the first candidate rows of each
        query.
    embeddings : ndarray, shape (n_queries, d), optional
        Of the queries (rows aligned to ``comparisons.query_ids``).
    labels : array-like, optional
        Categories of the queries (passed to ``predict_responsibilities``).
    n_probes : int
        Steps (probes per query at most).
    criterion : {"entropy", "predictive"}, default "entropy"
        See :func:`expected_entropy`.

    Returns
    -------
    list of ndarray of int
        Per step, the chosen rows of ``comparisons`` (at most one per query, in query order);
        the list stops early when the candidates run out.
    """
    n = comparisons.n_queries
    temperature = probe_temperature(model)
    if temperature is not None:
        resp = model.predict_responsibilities(embeddings, None, "embedding", labels)
        base = log_softmax(np.log(np.clip(resp, 1e-300, None)), axis=1)
        loglik = np.zeros_like(base)
    n_rev = np.zeros(n, dtype=np.int64)
    chosen = np.zeros(len(comparisons), dtype=bool)
    steps = []
    for _ in range(n_probes):
        rows = np.flatnonzero(candidates & ~chosen)
        if len(rows) == 0:
            break
        key = rows  # without a temperature nothing to choose: the first candidates
        if temperature is not None:
            key = expected_entropy(
                model.theta_,
                base,
                loglik,
                n_rev,
                temperature,
                comparisons.query[rows],
                comparisons.model_a[rows],
                comparisons.model_b[rows],
                criterion=criterion,
            )
        pick = _first_per_query(comparisons.query[rows], key, n)
        picked = rows[pick[pick >= 0]]
        chosen[picked] = True
        steps.append(picked)
        if temperature is not None:
            step = comparisons.take(picked)
            n_rev[step.query] += 1
            loglik += evidence(model.theta_, step)  # one comparison per query: its log-likelihood
    return steps


def probes_from_scores(
    model,
    scores: np.ndarray,
    test: Comparisons,
    *,
    n_probes: int = defaults.N_PROBES,
    strategy: str = "active",
    score_from: int | None = None,
    embeddings: np.ndarray | None = None,
    labels=None,
    random_state: int | np.random.Generator | None = 0,
    ties: str = "half",
    criterion: str = "entropy",
    scored: Comparisons | None = None,
    outside_scored: bool = False,
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
) -> Comparisons:
    """Probe comparisons of the test queries under a probe strategy.

    Parameters
    ----------
    model : fitted ECC-like estimator
        Needs ``theta_``, ``temperature`` and ``predict_responsibilities`` (``"active"`` only).
    scores : ndarray, shape (n_test, M)
        Mean score per (test query, model), NaN where missing; rows follow ``test.query_ids``.
    test : Comparisons
        The test queries' sampled comparisons (the ``"first"`` strategy takes their leading rows).
    n_probes : int, default 1
    strategy : {"first", "random", "active"}
    score_from : int, optional
        Comparisons of a test query from this position on are scored and never probed (default
        ``n_probes``).
    embeddings : ndarray, shape (n_test, d), optional
        Test embeddings (``"active"``).
    labels : array-like, optional
        Test categories (passed to ``predict_responsibilities``).
    random_state : int or Generator, optional
        Seed of ``"random"``.
    ties : {"half", "drop"}, default "half"
        Whether tied pairs are candidates (see :func:`candidate_pairs`; default: every pair of
        models, a tie spends the probe and counts half).
    criterion : {"entropy", "predictive"}, default "entropy"
        Uncertainty that ``"active"`` minimises (see :func:`expected_entropy`).
    scored : Comparisons, optional
        The scored pairs (default: the rows of ``test`` from position ``score_from`` on); never
        candidates.
    outside_scored : bool, default False
        Only pairs of models that appear in none of the query's scored pairs (the leak-free
        rule of :func:`ecc_lib.protocol.leak_free.make_leak_free`).
    tie_tolerance : float, default 1e-4
        See :func:`candidate_pairs`.

    Returns
    -------
    Comparisons
        At most ``n_probes`` rows per query (fewer when the candidates run out, logged), coded
        like ``test``.
    """
    if strategy not in SCORE_MATRIX_STRATEGIES:
        raise ValueError(
            f"probe_strategy must be one of {SCORE_MATRIX_STRATEGIES}, got {strategy!r}"
        )
    if n_probes < 0:
        raise ValueError(f"n_probes must be >= 0, got {n_probes}")
    score_from = n_probes if score_from is None else score_from
    if score_from < n_probes:
        raise ValueError(f"score_from ({score_from}) must be >= n_probes ({n_probes})")
    scores = np.asarray(scores, dtype=float)
    if scores.shape != (test.n_queries, test.n_models):
        raise ValueError(
            f"scores have shape {scores.shape}; expected ({test.n_queries}, {test.n_models}) "
            "(one row per test query, one column per model)"
        )
    if strategy == "first":
        return split_probe(test, n_probes=n_probes)[0]
    if scored is None:
        scored = split_probe(test, n_probes=score_from)[1]
    n = test.n_queries
    chosen: list[Comparisons] = []
    banned = probe_models(scored) if outside_scored else None
    candidates = functools.partial(
        candidate_pairs, scores, ties=ties, exclude_models=banned, tie_tolerance=tie_tolerance
    )
    if strategy == "active":
        cand = candidates([scored])
        every = np.ones(len(cand), dtype=bool)
        steps = active_steps(
            cand, every, model, embeddings, labels, n_probes=n_probes, criterion=criterion
        )
        chosen += [cand.take(rows) for rows in steps]
    else:
        rng = np.random.default_rng(random_state)
        for _ in range(n_probes):
            cand = candidates([scored, *chosen])
            pick = _first_per_query(cand.query, rng.random(len(cand)), n)
            chosen.append(cand.take(pick[pick >= 0]))
    # the steps' rows (coded by position like the test queries), coded as ``test``
    empty = {"query": np.int64, "model_a": np.int64, "model_b": np.int64, "y": np.float64}
    probe = Comparisons(
        **{
            key: np.concatenate([getattr(c, key) for c in chosen]) if chosen else np.zeros(0, dt)
            for key, dt in empty.items()
        },
        query_ids=test.query_ids,
        models=test.models,
    )
    n_rev = np.bincount(probe.query, minlength=n)
    if (n_rev < n_probes).any():
        logger.info(
            "probes_from_scores: %d of %d test queries ran out of candidate pairs before %d probes",
            int((n_rev < n_probes).sum()),
            n,
            n_probes,
        )
    order = np.argsort(probe.query, kind="stable")
    return probe.take(order)


__all__: list[str] = []
