"""Figures and tables of notebook 02 (label instability): flip rates, the spread sigma of each
(query, model) pair, single-shot winner against the distribution-aware (DARS) label."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ecc_lib.labels import short_model_names
from ecc_lib.plotting.style import (
    PAGE_WIDTH,
    error_bars,
    figure_axes,
    heatmap,
    model_labels,
    styled,
)

SIDE_LABELS = {
    "input": "input side\n(rewrites)",
    "output": "output side\n(decodes)",
    "both": "both",
}


READING_LABELS = {
    "pairwise": "pairwise: two draws name different winners",
    "strict": "strict: two draws' top sets are disjoint",
    "change": "change: winner not the same in all R draws",
}
_READING_KEYS = {
    "pairwise": "winner_flip_rate",
    "strict": "winner_flip_rate_strict",
    "change": "winner_change_rate",
}


def flip_rate_table(diagnostics) -> pd.DataFrame:
    """The three flip-rate readings per side from :func:`ecc_lib.dars.label_instability.label_instability`.

    Parameters
    ----------
    diagnostics : mapping
        ``{"input" | "output" | "both": SubsetDiagnostics or None}``; a ``None`` side (no pair
        with two observations there) gives rows of NaN. Summaries that hold only the pairwise
        reading (written before the strict and change readings) give only its rows.

    Returns
    -------
    DataFrame
        One row per (side, reading): ``side``, ``label``, ``reading`` (``pairwise``, ``strict``,
        ``change``), ``flip_rate``, ``low``, ``high`` (95 % bootstrap interval over queries),
        ``chance`` (the same statistic for identical models with every score tied),
        ``change_draws`` (``R`` of the change reading) and ``n_queries``.
    """
    summaries = {
        side: (getattr(found, "summary", None) if found is not None else None)
        for side, found in diagnostics.items()
    }
    present = [s for s in summaries.values() if s is not None]
    # the readings the summaries hold (all three unless they predate the strict and change ones)
    readings = [
        reading
        for reading, key in _READING_KEYS.items()
        if not present or any(key in summary for summary in present)
    ]
    rows = []
    for side, summary in summaries.items():
        for reading in readings:
            key = _READING_KEYS[reading]
            row = {
                "side": side,
                "label": SIDE_LABELS.get(side, side),
                "reading": reading,
                "flip_rate": np.nan,
                "low": np.nan,
                "high": np.nan,
                "chance": np.nan,
                "change_draws": np.nan,
                "n_queries": 0,
            }
            if summary is not None and key in summary:
                low, high = summary[f"{key}_ci95"]
                row.update(
                    flip_rate=summary[key],
                    low=low,
                    high=high,
                    chance=(summary.get("flip_rate_chance") or {}).get(reading, np.nan),
                    change_draws=summary.get("winner_change_rate_r", np.nan),
                    n_queries=summary["n_queries"],
                )
            rows.append(row)
    return pd.DataFrame(rows)


@styled
def plot_flip_rates(table: pd.DataFrame, *, title: str | None = None, ax=None):
    """The three flip-rate readings per source of randomness, with intervals and chance levels.

    Parameters
    ----------
    table : DataFrame
        :func:`flip_rate_table` output: columns ``side`` (or ``label``), ``reading``,
        ``flip_rate``, ``low``, ``high``, ``chance``; optional ``n_queries`` and
        ``change_draws``. A side with NaN rates (no repeated observations) is left out and named
        under the axis; "both" is left out where only one side has repeats (it equals that side).
    title : str, optional
    ax : matplotlib Axes, optional

    Returns
    -------
    Figure
    """
    fig, ax = figure_axes(ax, (PAGE_WIDTH, 3.5))
    measured = table.groupby("side", sort=False)["flip_rate"].apply(
        lambda r: bool(np.isfinite(r.to_numpy(float)).any())
    )
    missing = [s for s, ok in measured.items() if not ok]
    sides = [s for s, ok in measured.items() if ok]
    single = [s for s in sides if s != "both"]
    if "both" in sides and len(single) == 1 and missing:
        rates = table.set_index(["side", "reading"])["flip_rate"]
        if np.allclose(
            rates.loc["both"].sort_index(), rates.loc[single[0]].sort_index(), equal_nan=True
        ):
            sides.remove("both")  # the same draws as the one side with repeats
    table = table[table["side"].isin(sides)]
    readings = [r for r in _READING_KEYS if r in set(table["reading"])]
    width = 0.8 / max(len(readings), 1)
    colours = plt.get_cmap("Set2")(np.arange(len(readings)))
    draws = table["change_draws"].dropna() if "change_draws" in table else pd.Series(dtype=float)
    r_text = f" (R = {int(draws.iloc[0])})" if len(draws) and draws.nunique() == 1 else ""
    chance_drawn = False
    for j, reading in enumerate(readings):
        part = table[table["reading"] == reading].set_index("side").reindex(sides)
        x = np.arange(len(sides)) + (j - (len(readings) - 1) / 2) * width
        rate = part["flip_rate"].to_numpy(float)
        err = error_bars(rate, part["low"], part["high"])
        label = READING_LABELS[reading] + (r_text if reading == "change" else "")
        bars = ax.bar(
            x, np.where(np.isfinite(rate), rate, 0.0), width, yerr=err, capsize=4,
            color=colours[j], label=label,
        )  # fmt: skip
        ax.bar_label(
            bars, labels=[f"{v:.3f}" if np.isfinite(v) else "n/a" for v in rate], padding=2,
            fontsize=8,
        )  # fmt: skip
        chance = part["chance"].to_numpy(float)
        for xi, level in zip(x, chance, strict=True):
            if np.isfinite(level):
                ax.hlines(
                    level, xi - width / 2, xi + width / 2, colors="black", linestyles="--",
                    linewidth=1.2, label=None if chance_drawn else "chance (identical tied models)",
                )  # fmt: skip
                chance_drawn = True
    first = table.drop_duplicates("side").set_index("side").reindex(sides)
    labels = [SIDE_LABELS.get(s, s) for s in sides]
    if "n_queries" in first:
        labels = [
            f"{s}\nn={int(n):,} queries" if n else f"{s}\n(no repeats)"
            for s, n in zip(labels, first["n_queries"], strict=True)
        ]
    ax.set_xticks(np.arange(len(sides)), labels)
    ax.set_ylim(0, 1.25)
    ax.set_yticks(np.linspace(0, 1, 6))
    gone = ", ".join(SIDE_LABELS.get(s, s).replace("\n", " ") for s in missing)
    ax.set_xlabel(
        "source of randomness in the single-shot label"
        + (f"\nnot measured (no repeated observations): {gone}" if gone else "")
    )
    ax.set_ylabel("rate over single-shot draws (0-1)")
    ax.legend(loc="upper left", fontsize=8, ncol=2, frameon=False)
    ax.set_title(title or "Three readings of the winner flip rate (95% CI), beside chance")
    return fig


@styled
def plot_sigma_distribution(
    table: pd.DataFrame, *, title: str | None = None, ax=None, bins: int = 20
):
    """Histogram of the score spread sigma of each (query, model) pair, one colour per model.

    Where at most eight values occur (binary scores over a few observations), bars per value
    show the share of each model's pairs instead of a histogram of spikes.

    Parameters
    ----------
    table : DataFrame
        Columns ``model`` and ``sigma`` or ``sigma_q`` (sample standard deviation of a pair's
        scores), e.g. :meth:`ecc_lib.dars.distributions.CapabilityDistributions.to_frame` restricted to pairs
        with two or more observations.

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes (saving is the caller's job).
    """
    if "sigma" not in table and "sigma_q" in table:
        table = table.rename(columns={"sigma_q": "sigma"})
    if table["sigma"].notna().sum() == 0 and ax is None:
        return None  # no pair with two observations: the spread does not apply
    fig, ax = figure_axes(ax, (PAGE_WIDTH, 3.0))
    ax.set_xlabel("sigma: std. dev. of a (query, model) pair's scores (score units, 0-1)")
    ax.set_ylabel("number of (query, model) pairs (symlog)")
    ax.set_title(title or "Distribution of outcome spread sigma")
    if table["sigma"].notna().sum() == 0:
        ax.text(
            0.5,
            0.5,
            "no (query, model) pair has two or more observations:\nthe spread is not measured",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
        ax.set_xlim(0, 1)
        ax.set_yticks([])
        return fig
    models = sorted(table["model"].unique())
    values = np.round(table["sigma"].dropna().to_numpy(float), 6)
    distinct = np.unique(values)
    if len(distinct) <= 8:
        # few possible values (binary scores over a few observations): a histogram of 20 bins
        # would show a few spikes; bars per value show the share of each model's pairs instead
        width = 0.8 / max(len(models), 1)
        labels = model_labels(models)
        for j, model in enumerate(models):
            own = np.round(table.loc[table["model"] == model, "sigma"].dropna().to_numpy(float), 6)
            share = [100 * float(np.mean(own == v)) if len(own) else 0.0 for v in distinct]
            ax.bar(
                np.arange(len(distinct)) + (j - (len(models) - 1) / 2) * width,
                share,
                width,
                label=labels[j],
            )
        ax.set_xticks(np.arange(len(distinct)), [f"{v:.3g}" for v in distinct])
        ax.set_xlabel(
            f"sigma: std. dev. of a (query, model) pair's scores; only {len(distinct)} values occur"
        )
        ax.set_ylabel("share of the model's pairs (%)")
    else:
        upper = float(np.nanmax(table["sigma"]))
        edges = np.linspace(0.0, max(upper, 1e-6), bins + 1)
        data = [table.loc[table["model"] == m, "sigma"].dropna().to_numpy() for m in models]
        ax.hist(data, bins=edges, label=model_labels(models), histtype="bar", rwidth=0.9)
        ax.set_yscale("symlog", linthresh=10)
    ax.legend(title="model", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


TIE_LABEL = "tie in U"


def label_confusion(
    winner_probabilities: np.ndarray, utilities: np.ndarray, models: Sequence[str]
) -> pd.DataFrame:
    """Expected number of queries with distribution label i (argmax U) and single-shot winner j.

    Parameters
    ----------
    winner_probabilities : ndarray, shape (n_queries, n_models)
        ``P(single-shot winner = m)`` per query (:class:`ecc_lib.dars.winners.SingleShotWinners`).
    utilities : ndarray, shape (n_queries, n_models)
        DARS utilities; the label is their argmax. Queries where several models share the best
        utility go to the last row, :data:`TIE_LABEL` (any of the tied models counts as agreeing).
    models : sequence of str

    Returns
    -------
    DataFrame
        Index: model names then :data:`TIE_LABEL`; columns: model names.
    """
    u = np.asarray(utilities, dtype=float)
    best = u >= u.max(axis=1, keepdims=True) - 1e-12
    tied = best.sum(axis=1) > 1
    rows = np.column_stack([best & ~tied[:, None], tied]).astype(float)
    matrix = rows.T @ np.asarray(winner_probabilities, dtype=float)
    names = [str(m) for m in models]
    index = pd.Index([*names, TIE_LABEL], name="distribution label")
    return pd.DataFrame(matrix, index=index, columns=names)


@styled
def plot_label_disagreement(
    confusion: pd.DataFrame,
    *,
    rate: float | None = None,
    title: str | None = None,
    ax=None,
):
    """Heatmap: distribution label (rows) against single-shot label (columns), as fractions.

    Parameters
    ----------
    confusion : DataFrame
        Counts (or expected counts, :func:`label_confusion`) with the distribution-aware winner as
        index and the single-shot winner as columns; shown as fractions of all queries.
    rate : float, optional
        Overall disagreement rate, shown in the title.

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes (saving is the caller's job).
    """
    matrix = confusion.to_numpy(float)
    total = matrix.sum()
    fractions = matrix / total if total > 0 else matrix
    fig, ax = figure_axes(ax, (PAGE_WIDTH, max(2.6, 0.45 * len(confusion) + 1.8)))
    names = short_model_names([*map(str, confusion.index), *map(str, confusion.columns)])
    heatmap(
        ax,
        fractions,
        [names[str(i)] for i in confusion.index],
        [names[str(c)] for c in confusion.columns],
        "Blues",
        "fraction of queries (0-1)",
        vmin=0,
    )
    ax.set_xlabel("single-shot winner (one random observation per pair)")
    ax.set_ylabel("distribution-aware label\n(argmax U)")  # two lines: a short axes with 2 models
    text = title or "Single-shot winner versus distribution-aware label"
    if rate is not None:
        text += f"\n(they disagree on {rate:.1%} of queries)"
    ax.set_title(text)
    return fig


__all__ = [
    "flip_rate_table",
    "label_confusion",
    "plot_flip_rates",
    "plot_label_disagreement",
    "plot_sigma_distribution",
]
