"""Figures of the notebooks: each function takes its data first, ``ax=None``, and returns the figure.

Saving is the caller's job (:func:`ecc_lib.run_folder.save_figure`). Every figure carries a title,
axis labels with units and a legend where colours carry meaning, so that it reads without the code.
No figure shows query text (GPQA examples must not be published in plain text).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ecc_lib import routing_evaluation

FONT_SIZE = 9
TITLE_SIZE = 10
PAGE_WIDTH = 7.0
"""Width in inches of every figure: the text width of a two-column paper (a column is 3.5)."""
COLUMN_WIDTH = 3.5
SCORE_LABEL = "mean score (0-1, fraction correct)"
OTHERS_GREY = "#c8c8c8"
"""Colour of the points of clusters that are not named in a figure."""
CLUSTER_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
    "#393b79",
)
"""Colours of named clusters: tab10 with its grey replaced, so none looks like the others' grey."""
_RC = {
    "font.size": FONT_SIZE,
    "font.family": "DejaVu Sans",
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "axes.titlesize": TITLE_SIZE,
    "axes.labelsize": FONT_SIZE,
    "xtick.labelsize": FONT_SIZE - 1,
    "ytick.labelsize": FONT_SIZE - 1,
    "legend.fontsize": FONT_SIZE - 1,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _styled(function):
    """Run a figure function under the package style (readable font sizes, no top/right spines)."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with plt.rc_context(_RC):
            return function(*args, **kwargs)

    return wrapper


def _axes(ax, figsize: tuple[float, float]):
    """``(fig, ax)``: the given axes' figure, or a new figure."""
    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    return fig, ax


def _short(label: str, width: int = 28) -> str:
    """``label`` cut in the middle to ``width`` characters, keeping its start and its end."""
    label = str(label)
    if len(label) <= width:
        return label
    head = (width - 1) // 2
    return label[:head] + "\u2026" + label[len(label) - (width - 1 - head) :]


def short_model_names(names: Sequence[str], width: int = 24) -> dict[str, str]:
    """Display names of models that never look alike.

    The organisation prefix (``meta-llama/``) is dropped unless two models would then share a
    name; a name longer than ``width`` is cut in the middle, keeping its distinguishing end
    (``llama-3.1-n\u2026-51b-instruct``); where cutting would make two names equal, they stay
    whole.

    Parameters
    ----------
    names : sequence of str
    width : int, default 24

    Returns
    -------
    dict
        Full name -> display name, one entry per distinct name.
    """
    full = [str(n) for n in dict.fromkeys(str(n) for n in names)]
    stripped = {n: n.rsplit("/", 1)[-1] or n for n in full}
    counts = pd.Series(list(stripped.values()), dtype=object).value_counts()
    base = {n: (s if counts[s] == 1 else n) for n, s in stripped.items()}
    cut = {n: _short(s, width) for n, s in base.items()}
    seen = pd.Series(list(cut.values()), dtype=object).value_counts()
    return {n: (c if seen[c] == 1 else base[n]) for n, c in cut.items()}


def _model_labels(names: Sequence[str]) -> list[str]:
    mapping = short_model_names(names)
    return [mapping[str(n)] for n in names]


def _heatmap(
    ax,
    matrix: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    cmap: str,
    colorbar_label: str,
    vmin: float | None = None,
    vmax: float | None = None,
    annotate: bool = True,
    fmt: str = "{:.2f}",
    center: float | None = None,
    row_width: int = 28,
):
    matrix = np.asarray(matrix, dtype=float)
    if center is not None:
        span = np.nanmax(np.abs(matrix - center)) if np.isfinite(matrix).any() else 1.0
        span = span or 1.0
        vmin, vmax = center - span, center + span
    image = ax.imshow(matrix, aspect="auto", cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_xticks(np.arange(len(col_labels)))
    ax.set_xticklabels([_short(c) for c in col_labels], rotation=45, ha="right")
    ax.set_yticks(np.arange(len(row_labels)))
    ax.set_yticklabels([_short(r, row_width) for r in row_labels])
    ax.spines[:].set_visible(False)
    # a colour bar as tall as the axes of a tall figure (its aspect ratio is length / width)
    aspect = 20 * max(1.0, ax.figure.get_figheight() / 3.5)
    bar = ax.figure.colorbar(image, ax=ax, fraction=0.04, pad=0.02, aspect=aspect)
    bar.set_label(colorbar_label)
    n_cells = matrix.size
    if annotate and n_cells <= 400:
        colours = image.cmap(image.norm(matrix))
        for (i, j), value in np.ndenumerate(matrix):
            if not np.isfinite(value):
                continue
            text = fmt.format(value)
            if text.lstrip("+-").strip("0.") == "":
                text = text.lstrip("+-")  # "-0.0" and "+0.00" read as 0
            ax.text(
                j,
                i,
                text,
                ha="center",
                va="center",
                fontsize=max(5.5, FONT_SIZE - 2 - n_cells // 120),
                color=text_colour(colours[i, j]),
            )
    return image


def relative_luminance(rgba) -> float:
    """WCAG relative luminance (0 black to 1 white) of an RGB(A) colour with channels in 0-1.

    Parameters
    ----------
    rgba : sequence of float

    Returns
    -------
    float
    """
    rgb = np.asarray(rgba, dtype=float)[:3]
    linear = np.where(rgb <= 0.03928, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return float(linear @ np.array([0.2126, 0.7152, 0.0722]))


def text_colour(rgba) -> str:
    """Black or white, whichever contrasts more with the background colour ``rgba``.

    Parameters
    ----------
    rgba : sequence of float

    Returns
    -------
    str
        ``"black"`` or ``"white"``.
    """
    lum = relative_luminance(rgba)
    # contrast ratios (L1 + 0.05) / (L2 + 0.05) against white (1) and black (0)
    return "black" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "white"


# --------------------------------------------------------------------------------------------
# 01 data


def scores_by_category_table(queries: pd.DataFrame, outcomes: pd.DataFrame) -> pd.DataFrame:
    """Mean score of each model (rows) in each category (columns) plus ``all``, best model first.

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
    table["all"] = frame.groupby("model")["score"].mean()
    return table.sort_values("all", ascending=False)


@_styled
def plot_scores_by_category(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
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
    fig, ax = _axes(ax, (PAGE_WIDTH, max(2.6, 0.3 * n_rows + 1.9)))
    _heatmap(
        ax,
        table.to_numpy(),
        _model_labels(table.index),
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
    n_boot: int = 1000,
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
    from ecc_lib.metrics import bootstrap_ci

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


@_styled
def plot_model_scores(
    table: pd.DataFrame,
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
    table = table.copy()
    if "dataset" not in table:
        table["dataset"] = ""
    datasets = list(dict.fromkeys(table["dataset"]))
    # one row per (dataset, model): datasets in blocks, best model on top of each block
    table["_order"] = table["dataset"].map({name: i for i, name in enumerate(datasets)})
    table = table.sort_values(["_order", "score"], ascending=[False, True]).reset_index(drop=True)
    fig, ax = _axes(ax, (PAGE_WIDTH, max(2.4, 0.2 * len(table) + 1.2)))
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
    ax.set_yticks(y)
    ax.set_yticklabels(_model_labels(table["model"]))
    ax.set_xlim(0, 1)
    ax.set_xlabel(SCORE_LABEL + ", 95% bootstrap CI over queries")
    ax.set_ylabel("model")
    ax.set_title(title or "Mean score per model")
    if any(datasets):
        ax.legend(title="dataset", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


@_styled
def plot_observations_per_pair(outcomes: pd.DataFrame, title: str | None = None, ax=None):
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
    frame = outcomes.copy()
    if "dataset" not in frame:
        frame["dataset"] = ""
    counts = frame.groupby(["dataset", "query_id", "model"], sort=False).size().rename("n")
    table = counts.reset_index().groupby(["dataset", "n"]).size().rename("pairs").reset_index()
    datasets = list(dict.fromkeys(table["dataset"]))
    values = sorted(table["n"].unique())
    width = 0.8 / len(datasets)
    fig, ax = _axes(ax, (PAGE_WIDTH, 2.8))
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
    ax.set_xticks(x)
    ax.set_xticklabels([str(v) for v in values])
    ax.set_xlabel("observations per (query, model) pair (rewrites x decodes)")
    ax.set_ylabel("number of (query, model) pairs")
    ax.set_title(title or "Observations per (query, model) pair")
    ax.margins(y=0.15)
    if any(datasets):
        ax.legend(title="dataset", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


# --------------------------------------------------------------------------------------------
# 02 label instability


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
    """The three flip-rate readings per side from :func:`ecc_lib.dars_diagnostics.label_instability`.

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


@_styled
def plot_flip_rates(table: pd.DataFrame, title: str | None = None, ax=None):
    """The three flip-rate readings per source of randomness, with intervals and chance levels.

    Parameters
    ----------
    table : DataFrame
        :func:`flip_rate_table` output: columns ``side`` (or ``label``), ``reading``,
        ``flip_rate``, ``low``, ``high``, ``chance``; optional ``n_queries`` and
        ``change_draws``. A side with NaN rates is drawn as "n/a" (no repeated observations).
    title : str, optional
    ax : matplotlib Axes, optional

    Returns
    -------
    Figure
    """
    fig, ax = _axes(ax, (PAGE_WIDTH, 4.2))
    sides = list(dict.fromkeys(table["side"]))
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
        err = np.vstack([rate - part["low"].to_numpy(float), part["high"].to_numpy(float) - rate])
        err = np.where(np.isfinite(err), np.clip(err, 0, None), 0.0)
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
    ax.set_xticks(np.arange(len(sides)))
    first = table.drop_duplicates("side").set_index("side").reindex(sides)
    labels = [SIDE_LABELS.get(s, s) for s in sides]
    if "n_queries" in first:
        labels = [
            f"{s}\nn={int(n):,} queries" if n else f"{s}\n(no repeats)"
            for s, n in zip(labels, first["n_queries"], strict=True)
        ]
    ax.set_xticklabels(labels)
    ax.set_ylim(0, 1.25)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_xlabel("source of randomness in the single-shot label")
    ax.set_ylabel("rate over single-shot draws (0-1)")
    ax.legend(loc="upper left", fontsize=8, ncol=2, frameon=False)
    ax.set_title(title or "Three readings of the winner flip rate (95% CI), beside chance")
    return fig


@_styled
def plot_sigma_distribution(table: pd.DataFrame, title: str | None = None, ax=None, bins: int = 20):
    """Histogram of the score spread sigma of each (query, model) pair, one colour per model.

    Parameters
    ----------
    table : DataFrame
        Columns ``model`` and ``sigma`` or ``sigma_q`` (sample standard deviation of a pair's
        scores), e.g. :meth:`ecc_lib.dars.CapabilityDistributions.to_frame` restricted to pairs
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
    fig, ax = _axes(ax, (PAGE_WIDTH, 3.0))
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
    upper = float(np.nanmax(table["sigma"]))
    edges = np.linspace(0.0, max(upper, 1e-6), bins + 1)
    data = [table.loc[table["model"] == m, "sigma"].dropna().to_numpy() for m in models]
    ax.hist(data, bins=edges, label=_model_labels(models), histtype="bar", rwidth=0.9)
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
        ``P(single-shot winner = m)`` per query (:class:`ecc_lib.dars_diagnostics.SingleShotWinners`).
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


@_styled
def plot_label_disagreement(
    confusion: pd.DataFrame,
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
    fig, ax = _axes(ax, (PAGE_WIDTH, max(2.6, 0.45 * len(confusion) + 1.8)))
    names = short_model_names([*map(str, confusion.index), *map(str, confusion.columns)])
    _heatmap(
        ax,
        fractions,
        [names[str(i)] for i in confusion.index],
        [names[str(c)] for c in confusion.columns],
        "Blues",
        "fraction of queries (0-1)",
        vmin=0,
    )
    ax.set_xlabel("single-shot winner (one random observation per pair)")
    ax.set_ylabel("distribution-aware label (argmax U)")
    text = title or "Single-shot winner versus distribution-aware label"
    if rate is not None:
        text += f"\n(they disagree on {rate:.1%} of queries)"
    ax.set_title(text)
    return fig


# --------------------------------------------------------------------------------------------
# 03 clustering


METHOD_LABELS = {
    "global": "global BT (reference)",
    "ecc": "ECC",
    "emb_only": "embedding-only clusters",
    "comp_only": "comparison-only clusters",
    "human": "human labels",
}
"""Display names of the clustering methods of :mod:`ecc_lib.ecc_protocol`."""
METHOD_COLORS = {
    "ecc": "tab:red",
    "emb_only": "tab:green",
    "comp_only": "tab:orange",
    "human": "tab:purple",
    "global": "black",
}


def _gain_columns(table: pd.DataFrame) -> pd.DataFrame:
    """Accept ``gain/low/high`` or ``gain_pct/gain_low/gain_high`` (ecc_protocol tables)."""
    renamed = table.rename(columns={"gain_pct": "gain", "gain_low": "low", "gain_high": "high"})
    return renamed.copy()


def method_label(name: str) -> str:
    """Display name of a clustering method.

    Parameters
    ----------
    name : str
        Method key (``ecc``, ``emb_only`` ...).

    Returns
    -------
    str
    """
    return METHOD_LABELS.get(str(name), str(name))


@_styled
def plot_gains(table: pd.DataFrame, title: str | None = None, ax=None):
    """Bars of ranking quality gain over the global BT model, with confidence intervals.

    Parameters
    ----------
    table : DataFrame
        Columns ``method``, ``gain`` (percent), ``low``, ``high`` (or ``gain_pct``, ``gain_low``,
        ``gain_high`` as in :meth:`ecc_lib.ecc_protocol.ECCEvaluation.table`). The ``global``
        row (the reference, gain 0 by definition) is left out.

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes (saving is the caller's job).
    """
    table = _gain_columns(table)
    table = table[table["method"] != "global"].reset_index(drop=True)
    fig, ax = _axes(ax, (PAGE_WIDTH, max(2.2, 0.42 * len(table) + 1.2)))
    y = np.arange(len(table))
    gain = table["gain"].to_numpy(float)
    err = np.vstack([gain - table["low"].to_numpy(float), table["high"].to_numpy(float) - gain])
    err = np.where(np.isfinite(err), np.clip(err, 0, None), 0.0)
    colors = ["tab:red" if str(m).lower() == "ecc" else "tab:gray" for m in table["method"]]
    ax.barh(y, gain, xerr=err, color=colors, capsize=3, height=0.6)
    # each label right of its interval (or left of a negative one), never on the error bar
    for i, value in enumerate(gain):
        if not np.isfinite(value):
            continue
        right = value >= 0
        edge = value + err[1, i] if right else value - err[0, i]
        ax.annotate(
            f"{value:+.1f}% [{table['low'].iloc[i]:.1f}, {table['high'].iloc[i]:.1f}]",
            (edge, y[i]),
            xytext=(4 if right else -4, 0),
            textcoords="offset points",
            ha="left" if right else "right",
            va="center",
            fontsize=FONT_SIZE - 1,
        )
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels([method_label(m) for m in table["method"]])
    ax.invert_yaxis()
    low = min(0.0, float(np.nanmin(table["low"]))) if len(table) else 0.0
    high = max(0.0, float(np.nanmax(table["high"]))) if len(table) else 1.0
    span = max(high - low, 1.0)
    ax.set_xlim(low - (0.45 if low < 0 else 0.05) * span, high + 0.45 * span)
    ax.set_xlabel("ranking quality gain over one global BT model (% of its held-out NLL, 95% CI)")
    ax.set_ylabel("clustering method")
    ax.set_title(title or "Ranking quality gain on held-out comparisons")
    return fig


@_styled
def plot_gain_curve(
    table: pd.DataFrame,
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
    fig, ax = _axes(ax, (PAGE_WIDTH, 3.2))
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
        ``"gsm8k 73% (n=206)"`` per cluster; two clusters with the same name get ``#k`` appended.
    """
    labels = np.asarray(labels, dtype=int)
    k = int(n_clusters if n_clusters is not None else (labels.max() + 1 if len(labels) else 0))
    sizes = np.bincount(labels, minlength=k)
    if categories is None:
        names = [f"cluster {c} (n={int(sizes[c]):,})" for c in range(k)]
    else:
        cats = pd.Series(np.asarray(categories, dtype=object)).fillna("(none)").astype(str)
        table = pd.crosstab(pd.Series(labels, name="cluster"), cats.rename("category"))
        names = []
        for c in range(k):
            if c not in table.index or sizes[c] == 0:
                names.append(f"empty cluster {c}")
                continue
            row = table.loc[c]
            top = row.idxmax()
            names.append(
                f"{_short(top, 22)} {100 * row[top] / sizes[c]:.0f}% (n={int(sizes[c]):,})"
            )
    counts = pd.Series(names).value_counts()
    return [f"{n} #{c}" if counts[n] > 1 else n for c, n in enumerate(names)]


@_styled
def plot_cluster_profiles(
    theta: np.ndarray,
    models: Sequence[str],
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
    short = _model_labels(models)
    fig, ax = _axes(ax, (PAGE_WIDTH, max(2.4, 0.2 * len(theta) + 1.9)))
    _heatmap(
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


@_styled
def plot_cluster_category(
    labels: Sequence[int],
    categories: Sequence[str],
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
    fig, ax = _axes(ax, (PAGE_WIDTH, max(2.4, 0.2 * len(table) + 2.1)))
    _heatmap(
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


@_styled
def plot_query_map(
    embeddings: np.ndarray,
    labels: Sequence[int],
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
    fig, ax = _axes(ax, (PAGE_WIDTH, 4.2))
    rest = ~np.isin(labels, top)
    if rest.any():
        ax.scatter(
            coords[rest, 0],
            coords[rest, 1],
            s=4,
            color=OTHERS_GREY,
            label=f"other clusters ({int(rest.sum()):,} queries)",
            rasterized=True,
        )
    for i, k in enumerate(top):
        mask = labels == k
        name = str(names[k]) if names is not None else f"cluster {k} (n={int(mask.sum()):,})"
        ax.scatter(
            coords[mask, 0],
            coords[mask, 1],
            s=6,
            color=CLUSTER_COLORS[i],
            label=name,
            rasterized=True,
        )
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


# --------------------------------------------------------------------------------------------
# 04 routing


REFERENCE_ROUTERS = ("Oracle", "Best fixed model", "Random")


@_styled
def plot_cost_quality(
    curves: pd.DataFrame,
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
    if "supervision" in curves:
        label = np.where(
            curves["router"].isin(REFERENCE_ROUTERS),
            curves["router"],
            curves["router"] + " (" + curves["supervision"].astype(str) + ")",
        )
        curves["label"] = label
    else:
        curves["label"] = curves["router"]
    fig, ax = _axes(ax, (PAGE_WIDTH, 4.0))
    palette = plt.get_cmap("tab10")
    learned = [name for name in dict.fromkeys(curves["label"]) if name not in REFERENCE_ROUTERS]
    for i, name in enumerate(learned):
        part = curves[curves["label"] == name]
        color = palette(i % 10)
        ax.scatter(part["cost"], part["score"], s=16, color=color, alpha=0.45)
        front = part[
            routing_evaluation.pareto_front(part["cost"].to_numpy(), part["score"].to_numpy())
        ]
        front = front.sort_values("cost")
        ax.step(
            front["cost"],
            front["score"],
            where="post",
            color=color,
            linewidth=2,
            marker="o",
            markersize=4,
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
        if part.empty:
            continue
        front = part[
            routing_evaluation.pareto_front(part["cost"].to_numpy(), part["score"].to_numpy())
        ]
        front = front.sort_values("cost")
        ax.step(
            front["cost"],
            front["score"],
            where="post",
            color=color,
            linestyle=line,
            marker="s",
            markersize=4,
            label=f"{name} (reference)",
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
        )


ROUTING_KIND_COLORS = {"reference": "tab:gray", "single-shot": "tab:orange", "DARS": "tab:blue"}


@_styled
def plot_routing_table(
    table: pd.DataFrame,
    value: str = "score",
    xlabel: str = "mean held-out score of the chosen model (0-1)",
    title: str | None = None,
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

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes (saving is the caller's job).
    """
    table = table.reset_index(drop=True).copy()
    if "supervision" not in table:
        table["supervision"] = "router"
    names = [
        str(r) if s == "reference" else f"{r} ({s})"
        for r, s in zip(table["router"], table["supervision"], strict=True)
    ]
    fig, ax = _axes(ax, (PAGE_WIDTH, max(2.4, 0.3 * len(table) + 1.3)))
    y = np.arange(len(table))
    values = table[value].to_numpy(float)
    colors = [ROUTING_KIND_COLORS.get(s, "tab:green") for s in table["supervision"]]
    xerr = None
    low, high = f"{value}_ci_low", f"{value}_ci_high"
    if {low, high} <= set(table.columns):
        err = np.vstack([values - table[low].to_numpy(float), table[high].to_numpy(float) - values])
        xerr = np.where(np.isfinite(err), np.clip(err, 0, None), 0.0)
    # points with intervals rather than bars: the axis does not start at zero
    for i in range(len(table)):
        ax.errorbar(
            values[i],
            y[i],
            xerr=None if xerr is None else xerr[:, i : i + 1],
            fmt="o",
            color=colors[i],
            ecolor=colors[i],
            capsize=4,
            markersize=7,
        )
    std = table.get(f"{value}_std")
    labels = [
        f"{v:.3f}" + (f" \u00b1 {s:.3f} (runs)" if std is not None and np.isfinite(s) else "")
        for v, s in zip(values, std if std is not None else [np.nan] * len(values), strict=True)
    ]
    right = values if xerr is None else values + xerr[1]
    for i, text in enumerate(labels):
        if np.isfinite(values[i]):
            ax.annotate(
                text,
                (right[i], y[i]),
                xytext=(6, 0),
                textcoords="offset points",
                va="center",
                fontsize=FONT_SIZE - 3,
            )
    ax.grid(axis="x", alpha=0.3)
    ax.set_yticks(y)
    ax.set_yticklabels([_short(n, 40) for n in names])
    ax.invert_yaxis()
    finite = values[np.isfinite(values)]
    if len(finite):
        span = finite.max() - finite.min()
        ax.set_xlim(
            max(0.0, finite.min() - max(span, 0.02) * 0.6), finite.max() + max(span, 0.02) * 0.45
        )
    ax.set_xlabel(xlabel)
    ax.set_ylabel("router (supervision)")
    ax.set_title(title or "Routers against the best fixed model and the oracle")
    present = list(dict.fromkeys(table["supervision"]))
    handles = [
        plt.Rectangle((0, 0), 1, 1, color=ROUTING_KIND_COLORS.get(s, "tab:green"), label=s)
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


# --------------------------------------------------------------------------------------------
# 00 tour


@_styled
def plot_estimates(
    table: pd.DataFrame,
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
    fig, ax = _axes(ax, (PAGE_WIDTH, max(1.8, 0.45 * len(table) + 1.2)))
    y = np.arange(len(table))
    est = table[value].to_numpy(float)
    err = np.vstack([est - table["low"].to_numpy(float), table["high"].to_numpy(float) - est])
    err = np.where(np.isfinite(err), np.clip(err, 0, None), 0.0)
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
    ax.set_yticks(y)
    ax.set_yticklabels(names)
    ax.invert_yaxis()
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


# --------------------------------------------------------------------------------------------------
# the probe's leak and routing with the clusterings (issue 16)

LEAK_READING_COLORS = {"all": "tab:gray", "touching": "tab:orange", "disjoint": "tab:blue"}
LEAK_READING_LABELS = {
    "all": "all scored pairs (paper)",
    "touching": "pairs touching a probe model",
    "disjoint": "pairs disjoint from the probe",
}


@_styled
def plot_leak_gains(table: pd.DataFrame, title: str | None = None, ax=None):
    """Gain of each method on all scored pairs, on those touching the probe's models and on
    those disjoint from them, as grouped bars.

    Parameters
    ----------
    table : DataFrame
        One row per (method, reading): ``method``, ``reading`` (``all``, ``touching``,
        ``disjoint``), ``mean`` (gain in percent, the mean over seeds), ``sd`` (over seeds; NaN
        with one seed) and ``per_seed`` (list of ``(seed, estimate, low, high)``), as
        :meth:`ecc_lib.ecc_protocol.MultiSeedEvaluation.summary_table`. ``global`` rows are left
        out. Whiskers: +- sd over seeds, or the bootstrap interval with a single seed; dots: the
        seeds' estimates.
    title : str, optional
    ax : matplotlib Axes, optional

    Returns
    -------
    Figure
    """
    table = table[table["method"] != "global"].reset_index(drop=True)
    methods = list(dict.fromkeys(table["method"]))
    readings = [r for r in LEAK_READING_COLORS if r in set(table["reading"])]
    fig, ax = _axes(ax, (8.5, max(3.5, 0.9 * len(methods) + 1.5)))
    height = 0.8 / max(len(readings), 1)
    for j, reading in enumerate(readings):
        part = table[table["reading"] == reading].set_index("method").reindex(methods)
        y = np.arange(len(methods)) + (j - (len(readings) - 1) / 2) * height
        mean = part["mean"].to_numpy(float)
        sd = part["sd"].to_numpy(float)
        err = np.vstack([sd, sd])
        for i, seeds in enumerate(part["per_seed"]):
            if not np.isfinite(sd[i]) and isinstance(seeds, list) and len(seeds) == 1:
                err[:, i] = [mean[i] - seeds[0][2], seeds[0][3] - mean[i]]
        err = np.where(np.isfinite(err), np.clip(err, 0, None), 0.0)
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
            if isinstance(seeds, list) and len(seeds) > 1:
                ax.plot(
                    [s[1] for s in seeds],
                    [y[i]] * len(seeds),
                    "o",
                    color="black",
                    markersize=2.5,
                )
            ax.annotate(
                f"{mean[i]:+.1f}",
                (max(mean[i], 0) + err[1, i], y[i]),
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
                fontsize=FONT_SIZE - 3,
            )
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(np.arange(len(methods)))
    ax.set_yticklabels([method_label(m) for m in methods])
    ax.invert_yaxis()
    ax.set_xlabel("ranking quality gain over global BT (% of its held-out NLL)")
    ax.set_ylabel("clustering method")
    ax.set_title(title or "Ranking quality gain and the probe's leak")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=FONT_SIZE - 2)
    return fig


ROUTING_METHOD_LABELS = {
    "global": "best model of the global ranking",
    "random": "random model",
    "oracle": "oracle (best model per query)",
    "probe_winner": "the probe's winner, nothing else",
}
ROUTING_SETTING_LABELS = {
    "no_probe": "no probe (embedding / label only)",
    "probe": "with the probe (paper)",
    "probe_outside": "with the probe, models outside the probe pair",
}


@_styled
def plot_routing_settings(table: pd.DataFrame, title: str | None = None):
    """Mean score of the routed model per method, one panel per routing setting.

    Parameters
    ----------
    table : DataFrame
        ``setting, method, score_mean, score_sd, score_low, score_high`` as
        :func:`ecc_lib.ecc_experiments.clustering_routing_table`. Dots: the mean over seeds;
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
    names = {**ROUTING_METHOD_LABELS}
    for ax, setting in zip(axes[:, 0], settings, strict=True):
        part = table[table["setting"] == setting].set_index("method").reindex(methods)
        y = np.arange(len(methods))
        mean = part["score_mean"].to_numpy(float)
        low = part["score_low"].to_numpy(float)
        high = part["score_high"].to_numpy(float)
        sd = np.nan_to_num(part["score_sd"].to_numpy(float))
        first = part["score"].to_numpy(float)
        ok = np.isfinite(mean)
        colors = [
            "tab:red"
            if m == "ecc"
            else "tab:green"
            if m in ("oracle", "probe_winner")
            else "tab:gray"
            for m in methods
        ]
        ax.errorbar(
            first[ok],
            y[ok],
            xerr=np.clip(np.vstack([first - low, high - first])[:, ok], 0, None),
            fmt="none",
            ecolor="black",
            elinewidth=0.8,
            capsize=3,
        )
        ax.errorbar(mean[ok], y[ok], xerr=sd[ok], fmt="none", ecolor="black", elinewidth=2.5)
        ax.scatter(mean[ok], y[ok], c=[c for c, k in zip(colors, ok, strict=True) if k], zorder=3)
        for i in np.flatnonzero(ok):
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
        ax.set_yticks(np.arange(len(methods)))
        ax.set_yticklabels([names.get(m, method_label(m)) for m in methods])
        ax.set_ylim(len(methods) - 0.4, -0.8)
    axes[-1][0].set_xlabel("mean score of the routed model")
    fig.suptitle(title or "Routing with each clustering, with and without the probe")
    return fig


@_styled
def plot_routing_cost_quality(
    table: pd.DataFrame,
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
        :func:`ecc_lib.ecc_experiments.clustering_routing_table`; the ``no_probe`` and
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
    fig, ax = _axes(ax, (8.5, 5.5))
    palette = plt.get_cmap("tab10")
    methods = list(dict.fromkeys(part["method"]))
    markers = {"no_probe": "o", "probe_cost": "^"}
    for i, method in enumerate(methods):
        rows = part[part["method"] == method].set_index("setting")
        color = palette(i % 10)
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
