"""Issue 38: train-router, route and the operating point calibrated to a budget or a model share."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from ecc_lib.cli import main
from ecc_lib.data.sources import load_bundled
from ecc_lib.routers.deploy import load_deployed, train_deployed


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """1,500 dcrouter queries (costs 0.1 to 0.9 per call) as a dataset folder."""
    queries, outcomes = load_bundled("dcrouter")
    queries = queries.iloc[:1500]
    outcomes = outcomes[outcomes["query_id"].isin(queries["query_id"])]
    folder = tmp_path_factory.mktemp("dcrouter1500")
    queries.to_parquet(folder / "queries.parquet", index=False)
    outcomes.to_parquet(folder / "outcomes.parquet", index=False)
    return folder, queries, outcomes


@pytest.fixture(scope="module")
def knn(dataset):
    _, queries, outcomes = dataset
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return train_deployed(queries, outcomes, family="kNN", embedder="static")


@pytest.mark.parametrize("budget", [0.25, 0.35, 0.5])
def test_budget_sets_the_held_out_mean_cost(knn, budget):
    deployed, split = knn
    deployed.calibrate(budget=budget)
    point = deployed.operating_point
    cost, quality = point["expected_cost"], point["expected_quality"]
    # mean cost of the routes on the held-out calibration queries, recomputed from the truth
    cal = deployed.calibration
    choice = deployed.choose(cal.embeddings)
    rows = np.arange(len(choice))
    held_out_cost = deployed.raw_cost(cal.mu_c[rows, choice]).mean()
    assert held_out_cost == pytest.approx(cost[0])
    assert abs(held_out_cost - budget) <= 0.05 * budget
    assert held_out_cost <= budget + 1e-12
    assert cost[1] < cost[0] < cost[2]
    assert quality[1] < quality[0] < quality[2]
    assert point["budget"] == budget and "lambda" in point["meaning"]
    assert deployed.cost_weight > 0


def test_a_budget_below_the_cheapest_routes_is_refused(knn):
    deployed, _ = knn
    with pytest.raises(ValueError, match="below the cheapest"):
        deployed.calibrate(budget=0.05)


def test_max_share_caps_a_model(knn):
    deployed, _ = knn
    deployed.calibrate(budget=0.9)  # lambda 0 or near: the quality-first point
    before = deployed.describe()["share"]
    model = max(before, key=before.get)
    limit = round(before[model] / 2, 3)
    deployed.calibrate(max_share={model: limit})
    share = deployed.operating_point["share"][model]
    n = deployed.operating_point["n_calibration"]
    assert limit - 2.0 / n <= share <= limit
    assert deployed.offsets[deployed.models.index(model)] > 0
    with pytest.raises(ValueError, match="unknown model"):
        deployed.calibrate(max_share={"no-such-model": 0.1})


def test_saved_deployed_router_routes_the_same(tmp_path, knn, dataset):
    deployed, _ = knn
    deployed.calibrate(budget=0.3)
    deployed.save(tmp_path)
    loaded = load_deployed(tmp_path, embedder="static")
    texts = dataset[1]["text"].tolist()[:200]
    pd.testing.assert_frame_equal(loaded.route(texts), deployed.route(texts))
    assert loaded.cost_weight == deployed.cost_weight
    assert loaded.operating_point["budget"] == 0.3


def test_a_calibration_file_lacking_an_array_is_refused_by_name(tmp_path, knn):
    from ecc_lib.routers.io import RouterFileError

    deployed, _ = knn
    deployed.save(tmp_path)
    path = tmp_path / "calibration.npz"
    with np.load(path) as data:
        kept = {k: data[k] for k in data.files if k != "mu_c"}
    np.savez(path, **kept)
    with pytest.raises(RouterFileError, match="lacks the calibration array 'mu_c'"):
        load_deployed(tmp_path, embedder="static")


def test_train_router_and_route_from_the_command_line(tmp_path, dataset, capsys):
    folder, queries, _ = dataset
    out = tmp_path / "router"
    status = main(
        [
            "train-router",
            "--dataset",
            str(folder),
            "--family",
            "kNN",
            "--targets",
            "single",
            "--out",
            str(out),
            "--embedder",
            "static",
        ]
    )
    assert status == 0
    printed = capsys.readouterr().out
    assert "best_fixed_model" in printed and "oracle" in printed
    report = json.loads((out / "report.json").read_text())
    assert set(report["rows"]) == {"router", "best_fixed_model", "oracle"}
    rows = report["rows"]
    assert rows["oracle"]["utility"][0] >= rows["best_fixed_model"]["utility"][0]
    assert sum(rows["router"]["share"].values()) == pytest.approx(1.0)
    assert report["targets"] == "single"
    assert sorted(p.name for p in out.iterdir()) == [
        "calibration.npz",
        "report.json",
        "router.json",
        "router.npz",
    ]
    queries.iloc[:50][["query_id", "text"]].to_csv(tmp_path / "new.csv", index=False)
    status = main(
        [
            "route",
            "--router",
            str(out),
            "--queries",
            str(tmp_path / "new.csv"),
            "--out",
            str(tmp_path / "routes.csv"),
            "--budget",
            "0.3",
        ]
    )
    assert status == 0
    printed = capsys.readouterr().out
    assert "expected quality" in printed and "expected cost per query" in printed
    routes = pd.read_csv(tmp_path / "routes.csv")
    assert list(routes.columns) == [
        "query_id",
        "model",
        "predicted_score",
        "predicted_cost",
        "utility",
    ]
    assert len(routes) == 50
    point = json.loads((tmp_path / "routes.csv.operating_point.json").read_text())
    assert abs(point["expected_cost"][0] - 0.3) <= 0.015
    expected = load_deployed(out).calibrate(budget=0.3).route(queries["text"].tolist()[:50])
    assert routes["model"].tolist() == expected["model"].tolist()


def test_route_refuses_both_operating_flags(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(
            ["route", "--router", "r", "--queries", "q", "--out", "o", "--budget", "1",
             "--max-share", "m=0.1"]
        )  # fmt: skip
    assert "not allowed with" in capsys.readouterr().err


def test_utility_only_router_reports_a_budget_that_does_not_bind(dataset):
    _, queries, outcomes = dataset
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        deployed, _ = train_deployed(
            queries, outcomes, family="ECC", embedder="static", router_kwargs={"n_clusters": 5}
        )
    deployed.calibrate(budget=0.85)
    assert deployed.cost_weight == 0.0
    assert "does not bind" in deployed.operating_point["meaning"]
    assert np.isnan(deployed.route(queries["text"].tolist()[:5])["predicted_score"]).all()
