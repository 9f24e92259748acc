"""Figure functions: readable figures (title, axis labels, legends) and the small tables behind them."""

from __future__ import annotations

import re
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from ecc_lib import plotting
from ecc_lib.labels import model_name_legend, short_model_names
from ecc_lib.plotting.clustering import METHOD_COLORS, project_2d
from ecc_lib.plotting.label_instability import TIE_LABEL
from ecc_lib.plotting.style import OTHERS_GREY, PAGE_WIDTH, method_colour, relative_luminance
from ecc_lib.runs import artifacts as run_artifacts  # noqa: E402


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
    # the side without repeats is no empty group: it is named under the axis instead
    assert "0.400" in texts and not any("n/a" in t for t in texts)
    assert len(fig.axes[0].get_xticklabels()) == 2
    assert "not measured" in fig.axes[0].get_xlabel()


def test_sigma_distribution_accepts_dars_columns():
    frame = pd.DataFrame({"model": ["a", "a", "b", "b"], "sigma_q": [0.0, 0.5, 0.5, 0.577]})
    assert_readable(plotting.plot_sigma_distribution(frame), legend=True)


def test_sigma_distribution_says_when_nothing_was_repeated():
    empty = pd.DataFrame({"model": pd.Series([], dtype=str), "sigma_q": pd.Series([], dtype=float)})
    # no figure of its own for a quantity that does not apply
    assert plotting.plot_sigma_distribution(empty) is None
    fig, ax = plt.subplots()
    plotting.plot_sigma_distribution(empty, ax=ax)
    assert_readable(fig)
    assert "not measured" in fig.axes[0].texts[0].get_text()


def test_label_confusion_counts_ties_separately():
    winner = np.array([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.2, 0.3, 0.5]])
    utilities = np.array([[0.9, 0.1, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    confusion = plotting.label_confusion(winner, utilities, ["a", "b", "c"])
    assert list(confusion.index) == ["a", "b", "c", TIE_LABEL]
    np.testing.assert_allclose(confusion.loc["a"], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(confusion.loc[TIE_LABEL], [0.0, 1.0, 0.0])
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
    coords, ratio = project_2d(x)
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


# --------------------------------------------------------------------------------------------
# issue 11: figures without the defects seen on real data


def _contrast(a, b) -> float:
    la, lb = relative_luminance(to_rgba(a)), relative_luminance(to_rgba(b))
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


@pytest.mark.parametrize("cmap", ["viridis", "RdBu_r", "Blues", "Greens"])
def test_heatmap_text_contrasts_with_every_cell(cmap):
    matrix = np.linspace(-1, 1, 60).reshape(6, 10)
    fig, ax = plt.subplots()
    image = plotting.style.heatmap(ax, matrix, list("abcdef"), list("0123456789"), cmap, "x")
    colours = image.cmap(image.norm(matrix))
    texts = ax.texts
    assert len(texts) == matrix.size
    for text, colour in zip(texts, colours.reshape(-1, 4), strict=True):
        # the better of black and white is always at least 4.5:1 (WCAG AA)
        assert _contrast(text.get_color(), colour) >= 4.5, (text.get_text(), colour)
    assert not any(t.get_text().startswith("-0.00") for t in texts)


@given(
    st.lists(
        st.from_regex(r"[a-z]{1,6}/[a-z0-9.\-]{1,40}", fullmatch=True), min_size=1, max_size=12
    )
)
@settings(max_examples=80, deadline=None)
def test_short_model_names_never_look_alike(names):
    short = short_model_names(names)
    assert set(short) == set(names)
    assert len(set(short.values())) == len(short)  # two models never share a display name


def test_short_model_names_drop_the_organisation_and_keep_the_end():
    short = short_model_names(
        [
            "nvidia/llama-3.1-nemotron-51b-instruct",
            "nvidia/llama-3.3-nemotron-super-49b-v1",
            "meta/llama3-chatqa-1.5-70b",
            "meta/llama3-chatqa-1.5-8b",
            "a/same",
            "b/same",
        ]
    )
    assert short["meta/llama3-chatqa-1.5-70b"] == "llama3-chatqa-1.5-70b"
    assert short["nvidia/llama-3.1-nemotron-51b-instruct"].endswith("51b-instruct")
    assert short["nvidia/llama-3.3-nemotron-super-49b-v1"].endswith("49b-v1")
    assert short["a/same"] == "a/same" and short["b/same"] == "b/same"


def test_clusters_are_named_by_dominant_category_and_size():
    labels = [0, 0, 0, 1, 1, 2, 2]
    categories = ["math", "math", "code", "code", "code", "math", "math"]
    names = plotting.cluster_names(labels, categories, n_clusters=4)
    assert names[0] == "math 67% (n=3)"
    assert names[1] == "code 100% (n=2)"
    assert names[2] == "math 100% (n=2)"
    assert names[3] == "empty cluster 3"
    same = plotting.cluster_names([0, 1], ["x", "x"])
    assert same == ["x 100% (n=1) #0", "x 100% (n=1) #1"]


def test_named_clusters_never_take_the_grey_of_the_others():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 4))
    labels = rng.integers(0, 15, 300)
    fig = plotting.plot_query_map(x, labels, names=[f"c{k}" for k in range(15)])
    grey = np.array(to_rgba(OTHERS_GREY))
    named = fig.axes[0].collections[1:]
    assert len(named) == 10
    for collection in named:
        rgba = collection.get_facecolor()[0]
        assert np.abs(rgba[:3] - grey[:3]).max() > 0.1
        assert np.ptp(rgba[:3]) > 0.05  # a colour, not a shade of grey
    assert len({tuple(c.get_facecolor()[0]) for c in named}) == 10


def test_cost_quality_labels_each_point_with_its_lambda():
    curves = pd.DataFrame(
        {
            "router": ["kNN"] * 3 + ["ECC"] * 3,
            "lambda": [0.0, 0.5, 2.0] * 2,
            "cost": [0.9, 0.5, 0.1, 0.8, 0.45, 0.12],
            "score": [0.7, 0.6, 0.5, 0.72, 0.62, 0.52],
        }
    )
    fig = plotting.plot_cost_quality(curves)
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert {"\u03bb=0", "\u03bb=0.5", "\u03bb=2"} <= texts
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "ECC: Pareto front" in labels


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_legends_and_labels_do_not_collide():
    """Legends sit outside the data area; the gain labels sit beyond the intervals."""
    rng = np.random.default_rng(0)
    sigma = pd.DataFrame(
        {"model": rng.choice(["a/m1", "b/m2", "c/m3"], 300), "sigma": rng.random(300)}
    )
    gains = pd.DataFrame(
        {
            "method": ["ecc", "emb_only", "human"],
            "gain": [28.0, 23.0, -3.0],
            "low": [25.0, 20.0, -6.0],
            "high": [31.0, 26.0, 0.5],
        }
    )
    for fig in (plotting.plot_sigma_distribution(sigma), plotting.plot_gains(gains)):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ax = fig.axes[0]
        legend = ax.get_legend()
        if legend is not None:
            assert not _overlaps(legend.get_window_extent(renderer), ax.get_window_extent(renderer))
        boxes = [t.get_window_extent(renderer) for t in ax.texts]
        for i, a in enumerate(boxes):
            assert all(not _overlaps(a, b) for b in boxes[i + 1 :])
        for line in ax.lines:
            ends = line.get_window_extent(renderer)
            assert all(
                not _overlaps(box, ends) for box in boxes if ends.width > 0 and ends.height < 2
            )


def test_saved_figures_are_page_wide_with_embedded_truetype_fonts(tmp_path):
    _, outcomes = (
        None,
        pd.DataFrame(
            {"query_id": list("aabb"), "model": ["x/m1", "y/m2"] * 2, "score": [1.0, 0.0, 0.5, 1.0]}
        ),
    )
    fig = plotting.plot_model_scores(plotting.model_score_table(outcomes, n_boot=20))
    png, pdf = run_artifacts.save_figure(fig, tmp_path, "01_scores", caption="A caption.")
    width, _ = plt.imread(png).shape[1], None
    assert width == round(PAGE_WIDTH * 200)
    data = pdf.read_bytes()
    assert b"/FontFile2" in data and b"/Type3" not in data
    assert run_artifacts.save_figure(None, tmp_path, "01_scores") == []
    assert not png.exists() and not pdf.exists()


@pytest.mark.parametrize(
    "name", ["style", "estimates", "data", "label_instability", "clustering", "routing"]
)
def test_every_public_figure_is_importable_from_the_package(name):
    import importlib

    module = importlib.import_module(f"ecc_lib.plotting.{name}")
    missing = {n for n in module.__all__ if getattr(plotting, n, None) is not getattr(module, n)}
    assert not missing, f"re-export these from ecc_lib.plotting: {sorted(missing)}"
    assert set(plotting.__all__) <= set(dir(plotting))


def test_error_bars_are_finite_and_never_negative():
    from ecc_lib.plotting.style import error_bars

    err = error_bars([0.5, 0.5, np.nan, 0.2], [0.4, 0.6, 0.1, np.nan], [0.7, 0.55, 0.9, 0.3])
    np.testing.assert_allclose(err, [[0.1, 0.0, 0.0, 0.0], [0.2, 0.05, 0.0, 0.1]])


@given(
    st.lists(
        st.from_regex(r"[a-z]{1,6}/[A-Za-z0-9.]{1,9}(-[A-Za-z0-9.]{1,9}){0,6}", fullmatch=True),
        min_size=1,
        max_size=12,
    )
)
@settings(max_examples=80, deadline=None)
def test_short_model_names_never_cut_a_token(names):
    """'llama-3.1-n...51b-instruct' cut a word: every token shown is a whole token of the name."""
    for full, short in short_model_names(names).items():
        tokens = set(re.split(r"[-_/ ]+", full))
        shown = [t for t in re.split(r"[-_/ ]+|\u2026", short) if t]
        assert all(t in tokens for t in shown), (full, short)


def test_short_model_names_keep_the_distinguishing_tokens():
    short = short_model_names(
        [
            "FuseChat-Gemma-2-9B-Instruct",
            "FuseChat-Qwen-2.5-7B-Instruct",
            "llama-3.1-nemotron-51b-instruct",
            "llama-3.1-8b-instruct",
        ]
    )
    assert short["FuseChat-Gemma-2-9B-Instruct"].startswith("FuseChat-Gemma-2-9B")
    assert short["FuseChat-Qwen-2.5-7B-Instruct"].startswith("FuseChat-Qwen-2.5-7B")
    assert short["llama-3.1-nemotron-51b-instruct"] == "llama-3.1-nemotron-51b-\u2026"
    legend = model_name_legend(list(short))
    assert set(legend["full name"]) == {k for k, v in short.items() if k != v}


def test_clusters_that_share_a_category_get_their_second_one():
    """'mmlu (n=181)' twice: two clusters named alike gain the distinguishing second category."""
    labels = [0] * 4 + [1] * 4
    categories = ["mmlu", "mmlu", "mmlu", "arc"] + ["mmlu", "mmlu", "mmlu", "gsm8k"]
    names = plotting.cluster_names(labels, categories)
    assert names == ["mmlu 75% + arc 25% (n=4)", "mmlu 75% + gsm8k 25% (n=4)"]
    assert len(set(names)) == 2


def test_one_colour_per_method_in_every_figure():
    assert method_colour("ECC") == method_colour("ecc") == "tab:red"
    assert method_colour("ECC (DARS)") == METHOD_COLORS["ecc"]
    assert method_colour("kNN (single-shot)") == method_colour("kNN (DARS)")
    assert method_colour("new_method") == method_colour("new_method")


def test_routing_settings_draw_no_empty_rows():
    """The probe's winner exists only with a probe: the other panels have no empty row for it."""
    rows = []
    for setting in ("no_probe", "probe"):
        for method in ("global", "ecc", "probe_winner"):
            if method == "probe_winner" and setting == "no_probe":
                continue
            rows.append(
                {
                    "setting": setting,
                    "method": method,
                    "score_mean": 0.5,
                    "score_sd": 0.01,
                    "score": 0.5,
                    "score_low": 0.4,
                    "score_high": 0.6,
                }
            )
    fig = plotting.plot_routing_settings(pd.DataFrame(rows))
    ticks = [[t.get_text() for t in ax.get_yticklabels()] for ax in fig.axes]
    assert [len(t) for t in ticks] == [2, 3]


def test_gain_labels_stay_inside_the_axes_when_every_gain_is_negative():
    """Labels left of negative bars ran into the method names (or off the figure)."""
    table = pd.DataFrame(
        {
            "method": ["ecc", "emb_only", "human"],
            "gain": [-27.6, -23.4, -28.3],
            "low": [-30.9, -26.0, -31.5],
            "high": [-24.3, -20.9, -25.4],
        }
    )
    fig = plotting.plot_gains(table)
    fig.canvas.draw()
    ax = fig.axes[0]
    box = ax.get_window_extent()
    labels = [t for t in ax.texts if "%" in t.get_text()]
    assert len(labels) == 3
    zero = ax.transData.transform((0, 0))[0]
    for text in labels:
        extent = text.get_window_extent()
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1, text.get_text()
        # in the empty half right of 0, away from the method names left of the axes
        assert extent.x0 >= zero, text.get_text()


def test_leak_figure_labels_sit_at_the_end_of_their_own_bar():
    """The value of a negative bar was written right of 0, beside the other readings' bars."""
    rows = [
        {"method": "comp_only", "reading": r, "mean": m, "sd": 1.0, "n_seeds": 2,
         "per_seed": [(1, m - 0.5, m - 2, m + 2), (2, m + 0.5, m - 2, m + 2)]}
        for r, m in (("all", 21.0), ("touching", 42.3), ("disjoint", -7.4))
    ]  # fmt: skip
    fig = plotting.plot_leak_gains(pd.DataFrame(rows))
    labels = {t.get_text(): t for t in fig.axes[0].texts}
    assert labels["-7.4"].xy[0] < -7.4 < 0 < labels["+21.0"].xy[0]
    assert labels["-7.4"].get_ha() == "right"


def test_sigma_of_binary_scores_is_drawn_as_bars_per_value():
    """Binary scores over four observations give three sigma values: no three-spike histogram."""
    rng = np.random.default_rng(0)
    sigma = np.std(rng.integers(0, 2, (300, 4)), axis=1, ddof=1)
    table = pd.DataFrame({"model": np.repeat(["a", "b", "c"], 100), "sigma": sigma})
    fig = plotting.plot_sigma_distribution(table)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "0.5", "0.577"]
    assert len(ax.patches) == 9 and "share" in ax.get_ylabel()


def test_every_clustering_method_has_its_own_name_and_colour():
    # the bench figure drew ecc_labels in ecc_cv's colour, so the two could not be told apart
    from ecc_lib.labels import METHOD_LABELS
    from ecc_lib.plotting.clustering import METHOD_COLORS
    from ecc_lib.protocol.methods import default_methods

    methods = {"global", *default_methods(True)}
    assert methods <= set(METHOD_LABELS) and methods <= set(METHOD_COLORS)
    colours = [METHOD_COLORS[m] for m in methods]
    assert len(set(colours)) == len(colours)
