"""Typed results, one producer (issue 22 item 2): :func:`run_ecc`, :func:`run_dars` and the DARS
routing record (the DARS part is written in :mod:`ecc_lib.protocol.dars` and gathered here).

Each entry point takes data positionally and settings keyword-only, runs the library's engine
(:func:`~ecc_lib.protocol.seeds.run_seeds`, :func:`~ecc_lib.dars.label_instability.label_instability`,
:func:`~ecc_lib.routing_evaluation.routing_table`) and returns a dataclass. The CLI and the
notebooks only print, plot and record what these return:

- :meth:`ECCResult.to_dict` is the JSON of ``ecc-lab ecc``; :meth:`ECCResult.to_metrics` is the
  ``ecc`` section of ``metrics.json`` (notebook 03);
- :meth:`DARSResult.to_dict` is the JSON of ``ecc-lab dars``; :meth:`DARSResult.to_metrics` the
  ``dars`` section (notebook 02);
- :meth:`RoutingRecord.to_metrics` the ``routing`` section (notebook 04).

Every ``to_metrics`` output follows the versioned schema of :mod:`ecc_lib.metrics_schema`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ecc_lib.ecc.cv_grid import choice_words
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.soft_evidence import has_repeats
from ecc_lib.protocol.capability_map import CapabilityMap, capability_map
from ecc_lib.protocol.comparisons import records_to_metrics
from ecc_lib.protocol.dars import RoutingRecord, run_dars
from ecc_lib.protocol.data import ProtocolData
from ecc_lib.protocol.methods import default_methods, prototype_parameters
from ecc_lib.protocol.scoring import ECCEvaluation
from ecc_lib.protocol.seeds import (
    MultiSeedEvaluation,
    clustering_routing_table,
    routing_metrics,
    run_seeds,
)
from ecc_lib.protocol.settings import Protocol
from ecc_lib.protocol.tuned import choice_summary, ecc_cv_verdict, tuned_gains
from ecc_lib.serialization import to_jsonable
from ecc_lib.stats import DEFAULT_N_BOOT

# the over-seeds keys of MultiSeedEvaluation.summary() that the ecc section of metrics.json keeps
_SEED_SUMMARY_KEYS = (
    "seeds",
    "gain_mean",
    "gain_sd",
    "gain_touching_mean",
    "gain_touching_sd",
    "gain_disjoint_mean",
    "gain_disjoint_sd",
    "probe_leak_share_mean_sd",
    "difference_mean_sd",
    "difference_disjoint_mean_sd",
)


# --------------------------------------------------------------------------------------------------
# ECC


@dataclass
class ECCResult:
    """The ECC protocol over its seeds, with every comparison the settings ask for.

    Attributes
    ----------
    protocol : Protocol
        The settings it ran with.
    estimator : ECC
        The unfitted prototype (ECC's own parameters).
    methods : tuple of str
        The methods evaluated.
    multi : MultiSeedEvaluation
        The engine's result (per seed, with the routing experiment when asked for).
    routing : bool
        Whether the routing experiment ran.
    human_skipped : str or None
        Why the human-label baseline does not apply to the queries (None when it does).
    probe_strategy_comparison : dict or None
        ``probe_strategy`` against ``"first"`` over the seeds (only for another strategy).
    soft_evidence : dict or None
        Soft against sampled evidence on held-out queries (only with ``evidence="soft"``).
    """

    protocol: Protocol
    estimator: ECC
    methods: tuple
    multi: MultiSeedEvaluation
    routing: bool = False
    human_skipped: str | None = None
    probe_strategy_comparison: dict | None = None
    soft_evidence: dict | None = None

    @property
    def first(self) -> ECCEvaluation:
        """The first seed's evaluation (the top-level numbers)."""
        return self.multi.first

    @property
    def data(self) -> ProtocolData | None:
        """The first seed's protocol data (pairs, split)."""
        return self.multi.data

    @property
    def seeds(self) -> list:
        """The protocol seeds."""
        return list(self.multi.seeds)

    def leak_free_coverage(self, queries, outcomes, embeddings) -> dict | None:
        """The leak-free protocol on the first seed (the global BT, ECC and its embedding-only
        baseline): how many test queries keep a probe drawn among models none of their scored
        pairs holds, and ECC's gain with and without one.

        Parameters
        ----------
        queries, outcomes : DataFrame
        embeddings : ndarray
            The inputs of this result.

        Returns
        -------
        dict or None
            :attr:`ECCEvaluation.probe_coverage`; None where the first seed reveals no probe
            (two-model data).
        """
        if self.first.n_probes < 1:
            return None
        protocol = self.protocol.replace(seeds=(self.protocol.seed,), leak_free=True)
        found = run_ecc(
            queries,
            outcomes,
            embeddings,
            protocol=protocol,
            estimator=self.estimator,
            methods=("global", "ecc", "emb_only"),
        )
        return found.first.probe_coverage

    def routing_table(self) -> pd.DataFrame | None:
        """The routing experiment over seeds as one table (None without routing).

        Returns
        -------
        DataFrame or None
            :func:`~ecc_lib.protocol.seeds.clustering_routing_table`.
        """
        if not self.multi.routing:
            return None
        return clustering_routing_table(self.multi.routing, self.multi.seeds)

    def to_dict(self) -> dict:
        """The JSON of ``ecc-lab ecc`` (without the ``inputs``, ``embedding_check`` and
        ``data_policy`` blocks, which describe the files the CLI read).

        Returns
        -------
        dict
            The first seed's :meth:`~ecc_lib.protocol.scoring.ECCEvaluation.to_dict`; with several
            seeds the over-seeds summary; with routing the ``routing`` block; ``ecc_cv`` (the
            settings cross-validation chose per seed), ``probe_strategy_comparison``,
            ``soft_evidence`` and ``human_skipped`` where they apply.
        """
        multi = self.multi
        payload = self.first.to_dict()
        several = len(multi.seeds) > 1
        summary = multi.summary() if several or self.routing else None
        if several:
            payload.update({k: v for k, v in summary.items() if not k.startswith("routing")})
        if self.routing:
            payload["routing"] = dict(multi.routing[0])
            if several:
                payload["routing"]["mean_sd_over_seeds"] = summary["routing_mean_sd"]
                payload["routing"]["per_seed"] = multi.routing
        chosen = [r.params.get("best_params", {}).get("ecc_cv") for r in multi.results]
        if any(c is not None for c in chosen):  # issue 26: ecc_cv's settings per seed
            # the human-label candidate's label weight is infinite: null in JSON
            payload["ecc_cv"] = to_jsonable({"seeds": list(multi.seeds), "best_params": chosen})
            payload["ecc_cv"].update(self.ecc_cv_choice() or {})  # issue 34: in words
        payload["comparisons"] = records_to_metrics(self.comparison_records)  # issue 35
        if self.probe_strategy_comparison is not None:
            payload["probe_strategy_comparison"] = to_jsonable(self.probe_strategy_comparison)
        if self.soft_evidence is not None:
            payload["soft_evidence"] = to_jsonable(self.soft_evidence)
        if self.human_skipped:
            payload["ranking_quality_gain"]["human"] = None
            payload["human_skipped"] = self.human_skipped
        return payload

    def ecc_cv_choices(self) -> list | None:
        """What ECC-CV chose on each protocol seed (None when ``ecc_cv`` did not run).

        Returns
        -------
        list of dict or None
            JSON-ready, in the order of the seeds.
        """
        if "ecc_cv" not in self.methods:
            return None
        return to_jsonable(
            [r.params.get("best_params", {}).get("ecc_cv") for r in self.multi.results]
        )

    def capability_map(self, method: str | None = None, **kwargs) -> CapabilityMap:
        """Which model for which queries, on the first seed (issue 37).

        Parameters
        ----------
        method : str, optional
            The grouping: a method of this result, or ``"categories"``; default ``"ecc_cv"`` (the
            method ECC-CV chose) where it ran, else ``"ecc"``.
        **kwargs
            As :func:`~ecc_lib.protocol.capability_map.capability_map` (``random_state`` defaults
            to the protocol's seed).

        Returns
        -------
        CapabilityMap
        """
        kwargs.setdefault("random_state", self.seeds[0] if self.seeds else 0)
        return capability_map(self.data, self.first.fitted, method=method, **kwargs)

    def ecc_cv_choice(self) -> dict | None:
        """What ECC-CV chose, in words, and its verdict against the tuned baselines (issue 34).

        Returns
        -------
        dict or None
            ``{"words", "per_seed", "clustering", "verdict"}``: the choice over seeds
            (:func:`~ecc_lib.protocol.tuned.choice_summary`), each seed's choice with its
            settings, whether any seed chose a clustering, and
            :func:`~ecc_lib.protocol.tuned.ecc_cv_verdict` on pairs disjoint from the probe
            (``""`` without ``global_tuned``); None when ``ecc_cv`` did not run.
        """
        if "ecc_cv" not in self.methods:
            return None
        chosen = [r.params.get("best_params", {}).get("ecc_cv") for r in self.multi.results]
        summary = choice_summary(chosen)
        summary["per_seed"] = [
            None if c is None else choice_words(c, settings=True) for c in chosen
        ]
        summary["verdict"] = ecc_cv_verdict(
            summary, self.comparison_records, where="on pairs disjoint from the probe"
        )
        return summary

    @functools.cached_property
    def comparison_records(self) -> list:
        """The typed comparison records over the seeds, computed once per result (issue 35).

        Returns
        -------
        list of ComparisonRecord
            :meth:`~ecc_lib.protocol.seeds.MultiSeedEvaluation.comparisons`.
        """
        return self.multi.comparisons()

    def tuned_gains(self) -> dict:
        """Gain over the tuned global BT on pairs disjoint from the probe, per method.

        Returns
        -------
        dict
            ``{method: [mean, sd]}`` over seeds (:func:`~ecc_lib.protocol.tuned.tuned_gains`;
            ``{}`` without ``global_tuned``).
        """
        return tuned_gains([r.gain_disjoint for r in self.multi.results])

    def to_metrics(
        self,
        *,
        dataset: str,
        embedding_check: Any = None,
        leak_free: dict | None = None,
        gain_vs_probes: pd.DataFrame | None = None,
        gain_vs_k: pd.DataFrame | None = None,
        diagnostics: pd.DataFrame | None = None,
    ) -> dict:
        """The ``ecc`` section of ``metrics.json`` (schema: :mod:`ecc_lib.metrics_schema`).

        Parameters
        ----------
        dataset : str
            The dataset's label.
        embedding_check : EmbeddingCheck or dict, optional
            The embedding check of the queries (its ``to_dict()`` is recorded).
        leak_free : dict, optional
            ``probe_coverage`` of the leak-free protocol on the first seed.
        gain_vs_probes : DataFrame, optional
            :func:`~ecc_lib.protocol.experiments.sweeps.sweep_probes` (``method, n_probes, gain_pct``).
        gain_vs_k : DataFrame, optional
            :func:`~ecc_lib.protocol.experiments.sweeps.sweep_clusters` (``method, n_clusters, gain_pct``).
        diagnostics : DataFrame, optional
            :func:`~ecc_lib.protocol.experiments.sweeps.diagnostics` (``method, mean_tau``).

        Returns
        -------
        dict
            JSON-ready.
        """
        result, data, multi = self.first, self.data, self.multi
        summary = multi.summary()
        check = (
            embedding_check.to_dict() if hasattr(embedding_check, "to_dict") else embedding_check
        )
        table = self.routing_table()
        out = {
            "dataset": dataset,
            "warnings": data.params.get("warnings", []),
            "human_skipped": self.human_skipped,
            "embedding_check": check,
            "ranking_quality_gain": result.gain,
            "ranking_quality_gain_ci95": result.ci95,
            "ranking_quality_gain_touching": result.gain_touching,
            "ranking_quality_gain_touching_ci95": result.ci95_touching,
            "ranking_quality_gain_disjoint": result.gain_disjoint,
            "ranking_quality_gain_disjoint_ci95": result.ci95_disjoint,
            "probe_leak_share": result.probe_leak_share,
            **{key: value for key, value in summary.items() if key in _SEED_SUMMARY_KEYS},
            "routing": routing_metrics(table) if table is not None else {},
            # issue 35: every comparison of the report and the bench, with the one interval
            "comparisons": records_to_metrics(self.comparison_records),
            "gain_differences": result.differences,
            "gain_differences_disjoint": result.differences_disjoint,
            "routing_differences": multi.routing[0].get("differences", {}) if multi.routing else {},
            "leak_free": leak_free,
            "left_out_reasons": data.params.get("left_out_reasons", {}),
            "tie_tolerance": data.params.get("tie_tolerance"),
            "ecc_cv_best_params": self.ecc_cv_choices(),
            "ecc_cv_choice": self.ecc_cv_choice(),
            "gain_disjoint_over_tuned_global": self.tuned_gains(),
            "nll": result.nll,
            "accuracy": result.accuracy,
            "n_queries": result.n_queries,
            "n_train": result.n_train,
            "n_test": result.n_test,
            "n_scored_pairs": result.n_scored,
            "ecc_converged": result.converged.get("ecc"),
            "ecc_n_iter": result.n_iter.get("ecc"),
            "gain_vs_probes": _curve(gain_vs_probes, "n_probes"),
            "gain_vs_k": _curve(gain_vs_k, "n_clusters"),
            "within_cluster_tau": (
                {}
                if diagnostics is None
                else dict(zip(diagnostics["method"], diagnostics["mean_tau"]))
            ),
        }
        return to_jsonable(out)


def ecc_beyond_metrics(
    *,
    labels: ECCEvaluation | None = None,
    probe_strategies: dict | None = None,
    soft_evidence: dict | None = None,
) -> dict:
    """The ``ecc_beyond`` section of ``metrics.json``: ECC beyond the paper (notebook 03).

    Parameters
    ----------
    labels : ECCEvaluation, optional
        :func:`~ecc_lib.protocol.experiments.sweeps.score_label_informed` (label-informed ECC scored as the
        main table); left out when None.
    probe_strategies : dict, optional
        :func:`~ecc_lib.protocol.experiments.probe_strategies.probe_strategy_comparison`.
    soft_evidence : dict, optional
        :func:`~ecc_lib.protocol.experiments.soft_evidence.soft_evidence_comparison`.

    Returns
    -------
    dict
        JSON-ready; only the parts that ran.
    """
    out: dict = {}
    if labels is not None:
        model = labels.fitted["ecc_labels"]
        out["ecc_labels"] = {
            "gain": labels.gain,
            "gain_disjoint": labels.gain_disjoint,
            "ci95": labels.ci95,
            "ci95_disjoint": labels.ci95_disjoint,
            "label_weight": model.label_weight_,
            "label_weight_by_reading": model.label_weight_by_reading_,
            "differences_disjoint": labels.differences_disjoint,
        }
    if probe_strategies is not None:
        out["probe_strategies"] = probe_strategies
    if soft_evidence is not None:
        out["soft_evidence"] = soft_evidence
    return to_jsonable(out)


def _curve(table: pd.DataFrame | None, x: str) -> dict:
    """``{"method@x": gain_pct}`` of a sweep, without the global reference."""
    if table is None:
        return {}
    return {
        f"{row.method}@{getattr(row, x)}": row.gain_pct
        for row in table.itertuples()
        if row.method != "global"
    }


def run_ecc(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    embeddings: np.ndarray,
    *,
    protocol: Protocol | None = None,
    estimator: ECC | None = None,
    methods: Sequence[str] | None = None,
    routing: bool = False,
    scheduler: str = "",
) -> ECCResult:
    """The ECC protocol with every baseline, over the protocol's seeds.

    Parameters
    ----------
    queries : DataFrame
        ``query_id, text[, category]``.
    outcomes : DataFrame
        Long outcomes ``query_id, model, score``.
    embeddings : ndarray, shape (len(queries), d)
        Rows follow the queries table.
    protocol : Protocol, optional
        The settings (default ``Protocol()``, the paper's).
    estimator : ECC, optional
        The unfitted ECC prototype; its K, lam, T and other parameters configure ECC and the
        baselines (default ``ECC()``). The protocol seeds its ``random_state``.
    methods : sequence of str, optional
        Methods to evaluate (default :func:`~ecc_lib.protocol.methods.default_methods` for the
        queries: the paper's, ``ecc_labels`` with categories, and ``ecc_cv``).
    routing : bool, default False
        Also run the routing experiment on every seed.
    scheduler : str, default ""
        Fit the ECC-family methods on Dask (``"local"`` or an address); ``""`` in memory.

    Returns
    -------
    ECCResult
    """
    from ecc_lib.data.protocol_policy import human_baseline_reason

    protocol = Protocol() if protocol is None else protocol
    if not isinstance(protocol, Protocol):
        raise TypeError(f"protocol must be an ecc_lib Protocol, got {type(protocol).__name__}")
    estimator = ECC() if estimator is None else estimator
    prototype_parameters(estimator)  # refuses a prototype that is not an ecc_lib ECC
    human_skipped = human_baseline_reason(queries.get("category"))
    methods = default_methods(not human_skipped) if methods is None else tuple(methods)
    if routing and protocol.n_probes < 1:  # the other cross-field checks are the Protocol's
        raise ValueError("routing needs n_probes >= 1")
    if protocol.evidence == "soft" and not has_repeats(outcomes):
        raise ValueError(
            "evidence 'soft' needs repeated observations of some (query, model) pair; these "
            "outcomes hold one observation per pair"
        )
    if scheduler:  # Dask is imported only when asked for
        from ecc_lib.distributed import scheduler_context

        where = scheduler_context(scheduler)
    else:
        where = contextlib.nullcontext()
    with where:
        multi = run_seeds(
            queries,
            outcomes,
            embeddings,
            protocol=protocol,
            estimator=estimator,
            methods=methods,
            routing=routing,
        )
    if not human_skipped and multi.data is not None:  # one rule for the CLI JSON and metrics.json
        human_skipped = human_baseline_reason(multi.data.labels, train_mask=multi.data.train_mask)
    result = ECCResult(
        protocol=protocol,
        estimator=estimator,
        methods=methods,
        multi=multi,
        routing=routing,
        human_skipped=human_skipped,
    )
    if protocol.probe_strategy != "first":
        from ecc_lib.protocol.experiments.probe_strategies import probe_strategy_over_seeds

        result.probe_strategy_comparison = probe_strategy_over_seeds(
            queries, outcomes, embeddings, protocol=protocol, estimator=estimator
        )
    if protocol.evidence == "soft":
        from ecc_lib.protocol.experiments.soft_evidence import soft_evidence_comparison

        result.soft_evidence = soft_evidence_comparison(
            queries,
            outcomes,
            embeddings,
            # the experiment's own inference mode and bootstrap size (as before issue 33)
            protocol=protocol.replace(mode="embedding", n_boot=DEFAULT_N_BOOT),
            estimator=estimator,
            every_pair=False,
        )
    return result


__all__ = [
    "ECCResult",
    "RoutingRecord",
    "ecc_beyond_metrics",
    "run_dars",
    "run_ecc",
]
