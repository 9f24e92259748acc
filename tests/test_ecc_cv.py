"""ECCCV (issue 26): settings chosen by cross-validation on training queries, on planted truth."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score

from ecc_lib.ecc.cv import ECCCV
from ecc_lib.ecc.cv_grid import expand_grid
from ecc_lib.ecc.estimator import ECC
from ecc_lib.protocol.data import prepare_protocol
from ecc_lib.protocol.ecc_protocol import run_protocol
from ecc_lib.protocol.methods import METHOD_FACTORIES, default_methods, fit_methods, make_methods
from ecc_lib.protocol.scoring import score_methods
from ecc_lib.protocol.settings import Protocol
from ecc_lib.synthetic import make_capability_data
from ecc_lib.synthetic.regimes import make_regime

SMALL_GRID = (
    {"family": ["global"]},
    {"family": ["human"]},
    {"family": ["ecc"], "n_clusters": [4, 10], "temperature": [0.3, 1.0]},
    {
        "family": ["ecc_labels"],
        "n_clusters": [4],
        "temperature": [0.3],
        "label_weight": [1.0, 4.0],
    },
)


def _protocol(planted, seed=0):
    return prepare_protocol(
        planted.queries, planted.outcomes, planted.embeddings, random_state=seed
    )


def test_grid_holds_every_family_and_normalises_keys():
    grid = expand_grid(SMALL_GRID, has_labels=True)
    families = [g["family"] for g in grid]
    assert families.count("global") == 1 and families.count("human") == 1
    assert {g["n_clusters"] for g in grid if g["family"] == "ecc"} == {4, 10}
    human = next(g for g in grid if g["family"] == "human")
    assert human["label_weight"] == np.inf and human["temperature"] is None
    # K = 1 is the global model, label weight 0 is plain ECC, label families need labels
    odd = expand_grid(
        [{"n_clusters": [1]}, {"family": ["ecc_labels"], "label_weight": [0.0]}], has_labels=True
    )
    assert [g["family"] for g in odd] == ["global", "ecc"]
    assert {g["family"] for g in expand_grid(SMALL_GRID)} == {"global", "ecc"}
    with pytest.raises(ValueError, match="unknown family"):
        expand_grid({"family": ["lasso"]})
    with pytest.raises(ValueError, match="unknown grid key"):
        expand_grid({"k": [3]})


def test_fit_learned_state_and_determinism():
    planted = make_regime("capability", n_queries=300, random_state=1)
    data = _protocol(planted)
    model = ECCCV(param_grid=SMALL_GRID, random_state=0)
    assert clone(model).get_params()["param_grid"] == SMALL_GRID
    model.fit(data.x_train, data.train, labels=data.labels_train)
    table = model.cv_results_
    assert len(table) == len(expand_grid(SMALL_GRID, has_labels=True))
    assert {"mean_test_nll", "std_test_nll", "rank_test_nll", "split0_test_nll"} <= set(table)
    assert table["rank_test_nll"].min() == 1
    best = table.loc[model.best_index_]
    assert best["mean_test_nll"] == table["mean_test_nll"].min() == model.best_score_
    assert model.cv_pairs_ == "disjoint" and model.n_scored_cv_ > 0
    r = model.predict_responsibilities(data.x_test, labels=data.labels_test)
    np.testing.assert_allclose(r.sum(axis=1), 1.0, rtol=1e-6)
    again = ECCCV(param_grid=SMALL_GRID, random_state=0).fit(
        data.x_train, data.train, labels=data.labels_train
    )
    assert again.best_params_ == model.best_params_
    np.testing.assert_array_equal(again.cv_results_["mean_test_nll"], table["mean_test_nll"])


def test_dominant_axis_with_few_queries_falls_back_to_global():
    """One quality axis, few training queries: ECCCV's test gain is within 0.5 pp of one global
    BT model (or it chooses that model), while the paper's ECC loses clearly."""
    planted = make_regime("dominant", n_queries=250, random_state=0)
    data = _protocol(planted)
    methods = make_methods(methods=("global", "ecc"), random_state=0, max_iter=50)
    fitted, _ = fit_methods(data, methods)
    fitted["ecc_cv"] = ECCCV(
        param_grid=({"family": ["global"]}, {"family": ["ecc"], "n_clusters": [4, 30]}),
        random_state=0,
    ).fit(data.x_train, data.train)
    result = score_methods(data, fitted)
    chosen = fitted["ecc_cv"].best_params_
    assert chosen["family"] == "global" or result.gain_disjoint["ecc_cv"] >= -0.5, chosen
    assert result.gain_disjoint["ecc"] < -0.5  # the regime is one where the paper's ECC loses


def test_planted_capability_clusters_are_found():
    """The tour's planted data (4 capability clusters, 1200 queries): ECCCV picks K >= 4 and
    its clustering reaches the planted ARI of the tour's ECC."""
    planted = make_capability_data(n_queries=1200, n_capabilities=4, random_state=0)
    x, c = planted.embeddings, planted.comparisons
    tour = ECC(n_clusters=4, n_init=4, random_state=0).fit(x, c)
    tour_ari = adjusted_rand_score(planted.capability, tour.responsibilities_.argmax(axis=1))
    model = ECCCV(
        param_grid=(
            {"family": ["global"]},
            {"family": ["ecc"], "n_clusters": [2, 4], "temperature": [0.1, 1.0]},
        ),
        n_init=4,
        random_state=0,
    ).fit(x, c)
    assert model.best_params_["n_clusters"] >= 4
    ari = adjusted_rand_score(planted.capability, model.responsibilities_.argmax(axis=1))
    assert ari >= tour_ari - 0.02, (ari, tour_ari)
    assert model.cv_results_.set_index("params").loc["global K=1 w=0 alpha=1", "rank_test_nll"] > 1


@pytest.mark.parametrize("shuffle", [False, True])
def test_label_weight_positive_only_for_informative_categories(shuffle):
    planted = make_regime("capability", n_queries=600, label_purity=0.95, random_state=2)
    queries = planted.queries.copy()
    if shuffle:
        queries["category"] = np.random.default_rng(0).permutation(queries["category"].to_numpy())
    data = prepare_protocol(queries, planted.outcomes, planted.embeddings, random_state=0)
    grid = (
        {"family": ["global"]},
        {"family": ["human"]},
        {
            "family": ["ecc_labels"],
            "n_clusters": [4],
            "temperature": [0.3],
            "label_weight": [0.0, 2.0],
        },
    )
    model = ECCCV(param_grid=grid, random_state=0).fit(
        data.x_train, data.train, labels=data.labels_train
    )
    weight = model.best_params_["label_weight"]
    if shuffle:
        assert weight == 0.0, model.best_params_
    else:
        assert weight > 0.0, model.best_params_


def test_test_outcomes_never_influence_the_choice():
    """Poison every test query's outcomes (scores reversed: same pairs, opposite winners):
    the chosen settings and the whole CV table stay the same, the test NLL does not."""
    planted = make_regime("capability", n_queries=300, random_state=3)
    data = _protocol(planted)
    test_ids = set(data.test.query_ids)
    poisoned = planted.outcomes.copy()
    hit = poisoned["query_id"].isin(test_ids)
    poisoned.loc[hit, "score"] = 1.0 - poisoned.loc[hit, "score"]
    kwargs = dict(
        methods=("global", "ecc_cv"), protocol=Protocol(seeds=(0,)), estimator=ECC(max_iter=50)
    )
    clean = run_protocol(planted.queries, planted.outcomes, planted.embeddings, **kwargs)
    dirty = run_protocol(planted.queries, poisoned, planted.embeddings, **kwargs)
    assert clean.params["best_params"] == dirty.params["best_params"]
    a, b = clean.fitted["ecc_cv"].cv_results_, dirty.fitted["ecc_cv"].cv_results_
    np.testing.assert_array_equal(a["mean_test_nll"], b["mean_test_nll"])
    assert abs(clean.nll["ecc_cv"] - dirty.nll["ecc_cv"]) > 0.1


def test_registered_method_and_few_models_fallback():
    assert "ecc_cv" in METHOD_FACTORIES
    assert default_methods(True)[-1] == "ecc_cv" and "ecc_cv" in default_methods(False)
    model = make_methods(n_clusters=7, lam=2.0, temperature=0.2, methods=("ecc_cv",))["ecc_cv"]
    assert model.extra_candidates[0] == {
        "family": "ecc",
        "n_clusters": 7,
        "temperature": 0.2,
        "lam": 2.0,
    }
    # three models: every held-out pair shares a model with the probe; all pairs are scored
    planted = make_regime("dominant", n_queries=120, n_models=3, n_pairs=3, random_state=0)
    fitted = ECCCV(param_grid=({"family": ["global"]}, {"n_clusters": [2]}), random_state=0).fit(
        planted.embeddings, planted.comparisons
    )
    assert fitted.cv_pairs_ == "all" and fitted.n_scored_cv_ > 0


def test_bad_parameters():
    planted = make_regime("dominant", n_queries=60, random_state=0)
    with pytest.raises(ValueError, match="cv must be"):
        ECCCV(cv=1).fit(planted.embeddings, planted.comparisons)
    with pytest.raises(ValueError, match="n_probes"):
        ECCCV(n_probes=-1).fit(planted.embeddings, planted.comparisons)


def test_leak_free_protocol_probes_held_out_queries_alike():
    """With three models no probe can avoid the scored pairs' models: the leak-free protocol
    gives test queries no probe, and ecc_cv's held-out queries get none either (all their pairs
    are scored), unlike the paper's reading (first pair probed, all pairs scored as fallback)."""
    planted = make_regime("dominant", n_queries=150, n_models=3, n_pairs=3, random_state=0)
    grid = ({"family": ["global"]}, {"n_clusters": [2]})
    x, c = planted.embeddings, planted.comparisons
    paper = ECCCV(param_grid=grid, random_state=0).fit(x, c)
    free = ECCCV(param_grid=grid, cv_probe="leak_free", random_state=0).fit(x, c)
    assert paper.cv_pairs_ == "all" and free.cv_pairs_ == "disjoint"
    assert free.n_scored_cv_ == paper.n_scored_cv_
    assert not np.allclose(free.cv_results_["mean_test_nll"], paper.cv_results_["mean_test_nll"])
    with pytest.raises(ValueError, match="cv_probe"):
        ECCCV(cv_probe="last").fit(x, c)
    result = run_protocol(
        planted.queries,
        planted.outcomes,
        planted.embeddings,
        methods=("global", "ecc_cv"),
        protocol=Protocol(leak_free=True),
        estimator=ECC(max_iter=30),
    )
    assert result.fitted["ecc_cv"].cv_probe == "leak_free"
