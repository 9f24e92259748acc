"""Summary statistics with bootstrap confidence intervals (percentile bootstrap over units).

Every comparison the report and the bench state uses one interval (issue 35,
:func:`seed_query_interval`): the test queries are resampled within each protocol seed and the
seed-level estimates averaged per replicate, which reduces to the bootstrap over test queries with
one seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ecc_lib import defaults

DEFAULT_N_BOOT = defaults.N_BOOT
_BLOCK_ELEMENTS = 8_000_000


def bootstrap_indices(
    n_units: int,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | np.random.Generator | None = 0,
) -> np.ndarray:
    """Resampling indices, drawn with replacement (seeded).

    Parameters
    ----------
    n_units : int
        Number of units resampled (at least 1).
    n_boot : int
        Number of resamples.
    random_state : int, Generator or None, default 0
        Seed of the draws.

    Returns
    -------
    ndarray of int, shape (n_boot, n_units)
    """
    if n_units < 1:
        raise ValueError("bootstrap needs at least one unit")
    rng = np.random.default_rng(random_state)
    return rng.integers(0, n_units, size=(n_boot, n_units))


def bootstrap_ci(
    values: np.ndarray,
    *,
    statistic: Callable[[np.ndarray], np.ndarray] | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[float, float, float]:
    """Point estimate and percentile bootstrap interval of a statistic over units.

    Parameters
    ----------
    values : ndarray, shape (n_units,) or (n_units, k)
        One row per resampling unit (a query, say).
    statistic : callable, optional
        Maps an array of shape ``(n_boot, n_units, ...)`` to ``(n_boot,)`` along axis 1, and the
        original ``(1, n_units, ...)`` likewise. Default: the mean over units (of a 1-D input).
    n_boot : int, default 1000
    confidence : float, default 0.95
    random_state : int or Generator, optional

    Returns
    -------
    estimate, low, high : float
    """
    values = np.asarray(values, dtype=float)
    if statistic is None:
        if values.ndim != 1:
            raise ValueError("the default statistic (mean) needs a 1-D array")

        def statistic(sample: np.ndarray) -> np.ndarray:
            return sample.mean(axis=1)

    rng = np.random.default_rng(random_state)
    # resample in blocks of replicates so that memory stays near _BLOCK_ELEMENTS values
    block = max(1, _BLOCK_ELEMENTS // max(values.size, 1))
    replicates = np.concatenate(
        [
            np.asarray(
                statistic(
                    values[
                        bootstrap_indices(
                            len(values), n_boot=min(block, n_boot - start), random_state=rng
                        )
                    ]
                ),
                dtype=float,
            ).reshape(-1)
            for start in range(0, n_boot, block)
        ]
    )
    estimate = float(np.asarray(statistic(values[None, ...])).reshape(-1)[0])
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(replicates, [alpha, 1.0 - alpha])
    return estimate, float(low), float(high)


def percentile_interval(replicates: np.ndarray, *, confidence: float = 0.95) -> list[float]:
    """Percentile interval ``[low, high]`` of bootstrap replicates.

    Parameters
    ----------
    replicates : ndarray, shape (n_boot,)
        Bootstrap replicates of a statistic.
    confidence : float, default 0.95
        Coverage of the interval.

    Returns
    -------
    list of float
        ``[low, high]``, the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles.
    """
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(np.asarray(replicates, dtype=float), [tail, 1.0 - tail])
    return [float(low), float(high)]


def bootstrap_mean_ci(
    values: np.ndarray,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | np.random.Generator | None = 0,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """Mean of the finite values and its percentile bootstrap interval.

    Non-finite values (a quantity that does not apply to a unit) are left out; with no finite
    value the result is ``(nan, nan, nan)`` rather than an error.

    Parameters
    ----------
    values : ndarray, shape (n_units,)
        One value per resampling unit; NaN where the quantity does not apply.
    n_boot : int, default 1000
        Number of bootstrap replicates.
    random_state : int or Generator, optional
        Seed of the resampling.
    confidence : float, default 0.95
        Coverage of the interval.

    Returns
    -------
    estimate, low, high : float
    """
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return float("nan"), float("nan"), float("nan")
    return bootstrap_ci(values, n_boot=n_boot, confidence=confidence, random_state=random_state)


def adjusted_rand_index(truth: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Adjusted Rand index (Hubert & Arabie 1985) of partitions, vectorised over replicates.

    Parameters
    ----------
    truth, labels : ndarray of int, shape (n_units,) or (n_replicates, n_units)
        Cluster labels (any integers) of the same units; a 2-D input gives one index per row,
        e.g. for bootstrap resamples of the units.

    Returns
    -------
    ndarray, shape (n_replicates,)
        ARI per row: 1 for identical partitions, about 0 for independent ones. Two partitions that
        each put every unit in one cluster give 1.
    """
    truth, labels = np.atleast_2d(np.asarray(truth)), np.atleast_2d(np.asarray(labels))
    if truth.shape != labels.shape:
        raise ValueError(
            f"truth and labels must have the same shape, got {truth.shape}, {labels.shape}"
        )
    _, t = np.unique(truth, return_inverse=True)
    _, p = np.unique(labels, return_inverse=True)
    t, p = t.reshape(truth.shape), p.reshape(labels.shape)
    n_rep, n = truth.shape
    k_t, k_p = int(t.max()) + 1, int(p.max()) + 1
    cell = (np.arange(n_rep)[:, None] * k_t + t) * k_p + p
    table = np.bincount(cell.ravel(), minlength=n_rep * k_t * k_p).reshape(n_rep, k_t, k_p)

    def pairs(counts: np.ndarray) -> np.ndarray:
        return counts * (counts - 1) / 2.0

    index = pairs(table).sum(axis=(1, 2))
    rows = pairs(table.sum(axis=2)).sum(axis=1)
    cols = pairs(table.sum(axis=1)).sum(axis=1)
    total = n * (n - 1) / 2.0
    expected = rows * cols / total
    maximum = (rows + cols) / 2.0
    denominator = maximum - expected
    with np.errstate(invalid="ignore", divide="ignore"):
        ari = (index - expected) / denominator
    return np.where(denominator == 0, 1.0, ari)


def adjusted_rand_ci(
    truth: np.ndarray,
    labels: np.ndarray,
    reference: np.ndarray | None = None,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[float, float, float]:
    """ARI of ``labels`` against ``truth`` with a percentile bootstrap interval over units.

    With ``reference`` (labels of another method) the statistic is the paired difference
    ``ARI(labels) - ARI(reference)`` on the same resamples.

    Parameters
    ----------
    truth, labels : ndarray of int, shape (n_units,)
    reference : ndarray of int, shape (n_units,), optional
    n_boot : int, default 1000
    confidence : float, default 0.95
    random_state : int or Generator, optional

    Returns
    -------
    estimate, low, high : float
    """
    columns = [np.asarray(truth), np.asarray(labels)]
    if reference is not None:
        columns.append(np.asarray(reference))
    if len({len(c) for c in columns}) != 1:
        raise ValueError("truth, labels and reference must have one label per unit each")
    values = np.column_stack(columns).astype(float)

    def statistic(sample: np.ndarray) -> np.ndarray:
        sample = sample.astype(np.int64)
        ari = adjusted_rand_index(sample[..., 0], sample[..., 1])
        if reference is not None:
            ari = ari - adjusted_rand_index(sample[..., 0], sample[..., 2])
        return ari

    return bootstrap_ci(
        values, statistic=statistic, n_boot=n_boot, confidence=confidence, random_state=random_state
    )


# --------------------------------------------------------------------------------------------------
# paired readings on one shared resample (issue 23): a gain or a mean per arm, and A minus B


def gain_percent(reference: np.ndarray, method: np.ndarray) -> float:
    """Gain ``100 (sum ref - sum method) / sum ref`` of per-unit loss sums, in percent.

    Parameters
    ----------
    reference, method : ndarray, shape (n_units,)
        Per-unit loss sums of the reference and of the method.

    Returns
    -------
    float
        NaN when the reference sums to 0 or less (nothing scored).
    """
    reference = np.asarray(reference, dtype=float)
    total = reference.sum()
    if not total > 0:
        return float("nan")
    return float(100.0 * (total - np.asarray(method, dtype=float).sum()) / total)


def ratio_gain(
    reference: np.ndarray, method: np.ndarray, index: np.ndarray, *, confidence: float = 0.95
) -> tuple[float, list[float], np.ndarray]:
    """Gain ``100 (sum ref - sum method) / sum ref`` of per-unit loss sums, with its replicates.

    Every arm resampled with the same ``index`` gives replicates that pair unit by unit, so the
    difference of two arms' replicates (:func:`paired_difference`) is a paired bootstrap.

    Parameters
    ----------
    reference, method : ndarray, shape (n_units,)
        Per-unit loss sums (e.g. per test query) of the reference and of the method.
    index : ndarray of int, shape (n_boot, n_units)
        Shared resamples (:func:`bootstrap_indices`).
    confidence : float, default 0.95

    Returns
    -------
    gain : float
        NaN when the reference sums to 0 or less (nothing scored).
    ci : list of float
        Percentile interval of the finite replicates (NaN without any).
    replicates : ndarray, shape (n_boot,)
    """
    reference = np.asarray(reference, dtype=float)
    method = np.asarray(method, dtype=float)
    total = reference.sum()
    if not total > 0:
        return float("nan"), [float("nan"), float("nan")], np.full(len(index), np.nan)
    reps_ref = reference[index].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = 100.0 * (reps_ref - method[index].sum(axis=1)) / reps_ref
    return gain_percent(reference, method), finite_interval(reps, confidence=confidence), reps


def mean_ratio(
    numerator: np.ndarray, denominator: np.ndarray, index: np.ndarray, *, confidence: float = 0.95
) -> tuple[float, list[float], np.ndarray]:
    """Ratio of sums ``sum numerator / sum denominator`` (a mean per pair of per-query loss sums
    over per-query pair counts, say) with replicates over the shared ``index``.

    Parameters
    ----------
    numerator, denominator : ndarray, shape (n_units,)
        Per-unit sums (e.g. NLL summed over a test query's scored pairs, and their number).
    index : ndarray of int, shape (n_boot, n_units)
        Shared resamples (:func:`bootstrap_indices`).
    confidence : float, default 0.95

    Returns
    -------
    estimate, ci, replicates
        As :func:`ratio_gain` (a replicate whose denominator sums to 0 is NaN and left out of
        the interval).
    """
    numerator = np.asarray(numerator, dtype=float)
    denominator = np.asarray(denominator)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = numerator[index].sum(axis=1) / denominator[index].sum(axis=1)
        estimate = float(numerator.sum() / denominator.sum())
    return estimate, finite_interval(reps, confidence=confidence), reps


def mean_with_replicates(
    values: np.ndarray, index: np.ndarray, *, confidence: float = 0.95
) -> tuple[float, list[float], np.ndarray]:
    """Mean of the finite per-unit ``values`` with replicates over the shared ``index``.

    Parameters
    ----------
    values : ndarray, shape (n_units,)
        NaN marks a unit without a value (left out of the mean and of each replicate).
    index : ndarray of int, shape (n_boot, n_units)
    confidence : float, default 0.95

    Returns
    -------
    mean, ci, replicates
        As :func:`ratio_gain`.
    """
    values = np.asarray(values, dtype=float)
    ok = np.isfinite(values)
    if not ok.any():
        return float("nan"), [float("nan"), float("nan")], np.full(len(index), np.nan)
    vals = np.where(ok, values, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = vals[index].sum(axis=1) / ok[index].sum(axis=1)
    return float(values[ok].mean()), finite_interval(reps, confidence=confidence), reps


def finite_interval(replicates: np.ndarray, *, confidence: float = 0.95) -> list[float]:
    """:func:`percentile_interval` of the finite replicates (``[nan, nan]`` without any).

    Parameters
    ----------
    replicates : ndarray
    confidence : float, default 0.95

    Returns
    -------
    list of float
    """
    reps = np.asarray(replicates, dtype=float)
    reps = reps[np.isfinite(reps)]
    return (
        percentile_interval(reps, confidence=confidence)
        if len(reps)
        else [float("nan"), float("nan")]
    )


def paired_difference(
    estimate_a: float,
    replicates_a: np.ndarray,
    estimate_b: float,
    replicates_b: np.ndarray,
    *,
    confidence: float = 0.95,
) -> dict:
    """``A minus B`` with the paired interval of two arms resampled on the same units.

    Parameters
    ----------
    estimate_a, estimate_b : float
        Point estimates (e.g. :func:`ratio_gain` or :func:`mean_with_replicates`).
    replicates_a, replicates_b : ndarray, shape (n_boot,)
        Replicates of the two arms drawn with one shared index.
    confidence : float, default 0.95

    Returns
    -------
    dict
        ``{"estimate": a - b, "ci95": [low, high]}`` (NaN where either side is undefined).
    """
    return {
        "estimate": float(estimate_a - estimate_b),
        "ci95": finite_interval(
            np.asarray(replicates_a, float) - np.asarray(replicates_b, float), confidence=confidence
        ),
    }


# --------------------------------------------------------------------------------------------------
# the one interval of every comparison (issue 35): a bootstrap over test queries within each
# protocol seed, the seed-level estimates averaged (docs/guide/report.md, "The interval")

INTERVAL_NAME = "95% seed-and-query bootstrap"
"""Short name of :func:`seed_query_interval`'s interval, as the report and the bench write it."""


def interval_description(n_seeds: int) -> str:
    """How the one interval is formed, in words, for ``n_seeds`` protocol seeds.

    Parameters
    ----------
    n_seeds : int

    Returns
    -------
    str
        One sentence; with one seed it says that the interval is the bootstrap over test queries.
    """
    if n_seeds <= 1:
        return (
            "Intervals are 95% percentile-bootstrap intervals over test queries (one protocol "
            "seed: they ignore the pair draw, the split and the EM start)."
        )
    return (
        f"Estimates are means over {n_seeds} protocol seeds (each redraws the pairs, the split "
        "and the EM start); intervals are 95% percentile intervals of a bootstrap that resamples "
        "the test queries within each seed and averages the seed-level estimates."
    )


def seed_bootstrap_indices(
    n_units: Sequence[int],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | np.random.Generator | None = 0,
) -> list[np.ndarray]:
    """One resample of units per protocol seed, replicate ``b`` of every seed drawn together.

    The seeds are drawn in order from one generator, so with one seed this is exactly
    :func:`bootstrap_indices` with the same ``random_state``.

    Parameters
    ----------
    n_units : sequence of int
        Units (test queries) of each seed, each at least 1.
    n_boot : int, default 1000
    random_state : int, Generator or None, default 0

    Returns
    -------
    list of ndarray of int, shape (n_boot, n_units[s])
    """
    if len(n_units) == 0:
        raise ValueError("a seed bootstrap needs at least one seed")
    rng = np.random.default_rng(random_state)
    return [bootstrap_indices(int(n), n_boot=n_boot, random_state=rng) for n in n_units]


def seed_query_interval(
    estimates: Sequence[float],
    replicates: Sequence[np.ndarray],
    *,
    confidence: float = 0.95,
) -> tuple[float, list[float], np.ndarray]:
    """The one interval: seed-level estimates and their query-bootstrap replicates, averaged.

    Replicate ``b`` of the combined statistic is the mean over seeds of each seed's replicate
    ``b`` (the test queries resampled within that seed, :func:`seed_bootstrap_indices`); the
    estimate is the mean of the seed-level estimates; the interval is the percentile interval of
    the combined replicates. Each seed brings its own pairs, split, EM start and test queries, so
    the estimate averages over the protocol and the interval reflects the sampling of every
    seed's test queries; the seeds themselves are strata, not resampled (with 2-3 seeds a
    resample of seeds says little), so a between-seed spread far above the query noise is not in
    the interval (the report shows the seeds' sd beside it). With one seed it is exactly the
    bootstrap over test queries.
    Two arms combined from replicates of the same indices pair seed by seed and query by query,
    so their difference (:func:`paired_difference`) is paired.

    Parameters
    ----------
    estimates : sequence of float, length n_seeds
    replicates : sequence of ndarray, each shape (n_boot,)
        Replicates of each seed (e.g. from :func:`ratio_gain`).
    confidence : float, default 0.95

    Returns
    -------
    estimate : float
        Mean of the seed-level estimates (NaN if any is NaN: a quantity missing on one seed).
    ci : list of float
        ``[low, high]`` (NaN without finite replicates).
    replicates : ndarray, shape (n_boot,)
    """
    if len(estimates) != len(replicates) or len(estimates) == 0:
        raise ValueError("one estimate and one replicate array per seed, at least one seed")
    estimate = float(np.mean(np.asarray(estimates, dtype=float)))
    reps = np.mean(np.vstack([np.asarray(r, dtype=float) for r in replicates]), axis=0)
    return estimate, finite_interval(reps, confidence=confidence), reps


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1; NaN for fewer than 2 finite values).

    Non-finite values are dropped first.

    Parameters
    ----------
    values : sequence of float
        The readings.

    Returns
    -------
    mean, sd : float
        Both NaN when no value is finite.
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else float("nan")


__all__ = [
    "mean_sd",
    "seed_bootstrap_indices",
    "seed_query_interval",
]
