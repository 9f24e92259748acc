"""Issue 38: a budget calibrated on held-out data carries to the test split (cross-fitted calibration).

The calibration chooses the cost weight on out-of-fold predictions of every non-test query
(:func:`ecc_lib.routers.deploy.train_deployed`); the test split (20 %, seed 42) is scored by
:func:`ecc_lib.routing_evaluation.deployed.deployed_report`.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ecc_lib.data.sources import load_bundled
from ecc_lib.routers.deploy import load_deployed, router_parts, train_deployed
from ecc_lib.routing_evaluation.deployed import deployed_report


@pytest.fixture(scope="module")
def small():
    queries, outcomes = load_bundled("dcrouter")
    queries = queries.iloc[:800]
    outcomes = outcomes[outcomes["query_id"].isin(queries["query_id"])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return train_deployed(
            queries, outcomes, family="kNN", embedder="static", calibration_folds=5
        )


def test_every_non_test_query_calibrates_out_of_fold(small, tmp_path):
    deployed, split = small
    cal = deployed.calibration
    # all non-test queries calibrate (not a quarter of them), the test split stays apart
    assert len(cal.query_ids) == split.train.n_queries == 800 - split.test.n_queries
    assert not set(cal.query_ids) & set(split.test.query_ids)
    # the kNN router memorises its training queries (inverse-distance weights): in-sample
    # predictions would reproduce the truth; the calibration's are out of fold
    u_in, c_in, _ = router_parts(deployed.router, cal.embeddings, model_cost=deployed.model_cost)
    u_true = cal.mu_q - deployed.beta * cal.sigma_q
    assert np.abs(u_in - u_true).max() < 1e-3
    assert np.abs(cal.u0 - u_true).mean() > 0.1
    assert cal.u0.shape == cal.cost.shape == cal.mu_q.shape
    # the out-of-fold predictions travel with the saved router
    deployed.calibrate(budget=0.4)
    loaded = load_deployed(deployed.save(tmp_path / "router"))
    np.testing.assert_array_equal(loaded.calibration.u0, cal.u0)
    assert loaded.calibrate(budget=0.4).cost_weight == deployed.cost_weight


@pytest.fixture(scope="module")
def full():
    from ecc_lib.embed.encode import embed_texts

    queries, outcomes = load_bundled("dcrouter")
    x = embed_texts(queries["text"].astype(str).tolist(), model_name="static", show_progress=False)
    return queries, outcomes, x


NOISE = (
    "sampling noise of the 1,198-query test split (measured numbers in /work/notes/i38b.md): at "
    "seed 42 kNN's test split is cheap: its 95% bootstrap interval of the test mean cost excludes "
    "the budget while the calibration meets it; across 21 split seeds (0-19, 42) the same calibration "
    "is unbiased (mean error +0.1%, sd 5.3% of the budget at 0.25)"
)


def _noise(family, budget, folds=None):
    return pytest.param(family, budget, folds, marks=pytest.mark.xfail(strict=True, reason=NOISE))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("family", "budget", "folds"),
    [
        _noise("kNN", 0.25),  # test 0.226 [0.215, 0.240], calibration 0.249
        _noise("kNN", 0.4),  # test 0.371 [0.353, 0.392], calibration 0.400
        ("kNN", 0.6, None),
        _noise("kNN", 0.25, 5),  # test 0.235 [0.221, 0.248], calibration 0.250
        ("kNN", 0.4, 5),
        ("kNN", 0.6, 5),
        ("MLP", 0.25, None),
        ("MLP", 0.4, None),
        ("MLP", 0.6, None),
    ],
)
def test_budget_carries_to_the_test_split(full, family, budget, folds):
    queries, outcomes, x = full
    kwargs = {"max_iter": 30} if family == "MLP" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        deployed, split = train_deployed(
            queries, outcomes, family=family, embedder="static", embeddings=x,
            router_kwargs=kwargs, calibration_folds=folds,
        )  # fmt: skip
    deployed.calibrate(budget=budget)
    report = deployed_report(deployed, split)
    cost, quality = report["rows"]["router"]["cost"], report["rows"]["router"]["quality"]
    assert report["n_test"] == 1198
    assert quality[1] < quality[0] < quality[2]
    assert cost[1] < cost[0] < cost[2]
    assert abs(cost[0] - budget) <= 0.05 * budget
