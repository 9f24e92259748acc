"""Issue 34: ECC-CV deploys what it validated, every method gets the same prior tuning, and the
choice is said in words."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

from ecc_lib.data.splits import disjoint_from_probe, split_probe
from ecc_lib.ecc.cv import DEFAULT_SCREEN_MAX_ITER, ECCCV, FIT_MEMO
from ecc_lib.ecc.cv_grid import (
    DEFAULT_ALPHAS,
    choice_words,
    describe_choices,
    expand_grid,
    family_grid,
    halving_schedule,
)
from ecc_lib.ecc.mixture import comparison_nll
from ecc_lib.protocol.data import prepare_protocol
from ecc_lib.protocol.methods import (
    METHOD_FACTORIES,
    TUNED_METHODS,
    default_methods,
    fit_methods,
    make_methods,
)
from ecc_lib.protocol.scoring import score_methods
from ecc_lib.protocol.tuned import choice_summary, ecc_cv_verdict, regain
from ecc_lib.synthetic.regimes import make_regime

# three temperatures of one K: a warm path (T = 1 -> 0.3 -> 0.1) and cold fits differ
PATH_GRID = (
    {"family": ["global"]},
    {"family": ["ecc"], "n_clusters": [4], "temperature": [1.0, 0.3, 0.1]},
)


def _data(name="capability", n_queries=300, seed=0, **kw):
    planted = make_regime(name, n_queries=n_queries, random_state=seed, **kw)
    return prepare_protocol(
        planted.queries, planted.outcomes, planted.embeddings, random_state=seed
    )


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_deployed_model_scores_what_cv_recorded_on_every_fold():
    """The chosen candidate, refitted as deployed (an unfitted clone of ``best_estimator_``) on
    each fold's training queries, gives exactly the held-out NLL ``cv_results_`` recorded (on
    the old main the CV fits were warm-started and the refit cold: the numbers differed)."""
    data = _data()
    model = ECCCV(param_grid=PATH_GRID, random_state=0).fit(data.x_train, data.train)
    assert model.best_params_["family"] == "ecc", model.best_params_
    row = model.cv_results_.loc[model.best_index_]
    n = data.train.n_queries
    fold = np.random.default_rng(0).permutation(n) % model.cv  # the folds ECCCV draws
    for f in range(model.cv):
        held = fold == f
        deployed = clone(model.best_estimator_).fit(
            data.x_train[~held], data.train.select_queries(~held)
        )
        probe, rest = split_probe(data.train.select_queries(held), n_probes=model.n_probes)
        keep = disjoint_from_probe(rest, probe)
        p = deployed.predict_proba(rest, embeddings=data.x_train[held], probe=probe)
        nll = comparison_nll(p, rest.y)
        assert float(nll[keep].sum()) / int(keep.sum()) == row[f"split{f}_test_nll"], f


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("page", ["docs/design.md", "docs/guide/ecc_protocol.md"])
def test_the_docs_state_the_screening_default_of_the_code(page):
    """The design and the protocol guide say how many EM steps a screen takes: the code's default."""
    text = (Path(__file__).resolve().parents[1] / page).read_text()
    assert f"at most {DEFAULT_SCREEN_MAX_ITER} EM steps" in text


def test_screening_rounds_are_said_and_the_choice_reads_full_fits_only():
    """The halving rounds before the last screen (fewer EM steps, one fold): their rows say so
    and hold NaN on the folds they did not fit; the chosen row (and every row of the last round)
    is ``fit_candidate``'s full procedure on every fold."""
    data = _data()
    model = ECCCV(param_grid=PATH_GRID, random_state=0).fit(data.x_train, data.train)
    res = model.cv_results_
    last = res["iter"] == res["iter"].max()
    assert (res.loc[last, "fit"] == "full").all() and res.loc[model.best_index_, "fit"] == "full"
    screened = res.loc[~last]
    assert len(screened) == 2 and (screened["fit"] == "screen (max_iter=7, 1 fold)").all()
    assert screened["split0_test_nll"].notna().all()
    assert screened[["split1_test_nll", "split2_test_nll"]].isna().all().all()
    assert res.loc[last, [f"split{f}_test_nll" for f in range(3)]].notna().all().all()
    assert (screened["mean_n_iter"] <= 10).all()
    # the screened candidates' means are those of the one fold they saw
    np.testing.assert_allclose(screened["mean_test_nll"], screened["split0_test_nll"])
    # screen_max_iter = screen_folds = None: every round fits as the last one does
    full = ECCCV(param_grid=PATH_GRID, random_state=0, screen_max_iter=None, screen_folds=None)
    full.fit(data.x_train, data.train)
    assert (full.cv_results_["fit"] == "full").all()
    assert full.cv_results_.filter(like="split").notna().all().all()


def test_refit_keeps_the_best_training_objective_of_n_init_restarts():
    data = _data()
    grid = ({"family": ["ecc"], "n_clusters": [4], "temperature": [0.3]},)
    one = ECCCV(param_grid=grid, random_state=0).fit(data.x_train, data.train)
    three = ECCCV(param_grid=grid, n_init=3, random_state=0).fit(data.x_train, data.train)
    assert three.best_estimator_.n_init == 3
    # the first restart is the single run's draw; the kept one is at least as good
    assert three.best_estimator_.objective_ >= one.best_estimator_.objective_
    np.testing.assert_array_equal(three.folds_, one.folds_)


def test_tuned_baseline_and_ecc_cv_choosing_it_give_the_same_number():
    """human_tuned and ECC-CV choosing one BT per human category: difference exactly 0."""
    data = _data("capability", n_queries=400, label_purity=1.0)
    fitted, _ = fit_methods(
        data, make_methods(methods=("global", "global_tuned", "human_tuned"), random_state=0)
    )
    grid = (
        {"family": ["global"], "alpha": list(DEFAULT_ALPHAS)},
        {"family": ["human"], "alpha": list(DEFAULT_ALPHAS)},
        {"family": ["ecc"], "n_clusters": [4], "temperature": [0.3]},
    )
    fitted["ecc_cv"] = ECCCV(param_grid=grid, random_state=0).fit(
        data.x_train, data.train, labels=data.labels_train
    )
    chosen = fitted["ecc_cv"].best_params_
    assert chosen["family"] == "human", chosen
    assert chosen == fitted["human_tuned"].best_params_
    result = score_methods(data, fitted)
    assert result.gain_disjoint["ecc_cv"] - result.gain_disjoint["human_tuned"] == 0.0
    assert result.nll["ecc_cv"] - result.nll["human_tuned"] == 0.0
    tuned = regain(result.gain_disjoint)
    assert tuned["global_tuned"] == 0.0 and tuned["ecc_cv"] == tuned["human_tuned"]


def test_every_method_has_a_tuned_prior_twin_and_defaults_hold_the_tuned_baselines():
    assert set(TUNED_METHODS) <= set(METHOD_FACTORIES)
    for name, family in TUNED_METHODS.items():
        model = make_methods(methods=(name,), random_state=0)[name]
        grid = expand_grid(model.param_grid, has_labels=True)
        assert {g["family"] for g in grid} == {family}
        assert sorted(g["alpha"] for g in grid if g["label_weight"] in (0.0, 1.0, np.inf)) == list(
            DEFAULT_ALPHAS
        )
    assert {"global_tuned", "human_tuned", "emb_only_tuned"} <= set(default_methods(True))
    assert "human_tuned" not in default_methods(False) and default_methods(False)[-1] == "ecc_cv"
    # the default ECC-CV grid holds every tuned baseline's candidates
    cv_grid = ECCCV()._grid(True, 10_000)
    for name in ("global_tuned", "human_tuned", "emb_only_tuned"):
        model = make_methods(methods=(name,), random_state=0)[name]
        for candidate in expand_grid(model.param_grid, has_labels=True):
            assert candidate in cv_grid, candidate


def test_choice_in_words_and_no_clustering_gain_for_global_or_human():
    human = expand_grid({"family": ["human"], "alpha": [0.03]}, has_labels=True)[0]
    ecc = expand_grid({"family": ["ecc"], "n_clusters": [10], "temperature": [0.3]})[0]
    assert (
        describe_choices([human] * 3) == "one BT per human category, weaker prior, on 3 of 3 seeds"
    )
    assert describe_choices([human, ecc, human]) == (
        "one BT per human category, weaker prior, on 2 of 3 seeds; ECC clusters, default prior, "
        "on 1 of 3 seeds"
    )
    assert choice_words(ecc, settings=True) == (
        "ECC clusters, default prior (K = 10, T = 0.3, lam = 3, alpha = 1)"
    )
    from test_report_summary import synthetic_records

    from ecc_lib.protocol.comparisons import read_records

    records = read_records(
        synthetic_records({"global_tuned": 1.0, "human_tuned": 20.0, "ecc_cv": 20.0}, n_seeds=2)
    )
    text = ecc_cv_verdict(choice_summary([human, human]), records)
    assert "one BT per human category" in text and "not a clustering gain" in text
    # the one interval of the records (issue 35), never a mean +- sd reading
    assert "the best tuned baseline: ECC-CV minus human labels (tuned prior) = " in text
    assert "[" in text and "+-" not in text
    assert "not a clustering gain" not in ecc_cv_verdict(choice_summary([ecc, human]), records)
    assert (
        ecc_cv_verdict(choice_summary([human]), read_records(synthetic_records({"ecc_cv": 1.0})))
        == ""
    )


def test_regain_is_exact_and_halving_schedule():
    out = regain({"global_tuned": 2.0, "ecc": 10.0})
    assert out["global_tuned"] == 0.0
    assert out["ecc"] == pytest.approx(100 * 8 / 98, rel=1e-15)
    assert out["global"] == pytest.approx(-100 * 2 / 98, rel=1e-15)
    assert regain({"ecc": 1.0}) == {}
    assert halving_schedule(20, 3000, factor=3) == [1 / 9, 1 / 3, 1.0]
    assert halving_schedule(20, 300, factor=3, min_resources=50) == [1 / 3, 1.0]
    assert halving_schedule(20, 3000, factor=None) == [1.0]
    assert halving_schedule(1, 3000) == [1.0]
    assert family_grid("global") == ({"family": ["global"], "alpha": list(DEFAULT_ALPHAS)},)
    data = _data(n_queries=60)
    with pytest.raises(ValueError, match="factor"):
        ECCCV(factor=1).fit(data.x_train, data.train)
    with pytest.raises(ValueError, match="screen_max_iter"):
        ECCCV(screen_max_iter=0).fit(data.x_train, data.train)


def test_summary_names_the_choice_through_one_function():
    """ECC-CV's sentence names its choice and reads the one interval of the comparison records
    against the best tuned baseline (issue 35's records, issue 34's tuned baselines)."""
    from test_report_summary import synthetic_records

    from ecc_lib.report.summary import ecc_cv_line

    records = synthetic_records(
        {"global_tuned": 1.0, "human_tuned": 27.8, "emb_only_tuned": 19.0, "ecc_cv": 27.8},
        n_seeds=2,
    )
    ecc = {
        "comparisons": records,
        "ecc_cv_choice": {
            "words": "one BT per human category on 2 of 2 seeds",
            "clustering": False,
        },
    }
    line = ecc_cv_line(ecc)
    assert line.topic == "ecc_cv"
    assert "human labels" in line.text and "[" in line.text  # against human_tuned, with interval
    assert "It chose one BT per human category on 2 of 2 seeds." in line.text
    assert line.text.endswith("It deployed no clustering, so this is no clustering gain.")
    assert ecc_cv_line({"ecc_cv_choice": None}) is None and ecc_cv_line({}) is None
    assert ecc_cv_line({**ecc, "comparisons": synthetic_records({"ecc_cv": 3.0})}) is None


def test_one_se_rule_reads_the_folds_no_screen_read():
    """A screened best candidate's score on the screened fold is optimistic (the screen chose it
    on those held-out queries): the rule's paired difference reads the other folds only."""
    from ecc_lib.ecc.cv import _one_se_choice

    grid = [{"family": "human"}, {"family": "ecc_labels"}]
    rng = np.random.default_rng(0)
    per_query = {}
    for f in range(3):
        human = 1.0 + 0.1 * rng.standard_normal(200)
        gap = 0.2 if f == 0 else 0.0  # the screened fold favours the survivor
        per_query[0, 0, f] = human
        per_query[0, 1, f] = human - gap + 0.01 * rng.standard_normal(200)
    scored = np.full(3, 200)
    rank = np.array([2, 1])
    assert _one_se_choice(grid, 1, rank, 0, per_query, range(3), scored) == 1
    assert _one_se_choice(grid, 1, rank, 0, per_query, [1, 2], scored) == 0


def test_human_candidates_sharing_their_categories_score_as_searched_alone():
    """Human-label candidates that differ only in ``alpha`` share their categories and centroids
    in the search (one fit, then one BT fit per alpha): each one's fold scores are exactly those
    of a search over that candidate alone, which fits it cold."""
    data = _data()
    alphas = [0.1, 1.0, 3.0]
    together = ECCCV(param_grid={"family": ["human"], "alpha": alphas}, random_state=0)
    together.fit(data.x_train, data.train, labels=data.labels_train)
    splits = [f"split{f}_test_nll" for f in range(together.cv)]
    for i, alpha in enumerate(alphas):
        FIT_MEMO.clear()  # fitted again, not read back from the search above
        alone = ECCCV(param_grid={"family": ["human"], "alpha": [alpha]}, random_state=0)
        alone.fit(data.x_train, data.train, labels=data.labels_train)
        assert together.cv_results_[splits].iloc[i].tolist() == (
            alone.cv_results_[splits].iloc[0].tolist()
        ), alpha
        np.testing.assert_array_equal(
            together.fit_candidate(
                together.best_params_, data.x_train, data.train, data.labels_train, seed=0
            ).theta_,
            together.best_estimator_.theta_,
        )


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_search_gives_the_same_numbers_on_one_thread_or_several():
    """The fits of a halving round run on threads (each fit on one); one thread or three give
    the same ``cv_results_`` scores, choice and deployed model, bit for bit."""
    data = _data(n_queries=400)
    fitted = []
    for n_jobs in (1, 3):
        FIT_MEMO.clear()  # each search fits for itself
        model = ECCCV(random_state=0, n_jobs=n_jobs)
        fitted.append(model.fit(data.x_train, data.train, labels=data.labels_train))
    one, three = fitted
    scores = [c for c in one.cv_results_.columns if c.endswith("_test_nll") or c == "params"]
    assert one.cv_results_[scores].equals(three.cv_results_[scores])
    assert one.best_params_ == three.best_params_
    np.testing.assert_array_equal(one.theta_, three.theta_)
    np.testing.assert_array_equal(one.responsibilities_, three.responsibilities_)
