"""Figure functions: readable figures (title, axis labels, legends) and the small tables behind them."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from ecc_lib import plotting  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def assert_readable(fig, legend: bool = False):
    """Title, both axis labels, and (when asked) a legend on the main axes."""
    ax = fig.axes[0]
    assert ax.get_title(), "figure without a title"
    assert ax.get_xlabel() and ax.get_ylabel(), "axis without a label"
    if legend:
        assert ax.get_legend() is not None, "figure without a legend"
    fig.canvas.draw()  # layout and rendering work


@pytest.fixture
def tiny_data():
    queries = pd.DataFrame(
        {"query_id": ["a", "b", "c", "d"], "category": ["x", "x", "y", None], "text": list("abcd")}
    )
    outcomes = pd.DataFrame(
        {
            "query_id": ["a", "a", "b", "b", "c", "c", "d", "d", "a", "a"],
            "model": ["m1", "m2"] * 5,
            "score": [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.5, 0.5, 0.0, 0.0],
            "variant_id": [0, 0, 0, 0, 0, 0, 0, 0, 1, 1],
        }
    )
    return queries, outcomes


def test_scores_by_category_table_and_heatmap(tiny_data):
    queries, outcomes = tiny_data
    table = plotting.scores_by_category_table(queries, outcomes)
    # m1 on category x: query a (mean of 1 and 0) and query b (1) -> observations 1, 0, 1
    assert table.loc["m1", "x"] == pytest.approx(2 / 3)
    assert table.loc["m2", "y"] == 1.0
    assert "(none)" in table.columns and list(table.columns)[-1] == "all"
    assert table.loc["m1", "all"] == pytest.approx(outcomes[outcomes.model == "m1"].score.mean())
    assert list(table.index) == ["m1", "m2"]  # best model first
    fig = plotting.plot_scores_by_category(queries, outcomes)
    assert_readable(fig)


def test_model_score_table_counts_each_query_once(tiny_data):
    _, outcomes = tiny_data
    table = plotting.model_score_table(outcomes, n_boot=200, random_state=0).set_index("model")
    # m1: query means a=0.5, b=1, c=0, d=0.5 -> 0.5 (a's two observations count once)
    assert table.loc["m1", "score"] == pytest.approx(0.5)
    assert table.loc["m1", "n_queries"] == 4
    assert table.loc["m1", "low"] <= 0.5 <= table.loc["m1", "high"]
    both = plotting.model_score_table(
        pd.concat([outcomes.assign(dataset="d1"), outcomes.assign(dataset="d2")]), n_boot=50
    )
    assert len(both) == 4 and set(both["dataset"]) == {"d1", "d2"}
    assert_readable(plotting.plot_model_scores(both), legend=True)


def test_observations_per_pair(tiny_data):
    _, outcomes = tiny_data
    fig = plotting.plot_observations_per_pair(outcomes.assign(dataset="d"))
    assert_readable(fig, legend=True)
    heights = sorted(p.get_height() for p in fig.axes[0].patches)
    assert heights == [2, 6]  # pair (a, m1) and (a, m2) have 2 observations, the others 1


def test_flip_rate_table_and_figure_handle_a_side_without_repeats():
    summary = {"winner_flip_rate": 0.4, "winner_flip_rate_ci95": [0.3, 0.5], "n_queries": 10}
    diagnostics = {
        "input": SimpleNamespace(summary=summary),
        "output": None,
        "both": SimpleNamespace(summary={**summary, "winner_flip_rate": 0.6}),
    }
    table = plotting.flip_rate_table(diagnostics)
    assert list(table["side"]) == ["input", "output", "both"]
    assert np.isnan(table.loc[1, "flip_rate"]) and table.loc[1, "n_queries"] == 0
    assert table.loc[2, "flip_rate"] == 0.6
    fig = plotting.plot_flip_rates(table)
    assert_readable(fig)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "0.400" in texts and any("n/a" in t for t in texts)


def test_sigma_distribution_accepts_dars_columns():
    frame = pd.DataFrame({"model": ["a", "a", "b", "b"], "sigma_q": [0.0, 0.5, 0.5, 0.577]})
    assert_readable(plotting.plot_sigma_distribution(frame), legend=True)


def test_sigma_distribution_says_when_nothing_was_repeated():
    empty = pd.DataFrame({"model": pd.Series([], dtype=str), "sigma_q": pd.Series([], dtype=float)})
    fig = plotting.plot_sigma_distribution(empty)
    assert_readable(fig)
    assert "not measured" in fig.axes[0].texts[0].get_text()


def test_label_confusion_counts_ties_separately():
    winner = np.array([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.2, 0.3, 0.5]])
    utilities = np.array([[0.9, 0.1, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    confusion = plotting.label_confusion(winner, utilities, ["a", "b", "c"])
    assert list(confusion.index) == ["a", "b", "c", plotting.TIE_LABEL]
    np.testing.assert_allclose(confusion.loc["a"], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(confusion.loc[plotting.TIE_LABEL], [0.0, 1.0, 0.0])
    np.testing.assert_allclose(confusion.loc["c"], [0.2, 0.3, 0.5])
    assert confusion.to_numpy().sum() == pytest.approx(3.0)
    fig = plotting.plot_label_disagreement(confusion, rate=0.25)
    assert_readable(fig)
    assert "25.0%" in fig.axes[0].get_title()


def test_gains_leave_out_the_reference_and_take_evaluation_columns():
    table = pd.DataFrame(
        {
            "method": ["global", "ecc", "emb_only", "human"],
            "gain_pct": [0.0, 20.0, 15.0, -2.0],
            "gain_low": [np.nan, 18.0, 13.0, -4.0],
            "gain_high": [np.nan, 22.0, 17.0, 0.5],
        }
    )
    fig = plotting.plot_gains(table)
    assert_readable(fig)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["ECC", "embedding-only clusters", "human labels"]
    assert [round(p.get_width(), 6) for p in fig.axes[0].patches] == [20.0, 15.0, -2.0]


def test_gain_curve_one_line_per_method():
    table = pd.DataFrame(
        {
            "n_clusters": [5, 10, 5, 10, 5, 10],
            "method": ["global", "global", "ecc", "ecc", "emb_only", "emb_only"],
            "gain_pct": [0, 0, 10, 12, 5, 6],
            "gain_low": [np.nan, np.nan, 8, 10, 4, 5],
            "gain_high": [np.nan, np.nan, 12, 14, 6, 7],
        }
    )
    fig = plotting.plot_gain_curve(table, x="n_clusters", xlabel="number of clusters K")
    assert_readable(fig, legend=True)
    lines = [line for line in fig.axes[0].get_lines() if line.get_label()[:1] != "_"]
    assert [line.get_label() for line in lines] == ["ECC", "embedding-only clusters"]
    assert lines[0].get_color() != lines[1].get_color()


def test_cluster_profiles_are_centred_and_sorted_by_size():
    theta = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 3.0]])
    fig = plotting.plot_cluster_profiles(theta, ["a", "b", "c"], cluster_sizes=[5, 9])
    assert_readable(fig)
    rows = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert rows == ["cluster 1 (n=9)", "cluster 0 (n=5)"]
    image = fig.axes[0].get_images()[0].get_array()
    np.testing.assert_allclose(np.asarray(image).sum(axis=1), 0.0, atol=1e-12)


def test_cluster_category_shares_sum_to_one():
    fig = plotting.plot_cluster_category([0, 0, 1, 1, 1], ["x", "y", "y", "y", None])
    assert_readable(fig)
    shares = np.asarray(fig.axes[0].get_images()[0].get_array())
    np.testing.assert_allclose(shares.sum(axis=1), 1.0)


def test_project_2d_finds_the_main_direction():
    rng = np.random.default_rng(0)
    x = np.column_stack([rng.normal(0, 10, 200), rng.normal(0, 1, 200), rng.normal(0, 0.1, 200)])
    coords, ratio = plotting.project_2d(x)
    assert coords.shape == (200, 2)
    assert ratio[0] > 0.95 and ratio[0] > ratio[1]
    np.testing.assert_allclose(np.abs(coords[:, 0]), np.abs(x[:, 0] - x[:, 0].mean()), atol=0.5)
    fig = plotting.plot_query_map(x, rng.integers(0, 12, 200), max_labelled=10)
    assert_readable(fig, legend=True)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels[0].startswith("other clusters") and len(labels) == 11


def test_cost_quality_draws_fronts_and_references():
    curves = pd.DataFrame(
        {
            "router": ["kNN"] * 3 + ["Oracle"] * 3 + ["Best fixed model"] * 3,
            "cost": [0.1, 0.5, 0.9, 0.2, 0.3, 0.4, 0.0, 0.5, 1.0],
            "score": [0.5, 0.6, 0.55, 0.8, 0.85, 0.9, 0.4, 0.5, 0.6],
        }
    )
    fig = plotting.plot_cost_quality(curves, cost_label="normalised price (0-1)")
    assert_readable(fig, legend=True)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["kNN: Pareto front", "Oracle (reference)", "Best fixed model (reference)"]
    front = fig.axes[0].get_lines()[0]
    assert list(front.get_xdata()) == [0.1, 0.5]  # the dominated point (0.9, 0.55) is off the front


def test_routing_table_figure():
    table = pd.DataFrame(
        {
            "router": ["Oracle", "Best fixed model", "kNN", "kNN"],
            "supervision": ["reference", "reference", "single-shot", "DARS"],
            "score": [0.9, 0.8, 0.78, 0.82],
            "score_std": [np.nan, np.nan, 0.01, np.nan],
            "score_ci_low": [0.88, 0.77, 0.75, 0.8],
            "score_ci_high": [0.92, 0.83, 0.81, 0.84],
        }
    )
    fig = plotting.plot_routing_table(table, value="score")
    assert_readable(fig, legend=True)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["Oracle", "Best fixed model", "kNN (single-shot)", "kNN (DARS)"]
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "0.780 \u00b1 0.010 (runs)" in texts


def test_figures_draw_into_a_given_axes():
    fig, axes = plt.subplots(1, 2)
    out = plotting.plot_cluster_category([0, 1], ["x", "y"], ax=axes[1])
    assert out is fig
