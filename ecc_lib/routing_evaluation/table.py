"""The result of a routing experiment: :class:`RoutingTable` (tables, runs, curves and paired
differences), produced by :func:`ecc_lib.routing_evaluation.experiment.routing_table` and read by
:mod:`ecc_lib.routing_evaluation.summary`."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass(frozen=True)
class RoutingTable:
    """Result of :func:`~ecc_lib.routing_evaluation.experiment.routing_table`.

    Attributes
    ----------
    table : DataFrame
        One row per (router, supervision): ``router, supervision, n_runs`` and for each metric its
        mean over runs, ``<metric>_std`` over runs and ``<metric>_ci_low/high`` (bootstrap over test
        queries of the run-averaged per-query values); ``gap_closed``; ``pareto_area``.
    runs : DataFrame
        One row per fitted run with the mean metrics.
    curves : DataFrame
        Cost-quality points ``router, supervision, run, lambda, cost, score, utility, on_front``.
    info : dict
        Split sizes, lambda, beta, dataset facts; ``no_router_beats_best_fixed`` and
        ``headline`` (one sentence, see
        :func:`~ecc_lib.routing_evaluation.summary.routing_headline`).
    paired : DataFrame
        DARS minus single-shot per family on the same test queries, with joint bootstrap
        intervals over test queries and single-shot runs (see
        :func:`~ecc_lib.routing_evaluation.paired.paired_differences`).
    versus_fixed : DataFrame
        Every (router, supervision) minus the best fixed model, with intervals.
    """

    table: pd.DataFrame
    runs: pd.DataFrame
    curves: pd.DataFrame
    info: dict
    paired: pd.DataFrame = field(default_factory=pd.DataFrame)
    versus_fixed: pd.DataFrame = field(default_factory=pd.DataFrame)


__all__: list[str] = []
