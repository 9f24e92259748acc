"""Review of issue 37 (rev1): the capability map must not claim certainty it does not have, and
``ecc-lab map``'s tables are as safe in a spreadsheet as the run folder's."""

from __future__ import annotations

import numpy as np
import pandas as pd
from test_capability_map import _planted, _protocol

from ecc_lib.metrics_schema import validate_section
from ecc_lib.protocol.capability_map import capability_map


class _OutcomeSelected:
    """A fitted grouping whose own responsibilities put a training query in group 1 when
    ``model_1`` beat ``model_0`` on it (as an outcome-informed fit can), while a new query is
    placed by its embedding alone (here: the sign of its first coordinate)."""

    def __init__(self, data):
        train = data.train
        beat = np.zeros(train.n_queries, dtype=bool)
        models = list(train.models)
        m0, m1 = models.index("model_0"), models.index("model_1")
        won = (train.model_a == m0) & (train.model_b == m1) & (train.y > 0.5)  # y = 1: b won
        won |= (train.model_a == m1) & (train.model_b == m0) & (train.y < 0.5)
        beat[train.query[won]] = True
        self.responsibilities_ = np.eye(2)[beat.astype(int)]
        self.alpha = 1.0

    def predict_responsibilities(self, embeddings=None, probe=None, mode="both", labels=None):
        return np.eye(2)[(np.asarray(embeddings)[:, 0] > 0).astype(int)]


def test_groups_are_placed_by_embedding_not_by_their_own_outcomes():
    """One dominant model everywhere: a grouping that selected the queries model_1 won must not
    make the map say model_1 is best there (on test queries, placed by embedding, it is not)."""
    rng = np.random.default_rng(11)
    theta = rng.normal(scale=0.2, size=(2, 4))
    theta[:, 0] = 1.0  # model_0 best everywhere, model_1 close enough to win some queries
    theta[:, 1] = 0.6
    data = _protocol(_planted(theta, n_queries=900, seed=11), seed=11)
    grouping = _OutcomeSelected(data)
    assert grouping.responsibilities_[:, 1].sum() > 30  # the selected group is not tiny
    cmap = capability_map(data, {"sel": grouping}, method="sel", n_boot=100, random_state=0)
    placed = (data.x_train[:, 0] > 0).astype(int)
    np.testing.assert_array_equal(cmap.train_group, placed)
    assert cmap.groups_needing_other_model == []
    assert (cmap.groups["best_model"] == "model_0").all()


def test_a_group_of_three_queries_claims_no_certainty():
    theta = np.array([[3.0, 0.0, -3.0], [-3.0, 0.0, 3.0]])
    planted = _planted(theta, n_queries=600, seed=4)
    queries = planted.queries.copy()
    # five queries of a category of their own, all won by the same model
    tiny = queries.index[planted.capability == 0][:5]
    queries.loc[tiny, "category"] = "tiny"
    data = _protocol(type(planted)(**{**vars(planted), "queries": queries}), seed=4)
    cmap = capability_map(data, method="categories", n_boot=100, random_state=0)
    row = cmap.groups.set_index("group").loc["tiny"]
    assert row["n_train"] < 10
    assert not np.isfinite(row["p_best"])  # no P(best) of 1.0 from three queries
    assert not row["global_best_distinguishable"] and not row["needs_other_model"]
    rows = cmap.rows[cmap.rows["group"] == "tiny"]
    assert not rows["distinguishable"].any()
    assert rows[["score_low", "score_high", "p_best"]].isna().all().all()
    assert rows["score"].notna().all() and rows["best"].sum() == 1  # the point fit stays
    view = str(cmap.show_group("tiny"))
    assert "nan" not in view.lower() and "\u2013" in view  # an empty interval reads as a dash
    # the large groups keep their statements
    big = cmap.groups[cmap.groups["group"] != "tiny"]
    assert (big["p_best"] > 0.9).all()
    validate_section("capability_map", cmap.to_metrics(dataset="x"), strict=True)


def test_map_cli_tables_are_spreadsheet_safe_and_a_bad_method_fails_first(
    tmp_path, monkeypatch, capsys
):
    """``ecc-lab map``'s CSVs quote a model named like a formula (as tables/*.csv do), and an
    unknown ``--method`` is refused before the protocol runs."""
    from ecc_lib.cli import ecc as ecc_cli
    from ecc_lib.cli import main
    from ecc_lib.safe_output import csv_restore_frame

    theta = np.array([[2.0, 0.0, -2.0], [-2.0, 0.0, 2.0]])
    planted = _planted(theta, n_queries=300, seed=2)
    names = {"model_0": "=1+2", "model_1": "@SUM(A1)", "model_2": "+danger"}
    outcomes = planted.outcomes.assign(model=planted.outcomes["model"].map(names))
    data = _protocol(type(planted)(**{**vars(planted), "outcomes": outcomes}), seed=2)
    cmap = capability_map(data, method="categories", n_boot=20, random_state=0)

    class Found:
        def capability_map(self, method, n_boot):
            return cmap

    class Report:
        n_input_queries = 300

    ran = []

    def fake_result(args):
        ran.append(args.method)
        return Found(), Report(), None

    monkeypatch.setattr(ecc_cli, "ecc_result_from_args", fake_result)
    flags = ["map", "--queries", "q.csv", "--outcomes", "o.csv"]
    assert main([*flags, "--out", str(tmp_path / "bad"), "--method", "ecc-cv"]) != 0
    assert ran == [] and "not one of" in capsys.readouterr().err
    out = tmp_path / "map"
    assert main([*flags, "--out", str(out), "--method", "categories"]) == 0
    for name in ("capability_map.csv", "capability_map_groups.csv"):
        text = (out / name).read_text()
        for cell in names.values():
            assert f",{cell}," not in text and f"'{cell}" in text
        frame = csv_restore_frame(pd.read_csv(out / name))
        column = "model" if name == "capability_map.csv" else "best_model"
        assert set(frame[column]) <= set(names.values())


def _small_table() -> pd.DataFrame:
    """Three groups x three models; in group "c" the third model is far below the best but not
    distinguishable from it (a wide interval)."""
    rows = []
    for g, scores in {
        "a": [0.0, -1.0, -4.0],
        "b": [-2.0, 0.0, -3.0],
        "c": [-5.0, 0.0, -1.0],
    }.items():
        for j, score in enumerate(scores):
            rows.append(
                {
                    "group": g,
                    "name": f"{g} 100%: words, of, group",
                    "model": ["m0", "Llama 3.1 405B Instruct (via provider/x)", "m2"][j],
                    "score": score,
                    "best": score == 0.0,
                    "distinguishable": not (g == "c" and j == 0) and score != 0.0,
                    "observed": True,
                }
            )
    return pd.DataFrame(rows)


def test_a_small_map_figure_keeps_its_labels_and_shows_every_hatch():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.patches import Rectangle

    from ecc_lib.plotting import plot_capability_map

    fig = plot_capability_map(_small_table())
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    ax = fig.axes[0]
    labels = [ax.yaxis.label, *(a.yaxis.label for a in fig.axes[1:])]  # y label, colour bar
    for label in labels:
        extent = label.get_window_extent(renderer)
        assert extent.y0 >= box.y0 - 1 and extent.y1 <= box.y1 + 1, label.get_text()
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert not any(t.startswith("x)") for t in ticks), ticks  # a "/" inside a name is kept
    hatches = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_hatch()]
    assert len(hatches) == 1
    # the hatched cell is light (5 logits below the best): its hatching must not be white
    assert tuple(hatches[0].get_edgecolor()[:3]) != (1.0, 1.0, 1.0)
    assert "categories" in ax.get_ylabel()
    # without categories the names are terms only, and the axis says so
    plain = _small_table().assign(name=lambda t: t["name"].str.split(": ").str[1] + t["group"])
    assert "categories" not in plot_capability_map(plain).axes[0].get_ylabel()


def test_the_global_grouping_is_one_group_worth_nothing_held_out():
    from ecc_lib.protocol.methods import fit_methods, make_methods

    theta = np.array([[2.0, 0.0, -2.0], [-2.0, 0.0, 2.0]])
    data = _protocol(_planted(theta, n_queries=300, seed=2), seed=2)
    fitted, _ = fit_methods(data, make_methods(methods=("global",), random_state=0))
    cmap = capability_map(data, fitted, method="global", n_boot=20, random_state=0)
    assert cmap.method_detail.endswith("1 cluster")
    assert len(cmap.groups) == 1 and cmap.groups["best_model"].iloc[0] == cmap.global_best
    assert cmap.held_out["estimate"] == 0.0


def test_a_map_of_one_group_reads_in_the_singular(tmp_path):
    from test_capability_map_report import _map, _run_with

    from ecc_lib import report

    theta = np.array([[0.0, 3.0, -1.0]])  # one category, model_1 best
    cmap = _map(theta, seed=2)
    assert len(cmap.groups) == 1
    document = report.build_report(_run_with(tmp_path, cmap))
    section = next(s for s in document.sections if s.title == "Which model for which queries")
    assert "1 groups" not in section.findings and "In the one group" in section.findings
