"""Estimates with 95% intervals, one row each: the figure of notebook 00 (the tour) that compares
clusterings by their adjusted Rand index with the planted clusters."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ecc_lib.plotting.style import FONT_SIZE, PAGE_WIDTH, error_bars, figure_axes, styled


@styled
def plot_estimates(
    table: pd.DataFrame,
    *,
    xlabel: str,
    label: str = "method",
    value: str = "ari",
    title: str | None = None,
    highlight: str | None = None,
    xlim: tuple[float, float] | None = None,
    ax=None,
):
    """Points with 95% intervals, one row each (e.g. the ARI of each clustering in the tour).

    Parameters
    ----------
    table : DataFrame
        Columns ``label``, ``value``, ``low``, ``high``.
    xlabel : str
        Axis label with units.
    label, value : str
        Columns of the row names and of the estimates.
    title : str, optional
    highlight : str, optional
        Row name drawn in red (the others in grey).
    xlim : pair of float, optional
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = figure_axes(ax, (PAGE_WIDTH, max(1.8, 0.45 * len(table) + 1.2)))
    y = np.arange(len(table))
    est = table[value].to_numpy(float)
    err = error_bars(est, table["low"], table["high"])
    names = [str(n) for n in table[label]]
    for i in range(len(table)):
        color = "tab:red" if names[i] == highlight else "dimgray"
        ax.errorbar(est[i], y[i], xerr=err[:, i : i + 1], fmt="o", color=color, capsize=4)
        ax.annotate(
            f"{est[i]:.2f} [{table['low'].iloc[i]:.2f}, {table['high'].iloc[i]:.2f}]",
            (est[i] + err[1, i], y[i]),
            xytext=(6, 0),
            textcoords="offset points",
            va="center",
            fontsize=FONT_SIZE - 1,
        )
    ax.set_yticks(y, names)
    ax.set_ylim(len(table) - 0.5, -0.5)
    if xlim is not None:
        ax.set_xlim(*xlim)
        if xlim[1] > 1 >= np.nanmax(table["high"].to_numpy(float)):
            # room on the right is for the labels: no ticks beyond 1 for quantities in [0, 1]
            ax.set_xticks([t for t in ax.get_xticks() if xlim[0] <= t <= 1.0 + 1e-9])
    ax.axvline(0, color="black", linewidth=0.6)
    ax.grid(axis="x", alpha=0.3)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(label)
    ax.set_title(title or "Estimates with 95% intervals")
    return fig


__all__ = [
    "plot_estimates",
]
