"""Summary statistics with bootstrap confidence intervals (percentile bootstrap over units)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

DEFAULT_N_BOOT = 1000
_BLOCK_ELEMENTS = 8_000_000


def bootstrap_indices(
    n_units: int, n_boot: int = DEFAULT_N_BOOT, random_state: int | np.random.Generator | None = 0
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
                statistic(values[bootstrap_indices(len(values), min(block, n_boot - start), rng)]),
                dtype=float,
            ).reshape(-1)
            for start in range(0, n_boot, block)
        ]
    )
    estimate = float(np.asarray(statistic(values[None, ...])).reshape(-1)[0])
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(replicates, [alpha, 1.0 - alpha])
    return estimate, float(low), float(high)


def percentile_interval(replicates: np.ndarray, confidence: float = 0.95) -> list[float]:
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
