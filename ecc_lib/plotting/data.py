"""Figures and tables of notebook 01 (the data): scores per model and category, observations
per (query, model) pair."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ecc_lib import defaults
from ecc_lib.plotting.style import (
    PAGE_WIDTH,
    SCORE_LABEL,
    figure_axes,
    heatmap,
    model_labels,
    styled,
)


def scores_by_category_table(queries: pd.DataFrame, outcomes: pd.DataFrame) -> pd.DataFrame:
    """Mean score of each model (rows) in each category (columns) plus ``all``, best model first.

    A category named ``all`` keeps its column; the pooled one is then ``all (pooled)``
    (:func:`pooled_column_name`).

    Parameters
    ----------
    queries : DataFrame
        ``query_id`` and ``category``.
    outcomes : DataFrame
        Long outcomes table.

    Returns
    -------
    DataFrame
    """
    frame = outcomes[["query_id", "model", "score"]].merge(
        queries[["query_id", "category"]], on="query_id", how="left"
    )
    frame["category"] = frame["category"].astype(object).where(frame["category"].notna(), "(none)")
    table = frame.pivot_table(index="model", columns="category", values="score", aggfunc="mean")
    table.columns = [str(c) for c in table.columns]
    pooled = pooled_column_name(table.columns)
    table[pooled] = frame.groupby("model")["score"].mean()
    return table.sort_values(pooled, ascending=False)


def pooled_column_name(categories) -> str:
    """Name of the column pooling every category: ``all``, or ``all (pooled)`` (then
    ``all (pooled 2)`` ...) when a category is itself named ``all``.

    Parameters
    ----------
    categories : iterable of str
        The category names.

    Returns
    -------
    str
    """
    taken = {str(c) for c in categories}
    name, n = "all", 1
    while name in taken:
        name = "all (pooled)" if n == 1 else f"all (pooled {n})"
        n += 1
    return name


@styled
def plot_scores_by_category(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    *,
    title: str | None = None,
    ax=None,
):
    """Heatmap of the mean score of each model (rows) in each category (columns), plus "all".

    Parameters
    ----------
    queries : DataFrame with ``query_id`` and ``category``
    outcomes : DataFrame with ``query_id``, ``model``, ``score``
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes (saving is the caller's job).
    """
    table = scores_by_category_table(queries, outcomes)
    n_rows, n_cols = table.shape
    fig, ax = figure_axes(ax, (PAGE_WIDTH, max(2.6, 0.3 * n_rows + 1.9)))
    heatmap(
        ax,
        table.to_numpy(),
        model_labels(table.index),
        table.columns,
        "viridis",
        "mean score (0-1)",
        vmin=0,
        vmax=1,
    )
    ax.set_xlabel("query category (human label)")
    ax.set_ylabel("model")
    ax.set_title(title or "Mean score per model and category")
    return fig


def model_score_table(
    outcomes: pd.DataFrame,
    *,
    n_boot: int = defaults.N_BOOT,
    random_state: int | None = 0,
) -> pd.DataFrame:
    """Mean score per model with a 95% percentile-bootstrap interval over queries.

    Repeated observations of a (query, model) pair are averaged first, so each query counts once.
    Returns columns ``model``, ``score``, ``low``, ``high``, ``n_queries`` (and ``dataset`` when
    ``outcomes`` has that column).

    Parameters
    ----------
    outcomes : DataFrame
        Long outcomes table (optionally with ``dataset``).
    n_boot : int, default 1000
        Bootstrap resamples of queries.
    random_state : int or None, default 0
        Seed of the bootstrap.

    Returns
    -------
    DataFrame
    """
    from ecc_lib.stats import bootstrap_ci

    keys = ["dataset", "model"] if "dataset" in outcomes else ["model"]
    per_query = outcomes.groupby([*keys, "query_id"], sort=True)["score"].mean().reset_index()
    rows = []
    for key, part in per_query.groupby(keys, sort=True):
        estimate, low, high = bootstrap_ci(
            part["score"].to_numpy(float), n_boot=n_boot, random_state=random_state
        )
        names = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        rows.append({**names, "score": estimate, "low": low, "high": high, "n_queries": len(part)})
    return pd.DataFrame(rows)


def _with_dataset(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with a ``dataset`` column (``""`` where it had none)."""
    return frame.assign(dataset=frame.get("dataset", ""))


def _dataset_legend(ax, datasets: list[str]) -> None:
    """A legend of the datasets' colours, right of the axes, unless the only dataset is unnamed."""
    if any(datasets):
        ax.legend(title="dataset", loc="upper left", bbox_to_anchor=(1.01, 1.0))


@styled
def plot_model_scores(
    table: pd.DataFrame,
    *,
    title: str | None = None,
    ax=None,
):
    """Horizontal bars of each model's mean score with a 95% interval.

    Parameters
    ----------
    table : DataFrame
        Columns ``model``, ``score``, ``low``, ``high``; an optional ``dataset`` column draws one
        bar per dataset and model.

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes (saving is the caller's job).
    """
    table = _with_dataset(table)
    datasets = list(dict.fromkeys(table["dataset"]))
    # one row per (dataset, model): datasets in blocks, best model on top of each block
    table["_order"] = table["dataset"].map({name: i for i, name in enumerate(datasets)})
    table = table.sort_values(["_order", "score"], ascending=[False, True]).reset_index(drop=True)
    fig, ax = figure_axes(ax, (PAGE_WIDTH, max(2.4, 0.2 * len(table) + 1.2)))
    colors = plt.get_cmap("tab10")
    y = np.arange(len(table))
    for d, name in enumerate(datasets):
        rows = table.index[table["dataset"] == name]
        part = table.loc[rows]
        ax.barh(
            y[rows],
            part["score"],
            height=0.7,
            xerr=np.clip([part["score"] - part["low"], part["high"] - part["score"]], 0, None),
            color=colors(d),
            label=name or None,
            capsize=2,
            error_kw={"elinewidth": 1},
        )
    ax.set_yticks(y, model_labels(table["model"]))
    ax.set_xlim(0, 1)
    ax.set_xlabel(SCORE_LABEL + ", 95% bootstrap CI over queries")
    ax.set_ylabel("model")
    ax.set_title(title or "Mean score per model")
    _dataset_legend(ax, datasets)
    return fig


@styled
def plot_observations_per_pair(outcomes: pd.DataFrame, *, title: str | None = None, ax=None):
    """Bars: how many (query, model) pairs have 1, 2, ... observations (rewrites x decodes).

    ``outcomes`` may carry a ``dataset`` column: one bar colour per dataset.

    Parameters
    ----------
    outcomes : DataFrame
        Long outcomes table.
    title : str, optional
        Axes title.
    ax : matplotlib Axes, optional
        Axes to draw on (default: a new figure).

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes (saving is the caller's job).
    """
    frame = _with_dataset(outcomes)
    counts = frame.groupby(["dataset", "query_id", "model"], sort=False).size().rename("n")
    table = counts.reset_index().groupby(["dataset", "n"]).size().rename("pairs").reset_index()
    datasets = list(dict.fromkeys(table["dataset"]))
    values = sorted(table["n"].unique())
    width = 0.8 / len(datasets)
    fig, ax = figure_axes(ax, (PAGE_WIDTH, 2.8))
    colors = plt.get_cmap("tab10")
    x = np.arange(len(values))
    for d, name in enumerate(datasets):
        part = table[table["dataset"] == name].set_index("n").reindex(values)["pairs"].fillna(0)
        bars = ax.bar(
            x + (d - (len(datasets) - 1) / 2) * width,
            part.to_numpy(),
            width=width,
            color=colors(d),
            label=name or None,
        )
        ax.bar_label(bars, labels=[f"{int(v):,}" if v else "" for v in part], fontsize=8)
    ax.set_xticks(x, [str(v) for v in values])
    ax.set_xlabel("observations per (query, model) pair (rewrites x decodes)")
    ax.set_ylabel("number of (query, model) pairs")
    ax.set_title(title or "Observations per (query, model) pair")
    ax.margins(y=0.15)
    _dataset_legend(ax, datasets)
    return fig


__all__ = [
    "model_score_table",
    "plot_model_scores",
    "plot_observations_per_pair",
    "plot_scores_by_category",
    "scores_by_category_table",
]
