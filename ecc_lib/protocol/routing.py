"""Routing with the ECC clusterings: the paper's routing experiment, with and without the probe.

Each fitted clustering of :mod:`ecc_lib.protocol.methods` routes a test query to
``argmax_m sum_k r_qk (theta_km - mean_m' theta_km')`` among the models with an outcome on the
query (Wu, Silwal & Zhang 2026; ``docs/design.md`` section 3) and is scored by that model's mean score
(and mean cost) on the query, through :func:`ecc_lib.routing_evaluation.held_out.evaluate_choices`, the one
place routing is scored (:func:`routed_values`).
Settings (:data:`ROUTING_SETTINGS`): ``no_probe`` (embedding and label only), ``probe`` (with the
query's probe, beside ``probe_winner``, the probe's winner alone), ``probe_outside`` (the choice
restricted to models outside the probe pair, so no router is judged on an outcome it has read) and
``probe_cost`` (the probe's two calls charged). Summaries over protocol seeds are in
:mod:`ecc_lib.protocol.seeds`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ecc_lib.dars.distributions import CapabilityDistributions
from ecc_lib.data.comparisons import Comparisons, score_matrix
from ecc_lib.data.splits import probe_models
from ecc_lib.protocol.data import ProtocolData
from ecc_lib.protocol.probes import probe_responsibilities, select_probes
from ecc_lib.protocol.scoring import ecc_minus_others
from ecc_lib.protocol.settings import Protocol
from ecc_lib.routing_evaluation.held_out import HeldOut, evaluate_choices
from ecc_lib.serialization import to_jsonable
from ecc_lib.stats import bootstrap_indices, mean_with_replicates

ROUTING_SETTINGS: tuple[str, ...] = ("no_probe", "probe", "probe_outside", "probe_cost")


def held_out_means(data: ProtocolData, costs: np.ndarray | None = None) -> HeldOut:
    """The test queries' mean score (and mean cost) per model as held-out truth of
    :mod:`ecc_lib.routing_evaluation` (one summary per (query, model), no spread).

    Parameters
    ----------
    data : ProtocolData
        The train/test split (``data.scores`` holds the mean score per (query, model)).
    costs : ndarray, shape (n_test, M), optional
        Mean cost per (test query, model); 0 (and ``cost_available`` false) without.

    Returns
    -------
    HeldOut
        ``both.mu_q`` the test queries' mean scores (NaN where a model has no outcome),
        ``both.mu_c`` their mean costs; no rewrite or decode subsets.
    """
    scores = data.scores[data.test_mask]
    means = CapabilityDistributions(
        query_ids=np.asarray(data.test.query_ids),
        models=tuple(data.models),
        n_obs=np.isfinite(scores).astype(np.int64),
        mu_q=scores,
        sigma_q=np.zeros_like(scores),
        mu_c=np.zeros_like(scores) if costs is None else costs,
        cost_available=costs is not None,
        kind="dars",
    )
    return HeldOut(query_ids=means.query_ids, both=means, rewrites=None, decodes=None)


def routed_values(truth: HeldOut, choice: np.ndarray, *, metric: str = "score") -> np.ndarray:
    """Per test query, ``metric`` of the routed model (NaN where the choice is -1, no model).

    Parameters
    ----------
    truth : HeldOut
        :func:`held_out_means` of the split.
    choice : ndarray of int, shape (n_test,)
        Model index per test query; -1 where no model was allowed.
    metric : str, default "score"
        A metric of :func:`ecc_lib.routing_evaluation.held_out.evaluate_choices` (``"score"``,
        ``"cost"`` ...).

    Returns
    -------
    ndarray, shape (n_test,)
    """
    choice = np.asarray(choice)
    values = evaluate_choices(np.maximum(choice, 0), truth, cost_weight=0.0, beta=0.0)[metric]
    return np.where(choice >= 0, values, np.nan)


def routed_scores(data: ProtocolData, choice: np.ndarray) -> np.ndarray:
    """Per test query, the mean score of the routed model (NaN where the choice is -1).

    Parameters
    ----------
    data : ProtocolData
    choice : ndarray of int, shape (n_test,)

    Returns
    -------
    ndarray, shape (n_test,)
        :func:`routed_values` of :func:`held_out_means`.
    """
    return routed_values(held_out_means(data), choice)


def _cost_matrix(outcomes: pd.DataFrame | None, data: ProtocolData) -> np.ndarray | None:
    """Mean cost per (test query, model), or None when the outcomes carry no cost."""
    if outcomes is None or "cost" not in outcomes.columns or outcomes["cost"].isna().all():
        return None
    frame = outcomes[["query_id", "model", "cost"]].rename(columns={"cost": "score"})
    costs, _, _ = score_matrix(frame, query_ids=data.test.query_ids, models=data.models)
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
    *,
    protocol: Protocol | None = None,
    setting: str = "no_probe",
    random_state: int = 0,
) -> dict:
    """The model each fitted clustering routes every test query to, in one setting.

    ``no_probe``: responsibilities from the embedding (and the human label, where the method uses
    labels): what a router knows before calling any model; nothing of the test outcomes is read.
    ``probe`` and ``probe_cost``: the ECC formula with the query's probe (embedding + probe
    evidence). ``probe_outside``: as ``probe``, but the choice is restricted to models outside the
    probe's pair(s) (each method's own probe; under a model-dependent strategy they differ from
    the reference probe of ``probe_winner``, random and oracle). A method routes to ``argmax_m sum_k r_qk (theta_km - mean_m' theta_km')``
    among the models with an outcome on the query (the paper's routing rule).

    Parameters
    ----------
    data : ProtocolData
        The train/test split.
    fitted : dict
        ``{method: fitted clustering}``.
    protocol : Protocol, optional
        The settings (default ``Protocol()``); read here: ``n_probes`` (probes per test query in
        the probe settings, at least 1 there), ``probe_evidence`` (how the probe evidence enters
        the responsibilities, passed to ``probe_responsibilities``) and ``probe_strategy`` (how
        probes are chosen, see :func:`ecc_lib.protocol.probes.select_probes`).
    setting : str, default "no_probe"
        One of ``ROUTING_SETTINGS``.
    random_state : int, default 0
        Seed of the probe strategy (not the protocol seed).

    Returns
    -------
    dict
        ``{method: ndarray of model index per test query}`` (-1 where no model is allowed), plus
        ``"probe_winner"`` in the probe settings. Also returns the allowed mask under key
        ``"_allowed"``, the reference probe (None in ``no_probe``) under ``"_probe"`` and, under
        ``"_query_independent"``, whether each method gave every query the same
        responsibilities (it then knows nothing of the query, e.g. ``comp_only`` without a
        probe).
    """
    if setting not in ROUTING_SETTINGS:
        raise ValueError(f"setting must be one of {ROUTING_SETTINGS}, got {setting!r}")
    protocol = Protocol() if protocol is None else protocol
    n_probes, probe_evidence = protocol.n_probes, protocol.probe_evidence
    probe_strategy = protocol.probe_strategy
    n_test, m = data.test.n_queries, data.test.n_models
    # which models answered a query: presence only, never the values
    allowed = np.isfinite(data.scores[data.test_mask])
    reference_probe = None

    def probe_of(model):
        return select_probes(
            data, model, n_probes=n_probes, probe_strategy=probe_strategy, random_state=random_state
        )[0]

    if setting != "no_probe":
        if n_probes < 1:
            raise ValueError(f"the {setting!r} setting needs n_probes >= 1")
        reference_probe = probe_of(None)
    observed = allowed
    constant = {}
    if setting == "probe_outside":
        allowed = allowed & ~probe_models(reference_probe)
    choices = {}
    for name, model in fitted.items():
        probe = None if setting == "no_probe" else probe_of(model)
        resp = probe_responsibilities(
            model,
            data.x_test,
            probe,
            mode="embedding" if setting == "no_probe" else "both",
            labels=data.labels_test,
            probe_evidence=probe_evidence,
        )
        own_allowed = allowed
        if setting == "probe_outside":  # outside the pair(s) this method itself has read
            own_allowed = observed & ~probe_models(probe)
        choices[name] = _argmax_allowed(model.routing_scores(responsibilities=resp), own_allowed)
        # e.g. comp_only without a probe: every query gets the same responsibilities
        # (global is query-independent by definition and is not marked)
        constant[name] = name != "global" and bool(
            len(resp) > 1 and np.all(np.ptp(resp, axis=0) <= 1e-9)
        )
    if setting in ("probe", "probe_cost"):
        choices["probe_winner"] = probe_winner(reference_probe, n_test, m)
    choices["_allowed"] = allowed
    choices["_probe"] = reference_probe
    choices["_query_independent"] = constant
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
    differences : dict
        ``{setting: {"ecc_minus_<method>": {"estimate", "ci95"}}}``: routed score of ECC minus
        each other row, with a paired bootstrap interval (one shared resample of test queries).
    """

    table: pd.DataFrame
    choices: dict = field(repr=False)
    has_costs: bool = False
    params: dict = field(default_factory=dict)
    differences: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready: ``{setting: {method: {"score", "ci95", "cost"}}}`` plus top-level
        ``oracle`` and ``probe_winner`` (the ``routing`` block of ``ecc-lab ecc --routing``).

        Returns
        -------
        dict
            Also holds ``settings``, ``has_costs`` and ``params``; each cell also has
            ``n_queries``.
        """
        settings = list(self.params.get("settings", ROUTING_SETTINGS))
        out: dict = {"settings": settings}
        for row in self.table.itertuples():
            out.setdefault(row.setting, {})[row.method] = {
                "score": row.score,
                "ci95": [row.score_low, row.score_high],
                "cost": row.cost,
                "n_queries": row.n_queries,
                "same_as_global": bool(getattr(row, "same_as_global", False)),
                "query_independent": bool(getattr(row, "query_independent", False)),
            }
        first = "probe" if "probe" in out else settings[0]
        out["oracle"] = out[first]["oracle"]
        out["probe_winner"] = out.get("probe", {}).get("probe_winner")
        out["differences"] = self.differences
        out["has_costs"] = self.has_costs
        out["params"] = self.params
        return to_jsonable(out)


def routing_experiment(
    data: ProtocolData,
    fitted: dict,
    *,
    protocol: Protocol | None = None,
    outcomes: pd.DataFrame | None = None,
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
    models + cost of the routed model unless it is one of them (its answer is already paid for);
    for ``random`` the expected cost of a uniform choice under the same rule (a probe model is
    not charged twice, issue 23). A method that gives every query the same responsibilities
    (``comp_only`` without a probe: nothing tells its queries apart) is marked
    ``query_independent``; one whose choices equal ``global``'s on every query
    ``same_as_global``.
    Without a probe (``n_probes = 0``, two-model data) only ``no_probe`` runs.
    ``differences`` holds ECC minus every other row with paired intervals (same resamples).

    Parameters
    ----------
    data : ProtocolData
    fitted : dict
        Fitted estimators by name (must hold ``"global"``).
    protocol : Protocol, optional
        The settings (default ``Protocol()``); read here: ``n_probes``, ``probe_evidence`` and
        ``probe_strategy`` (as in :func:`ecc_lib.protocol.scoring.score_methods`) and ``n_boot``
        (bootstrap resamples of test queries).
    outcomes : DataFrame, optional
        Long outcomes with a ``cost`` column, for the costs (NaN without).
    confidence : float, default 0.95
        Level of the bootstrap intervals over test queries (the same resamples for every row).
    random_state : int, default 0
        Seed of the bootstrap and of a randomised probe strategy (not the protocol seed).

    Returns
    -------
    RoutingResult
    """
    if "global" not in fitted:
        raise ValueError("routing_experiment needs the fitted 'global' model")
    protocol = Protocol() if protocol is None else protocol
    n_probes, n_boot = protocol.n_probes, protocol.n_boot
    probe_evidence, probe_strategy = protocol.probe_evidence, protocol.probe_strategy
    scores = data.scores[data.test_mask]
    costs = _cost_matrix(outcomes, data)
    n_test = scores.shape[0]
    index = bootstrap_indices(n_test, n_boot=n_boot, random_state=random_state)
    table, all_choices = _RoutingRows(index, confidence), {}
    settings = ROUTING_SETTINGS if n_probes >= 1 else ("no_probe",)
    truth = held_out_means(data, costs)

    for setting in settings:
        choices = route_choices(
            data,
            fitted,
            protocol=protocol,
            setting=setting,
            random_state=random_state,
        )
        allowed, probe = choices.pop("_allowed"), choices.pop("_probe")
        fixed = choices.pop("_query_independent")
        charge = np.zeros(n_test)
        in_probe = np.zeros_like(allowed) if probe is None else probe_models(probe)
        if probe is not None and costs is not None and setting == "probe_cost":
            charge = np.nansum(np.where(in_probe, costs, 0.0), axis=1)

        def charged(choice, charge=charge, in_probe=in_probe, setting=setting):
            if costs is None:
                return None
            own = routed_values(truth, choice, metric="cost")
            if setting != "probe_cost":
                return own
            already = in_probe[np.arange(n_test), np.maximum(choice, 0)] & (choice >= 0)
            return charge + np.where(already, 0.0, own)

        all_choices[setting] = choices
        for name, choice in choices.items():
            # e.g. comp_only without a probe: nothing tells its queries apart, it routes as global
            same = name != "global" and np.array_equal(choice, choices["global"])
            score = routed_values(truth, choice)
            table.add(setting, name, score, charged(choice), same, fixed.get(name, False))
        random_score, random_cost = _random_arm(scores, costs, allowed, in_probe, charge, setting)
        table.add(setting, "random", random_score, random_cost)
        oracle = _argmax_allowed(np.where(allowed, scores, -np.inf), allowed)
        if setting != "probe_cost":
            table.add(setting, "oracle", routed_values(truth, oracle), charged(oracle))
    params = {
        "settings": list(settings),
        "n_probes": n_probes,
        "probe_evidence": probe_evidence,
        "probe_strategy": probe_strategy if isinstance(probe_strategy, str) else "custom",
        "n_boot": n_boot,
        "random_state": random_state,
    }
    return RoutingResult(
        table=pd.DataFrame(table.rows),
        choices=all_choices,
        has_costs=costs is not None,
        params=params,
        differences=_setting_differences(table.replicates, confidence),
    )


@dataclass
class _RoutingRows:
    """The routing table's rows and each row's bootstrap replicates (``replicates[setting]
    [method] = (score, replicates)``), all over the same resamples ``index``."""

    index: np.ndarray
    confidence: float
    rows: list = field(default_factory=list)
    replicates: dict = field(default_factory=dict)

    def add(
        self,
        setting: str,
        method: str,
        per_query_score: np.ndarray,
        per_query_cost: np.ndarray | None,
        same_as_global: bool = False,
        fixed: bool = False,
    ) -> None:
        """A row: the mean score per test query with its interval, and the mean cost (NaN
        without costs); nothing when no test query has a score."""
        ok = np.isfinite(per_query_score)
        if not ok.any():
            return
        score, (low, high), reps = mean_with_replicates(
            per_query_score, self.index, confidence=self.confidence
        )
        self.replicates.setdefault(setting, {})[method] = (score, reps)
        cost = float(np.nanmean(per_query_cost)) if per_query_cost is not None else float("nan")
        self.rows.append(
            {
                "setting": setting,
                "method": method,
                "score": score,
                "score_low": low,
                "score_high": high,
                "cost": cost,
                "n_queries": int(ok.sum()),
                "same_as_global": bool(same_as_global),
                "query_independent": bool(fixed),
            }
        )


def _random_arm(
    scores: np.ndarray,
    costs: np.ndarray | None,
    allowed: np.ndarray,
    in_probe: np.ndarray,
    charge: np.ndarray,
    setting: str,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Expected score and cost per test query of a uniform choice among the allowed models (in
    ``probe_cost`` the probe is charged, and a probe model's answer only once)."""
    with np.errstate(invalid="ignore"):
        masked = np.where(allowed, scores, np.nan)
        n_allowed = allowed.sum(axis=1)
        random_score = np.where(n_allowed > 0, np.nansum(masked, axis=1) / n_allowed, np.nan)
        random_cost = None
        if costs is not None:
            # in probe_cost a probe model's answer is already paid for: charged once, not twice
            unpaid = np.where(in_probe, 0.0, costs) if setting == "probe_cost" else costs
            random_cost = charge + np.nanmean(np.where(allowed, unpaid, np.nan), axis=1)
    return random_score, random_cost


def _setting_differences(replicates: dict, confidence: float) -> dict:
    """Per setting, ECC minus every other row, paired over the same resamples."""
    return {
        setting: ecc_minus_others(
            {name: score for name, (score, _) in arms.items()},
            {name: reps for name, (_, reps) in arms.items()},
            confidence,
        )
        for setting, arms in replicates.items()
        if "ecc" in arms
    }


__all__: list[str] = []
