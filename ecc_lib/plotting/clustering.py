"""Figures of notebook 03 (ECC clustering and probes): ranking quality gains, gain curves, cluster
profiles and names, clusters against categories, the query map and the probe's leak."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ecc_lib.labels import method_label, shorten_name
from ecc_lib.method_registry import spec_view
from ecc_lib.plotting.style import (
    CLUSTER_COLORS,
    FONT_SIZE,
    OTHERS_GREY,
    PAGE_WIDTH,
    clean_errors,
    error_bars,
    figure_axes,
    heatmap,
    method_colour,
    model_labels,
    styled,
)

METHOD_COLORS = spec_view("colour")
"""One colour per clustering method, the same in every figure (a view of
:data:`~ecc_lib.method_registry.METHOD_SPECS`)."""


def _gain_columns(table: pd.DataFrame) -> pd.DataFrame:
    """Accept ``gain/low/high`` or ``gain_pct/gain_low/gain_high`` (ecc_protocol tables)."""
    return table.rename(columns={"gain_pct": "gain", "gain_low": "low", "gain_high": "high"})


@styled
def plot_gains(table: pd.DataFrame, *, title: str | None = None, ax=None):
    """Bars of ranking quality gain over the global BT model, with confidence intervals.

    Parameters
    ----------
    table : DataFrame
        Columns ``method``, ``gain`` (percent), ``low``, ``high`` (or ``gain_pct``, ``gain_low``,
        ``gain_high`` as in :meth:`ecc_lib.protocol.scoring.ECCEvaluation.table`). The ``global``
        row (the reference, gain 0 by definition) is left out.

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes (saving is the caller's job).
    """
    table = _gain_columns(table)
    table = table[table["method"] != "global"].reset_index(drop=True)
    fig, ax = figure_axes(ax, (PAGE_WIDTH, max(2.2, 0.42 * len(table) + 1.2)))
    y = np.arange(len(table))
    gain = table["gain"].to_numpy(float)
    err = error_bars(gain, table["low"], table["high"])
    colors = [method_colour(m) for m in table["method"]]
    ax.barh(y, gain, xerr=err, color=colors, capsize=3, height=0.6)
    # each label right of its interval, or right of 0 for a negative bar (left of it, it would run
    # into the method names), never on the error bar
    for i, value in enumerate(gain):
        if not np.isfinite(value):
            continue
        edge = value + err[1, i] if value >= 0 else max(0.0, value + err[1, i])
        ax.annotate(
            f"{value:+.1f}% [{table['low'].iloc[i]:.1f}, {table['high'].iloc[i]:.1f}]",
            (edge, y[i]),
            xytext=(4, 0),
            textcoords="offset points",
            ha="left",
            va="center",
            fontsize=FONT_SIZE - 1,
        )
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(y, [method_label(m) for m in table["method"]])
    ax.invert_yaxis()
    low = min(0.0, float(np.nanmin(table["low"]))) if len(table) else 0.0
    high = max(0.0, float(np.nanmax(table["high"]))) if len(table) else 1.0
    span = max(high - low, 1.0)
    ax.set_xlim(low - 0.05 * span, high + 0.6 * span)
    ax.set_xlabel("ranking quality gain over one global BT model (% of its held-out NLL, 95% CI)")
    ax.set_ylabel("clustering method")
    ax.set_title(title or "Ranking quality gain on held-out comparisons")
    return fig


@styled
def plot_gain_curve(
    table: pd.DataFrame,
    *,
    x: str,
    xlabel: str,
    title: str | None = None,
    ax=None,
):
    """Gain against a knob (probes per query, number of clusters K), one line per method.

    Parameters
    ----------
    table : DataFrame
        Columns ``x`` (the knob), ``gain`` (or ``gain_pct``), optional ``low``/``high`` (or
        ``gain_low``/``gain_high``: CI band), optional ``method`` (the ``global`` reference rows
        are left out).
    x : str
        Column of the knob.
    xlabel : str
        Axis label of the knob, with units.

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes (saving is the caller's job).
    """
    table = _gain_columns(table)
    if "method" not in table:
        table["method"] = "ecc"
    table = table[table["method"] != "global"]
    fig, ax = figure_axes(ax, (PAGE_WIDTH, 3.2))
    spare = iter(["tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:gray"])
    for method, part in table.groupby("method", sort=False):
        part = part.sort_values(x)
        color = METHOD_COLORS.get(str(method)) or next(spare, "black")
        ax.plot(
            part[x], part["gain"], marker="o", color=color, label=method_label(method), linewidth=2
        )
        if {"low", "high"} <= set(part.columns):
            ax.fill_between(part[x], part["low"], part["high"], color=color, alpha=0.15)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(sorted(table[x].unique()))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("gain over global BT (% of its held-out NLL)")
    ax.set_title(title or f"Ranking quality gain versus {xlabel}")
    ax.legend(title="method (band: 95% CI)", loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def cluster_names(
    labels: Sequence[int],
    categories: Sequence[str] | None = None,
    *,
    n_clusters: int | None = None,
) -> list[str]:
    """Name of each cluster: its dominant human category, that category's share and its size.

    Parameters
    ----------
    labels : sequence of int
        Hard cluster of each query (0 .. K-1).
    categories : sequence of str, optional
        Human category of each query; without it a cluster is named ``cluster k (n=...)``.
    n_clusters : int, optional
        K (default: the largest label + 1).

    Returns
    -------
    list of str
        ``"gsm8k 73% (n=206)"`` per cluster; where two clusters would share a name, their second
        category is added (``"mmlu 92% + arc 3% (n=181)"``), and ``#k`` where that is not enough.
    """
    labels = np.asarray(labels, dtype=int)
    k = int(n_clusters if n_clusters is not None else (labels.max() + 1 if len(labels) else 0))
    sizes = np.bincount(labels, minlength=k)
    if categories is None:
        names = [f"cluster {c} (n={int(sizes[c]):,})" for c in range(k)]
    else:
        cats = pd.Series(np.asarray(categories, dtype=object)).fillna("(none)").astype(str)
        table = pd.crosstab(pd.Series(labels, name="cluster"), cats.rename("category"))
        shares = {
            c: [
                (str(cat), 100 * n / sizes[c])
                for cat, n in table.loc[c].sort_values(ascending=False).items()
                if n > 0
            ]
            for c in range(k)
            if c in table.index and sizes[c] > 0
        }

        def share(c: int, rank: int, width: int) -> str:
            category, percent = shares[c][rank]
            return f"{shorten_name(category, width=width)} {percent:.0f}%"

        names = [
            f"{share(c, 0, 22)} (n={int(sizes[c]):,})" if c in shares else f"empty cluster {c}"
            for c in range(k)
        ]
        # a name two clusters share gains the distinguishing second category
        counts = pd.Series(names).value_counts()
        names = [
            f"{share(c, 0, 22)} + {share(c, 1, 16)} (n={int(sizes[c]):,})"
            if counts[n] > 1 and c in shares and len(shares[c]) > 1
            else n
            for c, n in enumerate(names)
        ]
    final = pd.Series(names).value_counts()
    return [f"{n} #{c}" if final[n] > 1 else n for c, n in enumerate(names)]


@styled
def plot_cluster_profiles(
    theta: np.ndarray,
    models: Sequence[str],
    *,
    cluster_sizes: Sequence[int] | None = None,
    title: str | None = None,
    ax=None,
    names: Sequence[str] | None = None,
    ylabel: str | None = None,
):
    """Heatmap of the centred Bradley-Terry scores of each cluster (rows) and model (columns).

    Parameters
    ----------
    theta : ndarray, shape (K, M)
        BT scores per cluster; each row is centred here (theta - row mean).
    models : sequence of str
    cluster_sizes : sequence of int, optional
        Queries per cluster, shown in the row labels; rows are sorted by size.
    names : sequence of str, optional
        Row names (e.g. :func:`cluster_names`: dominant category and size).
    ylabel : str, optional
        Axis label of the rows.

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes (saving is the caller's job).
    """
    theta = np.asarray(theta, dtype=float)
    centred = theta - theta.mean(axis=1, keepdims=True)
    order = np.arange(len(theta))
    labels = [f"cluster {k}" for k in range(len(theta))]
    if cluster_sizes is not None:
        sizes = np.asarray(cluster_sizes)
        order = np.argsort(-sizes, kind="stable")
        labels = [f"cluster {k} (n={int(sizes[k])})" for k in range(len(theta))]
    if names is not None:
        labels = [str(n) for n in names]
    model_order = np.argsort(-centred.mean(axis=0), kind="stable")
    matrix = centred[order][:, model_order]
    short = model_labels(models)
    fig, ax = figure_axes(ax, (PAGE_WIDTH, max(2.4, 0.2 * len(theta) + 1.9)))
    heatmap(
        ax,
        matrix,
        [labels[k] for k in order],
        [short[m] for m in model_order],
        "RdBu_r",
        "BT score minus cluster mean (logits)",
        center=0.0,
        annotate=matrix.size <= 150,
        fmt="{:+.1f}",
        row_width=40,
    )
    ax.set_xlabel("model (sorted by mean score over clusters)")
    default = "cluster: top category, share (size)" if names is not None else "cluster"
    ax.set_ylabel(ylabel or default)
    ax.set_title(title or "Capability profile of each cluster")
    return fig


@styled
def plot_cluster_category(
    labels: Sequence[int],
    categories: Sequence[str],
    *,
    title: str | None = None,
    ax=None,
):
    """Heatmap of the share of each cluster's queries (rows) in each human category (columns).

    Parameters
    ----------
    labels : sequence of int
        Cluster of each query.
    categories : sequence of str
        Human category of each query.
    title : str, optional
        Axes title.
    ax : matplotlib Axes, optional
        Axes to draw on (default: a new figure).

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes (saving is the caller's job).
    """
    frame = pd.DataFrame({"cluster": np.asarray(labels), "category": np.asarray(categories)})
    frame["category"] = frame["category"].astype(object).where(frame["category"].notna(), "(none)")
    if frame["category"].nunique() < 2 and ax is None:
        return None  # one category: every cluster is 100% of it, nothing to show
    table = pd.crosstab(frame["cluster"], frame["category"])
    names = cluster_names(frame["cluster"].to_numpy(), frame["category"].to_numpy())
    sizes = table.sum(axis=1)
    table = table.loc[sizes.sort_values(ascending=False, kind="stable").index]
    shares = table.div(table.sum(axis=1), axis=0)
    fig, ax = figure_axes(ax, (PAGE_WIDTH, max(2.4, 0.2 * len(table) + 2.1)))
    heatmap(
        ax,
        shares.to_numpy(),
        [names[k] for k in table.index],
        list(table.columns),
        "Greens",
        "share of the cluster's queries (0-1)",
        vmin=0,
        vmax=1,
        annotate=shares.size <= 200,
        row_width=40,
    )
    ax.set_xlabel("human category")
    ax.set_ylabel("cluster: top category, share (size)")
    ax.set_title(title or "Clusters against human categories")
    return fig


def project_2d(embeddings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First two principal components of ``embeddings`` and their explained variance ratios.

    Parameters
    ----------
    embeddings : ndarray, shape (n, d)
        Points to project.

    Returns
    -------
    coords : ndarray, shape (n, 2)
        Principal component scores.
    ratios : ndarray, shape (2,)
        Explained variance ratios.
    """
    from threadpoolctl import threadpool_limits

    matrix = np.asarray(embeddings, dtype=float)
    centred = matrix - matrix.mean(axis=0, keepdims=True)
    # one BLAS thread: multi-threaded OpenBLAS is many times slower on a busy 2-core machine
    with threadpool_limits(limits=1, user_api="blas"):
        _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    coords = centred @ vt[:2].T
    # sign convention: the largest-magnitude loading of each component is positive
    signs = np.sign(vt[:2][np.arange(2), np.abs(vt[:2]).argmax(axis=1)])
    coords = coords * signs
    variance = singular**2
    ratio = variance[:2] / variance.sum() if variance.sum() > 0 else np.zeros(2)
    return coords, ratio


@styled
def plot_query_map(
    embeddings: np.ndarray,
    labels: Sequence[int],
    *,
    title: str | None = None,
    max_labelled: int = 10,
    ax=None,
    names: Sequence[str] | None = None,
):
    """2-D PCA map of query embeddings coloured by cluster (the largest clusters; others in grey).

    Parameters
    ----------
    embeddings : ndarray, shape (n, d)
        Query embeddings.
    labels : sequence of int
        Hard cluster of each query.
    title : str, optional
        Axes title.
    max_labelled : int, default 10
        Clusters drawn in colour (at most ``len(CLUSTER_COLORS)``), the largest first.
    ax : matplotlib Axes, optional
        Axes to draw on (default: a new figure).
    names : sequence of str, optional
        Name of each cluster id (e.g. :func:`cluster_names`) for the legend.

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes (saving is the caller's job).
    """
    coords, ratio = project_2d(embeddings)
    labels = np.asarray(labels)
    values, counts = np.unique(labels, return_counts=True)
    top = values[np.argsort(-counts, kind="stable")][: min(max_labelled, len(CLUSTER_COLORS))]
    fig, ax = figure_axes(ax, (PAGE_WIDTH, 4.2))
    rest = ~np.isin(labels, top)
    # (points, size, colour, legend entry): the other clusters in grey first, then the largest
    groups = [(rest, 4, OTHERS_GREY, f"other clusters ({int(rest.sum()):,} queries)")]
    for i, k in enumerate(top):
        mask = labels == k
        name = str(names[k]) if names is not None else f"cluster {k} (n={int(mask.sum()):,})"
        groups.append((mask, 6, CLUSTER_COLORS[i], name))
    for mask, size, color, name in groups:
        if mask.any():
            ax.scatter(*coords[mask].T, s=size, color=color, label=name, rasterized=True)
    ax.set_xlabel(f"principal component 1 ({ratio[0]:.1%} of variance)")
    ax.set_ylabel(f"principal component 2 ({ratio[1]:.1%} of variance)")
    ax.set_title(title or "Queries in embedding space, coloured by cluster")
    ax.legend(
        title="cluster: top category, share (size)",
        loc="center left",
        bbox_to_anchor=(1.01, 0.5),
        markerscale=2,
        fontsize=FONT_SIZE - 2,
    )
    return fig


LEAK_READING_COLORS = {"all": "tab:gray", "touching": "tab:orange", "disjoint": "tab:blue"}
LEAK_READING_LABELS = {
    "all": "all scored pairs (paper)",
    "touching": "pairs touching a probe model",
    "disjoint": "pairs disjoint from the probe",
}


@styled
def plot_leak_gains(table: pd.DataFrame, *, title: str | None = None, ax=None):
    """Gain of each method on all scored pairs, on those touching the probe's models and on
    those disjoint from them, as grouped bars.

    Parameters
    ----------
    table : DataFrame
        One row per (method, reading): ``method``, ``reading`` (``all``, ``touching``,
        ``disjoint``), ``mean`` (gain in percent, the mean over seeds), ``sd`` (over seeds; NaN
        with one seed) and ``per_seed`` (list of ``(seed, estimate, low, high)``), as
        :meth:`ecc_lib.protocol.seeds.MultiSeedEvaluation.summary_table`. ``global`` rows are left
        out. With ``estimate``, ``low`` and ``high`` (the comparison records' gain and the one
        interval, issue 35, as ``summary_table`` gives them) the bar is the estimate and the
        whisker that interval, the same numbers as the report's summary table; without them (an
        older table) the whiskers are +- sd over seeds, or the bootstrap interval with a single
        seed. Dots: the seeds' estimates.
    title : str, optional
    ax : matplotlib Axes, optional

    Returns
    -------
    Figure
    """
    table = table[table["method"] != "global"].reset_index(drop=True)
    methods = list(dict.fromkeys(table["method"]))
    readings = [r for r in LEAK_READING_COLORS if r in set(table["reading"])]
    fig, ax = figure_axes(ax, (PAGE_WIDTH, max(3.0, 0.62 * len(methods) + 1.3)))
    height = 0.8 / max(len(readings), 1)
    for j, reading in enumerate(readings):
        part = table[table["reading"] == reading].set_index("method").reindex(methods)
        y = np.arange(len(methods)) + (j - (len(readings) - 1) / 2) * height
        if {"estimate", "low", "high"} <= set(part.columns):  # the one interval (issue 35)
            mean = part["estimate"].to_numpy(float)
            err = error_bars(mean, part["low"], part["high"])
        else:
            mean = part["mean"].to_numpy(float)
            sd = part["sd"].to_numpy(float)
            err = np.vstack([sd, sd])
            for i, seeds in enumerate(part["per_seed"]):
                if not np.isfinite(sd[i]) and isinstance(seeds, list) and len(seeds) == 1:
                    err[:, i] = [mean[i] - seeds[0][2], seeds[0][3] - mean[i]]
        err = clean_errors(err)
        ax.barh(
            y,
            mean,
            height=height * 0.9,
            xerr=err,
            color=LEAK_READING_COLORS[reading],
            capsize=3,
            label=LEAK_READING_LABELS[reading],
        )
        for i, seeds in enumerate(part["per_seed"]):
            dots = np.array([], dtype=float)
            if isinstance(seeds, list) and len(seeds) > 1:
                dots = np.array([s[1] for s in seeds], dtype=float)
                ax.plot(dots, [y[i]] * len(seeds), "o", color="black", markersize=2.5)
            if not np.isfinite(mean[i]):
                continue
            # the label sits beyond the end of the bar, its whisker and its seed dots, on the
            # bar's side of 0 (never on a dot)
            negative = mean[i] < 0
            ends = np.concatenate(
                [[mean[i] - err[0, i] if negative else mean[i] + err[1, i]], dots]
            )
            ends = ends[np.isfinite(ends)]
            ax.annotate(
                f"{mean[i]:+.1f}",
                (ends.min() if negative else ends.max(), y[i]),
                xytext=(-4 if negative else 4, 0),
                textcoords="offset points",
                va="center",
                ha="right" if negative else "left",
                fontsize=FONT_SIZE - 3,
            )
    ax.axvline(0, color="black", linewidth=0.8)
    ax.margins(x=0.12)  # room for the value labels on both sides
    ax.set_yticks(np.arange(len(methods)), [method_label(m) for m in methods])
    ax.invert_yaxis()
    one_interval = {"estimate", "low", "high"} <= set(table.columns)
    ax.set_xlabel(
        "ranking quality gain over global BT (% of its held-out NLL"
        + ("; whiskers: the report's 95% interval)" if one_interval else "; whiskers: +- sd)")
    )
    ax.set_ylabel("clustering method")
    ax.set_title(title or "Ranking quality gain and the probe's leak")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=FONT_SIZE - 2)
    return fig


__all__ = [
    "cluster_names",
    "plot_cluster_category",
    "plot_cluster_profiles",
    "plot_gain_curve",
    "plot_gains",
    "plot_leak_gains",
    "plot_query_map",
]
