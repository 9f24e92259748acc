"""Typed DARS results (issue 22 item 2): :func:`run_dars` and the DARS routing record.

:meth:`DARSResult.to_dict` is the JSON of ``ecc-lab dars``; :meth:`DARSResult.to_metrics` the
``dars`` section of ``metrics.json`` (notebook 02); :meth:`RoutingRecord.to_metrics` the
``routing`` section (notebook 04). Both follow the schema of :mod:`ecc_lib.metrics_schema`;
:mod:`ecc_lib.protocol.results` gathers them with the ECC results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ecc_lib import defaults
from ecc_lib.serialization import to_jsonable
from ecc_lib.stats import DEFAULT_N_BOOT

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
_BY_CATEGORY = (
    "flip",
    "flip_strict",
    "change",
    "disagreement",
    "unstable_pair_share",
    "mean_sigma",
)


@dataclass
class DARSResult:
    """DARS labels and the single-shot label-instability diagnostics of an outcomes table.

    Attributes
    ----------
    observations : RepeatedObservations
        The outcomes grouped per (query, model).
    diagnostics : dict
        ``{"input", "output", "both"}`` -> :class:`~ecc_lib.dars.label_instability.SubsetDiagnostics`
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

    def by_category(self, queries: pd.DataFrame) -> pd.DataFrame | None:
        """The headline side's per-query readings averaged per category of ``queries``.

        Parameters
        ----------
        queries : DataFrame
            With ``query_id`` and ``category`` (a missing category forms no group).

        Returns
        -------
        DataFrame or None
            One row per category: mean flip, strict flip, change, disagreement with the DARS
            label, unstable pair share and spread sigma, and ``n_queries``; None where no
            (query, model) pair has two observations.
        """
        side = self.headline_side
        if side is None:
            return None
        per_query = self.diagnostics[side].per_query.merge(
            queries[["query_id", "category"]], on="query_id", how="left"
        )
        groups = per_query.groupby("category")
        by_category = groups[list(_BY_CATEGORY)].mean()
        by_category["n_queries"] = groups.size()
        return by_category

    def to_dict(self) -> dict:
        """The JSON of ``ecc-lab dars``.

        Returns
        -------
        dict
            Top-level keys describe all observations; ``subsets`` holds ``input`` / ``output`` /
            ``both``, ``None`` where not applicable.
        """
        from ecc_lib.dars.distributions import label_shares

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
            "labels": label_shares(
                dist.utility(cost_weight=self.cost_weight, beta=self.beta), obs.models
            ),
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
    cost_weight: float = defaults.COST_WEIGHT,
    beta: float = defaults.BETA,
    n_draws: int = defaults.N_DRAWS,
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
    from ecc_lib.dars.distributions import capability_distributions, repeated_observations
    from ecc_lib.dars.label_instability import label_instability
    from ecc_lib.data.policy import no_repeats_reason
    from ecc_lib.data.protocol_policy import check_utility_weights

    check_utility_weights(cost_weight, beta)
    obs = repeated_observations(outcomes, source=source, validate=validate)
    diagnostics = label_instability(
        obs,
        cost_weight=cost_weight,
        beta=beta,
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
            "score": {_arm(r): r.score for r in frame.itertuples()},
            "score_ci95": {_arm(r): [r.score_ci_low, r.score_ci_high] for r in frame.itertuples()},
            "utility": {_arm(r): r.utility for r in frame.itertuples()},
            "gap_closed": {_arm(r): r.gap_closed for r in learned.itertuples()},
            "dars_minus_single_shot_utility": {
                name: table.loc[(name, "DARS"), "utility"]
                - table.loc[(name, "single-shot"), "utility"]
                for name in self.routers
                if (name, "DARS") in table.index and (name, "single-shot") in table.index
            },
        }
        paired = result.paired
        paired = (paired if self.n_runs > 0 else paired.iloc[:0]).set_index("router")
        # each paired reading with its interval (columns ``<column>_ci_low`` / ``_ci_high``)
        readings = {
            "score": "score_diff",
            "utility": "utility_diff",
            "gap_closed_dars": "gap_closed_dars",
            "gap_closed_single_shot": "gap_closed_single_shot",
            "gap_closed_diff": "gap_closed_diff",
        }
        by_router = {}
        for name, row in paired.iterrows():
            entry = {}
            for reading, column in readings.items():
                entry[reading] = row[column]
                entry[f"{reading}_ci95"] = [row[f"{column}_ci_low"], row[f"{column}_ci_high"]]
            by_router[name] = entry
        headline["dars_minus_single_shot"] = by_router
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
            cost_rows = list(self.cost_result.table.itertuples())
            headline["pareto_area"] = {_arm(r): r.pareto_area for r in cost_rows}
            if "pareto_area_ci_low" in self.cost_result.table:  # issue 35: its interval
                headline["pareto_area_ci95"] = {
                    _arm(r): [r.pareto_area_ci_low, r.pareto_area_ci_high] for r in cost_rows
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


def _arm(row) -> str:
    """``"router (supervision)"``: a routing table row's label in the headline."""
    return f"{row.router} ({row.supervision})"


__all__ = [
    "RoutingRecord",
    "run_dars",
]
