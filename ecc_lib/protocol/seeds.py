"""The ECC protocol over several protocol seeds, and summaries over seeds.

A bootstrap interval over test queries ignores the pair draw, the split and the EM start, which
move the gain by a few points (``docs/design.md`` section 3, issue 10). :func:`run_seeds` repeats the
protocol of :mod:`ecc_lib.protocol.ecc_protocol` over protocol seeds (each redraws the pairs, the split and
the EM start, and optionally runs the routing experiment of :mod:`ecc_lib.protocol.routing`);
:class:`MultiSeedEvaluation` reports mean +- sd (ddof = 1, :func:`~ecc_lib.stats.mean_sd`) beside every per-seed
bootstrap interval, with paired differences between methods on the same seed.
:func:`clustering_routing_table`, :func:`routing_metrics` and :func:`routing_over_seeds` summarise
the routing experiment over seeds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ecc_lib.ecc.estimator import ECC
from ecc_lib.protocol.comparisons import (
    clustering_records,
    routed_scores_by_setting,
    routing_records,
)
from ecc_lib.protocol.data import ProtocolData
from ecc_lib.protocol.ecc_protocol import run_seed
from ecc_lib.protocol.methods import METHODS
from ecc_lib.protocol.routing import ROUTING_SETTINGS, routing_experiment
from ecc_lib.protocol.scoring import ECCEvaluation
from ecc_lib.protocol.settings import Protocol
from ecc_lib.serialization import to_jsonable
from ecc_lib.stats import mean_sd

# --------------------------------------------------------------------------------------------------
# the protocol over seeds


@dataclass
class MultiSeedEvaluation:
    """The protocol repeated over protocol seeds (each redraws pairs, split and EM start).

    Attributes
    ----------
    seeds : list of int
    results : list of ECCEvaluation
        One per seed, in the order of ``seeds`` (the fitted estimators are kept for the first
        seed only).
    routing : list of dict
        Per seed, the routing experiment (:func:`ecc_lib.protocol.routing.routing_experiment`'s
        ``to_dict()``); empty when routing was not run.
    cpu_seconds, wall_seconds : float
        Process CPU time and wall time of the whole run.
    data : ProtocolData or None
        The first seed's protocol data (pairs, split), for further experiments on it.
    routing_scores : list of dict
        Per seed, ``{setting: {method: routed score per test query}}`` (empty without routing):
        what :func:`~ecc_lib.protocol.comparisons.routing_records` combines over seeds.
    """

    seeds: list
    results: list
    routing: list = field(default_factory=list)
    cpu_seconds: float = float("nan")
    wall_seconds: float = float("nan")
    data: ProtocolData | None = field(default=None, repr=False)
    routing_scores: list = field(default_factory=list, repr=False)

    @property
    def first(self) -> ECCEvaluation:
        """The first seed's result (the top-level numbers of the CLI output)."""
        return self.results[0]

    def _over_seeds(self, attribute: str) -> dict:
        names = list(getattr(self.first, attribute))
        return {
            name: mean_sd([getattr(r, attribute).get(name, np.nan) for r in self.results])
            for name in names
        }

    def summary(self) -> dict:
        """Mean and sd over seeds of every gain reading, the leak share and the paired
        differences; JSON-ready (the keys the CLI adds when ``--seeds`` > 1).

        Returns
        -------
        dict
            ``seeds``, ``gain_*_mean`` / ``gain_*_sd``, ``probe_leak_share_mean_sd``,
            ``difference_mean_sd``, ``difference_disjoint_mean_sd``, ``per_seed``,
            ``cpu_seconds``, ``wall_seconds``, and the routing blocks when routing was run.
        """
        names = list(self.first.gain)
        differences, differences_disjoint = {}, {}
        others = [n for n in names if n != "ecc"] if "ecc" in names else []
        for second in others:
            for into, attribute in ((differences, "gain"), (differences_disjoint, "gain_disjoint")):
                # a method skipped on some seed (the human baseline of a split whose test
                # categories are all unseen in training) counts as missing there
                diff = [
                    getattr(r, attribute)["ecc"] - getattr(r, attribute).get(second, np.nan)
                    for r in self.results
                ]
                into[f"ecc - {second}"] = list(mean_sd(diff))
        per_seed = [
            {
                "seed": seed,
                "ranking_quality_gain": r.gain,
                "ci95": r.ci95,
                "nll": r.nll,
                "ranking_quality_gain_touching": r.gain_touching,
                "ci95_touching": r.ci95_touching,
                "ranking_quality_gain_disjoint": r.gain_disjoint,
                "ci95_disjoint": r.ci95_disjoint,
                "probe_leak_share": r.probe_leak_share,
                "n_scored": r.n_scored,
            }
            for seed, r in zip(self.seeds, self.results, strict=True)
        ]
        out: dict = {"seeds": list(self.seeds)}
        for attribute in ("gain", "gain_touching", "gain_disjoint"):
            over_seeds = self._over_seeds(attribute)
            out[f"{attribute}_mean"] = {k: v[0] for k, v in over_seeds.items()}
            out[f"{attribute}_sd"] = {k: v[1] for k, v in over_seeds.items()}
        out |= {
            "probe_leak_share_mean_sd": list(mean_sd([r.probe_leak_share for r in self.results])),
            "share_with_probe_mean_sd": list(
                mean_sd([r.probe_coverage.get("share_with_probe", np.nan) for r in self.results])
            ),
            "difference_mean_sd": differences,
            "difference_disjoint_mean_sd": differences_disjoint,
            "per_seed": per_seed,
            "cpu_seconds": self.cpu_seconds,
            "wall_seconds": self.wall_seconds,
        }
        if self.routing:
            out["routing_per_seed"] = self.routing
            out["routing_mean_sd"] = routing_over_seeds(self.routing)
        return to_jsonable(out)

    def comparisons(self, *, n_boot: int | None = None) -> list:
        """The typed comparison records over the seeds (issue 35): gains, method differences
        and, with routing, whether cluster routing pays, all with the one interval.

        Parameters
        ----------
        n_boot : int, optional
            Bootstrap replicates (default: those each seed's scoring used).

        Returns
        -------
        list of ComparisonRecord
            :func:`~ecc_lib.protocol.comparisons.clustering_records` then
            :func:`~ecc_lib.protocol.comparisons.routing_records`.
        """
        n_boot = int(self.first.params.get("n_boot", 1000)) if n_boot is None else n_boot
        methods = [m for m in self.first.nll if m != "global"]
        out = clustering_records(
            [r.per_query for r in self.results], methods=methods, n_boot=n_boot
        )
        return out + routing_records(self.routing_scores, n_boot=n_boot)

    def table(self) -> pd.DataFrame:
        """One row per (seed, method) with every gain reading and its interval.

        Returns
        -------
        DataFrame
            Each seed's :meth:`~ecc_lib.protocol.scoring.ECCEvaluation.table` with ``seed`` and
            ``probe_leak_share`` columns added.
        """
        frames = []
        for seed, r in zip(self.seeds, self.results, strict=True):
            t = r.table()
            t.insert(0, "seed", seed)
            t["probe_leak_share"] = r.probe_leak_share
            frames.append(t)
        return pd.concat(frames, ignore_index=True)

    def summary_table(self) -> pd.DataFrame:
        """Per method and reading (``all``, ``touching``, ``disjoint``): mean and sd (ddof = 1)
        over seeds, and every seed's estimate with its bootstrap interval.

        Returns
        -------
        DataFrame
            ``method, reading, mean, sd, n_seeds, per_seed`` where ``per_seed`` is a list of
            ``(seed, estimate, low, high)``; then ``estimate``, ``low``, ``high``: the comparison
            record's gain with the one interval over the seeds (issue 35,
            :func:`~ecc_lib.protocol.comparisons.clustering_records`; NaN for ``global``), which
            the figures draw.
        """
        n_boot = int(self.first.params.get("n_boot", 1000))
        records = {
            (r.a, r.reading): r
            for r in clustering_records(
                [r.per_query for r in self.results],
                methods=[m for m in self.first.gain if m != "global"],
                n_boot=n_boot,
                readings=("all", "touching", "disjoint"),
            )
            if r.question == "clustering_gain"
        }
        readings = {
            "all": ("gain", "ci95"),
            "touching": ("gain_touching", "ci95_touching"),
            "disjoint": ("gain_disjoint", "ci95_disjoint"),
        }
        rows = []
        for name in self.first.gain:
            for reading, (value, interval) in readings.items():
                per_seed = [
                    (seed, getattr(r, value)[name], *getattr(r, interval)[name])
                    for seed, r in zip(self.seeds, self.results, strict=True)
                ]
                mean, sd = mean_sd([p[1] for p in per_seed])
                record = records.get((name, reading))
                ci = record.ci if record is not None and record.ci is not None else None
                rows.append(
                    {
                        "method": name,
                        "reading": reading,
                        "mean": mean,
                        "sd": sd,
                        "n_seeds": len(per_seed),
                        "per_seed": per_seed,
                        "estimate": record.estimate if record is not None else np.nan,
                        "low": ci[0] if ci else np.nan,
                        "high": ci[1] if ci else np.nan,
                    }
                )
        return pd.DataFrame(rows)

    def to_dict(self) -> dict:
        """The first seed's :meth:`~ecc_lib.protocol.scoring.ECCEvaluation.to_dict` plus
        :meth:`summary`.

        Returns
        -------
        dict
            The keys of :meth:`summary` override those of the first seed.
        """
        payload = self.first.to_dict()
        payload.update(self.summary())
        return payload


def run_seeds(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    embeddings: np.ndarray,
    *,
    protocol: Protocol | None = None,
    estimator: ECC | None = None,
    methods: tuple[str, ...] = METHODS,
    routing: bool = False,
) -> MultiSeedEvaluation:
    """The protocol over its protocol seeds: each seed redraws the pairs, the split and the
    EM start (``random_state = seed``); the bootstrap over test queries and a randomised probe
    strategy use ``random_state = 0``, so the first seed reproduces
    :func:`~ecc_lib.protocol.ecc_protocol.run_protocol` exactly (both run
    :func:`~ecc_lib.protocol.ecc_protocol.run_seed`).

    Parameters
    ----------
    queries, outcomes, embeddings
        As in :func:`~ecc_lib.protocol.ecc_protocol.run_protocol`.
    protocol : Protocol, optional
        The settings (default ``Protocol()``); ``protocol.seeds`` are the protocol seeds (the
        CLI's ``--seed, --seed + 1, ...``).
    estimator : ECC, optional
        An unfitted ECC prototype (default ``ECC()``): ECC is its clone and the baselines are built
        from its parameters (:func:`~ecc_lib.protocol.methods.methods_from_prototype`).
    methods : tuple of str
        Methods to evaluate.
    routing : bool, default False
        Also run :func:`ecc_lib.protocol.routing.routing_experiment` on every seed.

    Returns
    -------
    MultiSeedEvaluation
    """
    protocol = Protocol() if protocol is None else protocol
    if not isinstance(protocol, Protocol):
        raise TypeError(f"protocol must be an ecc_lib Protocol, got {type(protocol).__name__}")
    seeds = list(protocol.seeds)
    wall, cpu = time.perf_counter(), time.process_time()
    results, routes, routed = [], [], []
    for i, seed in enumerate(seeds):
        data, result = run_seed(
            queries,
            outcomes,
            embeddings,
            seed=seed,
            protocol=protocol,
            estimator=estimator,
            methods=methods,
        )
        if routing:
            experiment = routing_experiment(
                data,
                result.fitted,
                outcomes=outcomes,
                # n_probes 0 on two-model data (single_pair_settings)
                protocol=protocol.with_probes(result.n_probes),
                random_state=0,
            )
            routes.append(experiment.to_dict())
            routed.append(routed_scores_by_setting(data, experiment))
        if i > 0:
            result.fitted = {}
        else:
            first_data = data
        results.append(result)
    return MultiSeedEvaluation(
        seeds=seeds,
        results=results,
        routing=routes,
        cpu_seconds=time.process_time() - cpu,
        wall_seconds=time.perf_counter() - wall,
        data=first_data,
        routing_scores=routed,
    )


# --------------------------------------------------------------------------------------------------
# routing over seeds


def clustering_routing_table(per_seed: list[dict], seeds: list[int] | None = None) -> pd.DataFrame:
    """The routing experiment over seeds as one table.

    Parameters
    ----------
    per_seed : list of dict
        :meth:`~ecc_lib.protocol.routing.RoutingResult.to_dict` of each seed.
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
                    "same_as_global": bool(cell.get("same_as_global", False)),
                    "query_independent": bool(cell.get("query_independent", False)),
                    "per_seed": [(s, c["score"], *c["ci95"]) for s, c in cells],
                }
            )
    return pd.DataFrame(rows)


def routing_metrics(table: pd.DataFrame) -> dict:
    """:func:`clustering_routing_table` as nested metrics: ``{setting: {method: {"score_mean",
    "score_sd", "score", "ci95", "cost_mean"}}}`` (``score`` and ``ci95``: the first seed's
    estimate and bootstrap interval).

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
            "same_as_global": bool(getattr(row, "same_as_global", False)),
            "query_independent": bool(getattr(row, "query_independent", False)),
        }
    return to_jsonable(out)


def routing_over_seeds(per_seed: list[dict]) -> dict:
    """Mean and sd (ddof = 1) over seeds of every routed score (and cost) in
    :meth:`~ecc_lib.protocol.routing.RoutingResult.to_dict` outputs: ``{setting: {method:
    {"score": [mean, sd], "cost": [mean, sd]}}}``.

    Parameters
    ----------
    per_seed : list of dict
        :meth:`~ecc_lib.protocol.routing.RoutingResult.to_dict` of each seed.

    Returns
    -------
    dict
        ``{setting: {method: {"score": [mean, sd], "cost": [mean, sd]}}}``.
    """
    out: dict = {}
    for setting in ROUTING_SETTINGS:
        for method in per_seed[0].get(setting, {}):
            values = [d[setting][method] for d in per_seed if method in d.get(setting, {})]
            out.setdefault(setting, {})[method] = {
                "score": list(mean_sd([v["score"] for v in values])),
                "cost": list(mean_sd([v["cost"] for v in values])),
            }
    return to_jsonable(out)


__all__ = [
    "run_seeds",
]
