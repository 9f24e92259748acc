"""Tests of ecc_lib.routers: the shared interface, hand cases, and beating random on planted data."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from ecc_lib import routers
from ecc_lib.dars import distributions as dars
from ecc_lib.data.splits import split_queries
from ecc_lib.routers.base import BestFixedRouter, RandomRouter, target_matrix
from ecc_lib.routers.training import TorchRouter
from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes

FAST = {
    "kNN": {},
    "MLP": {"hidden_layer_sizes": (32,), "max_iter": 60},
    "EmbedLLM-MF": {"n_iter": 150},
    "MIRT": {"n_iter": 150},
    "Avengers-Pro": {"n_clusters": 8, "n_init": 1},
    "GraphRouter": {"n_iter": 150},
}
ALL = {**FAST, "ECC": {"n_clusters": 8}, "Softmax-ranking": {}}
UTILITY_ONLY = {"ECC", "Softmax-ranking"}


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
    train, test = split_queries(obs.n_queries, test_size=0.25, random_state=42)
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
    u = a.predict_utility(planted["x_test"], cost_weight=0.3, beta=0.1)
    np.testing.assert_allclose(u, pred["mu_q"] - 0.3 * pred["mu_c"] - 0.1 * pred["sigma_q"])
    np.testing.assert_array_equal(
        a.route(planted["x_test"], cost_weight=0.3, beta=0.1), np.argmax(u, axis=1)
    )
    assert a.models_ == planted["train"].models


def test_utility_target_refuses_other_lambda(planted):
    router = routers.KNNRouter(target="utility", cost_weight=0.1, beta=0.2)
    router.fit(planted["x_train"], planted["train"])
    assert set(router.predict(planted["x_test"])) == {"utility"}
    router.route(planted["x_test"])  # the fit's weights work
    with pytest.raises(ValueError, match="cost_weight"):
        router.route(planted["x_test"], cost_weight=0.5)


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
    fixed = BestFixedRouter().fit(planted["x_train"], planted["train"])
    choice = fixed.route(planted["x_test"])
    assert len(set(choice.tolist())) == 1
    assert choice[0] == np.argmax(planted["train"].utility().mean(axis=0))
    rand = RandomRouter(random_state=0).fit(planted["x_train"], planted["train"])
    picks = rand.route(np.repeat(planted["x_test"], 20, axis=0))
    counts = np.bincount(picks, minlength=4) / len(picks)
    np.testing.assert_allclose(counts, 0.25, atol=0.03)
    again = RandomRouter(random_state=0).fit(planted["x_train"], planted["train"])
    np.testing.assert_array_equal(again.route(np.repeat(planted["x_test"], 20, axis=0)), picks)


def test_cluster_router_caps_clusters():
    x = np.random.default_rng(0).standard_normal((5, 3))
    u = np.random.default_rng(1).random((5, 2))
    with pytest.warns(UserWarning, match="n_clusters"):
        router = routers.ClusterRouter(n_clusters=32, random_state=0).fit(x, u)
    assert router.profiles_.shape == (5, 2)


def test_errors():
    router = routers.KNNRouter()
    with pytest.raises(NotFittedError, match="not fitted"):
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


def test_mf_and_mirt_beat_constant_predictor(planted):
    """Training ends below the loss of the best constant (per column) predictor."""
    y, _, _ = target_matrix(planted["train"])
    mf = routers.MatrixFactorizationRouter(n_iter=100, random_state=0)
    mf.fit(planted["x_train"], planted["train"])
    # standardised targets: the best constant has mean squared error 1 (per non-constant column)
    assert mf.loss_history_[-1] < 0.9 * mf.loss_history_[0] <= 1.0
    mirt = routers.MIRTRouter(n_iter=100, random_state=0).fit(planted["x_train"], planted["train"])
    z = mirt.scaler_.transform(y)
    mean = np.clip(z.mean(axis=0), 1e-3, 1 - 1e-3)
    logit = np.log(mean / (1 - mean))
    constant_loss = np.mean(np.logaddexp(0.0, logit) - z * logit)
    assert mirt.loss_history_[-1] < constant_loss - 0.02
    assert np.all(np.isfinite(mirt.loss_history_))


def test_ecc_router(planted):
    router = routers.ECCRouter(n_clusters=6, random_state=0, cost_weight=0.05, beta=0.2)
    router.fit(planted["x_train"], planted["train"])
    assert router.fitted_target_ == "utility"
    assert router.ecc_.theta_.shape == (6, 4)
    assert router.slope_ > 0
    u = router.predict_utility(planted["x_test"])
    strength = router._strength(planted["x_test"])
    np.testing.assert_array_equal(np.argmax(u, axis=1), np.argmax(strength, axis=1))
    with pytest.raises(ValueError, match="cost_weight"):
        router.route(planted["x_test"], cost_weight=1.0)
    again = routers.ECCRouter(n_clusters=6, random_state=0).fit(
        planted["x_train"], planted["train"]
    )
    np.testing.assert_allclose(again.predict_utility(planted["x_test"]), u)


# --------------------------------------------------------------------------------------------
# scikit-learn estimator API, torch hygiene, the two listwise / graph families


@pytest.mark.parametrize("name", list(ALL))
def test_routers_are_sklearn_estimators(planted, name):
    router = routers.make_router(name, random_state=4, **ALL[name])
    params = router.get_params()
    assert params["random_state"] == 4 and "cost_weight" in params
    copy = clone(router)
    assert copy.get_params() == params and copy is not router
    assert router.set_params(beta=0.3) is router and router.beta == 0.3
    assert repr(router).startswith(type(router).__name__ + "(")
    assert not any(k.endswith("_") for k in vars(router))
    with pytest.raises(NotFittedError):
        router.route(planted["x_test"])


@pytest.mark.parametrize("name", ["EmbedLLM-MF", "MIRT", "Softmax-ranking", "GraphRouter"])
def test_torch_routers_leave_global_state_alone(planted, name):
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    kwargs = {**ALL[name], "n_iter": 20}
    a = routers.make_router(name, random_state=7, **kwargs).fit(
        planted["x_train"], planted["train"]
    )
    # the fit drew its weights from its own generator, not torch's global one
    np.testing.assert_array_equal(torch.rand(3).numpy(), expected_next.numpy())
    assert torch.get_num_threads() == threads
    b = routers.make_router(name, random_state=7, **kwargs).fit(
        planted["x_train"], planted["train"]
    )
    np.testing.assert_array_equal(
        a.predict_utility(planted["x_test"]), b.predict_utility(planted["x_test"])
    )
    assert a.loss_history_ == b.loss_history_


def test_softmax_ranking_learns_the_soft_labels(planted):
    router = routers.SoftmaxRankingRouter(random_state=0).fit(planted["x_train"], planted["train"])
    u_train = planted["train"].utility()
    labels = dars.soft_labels(u_train, tau=router.tau)
    # the training cross-entropy falls below that of a constant (uniform) ranking
    assert router.loss_history_[-1] < 0.8 * np.log(4)
    # predicted utility: right up to a per-query constant, so its softmax is the predicted label
    predicted = dars.soft_labels(router.predict_utility(planted["x_train"]), tau=router.tau)
    agreement = np.mean(np.argmax(predicted, axis=1) == np.argmax(labels, axis=1))
    assert agreement > 0.7
    with pytest.raises(ValueError, match="target='utility'"):
        routers.SoftmaxRankingRouter(target="components").fit(planted["x_train"], planted["train"])
    with pytest.raises(ValueError, match="cost_weight"):
        router.route(planted["x_test"], cost_weight=0.5)


def test_softmax_ranking_single_shot_labels_come_from_the_draw(planted):
    """On single-shot targets the soft label is softmax(U / tau) of the drawn utilities: a router
    trained on a draw whose winners are all model 2 routes everything to model 2."""
    n = len(planted["x_train"])
    u = np.zeros((n, 4))
    u[:, 2] = 1.0
    router = routers.SoftmaxRankingRouter(random_state=0, n_iter=100).fit(planted["x_train"], u)
    assert set(router.route(planted["x_test"]).tolist()) == {2}


def test_graph_router_edges_and_masking(planted):
    router = routers.GraphRouter(random_state=0, n_iter=60).fit(
        planted["x_train"], planted["train"]
    )
    # edges hold the standardised targets (n_train, n_models, 3 components), in model order
    z = router.scaler_.transform(target_matrix(planted["train"])[0])
    assert router.edges_train_.shape == (len(planted["x_train"]), 4, 3)
    np.testing.assert_allclose(router.edges_train_[:, :, 0], z[:, :4])
    np.testing.assert_allclose(router.edges_train_[:, :, 2], z[:, 8:])
    # a new query's prediction does not depend on the other new queries (they are never context)
    x = planted["x_test"]
    together = router.predict(x)["mu_q"]
    alone = router.predict(x[:3])["mu_q"]
    np.testing.assert_allclose(together[:3], alone, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="mask_fraction"):
        routers.GraphRouter(mask_fraction=1.0).fit(planted["x_train"], planted["train"])


def test_early_stopping_keeps_the_best_step():
    torch = pytest.importorskip("torch")
    from ecc_lib.routers import networks

    weight = torch.nn.Parameter(torch.zeros(1))
    module = torch.nn.Module()
    module.weight = weight
    # training pulls the weight to 2, the validation loss is smallest at 1
    history = networks.train_full_batch(
        module,
        lambda: ((weight - 2.0) ** 2).sum(),
        n_iter=500,
        learning_rate=0.05,
        weight_decay=0.0,
        validation_loss=lambda: ((weight - 1.0) ** 2).sum(),
        patience=10,
    )
    assert len(history) < 500
    assert abs(float(weight.detach()) - 1.0) < 0.06


# --------------------------------------------------------------------------------------------
# One place per concept: parameters, the torch training path, target scaling, guards

TORCH_FAMILIES = ["EmbedLLM-MF", "MIRT", "Softmax-ranking", "GraphRouter"]
TRAINING_SETTINGS = {
    "n_iter",
    "learning_rate",
    "weight_decay",
    "early_stopping",
    "validation_fraction",
    "patience",
    "n_threads",
}


@pytest.mark.parametrize("name", list(ALL))
def test_parameters_are_keyword_only_and_include_the_shared_ones(name):
    cls = routers.router_families()[name]
    params = set(cls().get_params())
    assert {"target", "cost_weight", "beta", "random_state"} <= params
    if name in TORCH_FAMILIES:
        assert issubclass(cls, TorchRouter) and TRAINING_SETTINGS <= params
    with pytest.raises(TypeError):
        cls(1)  # keyword-only: no positional meaning to rely on


def test_family_defaults_override_the_shared_training_settings():
    assert routers.MatrixFactorizationRouter().learning_rate == 0.03
    assert routers.MatrixFactorizationRouter().early_stopping is False
    assert routers.SoftmaxRankingRouter().n_iter == 500
    assert routers.GraphRouter().weight_decay == 1e-4
    assert routers.GraphRouter().n_iter == TorchRouter().n_iter == 300
    assert routers.SoftmaxRankingRouter().target == routers.ECCRouter().target == "utility"


def test_factorisation_can_stop_early_through_the_shared_path(planted):
    """Early stopping is one code path for every torch family, the factorisation included."""
    kwargs = {"n_iter": 300, "early_stopping": True, "patience": 1, "random_state": 2}
    a = routers.MatrixFactorizationRouter(**kwargs).fit(planted["x_train"], planted["train"])
    b = routers.MatrixFactorizationRouter(**kwargs).fit(planted["x_train"], planted["train"])
    assert len(a.loss_history_) < 300
    assert a.loss_history_ == b.loss_history_
    full = routers.MatrixFactorizationRouter(n_iter=300, random_state=2)
    assert len(full.fit(planted["x_train"], planted["train"]).loss_history_) == 300


@pytest.mark.parametrize("name", ["ECC", "Softmax-ranking"])
def test_utility_only_families_refuse_components_before_fitting(planted, name):
    router = routers.make_router(name, target="components")
    with pytest.raises(ValueError, match="target='utility'"):
        router.fit(planted["x_train"], planted["train"])
    assert not hasattr(router, "fitted_target_")


@pytest.mark.parametrize("name", ["MLP", "EmbedLLM-MF", "MIRT", "GraphRouter"])
def test_scaled_families_predict_on_the_target_scale(planted, name):
    """The families that learn scaled targets map predictions back with their own scaler_."""
    router = routers.make_router(name, random_state=0, **FAST[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        router.fit(planted["x_train"], planted["train"])
    y, _, _ = target_matrix(planted["train"])
    pred = router.predict(planted["x_train"])
    # sigma_q (the last 4 columns): its mean and its scaled mean lie far apart, and the mean
    # prediction lies near the mean target
    sigma, scaled_sigma = y[:, 8:].mean(), router.scaler_.transform(y)[:, 8:].mean()
    assert abs(sigma - scaled_sigma) > 0.3
    assert abs(pred["sigma_q"].mean() - sigma) < 0.1
