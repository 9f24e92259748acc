"""Issue 35, item 8: figure labels and captions (value labels off the seed dots, no "(DARS)" and no
"orange" without repeats)."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ecc_lib import plotting  # noqa: E402


def _leak_table() -> pd.DataFrame:
    """Seeds spread wider than their sd on both sides of 0 (3 seeds per bar)."""
    rows = []
    for method, reading, estimates in [
        ("ecc", "all", [-10.0, -2.0, -3.0]),
        ("ecc", "disjoint", [-6.0, -5.5, -0.5]),
        ("comp_only", "all", [3.0, 9.0, 2.0]),
        ("comp_only", "disjoint", [-20.0, -2.0, -3.0]),
    ]:
        rows.append(
            {
                "method": method,
                "reading": reading,
                "mean": float(np.mean(estimates)),
                "sd": float(np.std(estimates, ddof=1)),
                "per_seed": [(s, e, e - 2.0, e + 2.0) for s, e in enumerate(estimates)],
            }
        )
    return pd.DataFrame(rows)


def test_leak_gain_value_labels_sit_beyond_the_seed_dots():
    table = _leak_table()
    fig = plotting.plot_leak_gains(table)
    ax = fig.axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    dots = np.vstack([line.get_xydata() for line in ax.lines if line.get_marker() == "o"])
    labels = [t for t in ax.texts if t.get_text()[:1] in "+-"]
    assert len(labels) == len(table)
    by_value = {f"{m:+.1f}": m for m in table["mean"]}
    for label in labels:
        mean = by_value[label.get_text()]
        x, y = label.xy
        same_bar = dots[np.isclose(dots[:, 1], y)]
        assert len(same_bar) == 3
        # the anchor is beyond every dot of its bar, on the bar's side of 0
        if mean < 0:
            assert x <= same_bar[:, 0].min()
        else:
            assert x >= same_bar[:, 0].max()
        # and no dot lies inside the drawn text
        box = label.get_window_extent(renderer).transformed(ax.transData.inverted())
        inside = (same_bar[:, 0] >= box.x0) & (same_bar[:, 0] <= box.x1)
        assert not inside.any(), (label.get_text(), same_bar[:, 0], box)
    plt.close(fig)
