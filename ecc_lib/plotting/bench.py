"""The benchmark figure (``ecc-lab bench``, notebook 06): gain on disjoint pairs per method and
dataset, with the one interval of every comparison."""

from __future__ import annotations

import numpy as np

from ecc_lib.labels import method_label
from ecc_lib.plotting.clustering import METHOD_COLORS
from ecc_lib.plotting.style import FONT_SIZE, PAGE_WIDTH, clean_errors, figure_axes, styled


@styled
def plot_bench_gains(result, *, title: str | None = None, ax=None):
    """Gain on the scored pairs disjoint from the probe's models, per method (colour) and dataset
    (group), with the one 95% interval of the comparison records (bootstrap over test queries
    within each seed, seeds averaged; :func:`ecc_lib.stats.seed_query_interval`) and each seed's
    estimate as a dot.

    Parameters
    ----------
    result : BenchResult
        :class:`ecc_lib.bench.result.BenchResult`; only the datasets in its table are drawn.
    title : str, optional
    ax : matplotlib Axes, optional

    Returns
    -------
    Figure
    """
    included = result.included
    labels = list(included)
    methods = [m for m in result.methods if m != "global"]
    fig, ax = figure_axes(ax, (PAGE_WIDTH, 3.6))
    width = 0.8 / max(len(methods), 1)
    spare = iter(("tab:blue", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:gray"))
    for j, method in enumerate(methods):
        x = np.arange(len(labels)) + (j - (len(methods) - 1) / 2) * width
        cells = [included[label]["summary"]["versus"]["global"].get(method) for label in labels]
        rows = [(np.nan,) * 3 if c is None else (c["estimate"], *c["ci95"][:2]) for c in cells]
        mean, low, high = np.array(rows, dtype=float).reshape(-1, 3).T
        seeds = [
            [r["gain_disjoint"].get(method, np.nan) for r in included[label]["per_seed"]]
            for label in labels
        ]
        err = clean_errors(np.vstack([mean - low, high - mean]))
        color = METHOD_COLORS.get(method) or next(spare, "black")
        ax.bar(
            x,
            mean,
            width=width * 0.9,
            yerr=err,
            color=color,
            capsize=2,
            label=method_label(method),
        )
        for i, values in enumerate(seeds):
            if len(values) > 1:
                ax.plot([x[i]] * len(values), values, "o", color="black", markersize=2)
    for i, label in enumerate(labels):
        cells = included[label]["summary"]["versus"]["global"]
        if not any(
            c["estimate"] is not None and np.isfinite(c["estimate"]) for c in cells.values()
        ):
            ax.annotate(
                "no scored pair is disjoint\nfrom the probe's models",
                (i, 0.0),
                xytext=(0, 8),
                textcoords="offset points",
                ha="center",
                fontsize=FONT_SIZE - 1,
                color="dimgray",
            )
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xlim(-0.5, len(labels) - 0.5)
    ax.set_xticks(np.arange(len(labels)), labels)
    ax.set_ylabel("gain on disjoint pairs\n(% of the global BT's NLL)")
    n_seeds = result.settings.n_seeds
    ax.set_title(
        title
        or f"Ranking quality gain on pairs disjoint from the probe ({n_seeds} seed"
        f"{'s' if n_seeds != 1 else ''}; bars: 95% interval)",
        fontsize=FONT_SIZE + 1,
    )
    ax.legend(
        ncols=min(len(methods), 4), loc="upper center", bbox_to_anchor=(0.5, -0.1), frameon=False
    )
    return fig


__all__ = [
    "plot_bench_gains",
]
