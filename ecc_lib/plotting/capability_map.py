"""The capability map's figure (issue 37, notebook 03 and the report's "Which model for which
queries"): groups x models, each group's best model marked, the models it cannot be told apart
from hatched."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ecc_lib.plotting.style import FONT_SIZE, PAGE_WIDTH, figure_axes, heatmap, model_labels, styled

_COLUMNS = ("name", "model", "score", "best", "distinguishable", "observed")


def capability_map_matrix(
    table: pd.DataFrame, *, max_groups: int = 30, max_models: int = 12
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The figure's matrices: BT score minus the group's best, the best cell, the cells not
    distinguishable from it.

    Parameters
    ----------
    table : DataFrame
        :meth:`~ecc_lib.protocol.capability_map.CapabilityMap.to_frame` (one row per group and
        model, groups largest first).
    max_groups : int, default 30
        The largest groups are shown.
    max_models : int, default 12
        Models shown: every group's best first (most groups won first), then those closest to
        the best in the most groups.

    Returns
    -------
    relative, best, close : DataFrame
        Rows: group names; columns: models. ``relative`` is NaN where the model has no comparison
        in the group.
    """
    missing = [c for c in _COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"the capability map table lacks the columns {missing}")
    names = list(dict.fromkeys(table["name"]))[:max_groups]
    shown = table[table["name"].isin(names)]
    score = shown.pivot(index="name", columns="model", values="score").loc[names]
    best = shown.pivot(index="name", columns="model", values="best").loc[names].astype(bool)
    close = ~shown.pivot(index="name", columns="model", values="distinguishable").loc[names].astype(
        bool
    )
    observed = shown.pivot(index="name", columns="model", values="observed").loc[names].astype(bool)
    close &= observed & ~best
    relative = score.sub(score.where(best).max(axis=1), axis=0)
    wins = best.sum(axis=0)
    near = close.sum(axis=0)
    mean = relative.mean(axis=0)
    order = (
        pd.DataFrame({"wins": wins, "near": near, "mean": mean})
        .sort_values(["wins", "near", "mean"], ascending=False)
        .index[:max_models]
    )
    return relative[order], best[order], close[order]


@styled
def plot_capability_map(
    table: pd.DataFrame,
    *,
    max_groups: int = 30,
    max_models: int = 12,
    title: str | None = None,
    ax=None,
):
    """Groups x models: each model's BT score minus its group's best, the best marked with a
    star, the models not distinguishable from it hatched.

    Parameters
    ----------
    table : DataFrame
        :meth:`~ecc_lib.protocol.capability_map.CapabilityMap.to_frame`.
    max_groups, max_models : int
        See :func:`capability_map_matrix`.
    title : str, optional
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle

    relative, best, close = capability_map_matrix(
        table, max_groups=max_groups, max_models=max_models
    )
    n_groups, n_models = relative.shape
    all_models = int(table["model"].nunique())
    # at least the height the axis and colour-bar labels need (a map of 2 or 3 groups)
    fig, ax = figure_axes(ax, (PAGE_WIDTH, max(4.2, 0.28 * n_groups + 2.2)))
    values = relative.to_numpy(float)
    finite = values[np.isfinite(values)]
    low = float(finite.min()) if len(finite) and finite.min() < 0 else -1.0
    heatmap(
        ax,
        values,
        list(relative.index),
        model_labels(list(relative.columns)),
        "Blues",
        "BT score minus the group's best (logits)",
        vmin=low,
        vmax=0.0,
        annotate=False,
        row_width=48,
    )
    rows, cols = np.nonzero(close.to_numpy())
    for i, j in zip(rows, cols, strict=True):
        # white hatching on dark cells, dark on light ones (a wide interval far below the best)
        dark = np.isfinite(values[i, j]) and values[i, j] > low / 2
        ax.add_patch(
            Rectangle(
                (j - 0.5, i - 0.5),
                1,
                1,
                fill=False,
                hatch="////",
                edgecolor="white" if dark else "0.2",
                linewidth=0,
            )
        )
    rows, cols = np.nonzero(best.to_numpy())
    ax.scatter(cols, rows, marker="*", s=90, color="gold", edgecolors="black", linewidths=0.6)
    fig.legend(
        handles=[
            Line2D(
                [],
                [],
                marker="*",
                linestyle="",
                markersize=10,
                markerfacecolor="gold",
                markeredgecolor="black",
                label="the group's best model",
            ),
            Patch(
                facecolor="tab:blue",
                hatch="////",
                edgecolor="white",
                label="not distinguishable from it (95% bootstrap)",
            ),
        ],
        loc="outside lower center",
        ncol=2,
        frameon=False,
        fontsize=FONT_SIZE - 1,
    )
    shown = "" if n_models == all_models else f" ({n_models} of {all_models} shown)"
    ax.set_xlabel(f"model{shown}")
    named_by_category = any("%" in str(name) for name in relative.index)
    ax.set_ylabel(
        "group (categories: distinctive terms)"
        if named_by_category
        else "group (distinctive terms)"
    )
    ax.set_title(title or "Which model for which queries")
    return fig


__all__ = [
    "plot_capability_map",
]
