"""Experiments on fitted clusterings: inference modes, probe and K sweeps, cluster diagnostics.

Each function takes a :class:`~ecc_lib.protocol.data.ProtocolData` (and fitted methods where it
needs them, :mod:`ecc_lib.protocol.methods`) and returns plain objects (dicts, DataFrames) usable
from the command line and from notebooks. The other experiments built on the protocol have their
own modules: routing with the clusterings (:mod:`ecc_lib.protocol.routing`), ranking a new model
(:mod:`ecc_lib.protocol.experiments.new_model`) and probe strategies (:mod:`ecc_lib.protocol.experiments.probe_strategies`).
"""

from __future__ import annotations

import logging
import re

import numpy as np
import pandas as pd
from sklearn.base import clone

from ecc_lib.bradley_terry import count_matrix, fit_bt_counts
from ecc_lib.data.comparisons import Comparisons
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.mixture import evidence
from ecc_lib.ecc.validation import MODES, labels_to_str
from ecc_lib.protocol.data import ProtocolData
from ecc_lib.protocol.methods import fit_methods, methods_from_prototype
from ecc_lib.protocol.scoring import ECCEvaluation, score_methods
from ecc_lib.protocol.settings import Protocol
from ecc_lib.stats import DEFAULT_N_BOOT

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


def _score_settings(data: ProtocolData, fitted: dict, settings: list[dict], **kwargs):
    """Score the fitted methods once per setting (a ``protocol`` and any other keyword argument
    of :func:`~ecc_lib.protocol.scoring.score_methods`) and stack the rows of each."""
    rows = []
    for setting in settings:
        result = score_methods(data, fitted, **setting, **kwargs)
        protocol = setting["protocol"]
        rows += _long_rows(result, mode=protocol.mode, n_probes=protocol.n_probes)
    return pd.DataFrame(rows)


def evaluate_modes(
    data: ProtocolData,
    fitted: dict,
    *,
    protocol: Protocol | None = None,
    modes: tuple[str, ...] = MODES,
    **kwargs,
) -> pd.DataFrame:
    """Gain of every method under each inference mode (one row per mode and method).

    Parameters
    ----------
    data : ProtocolData
        Comparisons, embeddings and split (:func:`~ecc_lib.protocol.data.prepare_protocol`).
    fitted : dict
        Fitted estimators by method name (:func:`~ecc_lib.protocol.methods.fit_methods`).
    protocol : Protocol, optional
        The settings (default ``Protocol()``), its ``mode`` replaced by each of ``modes``.
    modes : tuple of str
        Inference modes.
    **kwargs
        Passed to :func:`~ecc_lib.protocol.scoring.score_methods`.

    Returns
    -------
    DataFrame
    """
    protocol = Protocol() if protocol is None else protocol
    settings = [{"protocol": protocol.replace(mode=mode)} for mode in modes]
    return _score_settings(data, fitted, settings, **kwargs)


def sweep_probes(
    data: ProtocolData,
    fitted: dict,
    *,
    protocol: Protocol | None = None,
    probe_counts: tuple[int, ...] = (1, 2, 3),
    **kwargs,
) -> pd.DataFrame:
    """Gain versus the number of probes. All values score the same pairs (those after
    ``max(probe_counts)``), so rows are comparable. The protocol's ``probe_evidence`` is
    ``"mean"`` (the authors' code: probe log-likelihoods averaged) or ``"sum"`` (added: the
    Bayesian choice).

    Parameters
    ----------
    data, fitted, **kwargs
        As in :func:`evaluate_modes`.
    protocol : Protocol, optional
        The settings (default ``Protocol()``: its ``mode``, ``n_boot``, ``probe_evidence`` and
        ``probe_strategy``), its ``n_probes`` replaced by each of ``probe_counts``.
    probe_counts : tuple of int
        Probe counts.

    Returns
    -------
    DataFrame
        One row per probe count and method (counts that would leave no pair to score, e.g.
        any probe on two-model data, are left out with a warning).
    """
    protocol = Protocol() if protocol is None else protocol
    most = int(data.test.pairs_per_query().max()) if len(data.test) else 0
    kept = tuple(n for n in probe_counts if n < most)
    if len(kept) < len(probe_counts):
        logger.warning(
            "sweep_probes: probe count(s) %s left out: test queries have at most %d pair(s), "
            "so nothing would be scored",
            [n for n in probe_counts if n >= most],
            most,
        )
    if not kept:
        raise ValueError(f"no probe count in {list(probe_counts)} leaves a pair to score")
    settings = [{"protocol": protocol.with_probes(n), "score_from": max(kept)} for n in kept]
    return _score_settings(data, fitted, settings, **kwargs)


def sweep_clusters(
    data: ProtocolData,
    *,
    protocol: Protocol | None = None,
    estimator: ECC | None = None,
    ks: tuple[int, ...] = (5, 10, 20, 30, 50),
    methods: tuple[str, ...] = ("global", "ecc", "emb_only"),
    **kwargs,
) -> pd.DataFrame:
    """Gain versus the number of clusters ``K`` (methods refitted for each K).

    The methods are built from the ``estimator`` prototype with its ``n_clusters`` set to each K
    (:func:`~ecc_lib.protocol.methods.methods_from_prototype`; ``lam``, ``temperature``,
    ``max_iter`` ... are the prototype's) and seeded with the protocol seed; other keyword
    arguments (``confidence`` ...) go to :func:`~ecc_lib.protocol.scoring.score_methods`.

    Parameters
    ----------
    data : ProtocolData
        Comparisons, embeddings and split (:func:`~ecc_lib.protocol.data.prepare_protocol`).
    protocol : Protocol, optional
        The settings (default ``Protocol()``): ``protocol.seed`` seeds the EM starts; ``n_probes``,
        ``mode``, ``n_boot``, ``probe_evidence`` and ``probe_strategy`` the scoring.
    estimator : ECC, optional
        The unfitted ECC prototype (default ``ECC()``).
    ks : tuple of int
        Cluster counts.
    methods : tuple of str
        Methods refitted for each K.
    **kwargs
        Passed to :func:`~ecc_lib.protocol.scoring.score_methods`.

    Returns
    -------
    DataFrame
        One row per K and method.
    """
    protocol = Protocol() if protocol is None else protocol
    estimator = ECC() if estimator is None else estimator
    rows = []
    for k in ks:
        estimators = methods_from_prototype(
            clone(estimator).set_params(n_clusters=k),
            methods=methods,
            random_state=protocol.seed,
        )
        fitted, seconds = fit_methods(data, estimators)
        result = score_methods(data, fitted, protocol=protocol, fit_seconds=seconds, **kwargs)
        rows += _long_rows(result, n_clusters=k, mode=protocol.mode, n_probes=protocol.n_probes)
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
    *,
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
    model, comparisons: Comparisons, *, responsibilities: np.ndarray | None = None
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
        ``own_nll, other_nll, gap`` (means over queries).
    """
    hard = _hard_assignment(model, responsibilities)
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
    *,
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
    cats = None if categories is None else labels_to_str(categories, len(texts)).astype(str)
    showable = ~hidden_category_mask(cats, len(texts), hidden_categories)
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
        if cats is not None:  # "" for an empty cluster
            share = pd.Series(cats[members]).value_counts(normalize=True)
            row["top_categories"] = ", ".join(
                f"{name} {100 * v:.0f}%" for name, v in share.head(n_top_categories).items()
            )
        candidates = members[showable[members]]
        best = candidates[np.argsort(-resp[candidates, c], kind="stable")][:n_examples]
        row["examples"] = [shorten_text(t, max_chars) for t in texts[best]]
        rows.append(row)
    return pd.DataFrame(rows).sort_values("size", ascending=False).reset_index(drop=True)


def shorten_text(text: str, max_chars: int) -> str:
    """``text`` on one line, cut to ``max_chars`` with an ellipsis.

    Parameters
    ----------
    text : str
        Any text (line breaks and runs of spaces become one space).
    max_chars : int
        Longest result, the ellipsis included.

    Returns
    -------
    str
    """
    text = " ".join(str(text).split())
    return text if len(text) <= max_chars else text[: max_chars - 1] + "\u2026"


def hidden_category_mask(labels: np.ndarray | None, n: int, hidden: tuple[str, ...]) -> np.ndarray:
    """Which of ``n`` queries belong to a category never quoted.

    Parameters
    ----------
    labels : ndarray or None
        Each query's category (None: no categories, nothing hidden).
    n : int
        Number of queries.
    hidden : tuple of str
        A category containing one of these names (case-insensitive) is never quoted.

    Returns
    -------
    ndarray of bool, shape (n,)
    """
    if labels is None or not hidden:
        return np.zeros(n, dtype=bool)
    pattern = "|".join(re.escape(h.lower()) for h in hidden)
    return pd.Series(labels.astype(str)).str.lower().str.contains(pattern, regex=True).to_numpy()


def diagnostics(data: ProtocolData, fitted: dict, *, n_folds: int = 5, random_state: int = 0):
    """Within-cluster consistency and cross-cluster NLL gap of every fitted clustering, on the
    training queries. Returns a DataFrame with ``method, n_clusters, mean_tau, own_nll,
    other_nll, nll_gap``.

    Parameters
    ----------
    data, fitted
        As in :func:`evaluate_modes`.
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


def score_label_informed(
    data: ProtocolData,
    fitted: dict,
    result: ECCEvaluation,
    *,
    protocol: Protocol | None = None,
    estimator: ECC | None = None,
) -> ECCEvaluation:
    """Fit label-informed ECC (``ecc_labels``) and score it beside ``fitted`` exactly as
    ``result`` was scored: the same probes, mode, probe evidence and strategy, the same
    bootstrap resamples (``n_boot`` and ``bootstrap_seed`` of ``result.params``).

    Notebook 03 once rescored with the default probe evidence (so ``"sum"`` was read as
    ``"mean"``) and another bootstrap seed (issue 22); the settings now come from ``result``.

    Parameters
    ----------
    data : ProtocolData
        The split ``result`` was scored on.
    fitted : dict
        The fitted methods of ``result`` (must hold ``"global"``).
    result : ECCEvaluation
        The scored protocol whose settings are reused.
    protocol : Protocol, optional
        The protocol ``result`` was run with (default ``Protocol()``); only its seed is read here
        (the label-informed estimator's EM start, as in
        :func:`~ecc_lib.protocol.ecc_protocol.run_seed`): the scoring settings come from
        ``result``.
    estimator : ECC, optional
        The unfitted ECC prototype (default ``ECC()``) whose parameters the label-informed
        estimator takes (:func:`~ecc_lib.protocol.methods.methods_from_prototype`).

    Returns
    -------
    ECCEvaluation
        Every method of ``fitted`` plus ``ecc_labels``.
    """
    params = result.params
    protocol = Protocol() if protocol is None else protocol
    estimators = methods_from_prototype(
        estimator, methods=("ecc_labels",), random_state=protocol.seed
    )
    new, seconds = fit_methods(data, estimators)
    return score_methods(
        data,
        {**fitted, **new},
        protocol=protocol.replace(
            n_probes=result.n_probes,
            mode=result.mode,
            n_boot=int(params.get("n_boot", DEFAULT_N_BOOT)),
            probe_evidence=params.get("probe_evidence", "mean"),
            probe_strategy=params.get("probe_strategy", "first"),
        ),
        score_from=params.get("score_from"),
        fit_seconds={**result.fit_seconds, **seconds},
        random_state=int(params.get("bootstrap_seed", 0)),
    )


__all__ = [
    "cluster_summary",
    "diagnostics",
    "score_label_informed",
    "sweep_clusters",
    "sweep_probes",
]
