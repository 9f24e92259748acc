"""Label-informed ECC: the category prior, its EM hook, the cross-validated weight and robustness
to labels that carry no information (shuffled labels)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from ecc_lib.data.comparisons import Comparisons
from ecc_lib.data.splits import disjoint_from_probe, split_probe, split_queries
from ecc_lib.ecc.baselines import GlobalBT
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.label_informed import LabelInformedECC, category_log_prior
from ecc_lib.ecc.mixture import comparison_nll
from ecc_lib.synthetic.capability import make_capability_data


@pytest.fixture(scope="module")
def planted():
    data = make_capability_data(n_queries=700, n_models=6, random_state=4)
    train, test = split_queries(len(data.queries), test_size=0.3, random_state=0)
    return data, train, test


def _gain(model, reference, data, train, test, labels):
    c_test = data.comparisons.select_queries(test)
    probe, scored = split_probe(c_test, n_probes=1)
    x = data.embeddings[test]
    p = model.predict_proba(scored, embeddings=x, probe=probe, labels=labels[test])
    ref = reference.predict_proba(scored, embeddings=x)
    a, b = comparison_nll(ref, scored.y).sum(), comparison_nll(p, scored.y).sum()
    return 100.0 * (a - b) / a


def _fit(model, data, train, labels):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(
            data.embeddings[train], data.comparisons.select_queries(train), labels=labels[train]
        )


def test_category_log_prior_matches_hand_computation():
    r = np.array([[0.5, 0.5], [1.0, 0.0], [0.0, 1.0]])
    absolute = np.log([[2.5 / 4, 1.5 / 4], [1 / 3, 2 / 3]])
    got = category_log_prior(r, np.array([0, 0, 1]), 2, smoothing=1.0)
    np.testing.assert_allclose(got, absolute)
    overall = np.log([2.5 / 5, 2.5 / 5])
    got = category_log_prior(r, np.array([0, 0, 1]), 2, smoothing=1.0, prior="relative")
    np.testing.assert_allclose(got, absolute - overall)


def test_zero_weight_is_exactly_ecc(planted):
    data, train, _ = planted
    labels = np.array([f"c{k}" for k in data.capability])
    ecc = _fit(ECC(n_clusters=5, random_state=1), data, train, labels)
    lab = _fit(
        LabelInformedECC(n_clusters=5, label_weight=0.0, random_state=1), data, train, labels
    )
    np.testing.assert_array_equal(lab.theta_, ecc.theta_)
    np.testing.assert_array_equal(lab.responsibilities_, ecc.responsibilities_)
    assert lab.label_weight_ == 0.0


@pytest.mark.parametrize("prior", ["absolute", "relative"])
def test_informative_labels_help_and_shuffled_labels_are_ignored(planted, prior):
    data, train, test = planted
    truth = np.array([f"c{k}" for k in data.capability])
    shuffled = np.random.default_rng(0).permutation(truth)
    reference = _fit(GlobalBT(), data, train, truth)
    ecc = _fit(ECC(n_clusters=4, random_state=0), data, train, truth)
    gain_ecc = _gain(ecc, reference, data, train, test, truth)
    informed = _fit(LabelInformedECC(n_clusters=4, prior=prior, random_state=0), data, train, truth)
    assert informed.label_weight_ > 0
    assert _gain(informed, reference, data, train, test, truth) > gain_ecc + 1.0
    blind = _fit(LabelInformedECC(n_clusters=4, prior=prior, random_state=0), data, train, shuffled)
    assert set(blind.cv_scores_) == set(blind.label_weights)
    assert abs(_gain(blind, reference, data, train, test, shuffled) - gain_ecc) <= 0.5


def test_absolute_prior_with_tiny_smoothing_keeps_the_objective_non_decreasing(planted):
    data, train, _ = planted
    labels = np.array([f"c{k}" for k in data.capability])
    model = _fit(
        LabelInformedECC(n_clusters=4, label_weight=1.0, smoothing=1e-9, random_state=2),
        data,
        train,
        labels,
    )
    history = np.asarray(model.objective_history_)
    assert len(history) > 2
    assert np.all(np.diff(history) >= -1e-6 * np.abs(history[1:]))


def test_unknown_categories_get_no_prior(planted):
    data, train, test = planted
    labels = np.array([f"c{k}" for k in data.capability])
    model = _fit(
        LabelInformedECC(n_clusters=5, label_weight=2.0, random_state=0), data, train, labels
    )
    x = data.embeddings[test][:4]
    unknown = np.array(["never-seen"] * 4)
    np.testing.assert_allclose(
        model.predict_responsibilities(x, labels=unknown),
        ECC.predict_responsibilities(model, x),
    )
    prior = model.query_log_prior(labels[test][:4], 4)
    assert np.all(np.isfinite(prior)) and np.abs(prior).max() > 0


def test_disjoint_from_probe():
    probe = Comparisons(
        np.array([0, 1]),
        np.array([0, 2]),
        np.array([1, 3]),
        np.array([1.0, 0.0]),
        np.array(["q0", "q1"]),
        ("a", "b", "c", "d"),
    )
    scored = Comparisons(
        np.array([0, 0, 1, 1]),
        np.array([2, 0, 0, 1]),
        np.array([3, 2, 1, 2]),
        np.ones(4),
        np.array(["q0", "q1"]),
        ("a", "b", "c", "d"),
    )
    np.testing.assert_array_equal(disjoint_from_probe(scored, probe), [True, False, True, False])


def test_bad_parameters_are_named():
    x = np.eye(3, dtype=np.float32)
    c = Comparisons(
        np.array([0, 1, 2]),
        np.zeros(3, int),
        np.ones(3, int),
        np.ones(3),
        np.array(["a", "b", "c"]),
        ("m0", "m1"),
    )
    with pytest.raises(ValueError, match="label_weight"):
        LabelInformedECC(label_weight="auto").fit(x, c, labels=["u", "v", "w"])
    with pytest.raises(ValueError, match="cv_pairs"):
        LabelInformedECC(cv_pairs="some").fit(x, c, labels=["u", "v", "w"])
    with pytest.raises(ValueError, match="needs labels"):
        LabelInformedECC().fit(x, c)
