"""Experiments built on the ECC protocol: inference modes, probe and K sweeps, diagnostics, new models.

Each function takes a :class:`~ecc_lib.ecc_protocol.ProtocolData` (and fitted methods where it
needs them) from :mod:`ecc_lib.ecc_protocol` and returns plain objects (dataclasses, dicts,
DataFrames) usable from the command line and from notebooks.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ecc_lib.bradley_terry import count_matrix, fit_bt_counts
from ecc_lib.comparisons import (
    Comparisons,
    score_matrix,
    split_probe,
)
from ecc_lib.ecc import (
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
    ProbeStrategy,
    ProtocolData,
    fit_methods,
    make_methods,
    mean_sd,
    prepare_protocol,
    probe_responsibilities,
    score_methods,
    select_probes,
)
from ecc_lib.metrics import DEFAULT_N_BOOT, bootstrap_indices, percentile_interval
from ecc_lib.serialization import to_jsonable

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
    ``max(n_probes)``), so rows are comparable. Keyword arguments go to
    :func:`~ecc_lib.ecc_protocol.score_methods`, among them ``probe_evidence="mean"`` (the
    authors' code: probe log-likelihoods averaged) or ``"sum"`` (added: the Bayesian choice), and
    ``probe_strategy``.

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
        ``own_nll, other_nll, gap`` (means over queries).
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
# routing with the clusterings (the paper's routing experiment, with and without the probe)

ROUTING_SETTINGS: tuple[str, ...] = ("no_probe", "probe", "probe_outside", "probe_cost")


def _cost_matrix(outcomes: pd.DataFrame | None, data: ProtocolData) -> np.ndarray | None:
    """Mean cost per (test query, model), or None when the outcomes carry no cost."""
    if outcomes is None or "cost" not in outcomes.columns or outcomes["cost"].isna().all():
        return None
    frame = outcomes[["query_id", "model", "cost"]].rename(columns={"cost": "score"})
    costs, _, _ = score_matrix(frame, data.test.query_ids, data.models)
    return costs


def _argmax_allowed(scores: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Index of the best allowed model per row (-1 where no model is allowed)."""
    masked = np.where(allowed, scores, -np.inf)
    choice = np.argmax(masked, axis=1)
    return np.where(allowed.any(axis=1), choice, -1)


def probe_winner(probe: Comparisons | None, n_queries: int, n_models: int) -> np.ndarray:
    """The model that won most of a query's probe comparisons (lowest index among equals; -1
    for a query without a probe). Ties (``y = 0.5``) count half a win for each side.

    Parameters
    ----------
    probe : Comparisons or None
        The probe comparisons (``model_b`` wins with weight ``y``, ``model_a`` with ``1 - y``).
    n_queries, n_models : int
        Shape of the win table.

    Returns
    -------
    ndarray of int, shape (n_queries,)
        The winning model index per query, -1 where the query has no probe (all -1 when
        ``probe`` is None or empty).
    """
    wins = np.zeros((n_queries, n_models))
    if probe is None or len(probe) == 0:
        return np.full(n_queries, -1)
    np.add.at(wins, (probe.query, probe.model_b), probe.y)
    np.add.at(wins, (probe.query, probe.model_a), 1.0 - probe.y)
    has = np.bincount(probe.query, minlength=n_queries) > 0
    return np.where(has, np.argmax(wins, axis=1), -1)


def route_choices(
    data: ProtocolData,
    fitted: dict,
    setting: str = "no_probe",
    n_probes: int = 1,
    probe_evidence: str = "mean",
    probe_strategy: str | ProbeStrategy = "first",
    random_state: int = 0,
) -> dict:
    """The model each fitted clustering routes every test query to, in one setting.

    ``no_probe``: responsibilities from the embedding (and the human label, where the method uses
    labels): what a router knows before calling any model; nothing of the test outcomes is read.
    ``probe`` and ``probe_cost``: the ECC formula with the query's probe (embedding + probe
    evidence). ``probe_outside``: as ``probe``, but the choice is restricted to models outside the
    probe's pair(s). A method routes to ``argmax_m sum_k r_qk (theta_km - mean_m' theta_km')``
    among the models with an outcome on the query (the paper's routing rule).

    Parameters
    ----------
    data : ProtocolData
        The train/test split.
    fitted : dict
        ``{method: fitted clustering}``.
    setting : str, default "no_probe"
        One of ``ROUTING_SETTINGS``.
    n_probes : int, default 1
        Probes per test query in the probe settings (at least 1 there).
    probe_evidence : str, default "mean"
        How the probe evidence enters the responsibilities (passed to
        ``probe_responsibilities``).
    probe_strategy : str or callable, default "first"
        How probes are chosen (see :func:`ecc_lib.ecc_protocol.select_probes`).
    random_state : int, default 0
        Seed of the probe strategy.

    Returns
    -------
    dict
        ``{method: ndarray of model index per test query}`` (-1 where no model is allowed), plus
        ``"probe_winner"`` in the probe settings. Also returns the allowed mask under key
        ``"_allowed"`` and the reference probe (None in ``no_probe``) under ``"_probe"``.
    """
    if setting not in ROUTING_SETTINGS:
        raise ValueError(f"setting must be one of {ROUTING_SETTINGS}, got {setting!r}")
    n_test, m = data.test.n_queries, data.test.n_models
    # which models answered a query: presence only, never the values
    allowed = np.isfinite(data.scores[data.test_mask])
    reference_probe = None
    if setting != "no_probe":
        if n_probes < 1:
            raise ValueError(f"the {setting!r} setting needs n_probes >= 1")
        reference_probe = select_probes(data, None, n_probes, None, probe_strategy, random_state)[0]
    if setting == "probe_outside":
        in_probe = np.zeros((n_test, m), dtype=bool)
        in_probe[reference_probe.query, reference_probe.model_a] = True
        in_probe[reference_probe.query, reference_probe.model_b] = True
        allowed = allowed & ~in_probe
    choices = {}
    for name, model in fitted.items():
        if setting == "no_probe":
            resp = probe_responsibilities(
                model, data.x_test, None, "embedding", data.labels_test, probe_evidence
            )
        else:
            probe = select_probes(data, model, n_probes, None, probe_strategy, random_state)[0]
            resp = probe_responsibilities(
                model, data.x_test, probe, "both", data.labels_test, probe_evidence
            )
        choices[name] = _argmax_allowed(model.routing_scores(responsibilities=resp), allowed)
    if setting in ("probe", "probe_cost"):
        choices["probe_winner"] = probe_winner(reference_probe, n_test, m)
    choices["_allowed"] = allowed
    choices["_probe"] = reference_probe
    return choices


@dataclass
class RoutingResult:
    """Mean score of the routed model per setting and method, with bootstrap intervals.

    Attributes
    ----------
    table : DataFrame
        ``setting, method, score, score_low, score_high, cost, n_queries`` (``cost`` NaN without
        costs; in ``probe_cost`` it includes the two probe calls).
    choices : dict
        ``{setting: {method: model index per test query}}``.
    has_costs : bool
    params : dict
    """

    table: pd.DataFrame
    choices: dict = field(repr=False)
    has_costs: bool = False
    params: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready: ``{setting: {method: {"score", "ci95", "cost"}}}`` plus top-level
        ``oracle`` and ``probe_winner`` (the ``routing`` block of ``ecc-lab ecc --routing``).

        Returns
        -------
        dict
            Also holds ``settings``, ``has_costs`` and ``params``; each cell also has
            ``n_queries``.
        """
        out: dict = {"settings": list(ROUTING_SETTINGS)}
        for row in self.table.itertuples():
            out.setdefault(row.setting, {})[row.method] = {
                "score": row.score,
                "ci95": [row.score_low, row.score_high],
                "cost": row.cost,
                "n_queries": row.n_queries,
            }
        out["oracle"] = out["probe"]["oracle"]
        out["probe_winner"] = out["probe"]["probe_winner"]
        out["has_costs"] = self.has_costs
        out["params"] = self.params
        return to_jsonable(out)


def routing_experiment(
    data: ProtocolData,
    fitted: dict,
    outcomes: pd.DataFrame | None = None,
    n_probes: int = 1,
    probe_evidence: str = "mean",
    probe_strategy: str | ProbeStrategy = "first",
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = 0.95,
    random_state: int = 0,
) -> RoutingResult:
    """The paper's routing experiment for every fitted clustering, with and without the probe.

    Each test query is routed to one model and scored by that model's mean score on the query.
    Rows per setting (see :func:`route_choices`): every fitted method (``global`` is the best
    model of the global ranking), ``random`` (the expected score of a uniform choice among the
    allowed models) and ``oracle`` (the best allowed model); in ``probe`` and ``probe_cost`` also
    ``probe_winner`` (the model that won the probe, nothing else: with binary scores it scored 1,
    so it is an upper bound of what the probe alone reveals). ``probe_outside`` restricts every
    choice, the random and the oracle to the models outside the probe's pair(s), so no router is
    judged on an outcome it has read. ``probe_cost`` charges the probe: cost = cost of the probe's
    models + cost of the routed model unless it is one of them (its answer is already paid for).

    Parameters
    ----------
    data : ProtocolData
    fitted : dict
        Fitted estimators by name (must hold ``"global"``).
    outcomes : DataFrame, optional
        Long outcomes with a ``cost`` column, for the costs (NaN without).
    n_probes, probe_evidence, probe_strategy
        As in :func:`ecc_lib.ecc_protocol.score_methods`.
    n_boot, confidence, random_state
        Bootstrap over test queries (the same resamples for every row).

    Returns
    -------
    RoutingResult
    """
    if "global" not in fitted:
        raise ValueError("routing_experiment needs the fitted 'global' model")
    scores = data.scores[data.test_mask]
    costs = _cost_matrix(outcomes, data)
    n_test = scores.shape[0]
    index = bootstrap_indices(n_test, n_boot, random_state)
    rows, all_choices = [], {}

    def add(setting, method, per_query_score, per_query_cost):
        ok = np.isfinite(per_query_score)
        if not ok.any():
            return
        vals = np.where(ok, per_query_score, 0.0)
        reps = vals[index].sum(axis=1) / np.maximum(ok[index].sum(axis=1), 1)
        low, high = percentile_interval(reps, confidence)
        cost = float(np.nanmean(per_query_cost)) if per_query_cost is not None else float("nan")
        rows.append(
            {
                "setting": setting,
                "method": method,
                "score": float(per_query_score[ok].mean()),
                "score_low": low,
                "score_high": high,
                "cost": cost,
                "n_queries": int(ok.sum()),
            }
        )

    def picked(matrix, choice):
        if matrix is None:
            return None
        safe = np.maximum(choice, 0)
        return np.where(choice >= 0, matrix[np.arange(n_test), safe], np.nan)

    for setting in ROUTING_SETTINGS:
        choices = route_choices(
            data, fitted, setting, n_probes, probe_evidence, probe_strategy, random_state
        )
        allowed = choices.pop("_allowed")
        probe = choices.pop("_probe")
        charge = np.zeros(n_test)
        in_probe = np.zeros_like(allowed)
        if probe is not None:
            in_probe[probe.query, probe.model_a] = True
            in_probe[probe.query, probe.model_b] = True
            if costs is not None and setting == "probe_cost":
                charge = np.nansum(np.where(in_probe, costs, 0.0), axis=1)

        def charged(choice, charge=charge, in_probe=in_probe, setting=setting):
            if costs is None:
                return None
            own = picked(costs, choice)
            if setting != "probe_cost":
                return own
            already = in_probe[np.arange(n_test), np.maximum(choice, 0)] & (choice >= 0)
            return charge + np.where(already, 0.0, own)

        all_choices[setting] = choices
        for name, choice in choices.items():
            add(setting, name, picked(scores, choice), charged(choice))
        with np.errstate(invalid="ignore"):
            masked = np.where(allowed, scores, np.nan)
            n_allowed = allowed.sum(axis=1)
            random_score = np.where(n_allowed > 0, np.nansum(masked, axis=1) / n_allowed, np.nan)
            random_cost = None
            if costs is not None:
                random_cost = np.nanmean(np.where(allowed, costs, np.nan), axis=1)
                if setting == "probe_cost":
                    random_cost = charge + random_cost
        add(setting, "random", random_score, random_cost)
        oracle = _argmax_allowed(np.where(allowed, scores, -np.inf), allowed)
        if setting != "probe_cost":
            add(setting, "oracle", picked(scores, oracle), picked(costs, oracle))
    params = {
        "n_probes": n_probes,
        "probe_evidence": probe_evidence,
        "probe_strategy": probe_strategy if isinstance(probe_strategy, str) else "custom",
        "n_boot": n_boot,
        "random_state": random_state,
    }
    return RoutingResult(
        table=pd.DataFrame(rows), choices=all_choices, has_costs=costs is not None, params=params
    )


def clustering_routing_table(per_seed: list[dict], seeds: list[int] | None = None) -> pd.DataFrame:
    """The routing experiment over seeds as one table.

    Parameters
    ----------
    per_seed : list of dict
        :meth:`RoutingResult.to_dict` of each seed.
    seeds : list of int, optional
        Labels of the seeds (default 0, 1, ...).

    Returns
    -------
    DataFrame
        ``setting, method, score_mean, score_sd, cost_mean, n_seeds, score, score_low,
        score_high, per_seed`` (``score``, ``score_low``, ``score_high``: the first seed's estimate
        and bootstrap interval; ``per_seed``: list of ``(seed, score, low, high)``).
    """
    if not per_seed:
        raise ValueError("clustering_routing_table needs at least one seed's routing result")
    seeds = list(range(len(per_seed))) if seeds is None else list(seeds)
    rows = []
    for setting in ROUTING_SETTINGS:
        for method, cell in per_seed[0].get(setting, {}).items():
            cells = [(s, d[setting][method]) for s, d in zip(seeds, per_seed, strict=True)]
            mean, sd = mean_sd([c["score"] for _, c in cells])
            costs = [c["cost"] for _, c in cells if c["cost"] is not None]
            rows.append(
                {
                    "setting": setting,
                    "method": method,
                    "score_mean": mean,
                    "score_sd": sd,
                    "cost_mean": float(np.mean(costs)) if costs else float("nan"),
                    "n_seeds": len(cells),
                    "score": cell["score"],
                    "score_low": cell["ci95"][0],
                    "score_high": cell["ci95"][1],
                    "per_seed": [(s, c["score"], *c["ci95"]) for s, c in cells],
                }
            )
    return pd.DataFrame(rows)


def routing_metrics(table: pd.DataFrame) -> dict:
    """:func:`clustering_routing_table` as nested metrics: ``{setting: {method: {"score_mean",
    "score_sd", "score", "ci95", "cost_mean"}}}`` (``score`` and ``ci95``: the first seed's estimate and
    bootstrap interval).

    Parameters
    ----------
    table : DataFrame
        Output of :func:`clustering_routing_table`.

    Returns
    -------
    dict
        JSON-safe nested metrics.
    """
    out: dict = {}
    for row in table.itertuples():
        out.setdefault(row.setting, {})[row.method] = {
            "score_mean": row.score_mean,
            "score_sd": row.score_sd,
            "score": row.score,
            "ci95": [row.score_low, row.score_high],
            "cost_mean": row.cost_mean,
        }
    return to_jsonable(out)


def routing_over_seeds(per_seed: list[dict]) -> dict:
    """Mean and sd (ddof = 1) over seeds of every routed score (and cost) in
    :meth:`RoutingResult.to_dict` outputs: ``{setting: {method: {"score": [mean, sd],
    "cost": [mean, sd]}}}``.

    Parameters
    ----------
    per_seed : list of dict
        :meth:`RoutingResult.to_dict` of each seed.

    Returns
    -------
    dict
        ``{setting: {method: {"score": [mean, sd], "cost": [mean, sd]}}}``.
    """
    out: dict = {}
    for setting in ROUTING_SETTINGS:
        methods = [m for m in per_seed[0].get(setting, {})]
        for method in methods:
            values = [d[setting][method] for d in per_seed if method in d.get(setting, {})]
            out.setdefault(setting, {})[method] = {
                "score": list(mean_sd([v["score"] for v in values])),
                "cost": list(mean_sd([v["cost"] for v in values])),
            }
    return to_jsonable(out)


# --------------------------------------------------------------------------------------------------
# new-model ranking with a comparison budget


def _refit_with_extra(
    train: Comparisons,
    extra: Comparisons,
    responsibilities: np.ndarray,
    alpha: float,
    theta0: np.ndarray,
    budget_weight: float = 1.0,
) -> np.ndarray:
    """One M-step (BT part) over the training comparisons plus budget comparisons, with
    responsibilities held fixed.

    A training comparison of query ``q`` weighs ``r_qk / N_q`` in profile ``k`` (as in ECC); a
    budget comparison weighs ``r_qk * budget_weight``.
    """
    counts = count_matrix(train, normalize=True)
    if len(extra):
        counts = counts + budget_weight * count_matrix(extra, normalize=False)
    m = train.n_models
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
    budget_weight: float = 1.0,
    **ecc_params,
) -> pd.DataFrame:
    """Rank a new model from a small budget of comparisons: ECC, embedding-only and global
    opponent choice.

    The clusterings are fitted on the old models (paper protocol without ``new_model``). For a
    budget ``B``, ``B`` random training queries each get one comparison of the new model against
    an opponent, and the arm refits its cluster profiles with the new model (responsibilities held
    fixed). The three arms (the paper's new-model experiment, ``DESIGN.md`` section 3):

    - ``ecc``: ECC clusters; the opponent is the median-ranked old model of the query's (most
      responsible) ECC cluster;
    - ``emb_only``: embedding-only clusters; the opponent is the median-ranked old model of the
      query's embedding cluster (the paper's baseline);
    - ``global``: ECC clusters, but every budget comparison is spent against the median-ranked
      model of the global BT fit (the reference of the gain).

    **Weighting of the budget comparisons.** In ECC's M-step a training comparison of query ``q``
    weighs ``r_qk / N_q`` (every query counts once), against a unit Gaussian prior on the scores.
    Budget comparisons weighed that way (``1/8`` each on a query with 7 pairs) barely move the new
    model's score: on dcrouter ``B = 100`` moved a cluster score by 0.21 where the
    maximum-likelihood move is 1.39, and no budget could separate the arms. The new model has no
    other evidence, so here each budget comparison counts as one full observation: weight
    ``budget_weight * r_qk`` (default ``budget_weight = 1``), so that ``B`` comparisons spread over
    ``K`` clusters give each profile about ``B / K`` observations of the new model against the
    unit prior. ``budget_weight = 1 / (N_q + 1)`` recovers the old behaviour.

    Each arm is scored by the NLL of every (new model, old model) non-tie pair on the test
    queries, whose responsibilities come from the arm's clustering with the query's embedding and
    probe. Gain of an arm = ``(NLL_global - NLL_arm) / NLL_global`` in percent; all intervals are
    percentile bootstraps over test queries with the same resamples.

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
        One row per budget: ``budget, nll_ecc_opponent, nll_emb_opponent, nll_global_opponent``
        (with ``_low`` / ``_high`` intervals), ``nll_no_budget``, ``gain_pct, gain_low,
        gain_high`` (ECC against global), ``gain_emb_pct, gain_emb_low, gain_emb_high``
        (embedding-only against global), ``ecc_minus_emb_pct, ecc_minus_emb_low,
        ecc_minus_emb_high`` (paired difference of the two gains, pp), ``n_test_pairs``.
    """
    if budget_weight <= 0:
        raise ValueError(f"budget_weight must be > 0, got {budget_weight}")
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
    fitted, _ = fit_methods(
        data,
        make_methods(
            n_clusters,
            lam,
            temperature,
            random_state,
            ("global", "ecc", "emb_only"),
            **ecc_params,
        ),
    )
    ecc, emb, global_bt = fitted["ecc"], fitted["emb_only"], fitted["global"]
    models = (*old_models, new_model)
    new_index = len(old_models)
    new_scores, _, _ = score_matrix(outcomes, data.comparisons.query_ids, models)
    train_scores = new_scores[data.train_mask]
    test_scores = new_scores[data.test_mask]

    # opponents: median-ranked old model of each training query's cluster / of the global fit
    median_pos = (len(old_models) - 1) // 2
    n_train = data.train.n_queries

    def cluster_opponent(model) -> np.ndarray:
        cluster_median = np.argsort(-model.theta_, axis=1)[:, median_pos]
        return cluster_median[model.responsibilities_.argmax(axis=1)]

    global_median = np.argsort(-global_bt.theta_[0])[median_pos]
    arms = {
        "ecc": (ecc, cluster_opponent(ecc)),
        "emb_only": (emb, cluster_opponent(emb)),
        "global": (ecc, np.full(n_train, global_median)),
    }

    # test pairs: new model against every old model, non-tie outcomes
    probe, _ = split_probe(data.test, n_probes)
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
    resp_test = {
        model_id: model.predict_responsibilities(data.x_test, probe if n_probes else None, "both")
        for model_id, model in ((id(ecc), ecc), (id(emb), emb))
    }

    def test_nll(model, theta: np.ndarray) -> np.ndarray:
        diff = theta[:, new_index][:, None] - theta[:, to]
        p = np.einsum("nk,kn->n", resp_test[id(model)][tq], 1.0 / (1.0 + np.exp(-diff)))
        return np.bincount(tq, weights=comparison_nll(p, test_y), minlength=n_test)

    def start(model) -> np.ndarray:
        return np.concatenate([model.theta_, np.zeros((model.theta_.shape[0], 1))], axis=1)

    rng = np.random.default_rng(random_state)
    usable = np.isfinite(train_scores[:, new_index])
    order = rng.permutation(np.flatnonzero(usable))
    no_budget = test_nll(ecc, start(ecc))
    pair_counts = np.bincount(tq, minlength=n_test)
    has = pair_counts > 0
    index = bootstrap_indices(int(has.sum()), n_boot, random_state)
    total = float(pair_counts.sum())
    rows = []
    for budget in budgets:
        chosen = order[: min(int(budget), len(order))]
        nll = {}
        for arm, (model, opponent) in arms.items():
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
                train_ext,
                extra,
                model.responsibilities_,
                float(model.alpha),
                start(model),
                budget_weight,
            )
            nll[arm] = test_nll(model, theta)[has]
        row = {"new_model": new_model, "budget": int(len(chosen))}
        for arm, column in (("ecc", "ecc"), ("emb_only", "emb"), ("global", "global")):
            reps = nll[arm][index].sum(axis=1) / pair_counts[has][index].sum(axis=1)
            low, high = percentile_interval(reps, 0.95)
            row[f"nll_{column}_opponent"] = float(nll[arm].sum() / total)
            row[f"nll_{column}_opponent_low"] = low
            row[f"nll_{column}_opponent_high"] = high
        row["nll_no_budget"] = float(no_budget[has].sum() / total)
        g = nll["global"]
        reps_g = g[index].sum(axis=1)
        gain_reps = {}
        for arm, prefix in (("ecc", "gain"), ("emb_only", "gain_emb")):
            e = nll[arm]
            gain_reps[arm] = 100.0 * (reps_g - e[index].sum(axis=1)) / reps_g
            low, high = percentile_interval(gain_reps[arm], 0.95)
            row[f"{prefix}_pct"] = float(100.0 * (g.sum() - e.sum()) / g.sum())
            row[f"{prefix}_low"], row[f"{prefix}_high"] = low, high
        low, high = percentile_interval(gain_reps["ecc"] - gain_reps["emb_only"], 0.95)
        row["ecc_minus_emb_pct"] = row["gain_pct"] - row["gain_emb_pct"]
        row["ecc_minus_emb_low"], row["ecc_minus_emb_high"] = low, high
        row["n_test_pairs"] = int(total)
        row["budget_weight"] = budget_weight
        rows.append(row)
    return pd.DataFrame(rows)


__all__ = [
    "cluster_summary",
    "cross_cluster_nll_gap",
    "diagnostics",
    "evaluate_modes",
    "new_model_experiment",
    "probe_winner",
    "route_choices",
    "routing_experiment",
    "routing_metrics",
    "routing_over_seeds",
    "clustering_routing_table",
    "ROUTING_SETTINGS",
    "RoutingResult",
    "sweep_clusters",
    "sweep_probes",
    "within_cluster_consistency",
]
