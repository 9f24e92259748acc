"""Experiments built on the ECC protocol: inference modes, probe and K sweeps, diagnostics, new models.

Each function takes a :class:`~ecc_lib.ecc_protocol.ProtocolData` (and fitted methods where it
needs them) from :mod:`ecc_lib.ecc_protocol` and returns plain objects (dataclasses, dicts,
DataFrames) usable from the command line and from notebooks.
"""

from __future__ import annotations

import logging
import re

import numpy as np
import pandas as pd

from ecc_lib.bradley_terry import count_matrix, fit_bt_counts
from ecc_lib.comparisons import (
    Comparisons,
    score_matrix,
    split_probe,
)
from ecc_lib.ecc import (
    ECC,
    GlobalBT,
    _labels_to_str,
    comparison_nll,
    evidence,
)
from ecc_lib.ecc_protocol import (
    MODES,
    PAPER_N_PAIRS,
    PAPER_SEED,
    PAPER_TEST_SIZE,
    ECCEvaluation,
    ProtocolData,
    fit_methods,
    make_methods,
    prepare_protocol,
    score_methods,
)
from ecc_lib.metrics import DEFAULT_N_BOOT, bootstrap_indices, percentile_interval

logger = logging.getLogger(__name__)
HIDDEN_EXAMPLE_CATEGORIES: tuple[str, ...] = ("gpqa",)


# --------------------------------------------------------------------------------------------------
# sweeps


def _long_rows(result: ECCEvaluation, **extra) -> list[dict]:
    rows = []
    for name in result.nll:
        low, high = result.ci95.get(name, (np.nan, np.nan))
        rows.append(
            {
                **extra,
                "method": name,
                "nll": result.nll[name],
                "gain_pct": result.gain.get(name, 0.0),
                "gain_low": low,
                "gain_high": high,
                "accuracy": result.accuracy[name],
            }
        )
    return rows


def evaluate_modes(
    data: ProtocolData,
    fitted: dict,
    modes: tuple[str, ...] = MODES,
    n_probes: int = 1,
    **kwargs,
) -> pd.DataFrame:
    """Gain of every method under each inference mode (one row per mode and method).

    Parameters
    ----------
    data : ProtocolData
        Comparisons, embeddings and split (:func:`prepare_protocol`).
    fitted : dict
        Fitted estimators by method name (:func:`fit_methods`).
    modes : tuple of str
        Inference modes.
    n_probes : int, default 1
        Probe comparisons per test query.
    **kwargs
        Passed to :func:`~ecc_lib.ecc_protocol.score_methods`.

    Returns
    -------
    DataFrame
    """
    rows = []
    for mode in modes:
        result = score_methods(data, fitted, n_probes=n_probes, mode=mode, **kwargs)
        rows += _long_rows(result, mode=mode, n_probes=n_probes)
    return pd.DataFrame(rows)


def sweep_probes(
    data: ProtocolData,
    fitted: dict,
    n_probes: tuple[int, ...] = (1, 2, 3),
    mode: str = "both",
    **kwargs,
) -> pd.DataFrame:
    """Gain versus the number of probes. All values score the same pairs (those after
    ``max(n_probes)``), so rows are comparable.

    Parameters
    ----------
    data : ProtocolData
        Comparisons, embeddings and split (:func:`prepare_protocol`).
    fitted : dict
        Fitted estimators by method name (:func:`fit_methods`).
    n_probes : tuple of int
        Probe counts.
    mode : str, default "both"
        Inference mode.
    **kwargs
        Passed to :func:`~ecc_lib.ecc_protocol.score_methods`.

    Returns
    -------
    DataFrame
        One row per probe count and method.
    """
    score_from = max(n_probes)
    rows = []
    for n in n_probes:
        result = score_methods(data, fitted, n_probes=n, mode=mode, score_from=score_from, **kwargs)
        rows += _long_rows(result, mode=mode, n_probes=n)
    return pd.DataFrame(rows)


def sweep_clusters(
    data: ProtocolData,
    ks: tuple[int, ...] = (5, 10, 20, 30, 50),
    methods: tuple[str, ...] = ("global", "ecc", "emb_only"),
    lam: float = 3.0,
    temperature: float = 0.1,
    random_state: int = PAPER_SEED,
    n_probes: int = 1,
    mode: str = "both",
    ecc_params: dict | None = None,
    **kwargs,
) -> pd.DataFrame:
    """Gain versus the number of clusters ``K`` (methods refitted for each K).

    ``ecc_params`` (``max_iter``, ``n_init``, ``tol`` ...) go to :func:`make_methods`; other
    keyword arguments (``n_boot``, ``confidence`` ...) to :func:`score_methods`.

    Parameters
    ----------
    data : ProtocolData
        Comparisons, embeddings and split (:func:`prepare_protocol`).
    ks : tuple of int
        Cluster counts.
    methods : tuple of str
        Methods refitted for each K.
    lam, temperature, random_state
        As in :func:`~ecc_lib.ecc_protocol.make_methods`.
    n_probes : int, default 1
        Probe comparisons per test query.
    mode : str, default "both"
        Inference mode.
    ecc_params : dict, optional
        EM settings.
    **kwargs
        Passed to :func:`~ecc_lib.ecc_protocol.score_methods`.

    Returns
    -------
    DataFrame
        One row per K and method.
    """
    rows = []
    for k in ks:
        estimators = make_methods(k, lam, temperature, random_state, methods, **(ecc_params or {}))
        fitted, seconds = fit_methods(data, estimators)
        result = score_methods(
            data, fitted, n_probes=n_probes, mode=mode, fit_seconds=seconds, **kwargs
        )
        rows += _long_rows(result, n_clusters=k, mode=mode, n_probes=n_probes)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------------
# diagnostics


def _hard_assignment(model, responsibilities=None) -> np.ndarray:
    resp = model.responsibilities_ if responsibilities is None else responsibilities
    return np.asarray(resp).argmax(axis=1)


def _kendall_tau_b(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kendall tau-b between rows of ``a`` and ``b`` (shape (n, M) each), vectorised."""
    i, j = np.triu_indices(a.shape[1], k=1)
    sa = np.sign(a[:, i] - a[:, j])
    sb = np.sign(b[:, i] - b[:, j])
    denom = np.sqrt((sa != 0).sum(axis=1) * (sb != 0).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (sa * sb).sum(axis=1) / denom, np.nan)


def within_cluster_consistency(
    model,
    comparisons: Comparisons,
    n_folds: int = 5,
    responsibilities: np.ndarray | None = None,
    alpha: float = 1.0,
    random_state: int = 0,
) -> pd.DataFrame:
    """k-fold agreement of BT profiles inside each cluster.

    Queries are assigned to their most responsible cluster; each cluster's queries are split into
    ``n_folds`` random folds, one BT profile is fitted per fold (all folds of all clusters in one
    batched solve), and the Kendall tau-b between every pair of fold profiles is averaged. High
    values mean the cluster's queries agree on the model ranking.

    Parameters
    ----------
    model : fitted clustering
        An ECC-style estimator with ``theta_`` and ``responsibilities_``.
    comparisons : Comparisons
        The comparisons it was fitted on.
    n_folds : int, default 5
        Folds per cluster.
    responsibilities : ndarray, optional
        Instead of the fitted ones.
    alpha : float, default 1.0
        BT prior precision of the fold profiles.
    random_state : int, default 0
        Seed of the folds.

    Returns
    -------
    DataFrame
        ``cluster, size, tau`` per cluster (``tau`` NaN for clusters with fewer queries than
        folds); ``frame.attrs["mean_tau"]`` is the size-weighted mean over clusters with a value.
    """
    if n_folds < 2:
        raise ValueError("n_folds must be >= 2")
    hard = _hard_assignment(model, responsibilities)
    n = comparisons.n_queries
    if len(hard) != n:
        raise ValueError("responsibilities and comparisons disagree on the number of queries")
    k = int(model.theta_.shape[0])
    rng = np.random.default_rng(random_state)
    order = np.lexsort((rng.random(n), hard))
    sorted_cluster = hard[order]
    start = np.searchsorted(sorted_cluster, sorted_cluster, side="left")
    fold = np.empty(n, dtype=np.int64)
    fold[order] = (np.arange(n) - start) % n_folds
    group = hard * n_folds + fold
    counts = count_matrix(comparisons, normalize=True)
    onehot = np.zeros((n, k * n_folds))
    onehot[np.arange(n), group] = 1.0
    m = comparisons.n_models
    wins = np.asarray(counts.T @ onehot).T.reshape(k, n_folds, m, m)
    theta = fit_bt_counts(wins.reshape(k * n_folds, m, m), alpha=alpha).reshape(k, n_folds, m)
    size = np.bincount(hard, minlength=k)
    pairs = [(f, g) for f in range(n_folds) for g in range(f + 1, n_folds)]
    taus = np.stack([_kendall_tau_b(theta[:, f], theta[:, g]) for f, g in pairs], axis=1)
    valid = ~np.isnan(taus)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(valid, taus, 0.0).sum(axis=1) / valid.sum(axis=1)
    tau = np.where((size >= n_folds) & valid.any(axis=1), tau, np.nan)
    frame = pd.DataFrame({"cluster": np.arange(k), "size": size, "tau": tau})
    ok = ~np.isnan(tau)
    frame.attrs["mean_tau"] = (
        float(np.average(tau[ok], weights=size[ok])) if ok.any() else float("nan")
    )
    return frame


def cross_cluster_nll_gap(
    model, comparisons: Comparisons, responsibilities: np.ndarray | None = None
) -> dict:
    """How much worse a query's comparisons are explained by other clusters' profiles.

    For each query with comparisons: ``own`` = NLL per comparison under its most responsible
    cluster, ``other`` = mean NLL per comparison under the other clusters. Returns the means and
    ``gap = other - own`` (larger = better separated profiles); NaN with one cluster.

    Parameters
    ----------
    model : fitted clustering
        An ECC-style estimator.
    comparisons : Comparisons
        Comparisons of the queries scored.
    responsibilities : ndarray, optional
        Instead of the fitted ones.

    Returns
    -------
    dict
        ``own, other, gap`` (means over queries; NaN without comparisons).
    """
    resp = model.responsibilities_ if responsibilities is None else responsibilities
    hard = np.asarray(resp).argmax(axis=1)
    ev = evidence(model.theta_, comparisons)
    k = ev.shape[1]
    has = comparisons.pairs_per_query() > 0
    if k < 2 or not has.any():
        return {"own": float("nan"), "other": float("nan"), "gap": float("nan")}
    own = -ev[np.arange(len(hard)), hard]
    other = (-ev.sum(axis=1) - own) / (k - 1)
    return {
        "own": float(own[has].mean()),
        "other": float(other[has].mean()),
        "gap": float((other - own)[has].mean()),
    }


def cluster_summary(
    model,
    texts: np.ndarray,
    categories: np.ndarray | None = None,
    responsibilities: np.ndarray | None = None,
    n_top_models: int = 3,
    n_top_categories: int = 3,
    n_examples: int = 3,
    max_chars: int = 120,
    hidden_categories: tuple[str, ...] = HIDDEN_EXAMPLE_CATEGORIES,
) -> pd.DataFrame:
    """One row per cluster: size, soft mass, top models, top categories, example queries.

    Examples are the most responsible queries of the cluster, shortened to ``max_chars``; queries
    of a category containing any of ``hidden_categories`` (default ``gpqa``, whose authors ask
    that examples not be posted) are never shown.

    Parameters
    ----------
    model : fitted clustering
        An ECC-style estimator.
    texts : ndarray of str
        Query texts, aligned to the responsibilities.
    categories : ndarray of str, optional
        Human categories.
    responsibilities : ndarray, optional
        Instead of the fitted ones.
    n_top_models, n_top_categories, n_examples : int
        How many of each to list.
    max_chars : int, default 120
        Example length.
    hidden_categories : tuple of str
        Categories never quoted.

    Returns
    -------
    DataFrame
        One row per cluster.
    """
    resp = np.asarray(model.responsibilities_ if responsibilities is None else responsibilities)
    texts = np.asarray(texts, dtype=object)
    if len(texts) != resp.shape[0]:
        raise ValueError("texts must align with the responsibilities' rows")
    hard = resp.argmax(axis=1)
    k = resp.shape[1]
    models = np.asarray(model.models_, dtype=object)
    cats = None if categories is None else _labels_to_str(categories, len(texts)).astype(str)
    showable = np.ones(len(texts), dtype=bool)
    if cats is not None and hidden_categories:
        pattern = "|".join(re.escape(h.lower()) for h in hidden_categories)
        showable = ~pd.Series(cats).str.lower().str.contains(pattern, regex=True).to_numpy()
    rows = []
    for c in range(k):
        members = np.flatnonzero(hard == c)
        theta = model.theta_[c]
        top = np.argsort(-theta)[:n_top_models]
        row = {
            "cluster": c,
            "size": len(members),
            "mass": float(resp[:, c].sum()),
            "top_models": ", ".join(f"{models[i]} ({theta[i]:+.2f})" for i in top),
        }
        if cats is not None:
            if len(members):
                share = pd.Series(cats[members]).value_counts(normalize=True)
                row["top_categories"] = ", ".join(
                    f"{name} {100 * v:.0f}%" for name, v in share.head(n_top_categories).items()
                )
            else:
                row["top_categories"] = ""
        candidates = members[showable[members]]
        best = candidates[np.argsort(-resp[candidates, c], kind="stable")][:n_examples]
        row["examples"] = [_shorten(str(t), max_chars) for t in texts[best]]
        rows.append(row)
    return pd.DataFrame(rows).sort_values("size", ascending=False).reset_index(drop=True)


def _shorten(text: str, max_chars: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def diagnostics(data: ProtocolData, fitted: dict, n_folds: int = 5, random_state: int = 0):
    """Within-cluster consistency and cross-cluster NLL gap of every fitted clustering, on the
    training queries. Returns a DataFrame with ``method, n_clusters, mean_tau, own_nll,
    other_nll, nll_gap``.

    Parameters
    ----------
    data : ProtocolData
        Comparisons, embeddings and split (:func:`prepare_protocol`).
    fitted : dict
        Fitted estimators by method name (:func:`fit_methods`).
    n_folds : int, default 5
        Folds of the consistency check.
    random_state : int, default 0
        Seed of the folds.

    Returns
    -------
    DataFrame
    """
    rows = []
    for name, model in fitted.items():
        consistency = within_cluster_consistency(
            model, data.train, n_folds=n_folds, random_state=random_state
        )
        gap = cross_cluster_nll_gap(model, data.train)
        rows.append(
            {
                "method": name,
                "n_clusters": int(model.theta_.shape[0]),
                "mean_tau": consistency.attrs["mean_tau"],
                "own_nll": gap["own"],
                "other_nll": gap["other"],
                "nll_gap": gap["gap"],
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------------
# new-model ranking with a comparison budget


def _refit_with_extra(
    train: Comparisons,
    extra: Comparisons,
    responsibilities: np.ndarray,
    alpha: float,
    theta0: np.ndarray,
) -> np.ndarray:
    """One ECC M-step (BT part) over ``train + extra`` with responsibilities held fixed."""
    combined = Comparisons(
        query=np.concatenate([train.query, extra.query]),
        model_a=np.concatenate([train.model_a, extra.model_a]),
        model_b=np.concatenate([train.model_b, extra.model_b]),
        y=np.concatenate([train.y, extra.y]),
        query_ids=train.query_ids,
        models=extra.models,
    )
    counts = count_matrix(combined, normalize=True)
    m = combined.n_models
    k = responsibilities.shape[1]
    wins = np.asarray(counts.T @ responsibilities).T.reshape(k, m, m)
    return fit_bt_counts(wins, alpha=alpha, theta0=theta0)


def new_model_experiment(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    embeddings: np.ndarray,
    new_model: str,
    budgets: tuple[int, ...] = (10, 30, 100, 300),
    n_clusters: int = 30,
    lam: float = 3.0,
    temperature: float = 0.1,
    n_pairs: int = PAPER_N_PAIRS,
    n_probes: int = 1,
    test_size: float = PAPER_TEST_SIZE,
    random_state: int = PAPER_SEED,
    n_boot: int = DEFAULT_N_BOOT,
    **ecc_params,
) -> pd.DataFrame:
    """Rank a new model from a small budget of comparisons: ECC versus global opponent choice.

    ECC is fitted on the old models (paper protocol without ``new_model``). For a budget ``B``,
    ``B`` random training queries each get one comparison of the new model against an opponent:
    the median-ranked old model of the query's (most responsible) cluster (``ecc`` arm) or the
    median-ranked model of the global BT fit (``global`` arm). Each arm refits the cluster profiles
    with the new model (responsibilities held fixed) and is scored by the NLL of every
    (new model, old model) non-tie pair on the test queries, whose responsibilities come from their
    embedding and probe. Gain = ``(NLL_global_arm - NLL_ecc_arm) / NLL_global_arm`` in percent,
    with a bootstrap interval over test queries.

    Parameters
    ----------
    queries, outcomes, embeddings
        As in :func:`~ecc_lib.ecc_protocol.run_protocol`.
    new_model : str
        The model left out and ranked from the budget.
    budgets : tuple of int
        Comparison budgets.
    n_clusters, lam, temperature, n_pairs, n_probes, test_size, random_state, n_boot
        As in :func:`~ecc_lib.ecc_protocol.run_protocol`.
    **ecc_params
        Further arguments of :class:`~ecc_lib.ecc.ECC`.

    Returns
    -------
    DataFrame
        One row per budget: ``budget, nll_ecc_opponent, nll_global_opponent, nll_no_budget,
        gain_pct, gain_low, gain_high, n_test_pairs``.
    """
    all_models = sorted(outcomes["model"].astype(str).unique())
    if new_model not in all_models:
        raise ValueError(f"new_model {new_model!r} is not in the outcomes")
    old_models = tuple(m for m in all_models if m != new_model)
    if len(old_models) < 2:
        raise ValueError("the new-model experiment needs at least 2 old models")
    old_outcomes = outcomes[outcomes["model"].astype(str) != new_model]
    data = prepare_protocol(
        queries, old_outcomes, embeddings, n_pairs, test_size, random_state, models=old_models
    )
    ecc = ECC(
        n_clusters=n_clusters,
        lam=lam,
        temperature=temperature,
        random_state=random_state,
        **ecc_params,
    ).fit(data.x_train, data.train)
    global_bt = GlobalBT(alpha=ecc.alpha).fit(None, data.train)
    models = (*old_models, new_model)
    new_index = len(old_models)
    new_scores, _, _ = score_matrix(outcomes, data.comparisons.query_ids, models)
    train_scores = new_scores[data.train_mask]
    test_scores = new_scores[data.test_mask]

    # opponents: median-ranked old model of each training query's cluster / of the global fit
    median_pos = (len(old_models) - 1) // 2
    cluster_median = np.argsort(-ecc.theta_, axis=1)[:, median_pos]
    hard = ecc.responsibilities_.argmax(axis=1)
    ecc_opponent = cluster_median[hard]
    global_opponent = np.full(len(hard), np.argsort(-global_bt.theta_[0])[median_pos])

    # test pairs: new model against every old model, non-tie outcomes
    probe, _ = split_probe(data.test, n_probes)
    resp_test = ecc.predict_responsibilities(data.x_test, probe if n_probes else None, "both")
    n_test = data.test.n_queries
    tq, to = np.nonzero(
        np.isfinite(test_scores[:, :new_index])
        & np.isfinite(test_scores[:, [new_index]])
        & (test_scores[:, :new_index] != test_scores[:, [new_index]])
    )
    test_y = (test_scores[tq, new_index] > test_scores[tq, to]).astype(float)
    if len(tq) == 0:
        raise ValueError("no non-tie test pairs of the new model")
    train_ext = Comparisons(
        data.train.query,
        data.train.model_a,
        data.train.model_b,
        data.train.y,
        data.train.query_ids,
        models,
    )
    theta0 = np.concatenate([ecc.theta_, np.zeros((ecc.theta_.shape[0], 1))], axis=1)

    def test_nll(theta: np.ndarray) -> np.ndarray:
        diff = theta[:, new_index][:, None] - theta[:, to]
        p = np.einsum("nk,kn->n", resp_test[tq], 1.0 / (1.0 + np.exp(-diff)))
        return np.bincount(tq, weights=comparison_nll(p, test_y), minlength=n_test)

    rng = np.random.default_rng(random_state)
    usable = np.isfinite(train_scores[:, new_index])
    candidates = np.flatnonzero(usable)
    order = rng.permutation(candidates)
    no_budget = test_nll(theta0)
    pair_counts = np.bincount(tq, minlength=n_test)
    has = pair_counts > 0
    index = bootstrap_indices(int(has.sum()), n_boot, random_state)
    rows = []
    for budget in budgets:
        chosen = order[: min(int(budget), len(order))]
        arms = {}
        for arm, opponent in (("ecc", ecc_opponent), ("global", global_opponent)):
            opp = opponent[chosen]
            s_new = train_scores[chosen, new_index]
            s_opp = train_scores[chosen, opp]
            ok = np.isfinite(s_opp)
            y = np.where(s_new > s_opp, 1.0, np.where(s_new < s_opp, 0.0, 0.5))[ok]
            extra = Comparisons(
                query=chosen[ok].astype(np.int64),
                model_a=opp[ok].astype(np.int64),
                model_b=np.full(int(ok.sum()), new_index, dtype=np.int64),
                y=y,
                query_ids=data.train.query_ids,
                models=models,
            )
            theta = _refit_with_extra(
                train_ext, extra, ecc.responsibilities_, float(ecc.alpha), theta0
            )
            arms[arm] = test_nll(theta)
        e, g = arms["ecc"][has], arms["global"][has]
        total = float(pair_counts.sum())
        reps = 100.0 * (g[index].sum(axis=1) - e[index].sum(axis=1)) / g[index].sum(axis=1)
        low, high = percentile_interval(reps, 0.95)
        rows.append(
            {
                "new_model": new_model,
                "budget": int(len(chosen)),
                "nll_ecc_opponent": float(e.sum() / total),
                "nll_global_opponent": float(g.sum() / total),
                "nll_no_budget": float(no_budget[has].sum() / total),
                "gain_pct": float(100.0 * (g.sum() - e.sum()) / g.sum()),
                "gain_low": low,
                "gain_high": high,
                "n_test_pairs": int(total),
            }
        )
    return pd.DataFrame(rows)


__all__ = [
    "cluster_summary",
    "cross_cluster_nll_gap",
    "diagnostics",
    "evaluate_modes",
    "new_model_experiment",
    "sweep_clusters",
    "sweep_probes",
    "within_cluster_consistency",
]
