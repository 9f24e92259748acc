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


def _routing_table(*, repeats: bool) -> pd.DataFrame:
    rows = [("Oracle", "reference", 0.8), ("Best fixed model", "reference", 0.6)]
    rows += [("kNN", "DARS", 0.62), ("MLP", "DARS", 0.63)]
    if repeats:
        rows += [("kNN", "single-shot", 0.61), ("MLP", "single-shot", 0.6)]
    table = pd.DataFrame(rows, columns=["router", "supervision", "score"])
    return table.assign(score_ci_low=table["score"] - 0.02, score_ci_high=table["score"] + 0.02)


@pytest.mark.parametrize("repeats", [False, True])
def test_routing_figure_names_supervision_only_with_repeats(repeats):
    fig = plotting.plot_routing_table(_routing_table(repeats=repeats))
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    if repeats:
        assert "kNN (DARS)" in ticks and "kNN (single-shot)" in ticks
        assert legend == ["reference", "DARS", "single-shot"]
    else:
        assert "kNN" in ticks and not any("(DARS)" in t for t in ticks)
        assert legend == ["reference", "observed outcomes"]
    plt.close(fig)


def _routing_scores_caption(single_shot_skipped):
    """The caption notebook 04 gives ``04_routing_scores``, evaluated for the data's repeats."""
    import ast
    import json
    from pathlib import Path

    notebook = Path(__file__).resolve().parents[1] / "notebooks" / "04_routing.ipynb"
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    for source in ("".join(c["source"]) for c in cells if c["cell_type"] == "code"):
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", "") == "save_figure"
                # run.save_figure(fig, name): the name is the second argument
                and ast.literal_eval(node.args[1]) == "04_routing_scores"
            ):
                caption = next(k.value for k in node.keywords if k.arg == "caption")
                code = compile(ast.Expression(caption), str(notebook), "eval")
                return eval(code, {"single_shot_skipped": single_shot_skipped})  # noqa: S307
    raise AssertionError("no 04_routing_scores figure in notebook 04")


def test_routing_caption_names_orange_only_with_a_single_shot_arm():
    without = _routing_scores_caption("one observation per (query, model) pair")
    assert "orange" not in without and "observed outcomes" in without
    assert "single-shot labels (orange)" in _routing_scores_caption(None)


def test_routing_headline_names_routers_alone_without_repeats():
    from ecc_lib.routing_evaluation import routing_headline
    from ecc_lib.routing_evaluation.table import RoutingTable

    versus = pd.DataFrame(
        {
            "router": ["kNN", "MLP"],
            "supervision": ["DARS", "DARS"],
            "utility_minus_fixed": [0.01, 0.03],
            "utility_minus_fixed_ci_low": [-0.01, 0.01],
            "utility_minus_fixed_ci_high": [0.03, 0.05],
            "beats_best_fixed": [False, True],
        }
    )
    for repeats in (False, True):
        result = RoutingTable(
            table=_routing_table(repeats=False),
            runs=pd.DataFrame(),
            paired=pd.DataFrame(),
            versus_fixed=versus,
            curves=pd.DataFrame(),
            info={"best_fixed_model": "m1", "has_rewrites": repeats, "has_decodes": False},
        )
        headline = routing_headline(result)
        assert headline["best_router"] == ("MLP (DARS)" if repeats else "MLP")
        assert ("(DARS)" in headline["sentence"]) is repeats


def test_routing_value_labels_stay_inside_the_axes():
    """Wide intervals (few test queries): a label beside a whisker is not cut by the axes' edge
    or hidden under the legend."""
    table = _routing_table(repeats=False)
    table = table.assign(score_ci_low=table["score"] - 0.17, score_ci_high=table["score"] + 0.17)
    fig = plotting.plot_routing_table(table)
    ax = fig.axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    for text in ax.texts:
        box = text.get_window_extent(renderer)
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1, text.get_text()
    plt.close(fig)
