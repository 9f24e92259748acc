"""The paper protocol, sweeps, diagnostics, cluster summary and the new-model experiment."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ecc_lib.comparisons import split_probe
from ecc_lib.ecc import ECC, GlobalBT, comparison_nll
from ecc_lib.ecc_experiments import (
    cluster_summary,
    cross_cluster_nll_gap,
    diagnostics,
    evaluate_modes,
    new_model_experiment,
    sweep_clusters,
    sweep_probes,
    within_cluster_consistency,
)
from ecc_lib.ecc_protocol import (
    METHODS,
    fit_methods,
    make_methods,
    prepare_protocol,
    run_protocol,
    score_methods,
)
from ecc_lib.synthetic.capability import make_capability_data

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def planted():
    return make_capability_data(n_queries=900, random_state=1)


@pytest.fixture(scope="module")
def protocol(planted):
    return prepare_protocol(planted.queries, planted.outcomes, planted.embeddings)


@pytest.fixture(scope="module")
def fitted(protocol):
    return fit_methods(protocol, make_methods(n_clusters=4, n_init=3))


def test_prepare_protocol_follows_the_paper(planted, protocol):
    c = protocol.comparisons
    assert c.pairs_per_query().max() == 7 and c.pairs_per_query().min() >= 2
    assert protocol.test_mask.sum() == round(0.2 * c.n_queries)
    assert not (protocol.train_mask & protocol.test_mask).any()
    # embeddings follow the comparisons' query order
    rows = pd.Index(planted.queries["query_id"]).get_indexer(c.query_ids)
    np.testing.assert_array_equal(protocol.embeddings, planted.embeddings[rows])
    assert protocol.labels is not None and protocol.labels[0].startswith("topic_")
    assert protocol.train.n_queries + protocol.test.n_queries == c.n_queries
    with pytest.raises(ValueError, match="one row per query"):
        prepare_protocol(planted.queries, planted.outcomes, planted.embeddings[:-1])


def test_prepare_protocol_drops_queries_with_too_few_pairs():
    queries = pd.DataFrame({"query_id": ["a", "b", "c"], "text": ["x", "y", "z"]})
    outcomes = pd.DataFrame(
        {
            "query_id": ["a"] * 3 + ["b"] * 3 + ["c"] * 3,
            "model": ["m1", "m2", "m3"] * 3,
            "score": [1, 0, 0, 1, 1, 1, 0, 1, 0.5],  # b: all ties
        }
    )
    emb = np.eye(3, dtype=np.float32)
    data = prepare_protocol(queries, outcomes, emb, test_size=0.5)
    assert list(data.comparisons.query_ids) == ["a", "c"]
    assert data.comparisons.dropped_query_ids == ("b",)
    np.testing.assert_array_equal(data.embeddings, emb[[0, 2]])
    assert data.labels is None


def test_scores_follow_the_definitions(protocol, fitted):
    models, seconds = fitted
    result = score_methods(protocol, models, fit_seconds=seconds, n_boot=200)
    probe, scored = split_probe(protocol.test, 1)
    assert result.n_scored == len(scored)
    # NLL of each method recomputed from its predictions
    for name in ("global", "ecc"):
        r = models[name].predict_responsibilities(
            protocol.x_test, probe, "both", labels=protocol.labels_test
        )
        p = models[name].predict_proba(scored, responsibilities=r)
        assert result.nll[name] == pytest.approx(comparison_nll(p, scored.y).mean(), rel=1e-10)
    for name in ("ecc", "emb_only", "comp_only", "human"):
        expected = 100 * (result.nll["global"] - result.nll[name]) / result.nll["global"]
        assert result.gain[name] == pytest.approx(expected, rel=1e-9)
        low, high = result.ci95[name]
        assert low <= result.gain[name] <= high
    assert "global" not in result.gain
    diff = result.differences["ecc_minus_human"]
    assert diff["estimate"] == pytest.approx(result.gain["ecc"] - result.gain["human"])
    # planted capability clusters: ECC clearly beats the embedding-only and human baselines
    assert result.gain["ecc"] > result.gain["emb_only"] + 10
    assert result.ci95["ecc"][0] > result.ci95["emb_only"][1]
    assert result.accuracy["ecc"] > result.accuracy["global"]
    per_query = result.per_query
    assert per_query["n_scored"].sum() == result.n_scored
    assert per_query["nll_ecc"].sum() / result.n_scored == pytest.approx(result.nll["ecc"])


def test_result_serialises_with_the_cli_keys(protocol, fitted):
    models, seconds = fitted
    payload = score_methods(protocol, models, fit_seconds=seconds, n_boot=100).to_dict()
    text = json.dumps(payload)
    assert "NaN" not in text
    for key in ("n_queries", "n_models", "nll", "ranking_quality_gain", "ci95", "fit_seconds"):
        assert key in payload
    assert set(payload["nll"]) == set(METHODS)
    assert set(payload["ranking_quality_gain"]) == set(METHODS) - {"global"}
    assert set(payload["ci95"]) == set(payload["ranking_quality_gain"])
    assert payload["n_iter"] == models["ecc"].n_iter_
    assert isinstance(payload["fit_seconds"], float)


def test_bootstrap_is_seeded(protocol, fitted):
    models, _ = fitted
    first = score_methods(protocol, models, n_boot=150, random_state=3)
    second = score_methods(protocol, models, n_boot=150, random_state=3)
    other = score_methods(protocol, models, n_boot=150, random_state=4)
    assert first.ci95 == second.ci95
    assert first.ci95 != other.ci95


def test_modes_and_probes(protocol, fitted):
    models, _ = fitted
    modes = evaluate_modes(protocol, models, n_boot=100)
    assert set(modes["mode"]) == {"both", "embedding", "probe"}
    ecc = modes[modes["method"] == "ecc"].set_index("mode")["gain_pct"]
    # the probe carries the capability signal on planted data; both is at least as good
    assert ecc["both"] > ecc["embedding"] - 1
    global_rows = modes[modes["method"] == "global"]
    assert np.allclose(global_rows["gain_pct"], 0.0)
    probes = sweep_probes(protocol, models, n_probes=(1, 2, 3), n_boot=100)
    ecc_probe = probes[probes["method"] == "ecc"].set_index("n_probes")["gain_pct"]
    assert ecc_probe[3] > ecc_probe[1]  # more evidence, better placement
    # the same scored pairs for every number of probes: the global NLL does not move
    glob = probes[probes["method"] == "global"]["nll"].to_numpy()
    assert np.allclose(glob, glob[0])
    with pytest.raises(ValueError, match="score_from"):
        score_methods(protocol, models, n_probes=2, score_from=1)


def test_sweep_clusters(protocol):
    frame = sweep_clusters(protocol, ks=(1, 4), n_boot=50)
    ecc = frame[frame["method"] == "ecc"].set_index("n_clusters")["gain_pct"]
    assert ecc[4] > ecc[1] + 5
    assert set(frame["method"]) == {"global", "ecc", "emb_only"}


def test_run_protocol_without_categories(planted):
    queries = planted.queries.drop(columns="category")
    result = run_protocol(
        queries, planted.outcomes, planted.embeddings, n_clusters=3, n_boot=50, max_iter=20
    )
    assert "human" not in result.nll
    assert set(result.nll) == {"global", "ecc", "emb_only", "comp_only"}
    assert result.params["n_clusters"] == 3


def test_diagnostics_separate_capability_clusters(protocol, fitted):
    models, _ = fitted
    frame = diagnostics(protocol, models)
    by = frame.set_index("method")
    assert by.loc["ecc", "mean_tau"] > 0.8
    assert by.loc["ecc", "mean_tau"] > by.loc["emb_only", "mean_tau"] + 0.3
    assert by.loc["ecc", "nll_gap"] > by.loc["emb_only", "nll_gap"]
    assert np.isnan(by.loc["global", "nll_gap"])
    consistency = within_cluster_consistency(models["ecc"], protocol.train, n_folds=3)
    assert len(consistency) == 4 and consistency["size"].sum() == protocol.train.n_queries
    gap = cross_cluster_nll_gap(models["ecc"], protocol.train)
    assert gap["gap"] == pytest.approx(gap["other"] - gap["own"])
    with pytest.raises(ValueError, match="n_folds"):
        within_cluster_consistency(models["ecc"], protocol.train, n_folds=1)


def test_within_cluster_consistency_on_identical_folds():
    # every query states the same ranking: each fold profile ranks alike, tau = 1
    data = make_capability_data(
        n_queries=300, n_capabilities=1, n_topics=2, profile_scale=6.0, random_state=2
    )
    model = GlobalBT().fit(None, data.comparisons)
    frame = within_cluster_consistency(model, data.comparisons, n_folds=3)
    assert frame.attrs["mean_tau"] > 0.95


def test_cluster_summary_hides_gpqa(protocol, fitted):
    models, _ = fitted
    texts = protocol.texts[protocol.train_mask]
    labels = protocol.labels_train.copy()
    labels[::2] = "gpqa_diamond"
    summary = cluster_summary(models["ecc"], texts, labels)
    assert len(summary) == 4
    assert summary["size"].sum() == protocol.train.n_queries
    assert list(summary["size"]) == sorted(summary["size"], reverse=True)
    shown = {t for examples in summary["examples"] for t in examples}
    hidden = set(texts[::2])
    assert shown and not (shown & hidden)
    assert all(len(e) == 3 for e in summary["examples"])
    assert summary["top_models"].str.count(",").eq(2).all()
    assert "gpqa_diamond" in summary["top_categories"].iloc[0]


def test_new_model_experiment(planted):
    frame = new_model_experiment(
        planted.queries,
        planted.outcomes,
        planted.embeddings,
        new_model="model_2",
        budgets=(5, 400),
        n_clusters=4,
        n_boot=100,
        max_iter=30,
    )
    assert list(frame["budget"]) == [5, 400]
    assert (frame["n_test_pairs"] > 0).all()
    for column in ("nll_ecc_opponent", "nll_global_opponent", "nll_no_budget"):
        assert np.isfinite(frame[column]).all()
    big = frame.iloc[1]
    # a large budget teaches both arms about the new model
    assert big["nll_ecc_opponent"] < big["nll_no_budget"]
    assert big["nll_global_opponent"] < big["nll_no_budget"]
    assert big["gain_low"] <= big["gain_pct"] <= big["gain_high"]
    with pytest.raises(ValueError, match="not in the outcomes"):
        new_model_experiment(planted.queries, planted.outcomes, planted.embeddings, "nope")


def test_make_methods_rejects_unknown_names():
    with pytest.raises(ValueError, match="unknown method"):
        make_methods(methods=("ecc", "oracle"))
    methods = make_methods(n_clusters=7, lam=1.5, max_iter=11)
    assert isinstance(methods["ecc"], ECC)
    assert methods["ecc"].n_clusters == 7 and methods["ecc"].max_iter == 11
    assert methods["emb_only"].lam == 1.5 and methods["comp_only"].lam == 0.0


def test_sweep_clusters_passes_ecc_params(protocol):
    full = sweep_clusters(protocol, ks=(4,), methods=("global", "ecc"), n_boot=20)
    one_step = sweep_clusters(
        protocol, ks=(4,), methods=("global", "ecc"), n_boot=20, ecc_params={"max_iter": 1}
    )
    gain = {
        name: frame.set_index("method").loc["ecc", "gain_pct"]
        for name, frame in (("full", full), ("one_step", one_step))
    }
    assert gain["one_step"] != gain["full"]
