"""Typed results, one producer (issue 22 item 2): :func:`run_ecc`, :func:`run_dars` and the DARS
routing record.

Each entry point takes data positionally and settings keyword-only, runs the library's engine
(:func:`~ecc_lib.ecc_seeds.run_seeds`, :func:`~ecc_lib.dars_diagnostics.label_instability`,
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ecc_lib.ecc import ECC
from ecc_lib.ecc_protocol import ECCEvaluation, ProtocolData, default_methods, prototype_parameters
from ecc_lib.ecc_seeds import (
    MultiSeedEvaluation,
    clustering_routing_table,
    routing_metrics,
    run_seeds,
)
from ecc_lib.metrics import DEFAULT_N_BOOT
from ecc_lib.protocol_settings import Protocol
from ecc_lib.serialization import to_jsonable

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

    def routing_table(self) -> pd.DataFrame | None:
        """The routing experiment over seeds as one table (None without routing).

        Returns
        -------
        DataFrame or None
            :func:`~ecc_lib.ecc_seeds.clustering_routing_table`.
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
            The first seed's :meth:`~ecc_lib.ecc_protocol.ECCEvaluation.to_dict`; with several
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
        if self.probe_strategy_comparison is not None:
            payload["probe_strategy_comparison"] = to_jsonable(self.probe_strategy_comparison)
        if self.soft_evidence is not None:
            payload["soft_evidence"] = to_jsonable(self.soft_evidence)
        if self.human_skipped:
            payload["ranking_quality_gain"]["human"] = None
            payload["human_skipped"] = self.human_skipped
        return payload

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
            :func:`~ecc_lib.ecc_experiments.sweep_probes` (``method, n_probes, gain_pct``).
        gain_vs_k : DataFrame, optional
            :func:`~ecc_lib.ecc_experiments.sweep_clusters` (``method, n_clusters, gain_pct``).
        diagnostics : DataFrame, optional
            :func:`~ecc_lib.ecc_experiments.diagnostics` (``method, mean_tau``).

        Returns
        -------
        dict
            JSON-ready.
        """
        from ecc_lib.data_checks import human_baseline_reason

        result, data, multi = self.first, self.data, self.multi
        summary = multi.summary()
        check = (
            embedding_check.to_dict() if hasattr(embedding_check, "to_dict") else embedding_check
        )
        table = self.routing_table()
        out = {
            "dataset": dataset,
            "warnings": data.params.get("warnings", []),
            "human_skipped": human_baseline_reason(data.labels, train_mask=data.train_mask),
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
            "gain_differences": result.differences,
            "gain_differences_disjoint": result.differences_disjoint,
            "routing_differences": multi.routing[0].get("differences", {}) if multi.routing else {},
            "leak_free": leak_free,
            "left_out_reasons": data.params.get("left_out_reasons", {}),
            "tie_tolerance": data.params.get("tie_tolerance"),
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
        :func:`~ecc_lib.ecc_experiments.score_label_informed` (label-informed ECC scored as the
        main table); left out when None.
    probe_strategies : dict, optional
        :func:`~ecc_lib.active_probes.probe_strategy_comparison`.
    soft_evidence : dict, optional
        :func:`~ecc_lib.soft_evidence.soft_evidence_comparison`.

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
        Methods to evaluate (default :func:`~ecc_lib.ecc_protocol.default_methods` for the
        queries: the paper's, ``ecc_labels`` with categories, and ``ecc_cv``).
    routing : bool, default False
        Also run the routing experiment on every seed.
    scheduler : str, default ""
        Fit the ECC-family methods on Dask (``"local"`` or an address); ``""`` in memory.

    Returns
    -------
    ECCResult
    """
    from ecc_lib.data_checks import human_baseline_reason

    protocol = Protocol() if protocol is None else protocol
    if not isinstance(protocol, Protocol):
        raise TypeError(f"protocol must be an ecc_lib Protocol, got {type(protocol).__name__}")
    estimator = ECC() if estimator is None else estimator
    params = prototype_parameters(estimator)
    human_skipped = human_baseline_reason(queries.get("category"))
    methods = default_methods(not human_skipped) if methods is None else tuple(methods)
    if (routing or protocol.leak_free) and protocol.n_probes < 1:
        raise ValueError("routing and the leak-free protocol need n_probes >= 1")
    if protocol.probe_strategy != "first" and protocol.n_probes < 1:
        raise ValueError("another probe strategy than 'first' needs n_probes >= 1")
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
            methods=methods,
            routing=routing,
            estimator=estimator,
            **protocol.run_seeds_options(),
        )
    result = ECCResult(
        protocol=protocol,
        estimator=estimator,
        methods=methods,
        multi=multi,
        routing=routing,
        human_skipped=human_skipped,
    )
    options = {
        "n_clusters": params["n_clusters"],
        "lam": params["lam"],
        "temperature": params["temperature"],
        "n_pairs": protocol.n_pairs,
        "test_size": protocol.test_size,
    }
    if protocol.probe_strategy != "first":
        from ecc_lib.active_probes import probe_strategy_over_seeds

        result.probe_strategy_comparison = probe_strategy_over_seeds(
            queries,
            outcomes,
            embeddings,
            protocol.seeds,
            protocol.probe_strategy,
            n_probes=protocol.n_probes,
            evidence=protocol.evidence,
            **options,
        )
    if protocol.evidence == "soft":
        from ecc_lib.soft_evidence import soft_evidence_comparison

        result.soft_evidence = soft_evidence_comparison(
            queries, outcomes, embeddings, random_state=protocol.seed, **options
        )
    return result


# --------------------------------------------------------------------------------------------------
# DARS


_DARS_KEYS = (
    "winner_flip_rate",
    "winner_flip_rate_ci95",
    "winner_flip_rate_strict",
    "winner_flip_rate_strict_ci95",
    "winner_change_rate",
    "winner_change_rate_ci95",
    "winner_change_rate_r",
    "flip_rate_chance",
    "flip_rate_method",
    "flip_rate_draws",
    "tied_top_share",
    "tied_top_share_ci95",
    "single_vs_distribution_disagreement",
    "single_vs_distribution_disagreement_ci95",
    "unstable_pair_share",
    "unstable_pair_share_ci95",
    "mean_sigma",
    "mean_sigma_ci95",
)
_HEADLINE_SIDES = ("both", "input", "output")


@dataclass
class DARSResult:
    """DARS labels and the single-shot label-instability diagnostics of an outcomes table.

    Attributes
    ----------
    observations : RepeatedObservations
        The outcomes grouped per (query, model).
    diagnostics : dict
        ``{"input", "output", "both"}`` -> :class:`~ecc_lib.dars_diagnostics.SubsetDiagnostics`
        or None where the subset has no repeated observations.
    distributions : CapabilityDistributions
        Mean score, spread and normalised cost per (query, model).
    cost_weight, beta : float
        The utility weights.
    seed : int
        Seed of the Monte Carlo draws and the bootstrap.
    skipped : str or None
        Why the diagnostics do not apply (no repeated observations), else None.
    """

    observations: Any
    diagnostics: dict
    distributions: Any
    cost_weight: float
    beta: float
    seed: int
    skipped: str | None = None
    settings: dict = field(default_factory=dict)

    @property
    def headline_side(self) -> str | None:
        """The subset of the headline readings: ``both``, else ``input``, else ``output``."""
        return next((s for s in _HEADLINE_SIDES if self.diagnostics.get(s) is not None), None)

    def to_dict(self) -> dict:
        """The JSON of ``ecc-lab dars``.

        Returns
        -------
        dict
            Top-level keys describe all observations; ``subsets`` holds ``input`` / ``output`` /
            ``both``, ``None`` where not applicable.
        """
        from ecc_lib.dars import label_shares

        obs, dist = self.observations, self.distributions
        both = self.diagnostics["both"].summary if self.diagnostics["both"] is not None else None
        summary = {
            "n_queries": obs.n_queries,
            "n_models": obs.n_models,
            "n_observations": obs.n_observations,
            "models": list(obs.models),
            "lambda": self.cost_weight,
            "beta": self.beta,
            "seed": self.seed,
            "cost_available": obs.cost_available,
            "n_dropped_queries": len(obs.dropped_query_ids),
            "labels": label_shares(dist.utility(self.cost_weight, self.beta), obs.models),
            "mean_mu_q": dict(zip(obs.models, dist.mu_q.mean(axis=0).tolist(), strict=True)),
        }
        for key in _DARS_KEYS:
            summary[key] = both[key] if both is not None else None
        if both is None:
            summary["note"] = (
                "no (query, model) pair has two observations: the diagnostics do not apply"
            )
        if not obs.cost_available:
            summary["cost_note"] = "no cost in the outcomes: mu_c = 0 for every pair"
        summary["subsets"] = {
            name: (None if d is None else d.summary) for name, d in self.diagnostics.items()
        }
        return to_jsonable(summary)

    def to_metrics(
        self,
        *,
        dataset: str,
        disagreement: float | None = None,
        dask_scheduler: str = "",
        dask_stats: Any = None,
        dask_check: pd.DataFrame | None = None,
    ) -> dict:
        """The ``dars`` section of ``metrics.json`` (schema: :mod:`ecc_lib.metrics_schema`).

        Parameters
        ----------
        dataset : str
            The dataset's label.
        disagreement : float, optional
            The single-shot winners' disagreement with the DARS label, used when the headline
            subset does not report it.
        dask_scheduler : str, default ""
            The scheduler of the Dask group-bys ('' when they did not run).
        dask_stats : DaskDarsStatistics, optional
            :func:`ecc_lib.distributed.dars_statistics`.
        dask_check : DataFrame, optional
            :func:`ecc_lib.distributed.flip_rate_agreement` (``difference`` column).

        Returns
        -------
        dict
            ``{"dataset", "skipped"}`` only when the diagnostics do not apply.
        """
        if self.skipped is not None:
            return to_jsonable({"dataset": dataset, "skipped": self.skipped})
        side = self.headline_side
        headline = self.diagnostics[side].summary if side is not None else {}
        dask = None
        if dask_check is not None:
            dask = {
                "scheduler": dask_scheduler,
                "flip_rates": dask_stats.flip_rates,
                "labels": dask_stats.labels,
                "max_abs_difference": (
                    float(dask_check["difference"].abs().max()) if len(dask_check) else None
                ),
            }
        out = {
            "dataset": dataset,
            "skipped": None,
            "n_incomplete_queries_left_out": len(self.observations.dropped_query_ids),
            "winner_flip_rate": headline.get("winner_flip_rate"),
            "winner_flip_rate_ci95": headline.get("winner_flip_rate_ci95"),
            "winner_flip_rate_side": side,
            "winner_flip_rate_strict": headline.get("winner_flip_rate_strict"),
            "winner_flip_rate_strict_ci95": headline.get("winner_flip_rate_strict_ci95"),
            "winner_change_rate": headline.get("winner_change_rate"),
            "winner_change_rate_ci95": headline.get("winner_change_rate_ci95"),
            "winner_change_rate_r": headline.get("winner_change_rate_r"),
            "flip_rate_chance": headline.get("flip_rate_chance"),
            "single_vs_distribution_disagreement": headline.get(
                "single_vs_distribution_disagreement", disagreement
            ),
            "single_vs_distribution_disagreement_ci95": headline.get(
                "single_vs_distribution_disagreement_ci95"
            ),
            "by_side": {
                s: (found.summary if found is not None else None)
                for s, found in self.diagnostics.items()
            },
            "dask": dask,
        }
        return to_jsonable(out)


def run_dars(
    outcomes: pd.DataFrame,
    *,
    cost_weight: float = 0.05,
    beta: float = 0.2,
    n_draws: int = 1000,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    change_draws: int | None = None,
    source: str | None = None,
    validate: bool = True,
) -> DARSResult:
    """DARS labels and the label-instability diagnostics of an outcomes table.

    Parameters
    ----------
    outcomes : DataFrame or RepeatedObservations
        Long outcomes ``query_id, model, score[, cost, variant_id, decode_id,
        observation_type]``.
    cost_weight, beta : float, default 0.05, 0.2
        Utility weights of ``U = mu_q - lambda mu_c - beta sigma_q``.
    n_draws : int, default 1000
        Monte Carlo draw pairs per query (non-binary scores).
    n_boot : int, default 1000
        Bootstrap resamples over queries.
    seed : int, default 0
        Seed of the Monte Carlo draws and the bootstrap.
    change_draws : int, optional
        ``R`` of the winner change rate (default: the median observations per pair).
    source : str, optional
        File name for error messages.
    validate : bool, default True
        Validate the outcomes table first.

    Returns
    -------
    DARSResult
    """
    from ecc_lib.dars import capability_distributions, repeated_observations
    from ecc_lib.dars_diagnostics import label_instability
    from ecc_lib.data_checks import check_utility_weights, no_repeats_reason

    check_utility_weights(cost_weight, beta)
    obs = repeated_observations(outcomes, source=source, validate=validate)
    diagnostics = label_instability(
        obs,
        cost_weight,
        beta,
        n_draws=n_draws,
        n_boot=n_boot,
        random_state=seed,
        change_draws=change_draws,
    )
    skipped = no_repeats_reason(outcomes) if isinstance(outcomes, pd.DataFrame) else None
    return DARSResult(
        observations=obs,
        diagnostics=diagnostics,
        distributions=capability_distributions(obs),
        cost_weight=cost_weight,
        beta=beta,
        seed=seed,
        skipped=skipped,
        settings={"n_draws": n_draws, "n_boot": n_boot, "change_draws": change_draws},
    )


# --------------------------------------------------------------------------------------------------
# routing with DARS supervision (notebook 04)


@dataclass
class RoutingRecord:
    """Routers trained on single-shot labels and on DARS targets, and the cost-quality curves.

    Attributes
    ----------
    result : RoutingTable
        :func:`~ecc_lib.routing_evaluation.routing_table` on the routed dataset.
    routers : tuple of str
        The router families asked for.
    dataset : str
        The routed dataset's label.
    single_shot_skipped : str or None
        Why the single-shot arm did not run (no repeated observations), else None.
    n_runs : int
        Single-shot repetitions that ran (0: no single-shot arm, no paired differences).
    cost_result : RoutingTable or None
        The cost-quality run (None when no dataset with prices was available).
    cost_dataset : str or None
        The priced dataset's label.
    cost_skipped : str or None
        Why the cost-quality run did not run.
    """

    result: Any
    routers: tuple
    dataset: str
    single_shot_skipped: str | None = None
    n_runs: int = 0
    cost_result: Any = None
    cost_dataset: str | None = None
    cost_skipped: str | None = None

    def headline(self) -> dict:
        """The routing headline: scores, utilities, gaps closed, DARS minus single-shot, whether
        any router beats the best fixed model, and the Pareto areas of the cost run.

        Returns
        -------
        dict
        """
        from ecc_lib.routing_evaluation import routing_headline

        result = self.result
        frame = result.table
        table = frame.set_index(["router", "supervision"])
        learned = frame[frame["supervision"] != "reference"]
        headline = {
            "dataset": self.dataset,
            "single_shot_skipped": self.single_shot_skipped,
            "best_fixed_model": result.info["best_fixed_model"],
            "score": {f"{r.router} ({r.supervision})": r.score for r in frame.itertuples()},
            "score_ci95": {
                f"{r.router} ({r.supervision})": [r.score_ci_low, r.score_ci_high]
                for r in frame.itertuples()
            },
            "utility": {f"{r.router} ({r.supervision})": r.utility for r in frame.itertuples()},
            "gap_closed": {
                f"{r.router} ({r.supervision})": r.gap_closed for r in learned.itertuples()
            },
            "dars_minus_single_shot_utility": {
                name: table.loc[(name, "DARS"), "utility"]
                - table.loc[(name, "single-shot"), "utility"]
                for name in self.routers
                if (name, "DARS") in table.index and (name, "single-shot") in table.index
            },
        }
        paired = result.paired
        paired = (paired if self.n_runs > 0 else paired.iloc[:0]).set_index("router")
        headline["dars_minus_single_shot"] = {
            name: {
                "score": row.score_diff,
                "score_ci95": [row.score_diff_ci_low, row.score_diff_ci_high],
                "utility": row.utility_diff,
                "utility_ci95": [row.utility_diff_ci_low, row.utility_diff_ci_high],
                "gap_closed_dars": row.gap_closed_dars,
                "gap_closed_dars_ci95": [row.gap_closed_dars_ci_low, row.gap_closed_dars_ci_high],
                "gap_closed_single_shot": row.gap_closed_single_shot,
                "gap_closed_single_shot_ci95": [
                    row.gap_closed_single_shot_ci_low,
                    row.gap_closed_single_shot_ci_high,
                ],
                "gap_closed_diff": row.gap_closed_diff,
                "gap_closed_diff_ci95": [row.gap_closed_diff_ci_low, row.gap_closed_diff_ci_high],
            }
            for name, row in paired.iterrows()
        }
        versus = routing_headline(result)
        for key in (
            "no_router_beats_best_fixed",
            "n_routers_beating_best_fixed",
            "best_router",
            "best_router_utility_minus_fixed",
            "best_router_utility_minus_fixed_ci95",
            "sentence",
        ):
            headline[key] = versus[key]
        if self.cost_result is not None:
            headline["pareto_area"] = {
                f"{r.router} ({r.supervision})": r.pareto_area
                for r in self.cost_result.table.itertuples()
            }
        return headline

    def to_metrics(self) -> dict:
        """The ``routing`` section of ``metrics.json`` (schema: :mod:`ecc_lib.metrics_schema`).

        Returns
        -------
        dict
            JSON-ready.
        """
        return to_jsonable(
            {
                "dataset": self.dataset,
                "headline": self.headline(),
                "info": self.result.info,
                "cost_info": None if self.cost_result is None else self.cost_result.info,
                "cost_dataset": self.cost_dataset,
                "cost_skipped": self.cost_skipped,
                "single_shot_skipped": self.single_shot_skipped,
            }
        )


__all__ = [
    "DARSResult",
    "ECCResult",
    "RoutingRecord",
    "ecc_beyond_metrics",
    "run_dars",
    "run_ecc",
]
