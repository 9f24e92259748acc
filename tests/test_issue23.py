"""Issue 23 ("every reading means what it says") and the two silent bugs of issue 22.

Each test fails on the code before the fix (see the issue note for the old and new numbers).
"""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from ecc_lib.cli import main
from ecc_lib.cli.ecc import format_result
from ecc_lib.data.comparisons import make_comparisons
from ecc_lib.data.splits import probe_models, split_probe
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.label_informed import LabelInformedECC
from ecc_lib.ecc.mixture import comparison_nll
from ecc_lib.ecc.soft_evidence import soft_outcomes
from ecc_lib.protocol.active_probes import candidate_pairs
from ecc_lib.protocol.active_probes import probes_from_scores as select_from_matrix
from ecc_lib.protocol.data import prepare_protocol
from ecc_lib.protocol.ecc_protocol import run_protocol
from ecc_lib.protocol.experiments.new_model import new_model_experiment
from ecc_lib.protocol.experiments.probe_strategies import summarise_probe_strategy
from ecc_lib.protocol.experiments.soft_evidence import soft_evidence_comparison
from ecc_lib.protocol.leak_free import make_leak_free
from ecc_lib.protocol.methods import fit_methods, make_methods
from ecc_lib.protocol.probes import probe_responsibilities, select_probes
from ecc_lib.protocol.routing import routing_experiment
from ecc_lib.protocol.scoring import score_methods
from ecc_lib.protocol.settings import Protocol
from ecc_lib.stats import bootstrap_indices, mean_with_replicates, ratio_gain
from ecc_lib.synthetic.capability import make_capability_data
from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

FAST = {"n_clusters": 3, "max_iter": 30}


@pytest.fixture(scope="module")
def planted():
    return make_capability_data(n_queries=500, random_state=1)


@pytest.fixture(scope="module")
def binary(planted):
    """The planted data with binary scores (ties between models, as on real benchmarks)."""
    outcomes = planted.outcomes.assign(score=(planted.outcomes["score"] > 0.5).astype(float))
    return SimpleNamespace(
        queries=planted.queries, outcomes=outcomes, embeddings=planted.embeddings
    )


@pytest.fixture(scope="module")
def repeated():
    s = make_repeated_outcomes(n_queries=300, n_models=4, n_rewrites=2, n_decodes=2, random_state=1)
    return s


def _direct_accuracy(p, y):
    """Share of decided pairs (y != 1/2) on the right side of 1/2; p == 1/2 counts half."""
    decided = y != 0.5
    sign = np.sign((p - 0.5) * (y - 0.5))[decided]
    return float(np.mean(np.where(sign == 0, 0.5, sign > 0)))


# --------------------------------------------------------------------------------------------------
# item 1: accuracy under soft evidence


def test_soft_evidence_accuracy_reads_the_direction_of_the_target(repeated):
    data = prepare_protocol(
        repeated.queries, repeated.outcomes, repeated.embeddings, evidence="soft"
    )
    fitted, _ = fit_methods(data, make_methods(methods=("global", "ecc"), **FAST))
    result = score_methods(data, fitted, protocol=Protocol(n_boot=50))
    probe, scored = split_probe(data.test, n_probes=1)
    assert ((scored.y > 0) & (scored.y < 1) & (scored.y != 0.5)).any()  # fractional targets
    for name, model in fitted.items():
        resp = probe_responsibilities(
            model, data.x_test, probe, mode="both", labels=None, probe_evidence="mean"
        )
        p = model.predict_proba(scored, responsibilities=resp)
        assert result.accuracy[name] == pytest.approx(_direct_accuracy(p, scored.y), abs=1e-12)


def test_cli_soft_evidence_accuracies_agree_with_a_direct_computation(repeated, tmp_path):
    queries, outcomes = tmp_path / "q.csv", tmp_path / "o.parquet"
    repeated.queries.to_csv(queries, index=False)
    repeated.outcomes.to_parquet(outcomes, index=False)
    np.save(tmp_path / "e.npy", repeated.embeddings)
    out = tmp_path / "r.json"
    args = ["ecc", "--queries", str(queries), "--outcomes", str(outcomes)]
    args += ["--embeddings", str(tmp_path / "e.npy"), "--k", "3", "--evidence", "soft"]
    assert main([*args, "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    data = prepare_protocol(
        repeated.queries, repeated.outcomes, repeated.embeddings, evidence="soft"
    )
    fitted, _ = fit_methods(data, make_methods(n_clusters=3, methods=("global", "ecc")))
    probe, scored = split_probe(data.test, n_probes=1)
    for name in ("global", "ecc"):
        model = fitted[name]
        p = model.predict_proba(
            scored, responsibilities=model.predict_responsibilities(data.x_test, probe, "both")
        )
        assert payload["accuracy"][name] == pytest.approx(_direct_accuracy(p, scored.y))


# --------------------------------------------------------------------------------------------------
# item 2: the leak-free protocol says how many test queries have a probe


def test_leak_free_reports_the_share_with_a_probe(binary):
    result = run_protocol(
        binary.queries,
        binary.outcomes,
        binary.embeddings,
        protocol=Protocol(leak_free=True, n_boot=100),
        estimator=ECC(**FAST),
        methods=("global", "ecc"),
    )
    coverage = result.to_dict()["leak_free"]
    with_probe = result.per_query["has_probe"].to_numpy()
    assert coverage["n_with_probe"] == int(with_probe.sum())
    assert 0 < coverage["share_with_probe"] < 1
    assert coverage["share_with_probe"] == pytest.approx(with_probe.mean())
    # the two gains are those of the queries with and without a probe
    frame = result.per_query[result.per_query["n_scored"] > 0]
    for key, part in (("with", frame[frame["has_probe"]]), ("without", frame[~frame["has_probe"]])):
        g, e = part["nll_global"].sum(), part["nll_ecc"].sum()
        gain = coverage[f"ranking_quality_gain_{key}_probe"]["ecc"]
        assert gain == pytest.approx(100 * (g - e) / g)
    assert "leak-free probes:" in format_result(result)


def test_cli_leak_free_json_records_the_share(tmp_path, binary):
    queries, outcomes = tmp_path / "q.csv", tmp_path / "o.parquet"
    binary.queries.to_csv(queries, index=False)
    binary.outcomes.to_parquet(outcomes, index=False)
    np.save(tmp_path / "e.npy", binary.embeddings)
    out = tmp_path / "r.json"
    args = ["ecc", "--queries", str(queries), "--outcomes", str(outcomes), "--k", "3"]
    args += ["--embeddings", str(tmp_path / "e.npy"), "--leak-free", "--json", str(out)]
    assert main(args) == 0
    block = json.loads(out.read_text())["leak_free"]
    assert 0 < block["share_with_probe"] < 1
    assert set(block["ranking_quality_gain_with_probe"]) >= {"ecc", "emb_only"}
    assert set(block["ranking_quality_gain_without_probe"]) >= {"ecc", "emb_only"}


# --------------------------------------------------------------------------------------------------
# item 3: --probe-strategy changes the main table, over the comparison block's candidates


def test_probe_strategy_chooses_over_every_unscored_pair_in_the_main_table(binary):
    data = prepare_protocol(binary.queries, binary.outcomes, binary.embeddings)
    fitted, _ = fit_methods(data, make_methods(methods=("global", "ecc"), **FAST))
    first = score_methods(data, fitted, protocol=Protocol(n_boot=50))
    active = score_methods(data, fitted, protocol=Protocol(n_boot=50, probe_strategy="active"))
    assert active.gain["ecc"] != first.gain["ecc"]
    # the probe of the main table is the one of the strategy comparison (same candidates)
    scored = split_probe(data.test, n_probes=1)[1]
    probe = select_from_matrix(
        fitted["ecc"],
        data.scores[data.test_mask],
        data.test,
        n_probes=1,
        strategy="active",
        score_from=1,
        embeddings=data.x_test,
    )
    resp = probe_responsibilities(fitted["ecc"], data.x_test, probe, mode="both")
    losses = comparison_nll(fitted["ecc"].predict_proba(scored, responsibilities=resp), scored.y)
    per_query = np.bincount(scored.query, weights=losses, minlength=data.test.n_queries)
    np.testing.assert_allclose(active.per_query["nll_ecc"], per_query)


# --------------------------------------------------------------------------------------------------
# item 4: the new-model experiment scores pairs disjoint from its probe


def test_new_model_experiment_headline_is_disjoint_from_the_probe(planted):
    frame = new_model_experiment(
        planted.queries,
        planted.outcomes,
        planted.embeddings,
        "model_0",
        protocol=Protocol(n_boot=50),
        estimator=ECC(**FAST),
        budgets=(30,),
    )
    row = frame.iloc[0]
    assert 0 < row["touching_share"] < 1
    assert row["n_test_pairs_touching"] + row["n_test_pairs_disjoint"] == row["n_test_pairs"]
    assert row["touching_share"] == pytest.approx(
        row["n_test_pairs_touching"] / row["n_test_pairs"]
    )
    for prefix in ("gain", "gain_emb", "ecc_minus_emb"):
        for suffix in ("", "_all", "_touching"):
            assert np.isfinite(row[f"{prefix}{suffix}_pct"])
    assert row["gain_pct"] != row["gain_all_pct"]


# --------------------------------------------------------------------------------------------------
# item 5: label-informed ECC chooses its weight on pairs disjoint from the probe


def test_label_weight_is_chosen_on_disjoint_pairs_and_both_readings_are_kept(planted):
    data = prepare_protocol(planted.queries, planted.outcomes, planted.embeddings)
    model = LabelInformedECC(n_clusters=3, max_iter=20, label_weights=(0.0, 1.0, 4.0))
    assert model.cv_pairs == "disjoint"
    model.fit(data.x_train, data.train, labels=data.labels_train)
    table = model.cv_table_["disjoint"]
    assert model.label_weight_ == min(table, key=lambda w: (table[w], w))
    assert set(model.label_weight_by_reading_) == {"all", "disjoint"}
    assert model.cv_pairs_used_ == "disjoint"


# --------------------------------------------------------------------------------------------------
# item 6: paired intervals from one shared resample


def test_disjoint_differences_are_paired_on_the_shared_resample(binary):
    data = prepare_protocol(binary.queries, binary.outcomes, binary.embeddings)
    fitted, _ = fit_methods(data, make_methods(methods=("global", "ecc", "emb_only"), **FAST))
    result = score_methods(data, fitted, protocol=Protocol(n_boot=200))
    frame = result.per_query[result.per_query["n_scored"] > 0]
    index = bootstrap_indices(len(frame), n_boot=200, random_state=0)
    disjoint = {m: (frame[f"nll_{m}"] - frame[f"nll_{m}_touching"]).to_numpy() for m in fitted}
    e = ratio_gain(disjoint["global"], disjoint["ecc"], index)
    b = ratio_gain(disjoint["global"], disjoint["emb_only"], index)
    diff = result.differences_disjoint["ecc_minus_emb_only"]
    assert diff["estimate"] == pytest.approx(e[0] - b[0])
    np.testing.assert_allclose(diff["ci95"], np.quantile(e[2] - b[2], [0.025, 0.975]))


def test_routing_differences_are_paired(binary):
    data = prepare_protocol(binary.queries, binary.outcomes, binary.embeddings)
    fitted, _ = fit_methods(data, make_methods(methods=("global", "ecc", "emb_only"), **FAST))
    routing = routing_experiment(data, fitted, protocol=Protocol(n_boot=200))
    scores = data.scores[data.test_mask]
    rows = np.arange(scores.shape[0])
    index = bootstrap_indices(scores.shape[0], n_boot=200, random_state=0)
    per = {
        m: mean_with_replicates(scores[rows, routing.choices["no_probe"][m]], index)
        for m in ("ecc", "emb_only")
    }
    diff = routing.to_dict()["differences"]["no_probe"]["ecc_minus_emb_only"]
    assert diff["estimate"] == pytest.approx(per["ecc"][0] - per["emb_only"][0])
    np.testing.assert_allclose(
        diff["ci95"], np.quantile(per["ecc"][2] - per["emb_only"][2], [0.025, 0.975])
    )


# --------------------------------------------------------------------------------------------------
# item 7: active-probe candidates are all pairs of models; a tie spends the probe


def test_probe_candidates_include_tied_pairs(binary):
    scores = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    cand = candidate_pairs(scores)
    assert set(zip(cand.query, cand.model_a, cand.model_b, cand.y, strict=True)) == {
        (0, 0, 1, 0.5),
        (0, 0, 2, 0.0),
        (0, 1, 2, 0.0),
        (1, 0, 1, 0.5),
        (1, 0, 2, 0.5),
        (1, 1, 2, 0.5),
    }
    data = prepare_protocol(binary.queries, binary.outcomes, binary.embeddings)
    fitted, _ = fit_methods(data, make_methods(methods=("ecc",), **FAST))
    probe = select_probes(data, fitted["ecc"], n_probes=1, probe_strategy="random", random_state=0)[
        0
    ]
    assert (probe.y == 0.5).any()  # ties are probes too
    assert (probe.y != 0.5).any()


# --------------------------------------------------------------------------------------------------
# item 8: the small ones


def test_probe_cost_charges_random_once_for_the_probe_models(planted):
    costs = {f"model_{i}": float(i + 1) for i in range(8)}
    outcomes = planted.outcomes.assign(cost=planted.outcomes["model"].map(costs))
    data = prepare_protocol(planted.queries, outcomes, planted.embeddings)
    fitted, _ = fit_methods(data, make_methods(methods=("global",), **FAST))
    table = routing_experiment(data, fitted, protocol=Protocol(n_boot=20), outcomes=outcomes).table
    probe = split_probe(data.test, n_probes=1)[0]
    in_probe = probe_models(probe)
    cost = np.array([costs[m] for m in data.models])[None, :].repeat(data.test.n_queries, 0)
    charge = np.where(in_probe, cost, 0).sum(axis=1)
    expected = (charge + np.where(in_probe, 0, cost).mean(axis=1)).mean()
    got = table.query("setting == 'probe_cost' and method == 'random'")["cost"].item()
    assert got == pytest.approx(expected)


def test_one_seed_has_no_sd():
    one = {
        "strategy": "active",
        "criterion": "entropy",
        "n_probes": 1,
        "n_shared_pairs": 10,
        "gain": {"first": 1.0, "active": 2.0},
        "difference": 1.0,
        "curve": [],
    }
    summary = summarise_probe_strategy([one])
    assert np.isnan(summary["gain_sd"]["active"]) and np.isnan(summary["difference_sd"])


def test_one_sampled_draw_has_no_sd(repeated):
    r = soft_evidence_comparison(
        repeated.queries,
        repeated.outcomes,
        repeated.embeddings,
        protocol=Protocol(seeds=(0,), mode="embedding", n_boot=20),
        estimator=ECC(n_clusters=3, max_iter=20),
        n_draws=1,
    )
    assert np.isnan(r["logloss"]["sampled_sd"])


def test_leak_free_table_prints_na_not_nan(binary):
    result = run_protocol(
        binary.queries,
        binary.outcomes,
        binary.embeddings,
        protocol=Protocol(leak_free=True, n_boot=50),
        estimator=ECC(**FAST),
        methods=("global", "ecc"),
    )
    assert np.isnan(result.gain_touching["ecc"])
    text = format_result(result)
    assert "nan" not in text and "n/a" in text


def test_leak_free_probe_under_soft_evidence_is_soft():
    six = make_repeated_outcomes(
        n_queries=200, n_models=6, n_rewrites=2, n_decodes=2, random_state=2
    )
    data = prepare_protocol(six.queries, six.outcomes, six.embeddings, n_pairs=3, evidence="soft")
    free = make_leak_free(data, outcomes=six.outcomes)
    probe = free.test.take(free.probe_candidates)
    assert len(probe)
    np.testing.assert_allclose(probe.y, soft_outcomes(six.outcomes, probe).y)
    assert ((probe.y > 0) & (probe.y < 1)).any()
    with pytest.raises(ValueError, match="soft evidence"):
        make_leak_free(data)


def test_comp_only_without_probe_is_marked_as_global(planted):
    data = prepare_protocol(planted.queries, planted.outcomes, planted.embeddings)
    fitted, _ = fit_methods(data, make_methods(methods=("global", "comp_only", "ecc"), **FAST))
    routing = routing_experiment(data, fitted, protocol=Protocol(n_boot=20)).to_dict()
    assert routing["no_probe"]["comp_only"]["query_independent"] is True
    assert routing["no_probe"]["ecc"]["query_independent"] is False
    assert routing["probe"]["comp_only"]["query_independent"] is False
    choices = routing_experiment(data, fitted, protocol=Protocol(n_boot=20)).choices["no_probe"]
    assert len(np.unique(choices["comp_only"])) == 1
    same = np.array_equal(choices["comp_only"], choices["global"])
    assert routing["no_probe"]["comp_only"]["same_as_global"] is same


def test_scores_closer_than_the_tolerance_tie():
    out = pd.DataFrame(
        {
            "query_id": ["q"] * 3 + ["r"] * 3,
            "model": ["a", "b", "c"] * 2,
            "score": [0.70001, 0.70000, 0.2, 0.5, 0.5, 0.5 + 2e-4],
        }
    )
    c = make_comparisons(out, ties="drop")
    pairs = set(zip(c.query_ids[c.query], c.model_a, c.model_b, strict=True))
    assert ("q", 0, 1) not in pairs and len(pairs) == 4
    exact = make_comparisons(out, ties="drop", tie_tolerance=0.0)
    assert len(exact) == 5


def test_left_out_queries_carry_their_reason(binary, tmp_path):
    rows = [
        {"query_id": "tie", "model": f"model_{i}", "score": 1.0} for i in range(8)
    ]  # every model scores 1: all models tie
    outcomes = pd.concat([binary.outcomes, pd.DataFrame(rows)], ignore_index=True)
    queries = pd.concat(
        [binary.queries, pd.DataFrame({"query_id": ["tie"], "text": ["t"], "category": ["c"]})],
        ignore_index=True,
    )
    embeddings = np.vstack([binary.embeddings, binary.embeddings[:1]])
    data = prepare_protocol(queries, outcomes, embeddings)
    n_dropped = data.n_input_queries - data.comparisons.n_queries
    reasons = data.params["left_out_reasons"]
    assert sum(reasons.values()) == n_dropped and reasons.get("all models tie", 0) >= 1
    result = run_protocol(
        queries,
        outcomes,
        embeddings,
        protocol=Protocol(n_boot=20),
        estimator=ECC(**FAST),
        methods=("global", "ecc"),
    )
    assert result.to_dict()["left_out_reasons"] == reasons
    assert "all models tie" in format_result(result)


# --------------------------------------------------------------------------------------------------
# item 9: two-model data


def test_two_models_run_on_the_one_pair_with_a_warning(planted, caplog):
    two = planted.outcomes[planted.outcomes["model"].isin(["model_0", "model_1"])]
    with caplog.at_level(logging.WARNING):
        result = run_protocol(
            planted.queries,
            two,
            planted.embeddings,
            protocol=Protocol(n_boot=20, leak_free=True),
            estimator=ECC(**FAST),
        )
    assert result.n_probes == 0 and result.n_scored == result.n_test
    assert np.isfinite(result.gain["ecc"])
    assert any("only 2 models" in w for w in result.params["warnings"])
    assert any("leak-free" in w for w in result.params["warnings"])
    assert "only 2 models" in caplog.text


# --------------------------------------------------------------------------------------------------
# issue 22: the two silent bugs


def test_cli_soft_evidence_passes_every_setting(repeated, tmp_path, monkeypatch):
    import ecc_lib.protocol.experiments.soft_evidence as soft

    seen = {}
    real = soft.soft_evidence_comparison

    def spy(*args, **kwargs):
        seen.update(kwargs)
        fast = kwargs["protocol"].replace(n_boot=20)
        return real(*args, **{**kwargs, "n_draws": 1, "protocol": fast})

    monkeypatch.setattr(soft, "soft_evidence_comparison", spy)
    queries, outcomes = tmp_path / "q.csv", tmp_path / "o.parquet"
    repeated.queries.to_csv(queries, index=False)
    repeated.outcomes.to_parquet(outcomes, index=False)
    np.save(tmp_path / "e.npy", repeated.embeddings)
    args = ["ecc", "--queries", str(queries), "--outcomes", str(outcomes), "--k", "3"]
    args += ["--embeddings", str(tmp_path / "e.npy"), "--evidence", "soft", "--lam", "1.5"]
    args += ["--temperature", "0.2", "--pairs", "4", "--test-size", "0.3"]
    assert main(args) == 0
    prototype, protocol = seen["estimator"], seen["protocol"]
    assert prototype.lam == 1.5 and prototype.temperature == 0.2 and prototype.n_clusters == 3
    assert protocol.n_pairs == 4 and protocol.test_size == 0.3 and not seen["every_pair"]


def _notebook_cell(marker: str) -> str:
    from pathlib import Path

    nb = json.loads((Path(__file__).parents[1] / "notebooks" / "03_clustering.ipynb").read_text())
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    (cell,) = [c for c in cells if marker in c]
    return cell


def test_notebook_label_table_is_scored_like_the_main_table(planted):
    """Run notebook 03's label-informed cell: with probe_evidence="sum" and two probes its ECC
    row must be the main table's (same probe evidence, same bootstrap resamples)."""
    from ecc_lib import plotting
    from ecc_lib.protocol import ecc_protocol
    from ecc_lib.protocol.experiments import sweeps

    settings = {"n_clusters": 3, "lam": 3.0, "temperature": 0.1, "max_iter": 30}
    data = prepare_protocol(planted.queries, planted.outcomes, planted.embeddings)
    fitted, seconds = fit_methods(
        data,
        make_methods(
            n_clusters=3,
            lam=3.0,
            temperature=0.1,
            random_state=42,
            methods=("global", "ecc", "emb_only"),
            max_iter=30,
        ),
    )
    result = score_methods(
        data,
        fitted,
        protocol=Protocol(n_probes=2, probe_evidence="sum", n_boot=100),
        fit_seconds=seconds,
    )
    saved = []
    namespace = {
        **settings,
        "data": data,
        "fitted": fitted,
        "result": result,
        "n_probes": 2,
        "n_boot": 100,
        "seed": 42,
        "probe_evidence": "sum",
        "protocol": Protocol.from_seed(42, n_probes=2, probe_evidence="sum", n_boot=100),
        "estimator": ECC(n_clusters=3, lam=3.0, temperature=0.1, max_iter=30),
        "label": "planted",
        "run": SimpleNamespace(
            save_table=lambda *a, **k: saved.append(a[1]), save_figure=lambda *a, **k: None
        ),
        "ecc_protocol": ecc_protocol,
        "sweeps": sweeps,
        "plotting": SimpleNamespace(plot_gains=lambda *a, **k: None),
        "display": lambda *a, **k: None,
    }
    del plotting
    exec(_notebook_cell("result_labels = sweeps.score_label_informed("), namespace)  # noqa: S102
    # issue 22: the cell keeps the evaluation; ecc_lib.protocol.results writes the metrics of it
    from ecc_lib.protocol.results import ecc_beyond_metrics

    labels = ecc_beyond_metrics(labels=namespace["result_labels"])["ecc_labels"]
    assert labels["gain"]["ecc"] == pytest.approx(result.gain["ecc"])
    assert labels["ci95"]["ecc"] == pytest.approx(result.ci95["ecc"])
    assert "03_gains_labels" in saved


def test_report_states_the_leak_free_share_and_the_left_out_reason(tmp_path):
    from ecc_lib.report.sections.clustering import ecc_section

    values = {
        "dataset": "d",
        "ranking_quality_gain": {"ecc": 10.0},
        "ranking_quality_gain_ci95": {"ecc": [5.0, 15.0]},
        "left_out_reasons": {"all models tie": 1319},
        "leak_free": {
            "share_with_probe": 0.139,
            "ranking_quality_gain_with_probe": {"ecc": 14.1},
            "ranking_quality_gain_without_probe": {"ecc": 17.9},
        },
    }
    section = ecc_section(SimpleNamespace(tables_dir=tmp_path), {"ecc": values})
    assert "1,319 queries (all models tie)" in section.findings
    assert "13.9%" in section.findings and "leak-free" in section.findings


def test_routing_cost_scale_comes_from_training_queries():
    from ecc_lib.data.observations import repeated_observations, rescale_cost
    from ecc_lib.data.splits import split_queries
    from ecc_lib.routing_evaluation import routing_table

    s = make_repeated_outcomes(n_queries=120, n_models=3, n_rewrites=2, n_decodes=2)
    obs = repeated_observations(s.outcomes)
    train_mask, test_mask = split_queries(obs.n_queries, test_size=0.2, random_state=42)
    outcomes = s.outcomes.copy()
    test_query = obs.query_ids[test_mask][0]
    outcomes.loc[outcomes["query_id"] == test_query, "cost"] = 1e6  # an outlier among the test
    result = routing_table(
        outcomes, s.embeddings, routers=["kNN"], n_runs=1, n_boot=20, lambdas=(0.0,)
    )
    train = repeated_observations(outcomes).select_queries(train_mask)
    raw = train.cost * (train.cost_scale[1] - train.cost_scale[0]) + train.cost_scale[0]
    means = np.bincount(train.pair, raw) / np.bincount(train.pair)
    assert result.info["cost_scale"] == pytest.approx([means.min(), means.max()])
    assert result.info["cost_scale"][1] < 1e6
    scaled = rescale_cost(train)
    pair_mean = np.bincount(scaled.pair, scaled.cost) / np.bincount(scaled.pair)
    assert pair_mean.min() == pytest.approx(0.0) and pair_mean.max() == pytest.approx(1.0)
