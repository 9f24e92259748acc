"""The paper protocol, sweeps, diagnostics, cluster summary and the new-model experiment."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from ecc_lib.data.comparisons import Comparisons
from ecc_lib.data.splits import disjoint_from_probe, probe_models, split_probe, touching_probe
from ecc_lib.ecc.baselines import GlobalBT
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.mixture import comparison_nll, evidence
from ecc_lib.protocol.data import prepare_protocol
from ecc_lib.protocol.ecc_protocol import run_protocol
from ecc_lib.protocol.experiments.new_model import new_model_experiment
from ecc_lib.protocol.experiments.sweeps import (
    cluster_summary,
    cross_cluster_nll_gap,
    diagnostics,
    evaluate_modes,
    sweep_clusters,
    sweep_probes,
    within_cluster_consistency,
)
from ecc_lib.protocol.leak_free import make_leak_free, probe_candidate_rows
from ecc_lib.protocol.methods import METHODS, fit_methods, make_methods
from ecc_lib.protocol.probes import (
    probe_first,
    probe_random,
    probe_responsibilities,
    resolve_probe_strategy,
)
from ecc_lib.protocol.routing import route_choices, routing_experiment
from ecc_lib.protocol.scoring import score_methods
from ecc_lib.protocol.seeds import routing_over_seeds, run_seeds
from ecc_lib.protocol.settings import Protocol
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
    result = score_methods(protocol, models, protocol=Protocol(n_boot=200), fit_seconds=seconds)
    probe, scored = split_probe(protocol.test, n_probes=1)
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
    payload = score_methods(
        protocol, models, protocol=Protocol(n_boot=100), fit_seconds=seconds
    ).to_dict()
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
    first = score_methods(protocol, models, protocol=Protocol(n_boot=150), random_state=3)
    second = score_methods(protocol, models, protocol=Protocol(n_boot=150), random_state=3)
    other = score_methods(protocol, models, protocol=Protocol(n_boot=150), random_state=4)
    assert first.ci95 == second.ci95
    assert first.ci95 != other.ci95


def test_modes_and_probes(protocol, fitted):
    models, _ = fitted
    modes = evaluate_modes(protocol, models, protocol=Protocol(n_boot=100))
    assert set(modes["mode"]) == {"both", "embedding", "probe"}
    ecc = modes[modes["method"] == "ecc"].set_index("mode")["gain_pct"]
    # the probe carries the capability signal on planted data; both is at least as good
    assert ecc["both"] > ecc["embedding"] - 1
    global_rows = modes[modes["method"] == "global"]
    assert np.allclose(global_rows["gain_pct"], 0.0)
    probes = sweep_probes(protocol, models, protocol=Protocol(n_boot=100), probe_counts=(1, 2, 3))
    ecc_probe = probes[probes["method"] == "ecc"].set_index("n_probes")["gain_pct"]
    assert ecc_probe[3] > ecc_probe[1]  # more evidence, better placement
    # the same scored pairs for every number of probes: the global NLL does not move
    glob = probes[probes["method"] == "global"]["nll"].to_numpy()
    assert np.allclose(glob, glob[0])
    with pytest.raises(ValueError, match="score_from"):
        score_methods(protocol, models, protocol=Protocol(n_probes=2), score_from=1)


def test_sweep_clusters(protocol):
    frame = sweep_clusters(protocol, protocol=Protocol(n_boot=50), ks=(1, 4))
    ecc = frame[frame["method"] == "ecc"].set_index("n_clusters")["gain_pct"]
    assert ecc[4] > ecc[1] + 5
    assert set(frame["method"]) == {"global", "ecc", "emb_only"}


def test_run_protocol_without_categories(planted):
    queries = planted.queries.drop(columns="category")
    result = run_protocol(
        queries,
        planted.outcomes,
        planted.embeddings,
        protocol=Protocol(n_boot=50),
        estimator=ECC(n_clusters=3, max_iter=20),
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
        protocol=Protocol(n_boot=100),
        estimator=ECC(n_clusters=4, max_iter=30),
        budgets=(5, 400),
    )
    assert list(frame["budget"]) == [5, 400]
    assert (frame["n_test_pairs"] > 0).all()
    for column in ("nll_ecc_opponent", "nll_global_opponent", "nll_no_budget"):
        assert np.isfinite(frame[column]).all()
    big = frame.iloc[1]
    # a large budget teaches every arm about the new model
    assert big["nll_ecc_opponent"] < big["nll_no_budget"]
    assert big["nll_global_opponent"] < big["nll_no_budget"]
    assert big["nll_emb_opponent"] < frame.iloc[0]["nll_emb_opponent"]
    assert big["gain_low"] <= big["gain_pct"] <= big["gain_high"]
    assert big["gain_emb_low"] <= big["gain_emb_pct"] <= big["gain_emb_high"]
    for arm in ("ecc", "emb", "global"):
        assert big[f"nll_{arm}_opponent_low"] <= big[f"nll_{arm}_opponent"]
        assert big[f"nll_{arm}_opponent"] <= big[f"nll_{arm}_opponent_high"]
    assert big["ecc_minus_emb_pct"] == pytest.approx(big["gain_pct"] - big["gain_emb_pct"])
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
    full = sweep_clusters(
        protocol, protocol=Protocol(n_boot=20), ks=(4,), methods=("global", "ecc")
    )
    one_step = sweep_clusters(
        protocol,
        protocol=Protocol(n_boot=20),
        estimator=ECC(max_iter=1),
        ks=(4,),
        methods=("global", "ecc"),
    )
    gain = {
        name: frame.set_index("method").loc["ecc", "gain_pct"]
        for name, frame in (("full", full), ("one_step", one_step))
    }
    assert gain["one_step"] != gain["full"]


# --------------------------------------------------------------------------------------------------
# issue 16: the probe's leak, leak-free probes, probe strategies and evidence; issue 10: seeds


def _comparisons(rows, n_queries, n_models=4):
    frame = pd.DataFrame(rows, columns=["query_id", "model_a", "model_b", "y"])
    return Comparisons.from_frame(
        frame,
        query_ids=[f"q{i}" for i in range(n_queries)],
        models=[f"m{j}" for j in range(n_models)],
    )


def test_touching_probe_on_a_hand_made_case():
    probe = _comparisons([("q0", "m0", "m1", 1.0), ("q1", "m2", "m3", 0.0)], 3)
    scored = _comparisons(
        [
            ("q0", "m1", "m2", 1.0),  # touches m1
            ("q0", "m2", "m3", 0.0),  # disjoint from {m0, m1}
            ("q0", "m3", "m0", 1.0),  # touches m0
            ("q1", "m0", "m1", 1.0),  # disjoint from {m2, m3}
            ("q1", "m1", "m3", 0.0),  # touches m3
            ("q2", "m0", "m1", 1.0),  # q2 has no probe
        ],
        3,
    )
    np.testing.assert_array_equal(
        touching_probe(probe, scored), [True, False, True, False, True, False]
    )
    assert not touching_probe(None, scored).any()
    np.testing.assert_array_equal(
        disjoint_from_probe(scored, probe), [False, True, False, True, False, True]
    )
    named = probe_models(probe)
    assert named.shape == (3, 4)
    np.testing.assert_array_equal(np.flatnonzero(named[0]), [0, 1])
    np.testing.assert_array_equal(np.flatnonzero(named[1]), [2, 3])
    assert not named[2].any()


def test_leak_split_adds_up(protocol, fitted):
    models, seconds = fitted
    result = score_methods(protocol, models, protocol=Protocol(n_boot=100))
    probe, scored = split_probe(protocol.test, n_probes=1)
    touching = touching_probe(probe, scored)
    assert result.probe_leak_share == pytest.approx(touching.mean())
    assert result.n_scored_touching == touching.sum()
    frame = result.per_query
    for name in result.gain:
        g_all, m_all = frame["nll_global"], frame[f"nll_{name}"]
        g_t, m_t = frame["nll_global_touching"], frame[f"nll_{name}_touching"]
        assert result.gain_touching[name] == pytest.approx(
            100 * (g_t.sum() - m_t.sum()) / g_t.sum()
        )
        g_d, m_d = g_all - g_t, m_all - m_t
        assert result.gain_disjoint[name] == pytest.approx(
            100 * (g_d.sum() - m_d.sum()) / g_d.sum()
        )
        low, high = result.ci95_disjoint[name]
        assert low <= result.gain_disjoint[name] <= high
        # the all-pairs gain is the NLL-weighted mix of the two readings
        share = g_t.sum() / g_all.sum()
        mix = share * result.gain_touching[name] + (1 - share) * result.gain_disjoint[name]
        assert result.gain[name] == pytest.approx(mix)
    # with binary-style winners, a probe reveals much: ECC gains more on touching pairs
    assert result.gain_touching["ecc"] > result.gain_disjoint["ecc"]


def test_leak_free_probes_touch_no_scored_pair(planted, protocol):
    free = make_leak_free(protocol, n_probes=1, random_state=0)
    candidates, scored_mask = probe_candidate_rows(free, n_probes=1)
    probe, scored = free.test.take(candidates), free.test.take(scored_mask)
    assert not touching_probe(probe, scored).any()
    # the scored pairs are the paper's, in the same order
    paper_scored = split_probe(protocol.test, n_probes=1)[1]
    np.testing.assert_array_equal(scored.model_a, paper_scored.model_a)
    np.testing.assert_array_equal(scored.y, paper_scored.y)
    # each new probe is a real non-tie outcome of the query
    scores = protocol.scores[protocol.test_mask]
    a = scores[probe.query, probe.model_a]
    b = scores[probe.query, probe.model_b]
    np.testing.assert_array_equal(probe.y, (b > a).astype(float))
    assert (a != b).all()
    assert np.bincount(probe.query, minlength=free.test.n_queries).max() <= 1
    missing = (np.bincount(probe.query, minlength=free.test.n_queries) == 0).sum()
    assert free.params["n_short_probe_queries"] == missing
    fitted, _ = fit_methods(free, make_methods(n_clusters=4, n_init=1, methods=("global", "ecc")))
    result = score_methods(free, fitted, protocol=Protocol(n_boot=50))
    assert result.probe_leak_share == 0.0
    assert result.gain_disjoint["ecc"] == pytest.approx(result.gain["ecc"])
    with pytest.raises(ValueError, match="score_from"):
        score_methods(free, fitted, protocol=Protocol(n_boot=50), score_from=2)


def test_probe_strategies_choose_inside_the_candidates(protocol):
    candidates, _ = probe_candidate_rows(protocol, n_probes=2, score_from=3)
    test = protocol.test
    rank = np.arange(len(test)) - np.searchsorted(test.query, test.query)
    first = probe_first(test, 2, candidates)
    np.testing.assert_array_equal(first, rank < 2)
    chosen = probe_random(test, 2, candidates, random_state=1)
    assert not (chosen & ~candidates).any()
    per_query = np.bincount(test.query[chosen], minlength=test.n_queries)
    available = np.bincount(test.query[candidates], minlength=test.n_queries)
    np.testing.assert_array_equal(per_query, np.minimum(available, 2))
    np.testing.assert_array_equal(chosen, probe_random(test, 2, candidates, random_state=1))
    assert not np.array_equal(chosen, first)
    assert resolve_probe_strategy("first") is probe_first
    with pytest.raises(ValueError, match="unknown probe_strategy"):
        resolve_probe_strategy("best")

    def bad(test, n_probes, candidates, **kwargs):
        return ~candidates

    models = fit_methods(protocol, make_methods(n_clusters=2, methods=("global",)))[0]
    with pytest.raises(ValueError, match="inside the candidates"):
        score_methods(protocol, models, protocol=Protocol(probe_strategy=bad, n_boot=10))


def test_probe_evidence_sum_is_the_bayesian_posterior(protocol, fitted):
    models, _ = fitted
    ecc = models["ecc"]
    probe, _ = split_probe(protocol.test, n_probes=3)
    mean = probe_responsibilities(ecc, protocol.x_test, probe, mode="both", probe_evidence="mean")
    summed = probe_responsibilities(ecc, protocol.x_test, probe, mode="both", probe_evidence="sum")
    np.testing.assert_allclose(mean, ecc.predict_responsibilities(protocol.x_test, probe, "both"))
    n_q = probe.pairs_per_query()[:, None]
    log_p = evidence(ecc.theta_, probe) * n_q  # the summed log-likelihood of the probes
    # the estimator computes the cosine in float32, as here
    cos = (protocol.x_test @ ecc.centroids_.T.astype(np.float32)).astype(float)
    expected = np.exp(
        (log_p + ecc.lam * cos) / ecc.temperature
        - np.log(np.exp((log_p + ecc.lam * cos) / ecc.temperature).sum(axis=1, keepdims=True))
    )
    np.testing.assert_allclose(summed, expected, atol=1e-8)
    assert not np.allclose(summed, mean)
    one, _ = split_probe(protocol.test, n_probes=1)
    np.testing.assert_allclose(
        probe_responsibilities(ecc, protocol.x_test, one, mode="both", probe_evidence="sum"),
        probe_responsibilities(ecc, protocol.x_test, one, mode="both", probe_evidence="mean"),
    )
    result = score_methods(
        protocol, models, protocol=Protocol(n_probes=3, probe_evidence="sum", n_boot=20)
    )
    assert result.params["probe_evidence"] == "sum"
    with pytest.raises(ValueError, match="probe_evidence"):
        score_methods(protocol, models, protocol=Protocol(probe_evidence="max", n_boot=20))
    sweep = sweep_probes(
        protocol, models, protocol=Protocol(probe_evidence="sum", n_boot=20), probe_counts=(1, 2)
    )
    assert set(sweep["n_probes"]) == {1, 2}


def test_run_seeds_repeats_the_protocol(planted):
    kwargs = dict(estimator=ECC(n_clusters=3, n_init=1, max_iter=20), methods=("global", "ecc"))
    multi = run_seeds(
        planted.queries,
        planted.outcomes,
        planted.embeddings,
        protocol=Protocol(seeds=(3, 4), n_boot=50),
        **kwargs,
    )
    single = run_protocol(
        planted.queries,
        planted.outcomes,
        planted.embeddings,
        protocol=Protocol(seeds=(3,), n_boot=50),
        **kwargs,
    )
    assert multi.first.gain == single.gain and multi.first.ci95 == single.ci95
    summary = multi.summary()
    gains = [r.gain["ecc"] for r in multi.results]
    assert gains[0] != gains[1]
    assert summary["gain_mean"]["ecc"] == pytest.approx(np.mean(gains))
    assert summary["gain_sd"]["ecc"] == pytest.approx(np.std(gains, ddof=1))
    assert summary["seeds"] == [3, 4] and len(summary["per_seed"]) == 2
    assert set(multi.table()["seed"]) == {3, 4}
    assert multi.cpu_seconds > 0
    with pytest.raises(ValueError, match="distinct"):
        run_seeds(
            planted.queries,
            planted.outcomes,
            planted.embeddings,
            protocol=Protocol(seeds=(1, 1)),
        )


# --------------------------------------------------------------------------------------------------
# routing (issue 16)


@pytest.fixture(scope="module")
def one_winner():
    """Binary scores with exactly one correct model per query: every non-tie pair contains the
    winner, so the probe reveals it."""
    rng = np.random.default_rng(5)
    n, m = 300, 5
    planted = make_capability_data(n_queries=n, n_models=m, random_state=5)
    winner = rng.integers(0, m, n)
    score = (np.arange(m)[None, :] == winner[:, None]).astype(float)
    outcomes = pd.DataFrame(
        {
            "query_id": np.repeat(planted.queries["query_id"].to_numpy(), m),
            "model": np.tile(np.array(planted.models), n),
            "score": score.ravel(),
            "cost": np.tile(np.linspace(0.1, 0.5, m), n),
        }
    )
    data = prepare_protocol(planted.queries, outcomes, planted.embeddings, random_state=1)
    fitted, _ = fit_methods(data, make_methods(n_clusters=3, n_init=1, max_iter=20))
    return data, fitted, outcomes


def test_probe_winner_reaches_the_oracle_when_the_probe_reveals_the_winner(one_winner):
    data, fitted, outcomes = one_winner
    result = routing_experiment(data, fitted, protocol=Protocol(n_boot=50), outcomes=outcomes)
    table = result.table.set_index(["setting", "method"])["score"]
    assert table["probe", "oracle"] == 1.0
    assert table["probe", "probe_winner"] == table["probe", "oracle"]
    assert table["no_probe", "random"] == pytest.approx(1 / 5)
    # outside the probe pair the winner is never available
    assert table["probe_outside", "oracle"] == 0.0
    payload = result.to_dict()
    assert payload["probe_winner"]["score"] == payload["oracle"]["score"] == 1.0
    assert payload["has_costs"]
    costs = result.table.set_index(["setting", "method"])["cost"]
    # the probe is charged: the probe winner costs exactly its two probe calls
    probe, _ = split_probe(data.test, n_probes=1)
    unit = np.linspace(0.1, 0.5, 5)
    expected = (unit[probe.model_a] + unit[probe.model_b]).mean()
    assert costs["probe_cost", "probe_winner"] == pytest.approx(expected)
    assert costs["probe", "probe_winner"] < costs["probe_cost", "probe_winner"]


def test_no_probe_routing_never_reads_test_outcomes(protocol, fitted):
    models, _ = fitted
    clean = route_choices(protocol, models, setting="no_probe")
    rng = np.random.default_rng(0)
    test_scores = protocol.scores[protocol.test_mask]
    poisoned_scores = protocol.scores.copy()
    poisoned_scores[protocol.test_mask] = rng.permuted(test_scores, axis=1)
    flipped = Comparisons(
        protocol.test.query,
        protocol.test.model_a,
        protocol.test.model_b,
        1.0 - protocol.test.y,
        protocol.test.query_ids,
        protocol.test.models,
    )
    poisoned = replace(protocol, scores=poisoned_scores, test=flipped)
    dirty = route_choices(poisoned, models, setting="no_probe")
    for name in models:
        np.testing.assert_array_equal(clean[name], dirty[name])
    # the probe settings do read the (poisoned) probe
    probed = route_choices(protocol, models, setting="probe")
    probed_dirty = route_choices(poisoned, models, setting="probe")
    assert not np.array_equal(probed["probe_winner"], probed_dirty["probe_winner"])
    # and the numbers: routing the poisoned data and scoring on the true outcomes is unchanged
    scores = test_scores[np.arange(len(test_scores)), clean["ecc"]]
    table = routing_experiment(protocol, models, protocol=Protocol(n_boot=20)).table.set_index(
        ["setting", "method"]
    )
    assert table.loc[("no_probe", "ecc"), "score"] == pytest.approx(scores.mean())


def test_routing_over_seeds(protocol, fitted):
    models, _ = fitted
    first = routing_experiment(protocol, models, protocol=Protocol(n_boot=20)).to_dict()
    other = routing_experiment(
        protocol, models, protocol=Protocol(n_boot=20, probe_evidence="sum")
    ).to_dict()
    summary = routing_over_seeds([first, other])
    mean, sd = summary["probe"]["ecc"]["score"]
    assert mean == pytest.approx(
        (first["probe"]["ecc"]["score"] + other["probe"]["ecc"]["score"]) / 2
    )
    assert sd >= 0
    with pytest.raises(ValueError, match="setting"):
        route_choices(protocol, models, setting="sometimes")


def test_new_model_budget_moves_the_profile_and_ecc_opponents_win():
    """Planted capability clusters: at B >= 100 the new model's comparisons against the median
    model of its ECC cluster teach more than comparisons against the global median model, and
    full-weight budget comparisons teach more than comparisons weighted 1 / (N_q + 1)."""
    planted = make_capability_data(n_queries=1500, capability_strength=0.3, random_state=3)
    args = (planted.queries, planted.outcomes, planted.embeddings, "model_2")
    kwargs = dict(
        protocol=Protocol(n_boot=200),
        estimator=ECC(n_clusters=4, n_init=2, max_iter=50),
        budgets=(100, 300),
    )
    full = new_model_experiment(*args, **kwargs)
    for row in full.itertuples():
        assert row.gain_low > 0 and row.gain_pct > 5
    weak = new_model_experiment(*args, budget_weight=1 / 8, **kwargs)
    assert (full["nll_ecc_opponent"] < weak["nll_ecc_opponent"]).all()
    assert (full["nll_global_opponent"] < weak["nll_global_opponent"]).all()
    with pytest.raises(ValueError, match="budget_weight"):
        new_model_experiment(*args, budget_weight=0.0, **kwargs)
