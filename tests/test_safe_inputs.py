"""Anybody's names and tables (issue 24, items 12-16, 18): names drawn and written as they are,
no silently dropped columns, no silently misleading baselines, LaTeX tables that compile."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from ecc_lib import plotting, report
from ecc_lib.data import policy as data_checks
from ecc_lib.data import protocol_policy, schema, sources, tables
from ecc_lib.data.schema import DataValidationError, summarise, validate_outcomes, validate_queries
from ecc_lib.ecc.estimator import ECC
from ecc_lib.protocol.data import prepare_protocol
from ecc_lib.protocol.ecc_protocol import run_protocol
from ecc_lib.protocol.settings import Protocol
from ecc_lib.report.formatting import DASH
from ecc_lib.report.sections.data import data_section
from ecc_lib.runs import artifacts as run_artifacts
from ecc_lib.runs import folder as run_folder
from ecc_lib.runs import metrics as run_metrics
from ecc_lib.synthetic.capability import make_capability_data

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from latex_check import assert_latex_tables_compile  # noqa: E402

from ecc_lib.plotting.data import pooled_column_name
from ecc_lib.report.latex import latex_table

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _outcomes(models, query_ids, rng=None):
    rng = rng or np.random.default_rng(0)
    rows = [(q, m, float(rng.integers(0, 2))) for q in query_ids for m in models]
    return pd.DataFrame(rows, columns=["query_id", "model", "score"])


# ------------------------------------------------------------------ 12: a category named "all"


def test_a_category_named_all_keeps_its_column_beside_the_pooled_one():
    queries = pd.DataFrame({"query_id": ["1", "2", "3", "4"], "category": ["all", "all", "b", "b"]})
    outcomes = pd.DataFrame(
        {
            "query_id": ["1", "1", "2", "2", "3", "3", "4", "4"],
            "model": ["m1", "m2"] * 4,
            "score": [1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0],
        }
    )
    table = plotting.scores_by_category_table(queries, outcomes)
    assert list(table.columns) == ["all", "b", "all (pooled)"]
    assert table.loc["m1", "all"] == 1.0 and table.loc["m2", "all"] == 0.0  # the category
    assert table.loc["m1", "all (pooled)"] == 0.5 and table.loc["m2", "all (pooled)"] == 0.25
    assert pooled_column_name(["all", "all (pooled)"]) == "all (pooled 2)"


# ------------------------------------------- 13: human labels where no test category is known


def test_human_baseline_is_skipped_when_no_test_category_occurs_in_training():
    planted = make_capability_data(n_queries=200, random_state=3)
    queries = planted.queries.assign(category=planted.queries["query_id"].astype(str))
    result = run_protocol(
        queries,
        planted.outcomes,
        planted.embeddings,
        protocol=Protocol(n_boot=20),
        estimator=ECC(n_clusters=3, max_iter=10),
    )
    assert "human" not in result.nll and "human" not in result.gain
    assert "ecc" in result.nll
    data = prepare_protocol(queries, planted.outcomes, planted.embeddings)
    reason = protocol_policy.human_baseline_reason(data.labels, train_mask=data.train_mask)
    assert reason is not None and "no test query's category occurs" in reason
    assert reason in data.params["warnings"]


def test_seeds_where_the_human_baseline_is_skipped_on_some_split_still_summarise():
    from ecc_lib.protocol.seeds import run_seeds

    planted = make_capability_data(n_queries=200, random_state=3)
    queries = planted.queries.assign(category=planted.queries["query_id"].astype(str))
    queries.loc[1, "category"] = queries.loc[0, "category"]  # one category of two queries
    multi = run_seeds(
        queries,
        planted.outcomes,
        planted.embeddings,
        protocol=Protocol(seeds=(0, 1), n_boot=10),
        estimator=ECC(n_clusters=3, max_iter=5),
    )  # seed 0 splits the pair (human fitted), seed 1 does not (human skipped)
    assert [("human" in r.gain) for r in multi.results] == [True, False]
    mean, sd = multi.summary()["difference_mean_sd"]["ecc - human"]
    assert np.isfinite(mean) and (sd is None or np.isnan(sd))  # one seed has the baseline


def test_unseen_test_categories_are_counted_when_some_are_known():
    labels = np.array(["a", "a", "b", "b", "c", "d"], dtype=object)
    train = np.array([True, True, True, False, False, False])
    note = protocol_policy.unseen_category_note(labels, train)
    assert note.startswith("2 of 3 test queries carry a category no training query has")
    assert protocol_policy.human_baseline_reason(labels, train_mask=train) is None
    assert protocol_policy.unseen_category_note(labels, np.ones(6, dtype=bool)) is None


# ------------------------------------------------------ 14: empty and duplicate query texts


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
@pytest.mark.parametrize("text", ["", "   ", "\t"])
def test_empty_and_whitespace_texts_are_refused_in_every_format(tmp_path, suffix, text):
    queries = pd.DataFrame({"query_id": ["1", "2"], "text": ["a question", text]})
    path = tables.write_table(queries, tmp_path / f"queries{suffix}")
    with pytest.raises(DataValidationError, match=r"(missing|empty or whitespace-only) "):
        tables.read_queries(path)


def test_whitespace_text_message_names_the_row():
    queries = pd.DataFrame({"query_id": ["1", "2"], "text": ["a question", "   "]})
    with pytest.raises(DataValidationError, match=r"1 empty or whitespace-only text\(s\).*row 1"):
        schema.validate_queries(queries, source="q.csv")


def test_duplicate_texts_are_named_in_the_policy_and_across_the_split():
    planted = make_capability_data(n_queries=120, random_state=2)
    queries = planted.queries.copy()
    queries.loc[1:40, "text"] = queries.loc[0, "text"]  # 41 queries share one text
    _, _, policy = data_checks.apply_data_policy(queries, planted.outcomes, dataset="dup")
    note = next(n for n in policy.notes if "share their text" in n)
    assert note.startswith("41 queries share their text with another query")
    data = prepare_protocol(queries, planted.outcomes, planted.embeddings)
    split = [w for w in data.params["warnings"] if "same text as a training query" in w]
    assert len(split) == 1
    texts = data.texts
    shared = int(np.isin(texts[data.test_mask], texts[data.train_mask]).sum())
    assert shared > 0 and split[0].startswith(f"{shared} of {int(data.test_mask.sum())} test")


# --------------------------------------------------------- 15: names drawn as math text


NASTY_MODELS = ["cost $5 vs $10", r"m$\frac$", "plain"]


def _drawn_texts(fig) -> list[tuple[str, bool]]:
    fig.canvas.draw()
    return [t._preprocess_math(t.get_text()) for t in fig.findobj(Text) if t.get_text()]


def test_model_category_and_dataset_names_are_drawn_literally():
    queries = pd.DataFrame({"query_id": ["1", "2"], "category": ["a $x$ b", "plain"]})
    outcomes = _outcomes(NASTY_MODELS, ["1", "2"])
    figures = [
        plotting.plot_scores_by_category(queries, outcomes, title="Scores ($data$ set)"),
        plotting.plot_model_scores(
            plotting.model_score_table(outcomes.assign(dataset="$d$"), n_boot=10)
        ),
        plotting.plot_observations_per_pair(outcomes.assign(dataset="$d$")),
    ]
    for i, fig in enumerate(figures):
        drawn = _drawn_texts(fig)  # m$\frac$ as math text raised a ParseSyntaxException here
        assert not [s for s, math in drawn if math]
        shown = {s for s, _ in drawn}
        if i < 2:
            assert "cost $5 vs $10" in shown and r"m$\frac$" in shown
        if i > 0:
            assert any("$d$" in s for s in shown)
        plt.close(fig)
    assert "a $x$ b" in {s for s, _ in _drawn_texts(figures[0])}
    assert "Scores ($data$ set)" in {s for s, _ in _drawn_texts(figures[0])}


def test_drawing_literally_twice_changes_nothing():
    fig, ax = plt.subplots()
    ax.set_title("a $b$")
    ax.set_xticks([0, 1], ["$x$", "y"])
    plotting.style.draw_literally(fig)
    plotting.style.draw_literally(fig)
    assert {s for s, _ in _drawn_texts(fig)} >= {"a $b$", "$x$", "y"}
    plt.close(fig)


# ------------------------------------------------------------- 16: names and wide columns


@pytest.mark.parametrize("name", ["NA", "None", "null", "NaN", "n/a"])
def test_a_csv_model_or_category_named_like_a_missing_marker_keeps_its_name(tmp_path, name):
    folder = tmp_path / "data"
    folder.mkdir()
    queries = pd.DataFrame({"query_id": ["1", "2"], "text": ["a", "b"], "category": [name, "x"]})
    queries.to_csv(folder / "queries.csv", index=False)
    _outcomes([name, "gpt"], ["1", "2"]).to_csv(folder / "outcomes.csv", index=False)
    loaded_queries, outcomes = sources.load_dataset(str(folder))
    assert sorted(outcomes["model"].unique()) == sorted([name, "gpt"])
    assert loaded_queries["category"].tolist() == [name, "x"]


def test_a_missing_score_written_as_na_is_still_missing(tmp_path):
    path = tmp_path / "outcomes.csv"
    path.write_text("query_id,model,score\n1,a,1\n1,b,NA\n")
    with pytest.raises(DataValidationError, match="'score' has 1 NaN"):
        tables.read_outcomes(path)


def test_wide_columns_left_out_are_named_and_pipes_are_models(caplog):
    frame = pd.DataFrame(
        {
            "query_id": ["1", "2", "3"],
            "text": ["a", "b", "c"],
            "m1": [1, 0, 1],
            "cost": [0, 1, 1],
            "source": [0.5, 1.0, 0.0],
            "org|model": [1, 1, 0],
            "m1|total_cost": [0.1, 0.2, 0.3],
            "empty": [np.nan] * 3,
        }
    )
    with caplog.at_level(logging.WARNING, logger="ecc_lib.data.tables"):
        _, outcomes = tables.from_wide(frame, source="wide.csv")
    assert sorted(outcomes["model"].unique()) == ["m1", "org|model"]
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1
    for column in ("'cost'", "'source'", "'m1|total_cost'", "'empty' (no values at all)"):
        assert column in warned[0]
    _, explicit = tables.from_wide(frame, model_columns=["m1", "cost"], source="wide.csv")
    assert sorted(explicit["model"].unique()) == ["cost", "m1"]


def test_a_dataset_named_2024_keeps_its_best_model_in_the_report(tmp_path):
    run = run_folder.run_context(tmp_path / "run")
    queries = pd.DataFrame({"query_id": ["1", "2"], "text": ["a", "b"]})
    queries = validate_queries(queries)
    # the model named NA is the best
    outcomes = validate_outcomes(_outcomes(["NA", "weak"], ["1", "2"]).assign(score=[1, 0, 1, 0.0]))
    scores = plotting.model_score_table(outcomes.assign(dataset="2024"), n_boot=10)
    run_artifacts.save_table(scores, run, "01_model_scores")
    section = data_section(run, {"data": {"datasets": {"2024": summarise(queries, outcomes)}}})
    row = section.tables[0].frame.iloc[0]
    assert row["dataset"] == "2024"
    assert row["best model: mean score [95% CI]"] != DASH
    assert row["best model: mean score [95% CI]"].startswith("NA: 1.00")


# ------------------------------------------------------------------ 18: LaTeX that compiles


HARD_CELLS = [
    "\u4e2d\u6587\u6a21\u578b",  # CJK
    "\U0001f600 emoji",
    "\u03b1\u03b2\u03b3 \u0391\u0393\u03a9 \u03a7",  # Greek
    "\u05e2\u05d1\u05e8\u05d9\u05ea \u200f rtl \u200b zero-width \u202e mark",
    "line\n\nbreak",
    "nul\x00here",
    "[v2] first",
    "caf\u00e9 na\u00efve \u00d8rsted \u00df \u0142\u00f3d\u017a",
    "a<b>c|d",
    "cost $5 & 10% #1 _x ^y ~z \\ {}",
    "\u00a0nbsp\u2003em\ttab",
    "*star",
]


def test_latex_tables_with_any_text_compile():
    frame = pd.DataFrame({"[model]": HARD_CELLS, "reversed": HARD_CELLS[::-1]})
    text = latex_table(frame, caption="Caption \u00e9 \u4e2d [x]\n\nend", label="tab:x")
    assert text.isascii()
    assert "[U+4E2D]" in text and r"\ensuremath{\alpha}" in text and r"caf\'{e}" in text
    assert "\u200f" not in text and "\x00" not in text and "\n\n" not in text
    assert_latex_tables_compile([text])


def test_latex_headline_tables_of_a_report_compile(tmp_path):
    run = run_folder.run_context(tmp_path / "run")
    queries = pd.DataFrame({"query_id": ["1", "2"], "text": ["a", "b"]})
    queries = validate_queries(queries)
    outcomes = validate_outcomes(_outcomes(["\u6a21\u578b-\u03b1", "[v2] m$1"], ["1", "2"]))
    scores = plotting.model_score_table(outcomes.assign(dataset="[donn\u00e9es]"), n_boot=10)
    run_artifacts.save_table(scores, run, "01_model_scores")
    run_metrics.record_metrics(
        run, "data", {"datasets": {"[donn\u00e9es]": summarise(queries, outcomes)}}
    )
    written = report.save_headline_tables(report.build_report(run), run)
    assert written
    assert_latex_tables_compile(written)


@pytest.mark.parametrize(
    "text, problem",
    [
        ("\\begin{tabular}{l}\n\\toprule\n[x] \\\\\n\\bottomrule\n\\end{tabular}\n", "optional"),
        ("\\begin{tabular}{l}\n\\toprule\na\n\nb \\\\\n\\end{tabular}\n", "blank line"),
        ("\\begin{tabular}{l}\n\\toprule\n\u4e2d \\\\\n\\end{tabular}\n", "cannot set"),
        ("\\begin{tabular}{ll}\n\\toprule\na \\\\\n\\end{tabular}\n", "2 cells"),
        ("\\begin{tabular}{l}\n\\toprule\na_b \\\\\n\\end{tabular}\n", "unescaped _"),
        ("\\begin{tabular}{l}\n\\toprule\n{a \\\\\n\\end{tabular}\n", "unbalanced"),
    ],
)
def test_the_python_latex_checker_finds_what_stops_pdflatex(text, problem):
    from ecc_lib.report.latex import latex_problems

    assert any(problem in p for p in latex_problems(text))
