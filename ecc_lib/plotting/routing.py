"""Figures of routing (notebook 04, and routing with each clustering in notebook 03): router
tables, cost-quality curves with Pareto fronts, routing settings with and without the probe."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ecc_lib.labels import (
    ROUTING_METHOD_LABELS,
    ROUTING_SETTING_LABELS,
    method_label,
    router_name,
    shorten_name,
)
from ecc_lib.plotting.style import (
    FONT_SIZE,
    PAGE_WIDTH,
    error_bars,
    figure_axes,
    method_colour,
    styled,
)
from ecc_lib.routing_evaluation.curves import pareto_front

REFERENCE_ROUTERS = ("Oracle", "Best fixed model", "Random")


@styled
def plot_cost_quality(
    curves: pd.DataFrame,
    *,
    cost_label: str = "normalised cost (0-1)",
    title: str | None = None,
    ax=None,
):
    """Cost-quality curves of routers (one point per cost weight lambda) with Pareto fronts.

    Parameters
    ----------
    curves : DataFrame
        Columns ``router``, ``cost`` and ``score`` (or ``quality``); optional ``supervision``
        (appended to the label). Rows of the routers in :data:`REFERENCE_ROUTERS` (oracle, best
        fixed model) are drawn as dashed grey references.
    cost_label : str
        Axis label of the cost, with its unit.

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes (saving is the caller's job).
    """
    curves = curves.rename(columns={"quality": "score"}).copy()
    curves["label"] = curves["router"]
    if "supervision" in curves:
        curves["label"] = np.where(
            curves["router"].isin(REFERENCE_ROUTERS),
            curves["router"],
            curves["router"] + " (" + curves["supervision"].astype(str) + ")",
        )
    fig, ax = figure_axes(ax, (PAGE_WIDTH, 4.0))
    learned = [name for name in dict.fromkeys(curves["label"]) if name not in REFERENCE_ROUTERS]
    for i, name in enumerate(learned):
        part = curves[curves["label"] == name]
        color = method_colour(name)
        ax.scatter(part["cost"], part["score"], s=16, color=color, alpha=0.45)
        front = _draw_front(
            ax,
            part,
            color=color,
            linewidth=2,
            marker="o",
            linestyle=":" if "single-shot" in str(name) else "-",
            label=f"{name}: Pareto front",
        )
        if "lambda" in front:
            _label_lambdas(ax, front, color, below=i % 2 == 0)
    styles = {
        "Oracle": ("black", "--"),
        "Best fixed model": ("dimgray", ":"),
        "Random": ("gray", "-."),
    }
    for name, (color, line) in styles.items():
        part = curves[curves["label"] == name]
        if not part.empty:
            _draw_front(
                ax, part, color=color, linestyle=line, marker="s", label=f"{name} (reference)"
            )
    ax.set_xlabel(cost_label)
    ax.set_ylabel("mean held-out score (0-1)")
    ax.set_title(title or "Cost-quality trade-off of routers (sweeping the cost weight lambda)")
    ax.legend(
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=FONT_SIZE - 2,
        title="\u03bb: cost weight of each point",
        title_fontsize=FONT_SIZE - 2,
    )
    return fig


def _draw_front(ax, points: pd.DataFrame, **style) -> pd.DataFrame:
    """Draw the Pareto front of ``points`` (``cost``, ``score``) as a step line; return its rows.

    ``style`` goes to :meth:`matplotlib.axes.Axes.step` (markers of size 4).
    """
    keep = pareto_front(points["cost"].to_numpy(), points["score"].to_numpy())
    front = points[keep].sort_values("cost")
    ax.step(front["cost"], front["score"], where="post", markersize=4, **style)
    return front


def _label_lambdas(ax, front: pd.DataFrame, color, below: bool = True, gap: float = 0.04) -> None:
    """Write the cost weight lambda beside the points of a Pareto front.

    Points closer than ``gap`` (a fraction of the axes, both directions) to the last labelled one
    share its label, which then reads as a range such as ``0.5-2``; ``below`` puts the labels
    below right of the points (else above left), so two curves' labels do not meet.
    """
    points = front.sort_values("cost")[["cost", "score", "lambda"]].to_numpy(float)
    if not len(points):
        return
    span_x = np.ptp(points[:, 0]) or 1.0
    span_y = np.ptp(points[:, 1]) or 1.0
    groups: list[list[np.ndarray]] = []
    for point in points:
        if groups:
            anchor = groups[-1][0]
            if (
                abs(point[0] - anchor[0]) / span_x < gap * 3
                and abs(point[1] - anchor[1]) / span_y < gap * 3
            ):
                groups[-1].append(point)
                continue
        groups.append([point])
    for group in groups:
        lambdas = sorted({float(p[2]) for p in group})
        text = f"{lambdas[0]:g}" if len(lambdas) == 1 else f"{lambdas[0]:g}-{lambdas[-1]:g}"
        ax.annotate(
            "\u03bb=" + text,
            (group[0][0], group[0][1]),
            xytext=(4, -10) if below else (-4, 5),
            textcoords="offset points",
            ha="left" if below else "right",
            fontsize=FONT_SIZE - 3,
            color=color,
            # a white box keeps the label readable where it crosses a front
            bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8},
            zorder=5,
        )


ROUTING_KIND_COLORS = {"reference": "tab:gray", "single-shot": "tab:orange", "DARS": "tab:blue"}
_OBSERVED_OUTCOMES = "observed outcomes"
"""The legend's name of the DARS targets without repeated observations (they are the outcomes)."""


@styled
def plot_routing_table(
    table: pd.DataFrame,
    *,
    value: str = "score",
    xlabel: str = "mean held-out score of the chosen model (0-1)",
    title: str | None = None,
    repeats: bool | None = None,
    ax=None,
):
    """Horizontal bars of routers by supervision, beside the references (oracle, best fixed model).

    Parameters
    ----------
    table : DataFrame
        Columns ``router``, ``supervision`` ("reference", "single-shot", "DARS", ...) and
        ``value``; optional ``<value>_ci_low`` / ``<value>_ci_high`` (95% CI, drawn as error bars)
        and ``<value>_std`` (shown in the bar label), as in
        :attr:`ecc_lib.routing_evaluation.RoutingTable.table`.
    repeats : bool, optional
        Whether the data has repeated observations (default: whether the table has single-shot
        rows). Without them a router is named alone (``kNN``, not ``kNN (DARS)``) and its
        supervision is the observed outcomes (:func:`ecc_lib.labels.router_name`).

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes (saving is the caller's job).
    """
    table = table.reset_index(drop=True).copy()
    if "supervision" not in table:
        table["supervision"] = "router"
    if repeats is None:  # whether the table has a single-shot arm
        repeats = (table["supervision"] == "single-shot").any()
    repeats = bool(repeats)
    names = [
        str(r) if s == "reference" else router_name(f"{r} ({s})", repeats=repeats)
        for r, s in zip(table["router"], table["supervision"], strict=True)
    ]
    fig, ax = figure_axes(ax, (PAGE_WIDTH, max(2.4, 0.22 * len(table) + 1.2)))
    y = np.arange(len(table))
    values = table[value].to_numpy(float)
    colors = [ROUTING_KIND_COLORS.get(s, "tab:green") for s in table["supervision"]]
    xerr = None
    low, high = f"{value}_ci_low", f"{value}_ci_high"
    if {low, high} <= set(table.columns):
        xerr = error_bars(values, table[low], table[high])
    # points with intervals rather than bars: the axis does not start at zero
    for i in range(len(table)):
        ax.errorbar(
            values[i],
            y[i],
            xerr=None if xerr is None else xerr[:, i : i + 1],
            fmt="o",
            color=colors[i],
            capsize=4,
            markersize=7,
        )
    std = table.get(f"{value}_std", pd.Series(np.nan, index=table.index)).to_numpy(float)
    right = values if xerr is None else values + xerr[1]
    for i in np.flatnonzero(np.isfinite(values)):
        ax.annotate(
            f"{values[i]:.3f}" + (f" \u00b1 {std[i]:.3f} (runs)" if np.isfinite(std[i]) else ""),
            (right[i], y[i]),
            xytext=(6, 0),
            textcoords="offset points",
            va="center",
            fontsize=FONT_SIZE - 3,
        )
    ax.grid(axis="x", alpha=0.3)
    ax.set_yticks(y, [shorten_name(n, width=40) for n in names])
    ax.invert_yaxis()
    finite = values[np.isfinite(values)]
    if len(finite):
        # the whiskers and the value labels beside them stay inside the axes
        left = values if xerr is None else values - xerr[0]
        low, high = np.nanmin(left[np.isfinite(left)]), np.nanmax(right[np.isfinite(right)])
        span = high - low
        ax.set_xlim(max(0.0, low - max(span, 0.02) * 0.1), high + max(span, 0.02) * 0.3)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("router (supervision)" if repeats else "router")
    ax.set_title(title or "Routers against the best fixed model and the oracle")
    present = list(dict.fromkeys(table["supervision"]))
    handles = [
        plt.Rectangle(
            (0, 0),
            1,
            1,
            color=ROUTING_KIND_COLORS.get(s, "tab:green"),
            label=_OBSERVED_OUTCOMES if s == "DARS" and not repeats else s,
        )
        for s in present
    ]
    ax.legend(
        handles=handles,
        title="supervision",
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=FONT_SIZE - 2,
    )
    return fig


@styled
def plot_routing_settings(table: pd.DataFrame, *, title: str | None = None):
    """Mean score of the routed model per method, one panel per routing setting.

    Parameters
    ----------
    table : DataFrame
        ``setting, method, score_mean, score_sd, score_low, score_high`` as
        :func:`ecc_lib.protocol.seeds.clustering_routing_table`. Dots: the mean over seeds;
        thick whiskers: +- sd over seeds; thin whiskers: the first seed's 95% bootstrap
        interval. The ``probe_cost`` setting (same scores, other costs) is not drawn here.
    title : str, optional

    Returns
    -------
    Figure
    """
    settings = [s for s in ROUTING_SETTING_LABELS if s in set(table["setting"])]
    methods = list(dict.fromkeys(table[table["setting"].isin(settings)]["method"]))
    # one panel per setting, stacked, so that the figure keeps the page width of the others
    fig, axes = plt.subplots(
        len(settings),
        1,
        figsize=(PAGE_WIDTH, (0.28 * len(methods) + 0.9) * len(settings) + 0.5),
        layout="constrained",
        squeeze=False,
    )
    for ax, setting in zip(axes[:, 0], settings, strict=True):
        part = table[table["setting"] == setting].set_index("method").reindex(methods)
        # a method this setting does not have (the probe's winner without a probe) is no empty row
        shown = [m for m in methods if np.isfinite(float(part.loc[m, "score_mean"]))]
        part = part.reindex(shown)
        y = np.arange(len(shown))
        mean = part["score_mean"].to_numpy(float)
        low = part["score_low"].to_numpy(float)
        high = part["score_high"].to_numpy(float)
        sd = np.nan_to_num(part["score_sd"].to_numpy(float))
        first = part["score"].to_numpy(float)
        interval = np.clip(np.vstack([first - low, high - first]), 0, None)
        # thin whiskers: the first seed's interval; thick ones: +- sd over seeds
        for x, xerr, width, caps in ((first, interval, 0.8, 3), (mean, sd, 2.5, None)):
            ax.errorbar(x, y, xerr=xerr, fmt="none", ecolor="black", elinewidth=width, capsize=caps)
        ax.scatter(mean, y, c=[method_colour(m) for m in shown], zorder=3)
        for i in range(len(shown)):
            ax.annotate(
                f"{mean[i]:.3f}",
                (mean[i], y[i]),
                xytext=(0, 7),
                textcoords="offset points",
                ha="center",
                fontsize=FONT_SIZE - 2,
            )
        ax.set_title(ROUTING_SETTING_LABELS[setting], fontsize=FONT_SIZE)
        ax.grid(axis="x", alpha=0.3)
        ax.set_yticks(y, [ROUTING_METHOD_LABELS.get(m, method_label(m)) for m in shown])
        ax.set_ylim(len(shown) - 0.4, -0.8)
    axes[-1][0].set_xlabel("mean score of the routed model")
    fig.suptitle(title or "Routing with each clustering, with and without the probe")
    return fig


@styled
def plot_routing_cost_quality(
    table: pd.DataFrame,
    *,
    cost_label: str = "mean cost per test query",
    title: str | None = None,
    ax=None,
):
    """Cost-quality plane of routing with each clustering: without the probe and with the probe
    charged.

    Parameters
    ----------
    table : DataFrame
        ``setting, method, score_mean, cost_mean`` as
        :func:`ecc_lib.protocol.seeds.clustering_routing_table`; the ``no_probe`` and
        ``probe_cost`` rows are drawn (circles and triangles), one colour per method, a grey line
        joining each method's two points.
    cost_label : str
        Axis label of the cost, with its unit.
    title : str, optional
    ax : matplotlib Axes, optional

    Returns
    -------
    Figure
    """
    part = table[table["setting"].isin(["no_probe", "probe_cost"])]
    part = part[np.isfinite(part["cost_mean"].to_numpy(float))]
    fig, ax = figure_axes(ax, (PAGE_WIDTH, 5.5))
    methods = list(dict.fromkeys(part["method"]))
    markers = {"no_probe": "o", "probe_cost": "^"}
    for method in methods:
        rows = part[part["method"] == method].set_index("setting")
        color = method_colour(method)
        if len(rows) == 2:
            ax.plot(rows["cost_mean"], rows["score_mean"], color="lightgray", zorder=1)
        for setting, row in rows.iterrows():
            ax.scatter(
                row["cost_mean"],
                row["score_mean"],
                marker=markers[setting],
                s=60,
                color=color,
                zorder=2,
                label=ROUTING_METHOD_LABELS.get(method, method_label(method))
                if setting == rows.index[0]
                else None,
            )
    for setting, marker in markers.items():
        ax.scatter([], [], marker=marker, color="black", label=f"{setting.replace('_', ' ')}")
    ax.set_xlabel(cost_label)
    ax.set_ylabel("mean score of the routed model")
    ax.grid(alpha=0.3)
    ax.set_title(title or "Routing with each clustering: cost and quality")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=FONT_SIZE - 2)
    return fig


__all__ = [
    "plot_cost_quality",
    "plot_routing_cost_quality",
    "plot_routing_settings",
    "plot_routing_table",
]
