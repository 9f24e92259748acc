"""Paired differences: DARS minus single-shot, and every router against the best fixed model.

Every arm is scored on the same test queries, so the differences are paired per query; a
single-shot arm's value is the mean over its runs, and the bootstrap resamples the test queries
and the single-shot runs jointly (DARS, Lai et al. 2026, section 4 repeats the single-shot
baseline over draws).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ecc_lib.stats import DEFAULT_N_BOOT, bootstrap_indices, seed_query_interval

logger = logging.getLogger(__name__)

PAIRED_METRICS = ("score", "utility")
"""Metrics of the paired DARS-minus-single-shot comparison."""


def joint_bootstrap_weights(
    n_queries: int,
    n_runs: int,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Resampling weights of test queries and of single-shot runs, drawn jointly.

    Each bootstrap replicate resamples the test queries with replacement and, independently, the
    ``n_runs`` single-shot draws with replacement; a replicate of a run-averaged mean is then
    ``run_weights[b] @ values @ query_weights[b]`` for ``values`` of shape (n_runs, n_queries).
    The interval so covers both the test-query sample and the randomness of the single-shot
    labels (DARS, Lai et al. 2026, section 4 repeats the single-shot baseline over draws).

    Parameters
    ----------
    n_queries : int
        Test queries.
    n_runs : int
        Single-shot runs (at least 1).
    n_boot : int, default 1000
        Replicates.
    random_state : int or Generator, optional
        Seed (the query indices come first from the stream, then the run indices).

    Returns
    -------
    query_weights : ndarray, shape (n_boot, n_queries)
        Share of each query in each replicate (rows sum to 1).
    run_weights : ndarray, shape (n_boot, n_runs)
        Share of each run in each replicate (rows sum to 1).
    """
    rng = np.random.default_rng(random_state)

    def shares(n_units: int) -> np.ndarray:
        index = bootstrap_indices(n_units, n_boot=n_boot, random_state=rng)
        flat = index + n_units * np.arange(n_boot)[:, None]
        counts = np.bincount(flat.ravel(), minlength=n_boot * n_units)
        return counts.reshape(n_boot, n_units) / n_units

    return shares(n_queries), shares(n_runs)


def paired_differences(
    per_query: dict[tuple[str, str], list[dict[str, np.ndarray]]],
    families: Sequence[str],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | np.random.Generator | None = 0,
    confidence: float = 0.95,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """DARS minus single-shot per router family, and every router against the best fixed model.

    Parameters
    ----------
    per_query : dict
        ``{(router, supervision): [metrics of run 0, run 1, ...]}`` as built by
        :func:`~ecc_lib.routing_evaluation.experiment.routing_table`: per-query arrays from
        :func:`~ecc_lib.routing_evaluation.held_out.evaluate_choices` on the same test
        queries, with the references ``("Oracle", "reference")`` and
        ``("Best fixed model", "reference")``.
    families : sequence of str
        Router families to compare.
    n_boot : int, default 1000
    random_state : int or Generator, optional
        Seed of the joint bootstrap (:func:`joint_bootstrap_weights`); one draw serves every
        family, so families compare on the same replicates.
    confidence : float, default 0.95

    Returns
    -------
    paired : DataFrame
        One row per family with both arms: ``router, n_runs`` and, for ``score`` and
        ``utility``, ``<metric>_dars``, ``<metric>_single_shot``, ``<metric>_diff`` (DARS minus
        single-shot, mean over test queries and runs) with ``<metric>_diff_ci_low/high``; and
        ``gap_closed_dars``, ``gap_closed_single_shot``, ``gap_closed_diff`` with their
        ``_ci_low/high``. Gap closed is ``(U - U_fixed) / (U_oracle - U_fixed)``: 0 at the best
        fixed model, 1 at the per-query oracle (ratio of means, recomputed in each replicate).
    versus_fixed : DataFrame
        One row per (router, supervision): ``utility_minus_fixed`` and ``score_minus_fixed``
        with intervals, and ``beats_best_fixed`` (the utility interval lies above 0). The
        interval is the report's one interval (:func:`ecc_lib.stats.seed_query_interval`, one
        split as one seed): for a deterministic router exactly the comparison records' bootstrap
        over test queries with ``random_state``.

    Notes
    -----
    Every arm is scored on the same test queries, so the differences are paired per query; a
    single-shot arm's value is the mean over its runs, and each replicate resamples the test
    queries and the single-shot runs jointly, so the intervals cover the test sample and the
    randomness of the single-shot labels.
    """
    oracle = per_query[("Oracle", "reference")][0]
    fixed = per_query[("Best fixed model", "reference")][0]
    arms = {
        key: {m: np.array([run[m] for run in runs], dtype=float) for m in PAIRED_METRICS}
        for key, runs in per_query.items()
        if key[1] != "reference"
    }
    stacked = [fixed[m] for m in PAIRED_METRICS] + [oracle[m] for m in PAIRED_METRICS]
    stacked += [a[m].reshape(-1, a[m].shape[-1]) for a in arms.values() for m in PAIRED_METRICS]
    finite = np.all(np.isfinite(np.vstack(stacked)), axis=0)
    if not finite.all():
        logger.info(
            "%d of %d test queries left out of the paired differences: a metric is undefined",
            int((~finite).sum()),
            len(finite),
        )
    if not finite.any():
        raise ValueError("no test query has every paired metric defined")
    n_runs = max((a["utility"].shape[0] for a in arms.values()), default=1)
    query_w, run_w = joint_bootstrap_weights(
        int(finite.sum()), n_runs, n_boot=n_boot, random_state=random_state
    )
    boot = _JointBootstrap(finite, n_runs, query_w, run_w, (1.0 - confidence) / 2.0)
    interval, arm = boot.interval, boot.arm
    fixed_u, fixed_u_rep = arm(fixed["utility"][None])
    oracle_u, oracle_u_rep = arm(oracle["utility"][None])
    span, span_rep = oracle_u - fixed_u, oracle_u_rep - fixed_u_rep
    with np.errstate(invalid="ignore", divide="ignore"):
        span_rep = np.where(np.abs(span_rep) > 1e-12, span_rep, np.nan)

    def gap(value: float, replicates: np.ndarray) -> tuple[float, np.ndarray]:
        point = (value - fixed_u) / span if abs(span) > 1e-12 else float("nan")
        return point, (replicates - fixed_u_rep) / span_rep

    paired_rows = []
    for name in families:
        if (name, "DARS") not in arms or (name, "single-shot") not in arms:
            continue
        row: dict = {"router": name, "n_runs": int(arms[(name, "single-shot")]["utility"].shape[0])}
        for metric in PAIRED_METRICS:
            d_value, d_rep = arm(arms[(name, "DARS")][metric])
            s_value, s_rep = arm(arms[(name, "single-shot")][metric])
            row[f"{metric}_dars"] = d_value
            row[f"{metric}_single_shot"] = s_value
            row[f"{metric}_diff"] = d_value - s_value
            row[f"{metric}_diff_ci_low"], row[f"{metric}_diff_ci_high"] = interval(d_rep - s_rep)
            if metric == "utility":
                g_dars, g_dars_rep = gap(d_value, d_rep)
                g_ss, g_ss_rep = gap(s_value, s_rep)
                for label, value, rep in (
                    ("gap_closed_dars", g_dars, g_dars_rep),
                    ("gap_closed_single_shot", g_ss, g_ss_rep),
                    ("gap_closed_diff", g_dars - g_ss, g_dars_rep - g_ss_rep),
                ):
                    row[label] = value
                    row[f"{label}_ci_low"], row[f"{label}_ci_high"] = interval(rep)
        paired_rows.append(row)

    fixed_refs = {"utility": (fixed_u, fixed_u_rep), "score": arm(fixed["score"][None])}
    return (
        pd.DataFrame(paired_rows, columns=_paired_columns()),
        pd.DataFrame(_versus_fixed_rows(arms, boot, fixed_refs, confidence)),
    )


@dataclass
class _JointBootstrap:
    """The joint bootstrap of the paired differences: test queries with every metric defined
    (``finite``), their replicate weights and the single-shot runs' (``n_runs`` runs)."""

    finite: np.ndarray
    n_runs: int
    query_w: np.ndarray
    run_w: np.ndarray
    tail: float

    def interval(self, replicates: np.ndarray) -> tuple[float, float]:
        """Percentile interval of the finite replicates (NaN without any)."""
        ok = replicates[np.isfinite(replicates)]
        if len(ok) == 0:
            return float("nan"), float("nan")
        low, high = np.quantile(ok, [self.tail, 1.0 - self.tail])
        return float(low), float(high)

    def arm(self, values: np.ndarray) -> tuple[float, np.ndarray]:
        """Point estimate and bootstrap replicates of the run-averaged mean over the queries of an
        arm (one run: deterministic; several: joint)."""
        values = values[..., self.finite]
        if values.shape[0] == 1:
            return float(np.mean(values[0])), self.query_w @ values[0]
        if values.shape[0] != self.n_runs:
            raise ValueError(
                f"every single-shot arm needs {self.n_runs} runs, got {values.shape[0]}"
            )
        return float(np.mean(values)), np.einsum("br,rq,bq->b", self.run_w, values, self.query_w)


def _versus_fixed_rows(
    arms: dict, boot: _JointBootstrap, fixed_refs: dict, confidence: float
) -> list[dict]:
    """Every (router, supervision) arm minus the best fixed model, on utility and score."""
    versus_rows = []
    for (name, supervision), values in arms.items():
        row = {"router": name, "supervision": supervision}
        for metric, (ref, ref_rep) in fixed_refs.items():
            value, rep = boot.arm(values[metric])
            # the one interval of every comparison (issue 35, :func:`seed_query_interval`): one
            # split is one seed, so it is the bootstrap over test queries (single-shot arms: over
            # test queries and runs)
            estimate, (low, high), _ = seed_query_interval(
                [value - ref], [rep - ref_rep], confidence=confidence
            )
            row[f"{metric}_minus_fixed"] = estimate
            row[f"{metric}_minus_fixed_ci_low"], row[f"{metric}_minus_fixed_ci_high"] = low, high
        row["beats_best_fixed"] = bool(row["utility_minus_fixed_ci_low"] > 0)
        versus_rows.append(row)
    return versus_rows


def _paired_columns() -> list[str]:
    """The columns of the paired table, in order."""
    paired_columns = ["router", "n_runs"]
    for metric in PAIRED_METRICS:
        paired_columns += [f"{metric}_dars", f"{metric}_single_shot", f"{metric}_diff"]
        paired_columns += [f"{metric}_diff_ci_low", f"{metric}_diff_ci_high"]
    for label in ("gap_closed_dars", "gap_closed_single_shot", "gap_closed_diff"):
        paired_columns += [label, f"{label}_ci_low", f"{label}_ci_high"]
    return paired_columns


__all__: list[str] = []
