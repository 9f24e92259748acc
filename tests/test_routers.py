"""Tests of ecc_lib.routers: the shared interface, hand cases, and beating random on planted data."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import check_grad

from ecc_lib import dars, routers
from ecc_lib.comparisons import split_queries
from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes

FAST = {
    "kNN": {},
    "MLP": {"hidden_layer_sizes": (32,), "max_iter": 60},
    "EmbedLLM-MF": {"n_iter": 150},
    "MIRT": {"n_iter": 150},
    "Avengers-Pro": {"n_clusters": 8, "n_init": 1},
}
ALL = {**FAST, "ECC": {"n_clusters": 8}}


@pytest.fixture(scope="module")
def planted():
    """Planted task: the best model depends on a latent cluster visible in the features."""
    data = make_repeated_outcomes(
        n_queries=400,
        n_models=4,
        n_rewrites=3,
        n_decodes=3,
        n_clusters=4,
        embedding_dim=16,
        random_state=1,
    )
    obs = dars.repeated_observations(data.outcomes)
    position = {q: i for i, q in enumerate(data.queries["query_id"])}
    x = data.embeddings[[position[q] for q in obs.query_ids]].astype(float)
    train, test = split_queries(obs.n_queries, 0.25, 42)
    return {
        "x_train": x[train],
        "x_test": x[test],
        "train": dars.capability_distributions(obs.select_queries(train)),
        "single": dars.single_shot_distributions(obs.select_queries(train), random_state=3),
        "test": dars.capability_distributions(obs.select_queries(test)),
    }


def test_families_registered():
    assert set(ALL) <= set(routers.router_families())
    with pytest.raises(ValueError, match="unknown router"):
        routers.make_router("nope")


@pytest.mark.parametrize("name", list(ALL))
@pytest.mark.parametrize("supervision", ["train", "single"])
def test_router_beats_random_on_planted_task(planted, name, supervision):
    router = routers.make_router(name, random_state=0, **ALL[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        router.fit(planted["x_train"], planted[supervision])
    u = planted["test"].utility()
    choice = router.route(planted["x_test"])
    achieved = u[np.arange(len(choice)), choice].mean()
    random_expected = u.mean()
    best_fixed = u.mean(axis=0).max()
    # the planted structure gives a large margin: a working router clears random by > 0.1
    assert achieved > random_expected + 0.1, (achieved, random_expected)
    assert achieved > best_fixed, (achieved, best_fixed)


@pytest.mark.parametrize("name", list(FAST))
def test_router_interface_and_determinism(planted, name):
    kwargs = FAST[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = routers.make_router(name, random_state=5, **kwargs)
        assert a.fit(planted["x_train"], planted["train"]) is a
        b = routers.make_router(name, random_state=5, **kwargs).fit(
            planted["x_train"], planted["train"]
        )
    pred = a.predict(planted["x_test"])
    assert set(pred) == {"mu_q", "mu_c", "sigma_q"}
    n_test = len(planted["x_test"])
    for value in pred.values():
        assert value.shape == (n_test, 4)
    np.testing.assert_allclose(pred["mu_q"], b.predict(planted["x_test"])["mu_q"])
    u = a.predict_utility(planted["x_test"], lambda_=0.3, beta=0.1)
    np.testing.assert_allclose(u, pred["mu_q"] - 0.3 * pred["mu_c"] - 0.1 * pred["sigma_q"])
    np.testing.assert_array_equal(
        a.route(planted["x_test"], lambda_=0.3, beta=0.1), np.argmax(u, axis=1)
    )
    assert a.models_ == planted["train"].models


def test_utility_target_refuses_other_lambda(planted):
    router = routers.KNNRouter(target="utility", lambda_=0.1, beta=0.2)
    router.fit(planted["x_train"], planted["train"])
    assert set(router.predict(planted["x_test"])) == {"utility"}
    router.route(planted["x_test"])  # the fit's weights work
    with pytest.raises(ValueError, match="lambda"):
        router.route(planted["x_test"], lambda_=0.5)


def test_plain_utility_matrix_target():
    x = np.array([[0.0], [1.0], [10.0]])
    u = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    router = routers.KNNRouter(n_neighbors=1).fit(x, u)
    assert router.fitted_target_ == "utility"
    assert router.route(np.array([[0.2], [9.0]])).tolist() == [0, 1]


def test_knn_inverse_distance_hand_case():
    x = np.array([[0.0], [1.0], [3.0]])
    targets = {
        "mu_q": np.array([[0.0], [1.0], [5.0]]),
        "mu_c": np.zeros((3, 1)),
        "sigma_q": np.zeros((3, 1)),
    }
    router = routers.KNNRouter(n_neighbors=2, eps=0.0).fit(x, targets)
    # query 0.25: neighbours 0 (d 0.25, w 4) and 1 (d 0.75, w 4/3) -> (0*4 + 1*4/3) / (16/3)
    np.testing.assert_allclose(router.predict(np.array([[0.25]]))["mu_q"], [[0.25]])
    # k larger than the training set is capped
    big = routers.KNNRouter(n_neighbors=50).fit(x, targets)
    assert big.predict(np.array([[1.0]]))["mu_q"].shape == (1, 1)


def test_best_fixed_and_random_references(planted):
    fixed = routers.BestFixedRouter().fit(planted["x_train"], planted["train"])
    choice = fixed.route(planted["x_test"])
    assert len(set(choice.tolist())) == 1
    assert choice[0] == np.argmax(planted["train"].utility().mean(axis=0))
    rand = routers.RandomRouter(random_state=0).fit(planted["x_train"], planted["train"])
    picks = rand.route(np.repeat(planted["x_test"], 20, axis=0))
    counts = np.bincount(picks, minlength=4) / len(picks)
    np.testing.assert_allclose(counts, 0.25, atol=0.03)
    again = routers.RandomRouter(random_state=0).fit(planted["x_train"], planted["train"])
    np.testing.assert_array_equal(again.route(np.repeat(planted["x_test"], 20, axis=0)), picks)


def test_cluster_router_caps_clusters():
    x = np.random.default_rng(0).standard_normal((5, 3))
    u = np.random.default_rng(1).random((5, 2))
    with pytest.warns(UserWarning, match="n_clusters"):
        router = routers.ClusterRouter(n_clusters=32, random_state=0).fit(x, u)
    assert router.profiles_.shape == (5, 2)


def test_errors():
    router = routers.KNNRouter()
    with pytest.raises(RuntimeError, match="not fitted"):
        router.predict(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="embeddings but"):
        router.fit(np.zeros((3, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="NaN"):
        router.fit(np.zeros((2, 2)), np.array([[0.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="lacks"):
        router.fit(np.zeros((2, 2)), {"mu_q": np.zeros((2, 2))})
    router.fit(np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="features"):
        router.predict(np.zeros((1, 3)))


def test_mf_and_mirt_gradients():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 5))
    z = rng.random((7, 6))
    shapes_mf = {"W": (5, 3), "V": (6, 3), "b": (6,)}
    onehot = np.eye(2)[np.repeat([0, 1], 3)]
    shapes_mirt = {"A": (5, 3), "theta": (6, 3), "w": (5, 2), "b": (6,)}
    for shapes, fn in (
        (shapes_mf, lambda p: routers.mf_loss_and_grad(p, x, z)),
        (shapes_mirt, lambda p: routers.mirt_loss_and_grad(p, x, z, onehot)),
    ):
        sizes = [int(np.prod(v)) for v in shapes.values()]

        def unpack(flat, shapes=shapes, sizes=sizes):
            parts = np.split(flat, np.cumsum(sizes)[:-1])
            return {k: a.reshape(v) for (k, v), a in zip(shapes.items(), parts, strict=True)}

        def loss(flat, fn=fn, unpack=unpack):
            return fn(unpack(flat))[0]

        def grad(flat, fn=fn, unpack=unpack, shapes=shapes):
            grads = fn(unpack(flat))[1]
            return np.concatenate([grads[k].reshape(-1) for k in shapes])

        point = 0.5 * rng.standard_normal(sum(sizes))
        assert check_grad(loss, grad, point) < 1e-6


def test_mf_and_mirt_beat_constant_predictor(planted):
    """Training ends below the loss of the best constant (per column) predictor."""
    y, _, _ = routers.target_matrix(planted["train"])
    mf = routers.MatrixFactorizationRouter(n_iter=100, random_state=0)
    mf.fit(planted["x_train"], planted["train"])
    # standardised targets: the best constant has mean squared error 1 (per non-constant column)
    assert mf.loss_history_[-1] < 0.9 * mf.loss_history_[0] <= 1.0
    mirt = routers.MIRTRouter(n_iter=100, random_state=0).fit(planted["x_train"], planted["train"])
    z = np.clip(mirt.scaler_.forward(y), 0, 1)
    mean = np.clip(z.mean(axis=0), 1e-3, 1 - 1e-3)
    logit = np.log(mean / (1 - mean))
    constant_loss = np.mean(np.logaddexp(0.0, logit) - z * logit)
    assert mirt.loss_history_[-1] < constant_loss - 0.02
    assert np.all(np.isfinite(mirt.loss_history_))


def test_ecc_router(planted):
    router = routers.ECCRouter(n_clusters=6, random_state=0, lambda_=0.05, beta=0.2)
    router.fit(planted["x_train"], planted["train"])
    assert router.fitted_target_ == "utility"
    assert router.ecc_.theta_.shape == (6, 4)
    assert router.slope_ > 0
    u = router.predict_utility(planted["x_test"])
    strength = router._strength(planted["x_test"])
    np.testing.assert_array_equal(np.argmax(u, axis=1), np.argmax(strength, axis=1))
    with pytest.raises(ValueError, match="lambda"):
        router.route(planted["x_test"], lambda_=1.0)
    again = routers.ECCRouter(n_clusters=6, random_state=0).fit(
        planted["x_train"], planted["train"]
    )
    np.testing.assert_allclose(again.predict_utility(planted["x_test"]), u)
