"""Issue 34, cost and wording: ECC-CV and the tuned baselines share one search (a memo of fold
scores with identical results), one-thread fits run without a thread pool, and the report body
and the bench name ECC-CV's choice and compare it with tuned baselines only."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from ecc_lib.ecc import engine
from ecc_lib.ecc.cv import ECCCV, FIT_MEMO
from ecc_lib.ecc.estimator import ECC
from ecc_lib.protocol.data import prepare_protocol
from ecc_lib.protocol.methods import make_methods
from ecc_lib.synthetic.regimes import make_regime

GRID = (
    {"family": ["global", "human"], "alpha": [0.1, 1.0]},
    {"family": ["ecc"], "n_clusters": [3], "temperature": [0.3], "alpha": [0.1, 1.0]},
)


@pytest.fixture(scope="module")
def data():
    planted = make_regime("capability", n_queries=240, random_state=1)
    return prepare_protocol(planted.queries, planted.outcomes, planted.embeddings, random_state=1)


def _columns(frame):
    return [c for c in frame.columns if "test" in c or c.startswith("param") or c == "iter"]


def _count_fits(monkeypatch) -> list:
    calls: list = []
    original = ECCCV._fit_and_score

    def counted(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ECCCV, "_fit_and_score", counted)
    return calls


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_second_search_reads_the_memo_with_identical_results(data, monkeypatch):
    FIT_MEMO.clear()
    calls = _count_fits(monkeypatch)
    first = ECCCV(param_grid=GRID, random_state=0).fit(data.x_train, data.train, data.labels_train)
    n_first = len(calls)
    assert n_first > 0
    second = ECCCV(param_grid=GRID, random_state=0).fit(data.x_train, data.train, data.labels_train)
    assert len(calls) == n_first  # every fold score read from the memo
    cols = _columns(first.cv_results_)
    assert first.cv_results_[cols].equals(second.cv_results_[cols])
    assert second.best_estimator_ is not first.best_estimator_  # each search owns its model
    assert np.array_equal(second.theta_, first.theta_)
    # a tuned baseline over one family of the grid reads the same fold fits
    human = ECCCV(param_grid=({"family": ["human"], "alpha": [0.1, 1.0]},), random_state=0)
    human.fit(data.x_train, data.train, data.labels_train)
    assert len(calls) == n_first
    rows = first.cv_results_["param_family"] == "human"
    assert np.array_equal(
        human.cv_results_["mean_test_nll"].to_numpy(),
        first.cv_results_.loc[rows, "mean_test_nll"].to_numpy(),
    )


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_memo_refits_when_the_data_seed_or_procedure_differ(data, monkeypatch):
    FIT_MEMO.clear()
    calls = _count_fits(monkeypatch)
    ECCCV(param_grid=GRID, random_state=0).fit(data.x_train, data.train, data.labels_train)
    n = len(calls)
    ECCCV(param_grid=GRID, random_state=1).fit(data.x_train, data.train, data.labels_train)
    assert len(calls) == 2 * n  # other folds and seeds
    ECCCV(param_grid=GRID, random_state=0, max_iter=5).fit(
        data.x_train, data.train, data.labels_train
    )
    ecc_rows = 2 * 3  # the EM candidates (2) on every fold (3) at least
    assert len(calls) >= 2 * n + ecc_rows
    y = data.train.y.copy()
    y[0] = 1.0 - y[0]
    from dataclasses import replace

    changed = replace(data.train, y=y)
    before = len(calls)
    ECCCV(param_grid=GRID, random_state=0).fit(data.x_train, changed, data.labels_train)
    assert len(calls) - before == n  # one outcome changed: nothing read from the memo


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_one_thread_fits_use_no_thread_pool(data, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a one-thread fit started a thread pool")

    monkeypatch.setattr(engine, "ThreadPoolExecutor", refuse)
    model = ECC(n_clusters=3, max_iter=5, n_jobs=1, random_state=0).fit(data.x_train, data.train)
    assert model.n_iter_ >= 1
    assert engine.InlinePool().map(lambda v: v + 1, [1, 2]) == [2, 3]


def test_report_body_names_ecc_cv_choice_per_seed(tmp_path):
    from ecc_lib.report.sections.clustering import ecc_cv_choice_text, ecc_section

    values = {
        "dataset": "d",
        "seeds": [0, 1],
        "ranking_quality_gain": {"ecc": 10.0},
        "ranking_quality_gain_ci95": {"ecc": [5.0, 15.0]},
        "ecc_cv_choice": {
            "words": "one BT per human category, weaker prior, on 2 of 2 seeds",
            "per_seed": ["one BT per human category (alpha 0.1)"] * 2,
            "clustering": False,
            "verdict": "",
        },
    }
    text = ecc_cv_choice_text(values)
    assert "chose one BT per human category, weaker prior, on 2 of 2 seeds" in text
    assert "seed 0: one BT per human category (alpha 0.1)" in text and "seed 1:" in text
    assert "not a clustering gain" in text
    section = ecc_section(SimpleNamespace(tables_dir=tmp_path), {"ecc": values})
    assert text in section.findings
    assert ecc_cv_choice_text({"dataset": "d"}) == ""


def test_bench_compares_ecc_cv_with_tuned_baselines_only():
    from ecc_lib.bench import BenchSettings
    from ecc_lib.bench.result import BenchResult

    def cell(method, verdict):
        return {"method": method, "estimate": 0.0, "ci95": [0.0, 0.0], "verdict": verdict}

    summary = {
        "versus": {"global": {"ecc_cv": cell("global", "better than")}, "human": {}},
        "versus_tuned": {
            "reading": "disjoint",
            "reference": cell("global_tuned", "better than"),
            "best": cell("human_tuned", "not distinguishable from"),
        },
        "ecc_cv_choice": {"words": "one BT per human category", "clustering": False},
    }
    result = BenchResult(
        {"d": {"status": "done", "summary": summary}},
        BenchSettings(),
        methods=["ecc", "ecc_cv"],
    )
    (sentence,) = [s for s in result.sentences() if s.startswith("ecc_cv")]
    assert "tuned baselines only" in sentence
    assert "better than the tuned global BT on 1" in sentence
    assert "the best tuned baseline (human_tuned) on 0" in sentence
    assert "not distinguishable on 1" in sentence
    assert "the global BT" not in sentence.replace("the tuned global BT", "")
    assert "It chose on d one BT per human category (no clustering" in sentence


def test_bench_summary_reads_tuned_records_for_ecc_cv():
    import pandas as pd

    from ecc_lib.bench.summary import _versus_tuned
    from ecc_lib.protocol.comparisons import clustering_records

    rng = np.random.default_rng(0)
    n = 200
    frames = []
    for _ in range(2):
        base = rng.uniform(1.8, 2.1, n)  # summed NLL per test query (3 scored pairs)
        frame = {"n_scored": np.full(n, 3)}
        for m, shift in (("global", 0.0), ("global_tuned", 0.01), ("human_tuned", 0.3)):
            frame[f"nll_{m}"] = base - shift
            frame[f"nll_{m}_touching"] = np.full(n, 0.5)
        frame["nll_ecc_cv"] = base - 0.3 + rng.normal(0, 0.01, n)
        frame["nll_ecc_cv_touching"] = np.full(n, 0.5)
        frames.append(pd.DataFrame(frame))
    methods = ["global_tuned", "human_tuned", "ecc_cv"]
    records = clustering_records(frames, methods=methods, n_boot=200)
    out = _versus_tuned(records, ["global", *methods])
    assert out["reading"] == "disjoint"
    assert out["best"]["method"] == "human_tuned"  # the tuned baseline with the largest gain
    assert out["reference"]["method"] == "global_tuned"
    assert out["reference"]["verdict"] == "better than"
    assert out["reference"]["estimate"] > 10
    assert abs(out["best"]["estimate"]) < 2
    assert _versus_tuned(records, ["global", "ecc_cv"]) == {}


def test_tuned_baselines_share_ecc_cv_search_in_the_protocol(data, monkeypatch):
    FIT_MEMO.clear()
    calls = _count_fits(monkeypatch)
    names = ("ecc_cv", "global_tuned", "human_tuned")
    models = make_methods(random_state=0, methods=names)
    models["ecc_cv"].fit(data.x_train, data.train, labels=data.labels_train)
    n = len(calls)
    for name in names[1:]:
        models[name].fit(data.x_train, data.train, labels=data.labels_train)
    assert len(calls) == n  # the BT families' fold fits are ECC-CV's


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_label_informed_candidates_get_the_weaker_prior_human_labels_win_with():
    """Synthetic capability: with label-informed ECC at the default prior only, the CV compared it
    with human labels at a tuned prior and chose human labels (issue 34's fairness failure); the
    default grid's label-informed sub-grid holds the weaker prior too, and then it is chosen."""
    from ecc_lib.ecc.cv_grid import DEFAULT_PARAM_GRID

    labels_grids = [g for g in DEFAULT_PARAM_GRID if g["family"] == ["ecc_labels"]]
    assert any(0.1 in g.get("alpha", []) for g in labels_grids)
    planted = make_regime("capability", n_queries=300, random_state=0)
    data = prepare_protocol(planted.queries, planted.outcomes, planted.embeddings, random_state=0)
    human = {"family": ["human"], "alpha": [0.03, 0.1, 0.3, 1.0]}
    chosen = {}
    for name, sub in (
        ("default prior only", [{**g, "alpha": [1.0]} for g in labels_grids]),
        ("grid", labels_grids),
    ):
        model = ECCCV(param_grid=(human, *sub), random_state=0)
        model.fit(data.x_train, data.train, data.labels_train)
        chosen[name] = model.best_params_["family"]
    assert chosen == {"default prior only": "human", "grid": "ecc_labels"}


def test_pair_counts_are_reused_within_a_search_block_only(data):
    """reuse_pair_counts: one computation per Comparisons object and settings inside the block
    (the same numbers), none kept after it."""
    from ecc_lib.bradley_terry import pair_counts, reuse_pair_counts

    train = data.train
    fresh = pair_counts(train, normalize=True)
    with reuse_pair_counts():
        first = pair_counts(train, normalize=True)
        assert pair_counts(train, normalize=True) is first
        assert pair_counts(train, normalize=False) is not first
        other = train.select_queries(np.ones(train.n_queries, dtype=bool))
        assert pair_counts(other, normalize=True) is not first
    assert pair_counts(train, normalize=True) is not first
    assert (first.matrix != fresh.matrix).nnz == 0
    np.testing.assert_array_equal(first.winner, fresh.winner)
    np.testing.assert_array_equal(first.loser, fresh.loser)
