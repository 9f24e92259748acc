"""Bradley-Terry: hand-computed cases, gradients, invariances, batched fits, bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import brentq, check_grad

from ecc_lib.bradley_terry import (
    bootstrap_bt,
    bt_log_likelihood,
    bt_log_likelihood_grad,
    bt_objective,
    bt_objective_grad,
    count_matrix,
    fit_bt_counts,
    fit_bt_pairwise,
    score_ranks,
    win_counts,
    win_probability,
)
from ecc_lib.data.comparisons import Comparisons


def _comparisons(query, a, b, y, n_queries=None, models=None):
    query = np.asarray(query, dtype=np.int64)
    n_queries = int(query.max()) + 1 if n_queries is None else n_queries
    m = int(max(np.max(a), np.max(b))) + 1
    return Comparisons(
        query=query,
        model_a=np.asarray(a, dtype=np.int64),
        model_b=np.asarray(b, dtype=np.int64),
        y=np.asarray(y, dtype=float),
        query_ids=np.array([f"q{i}" for i in range(n_queries)]),
        models=tuple(models or [f"m{i}" for i in range(m)]),
    )


# ---------------------------------------------------------------- hand-computed cases


def test_log_likelihood_hand_computed():
    # P(m1 beats m0) = sigmoid(log 2) = 2/3; m1 won twice, m0 once
    theta = np.array([0.0, np.log(2.0)])
    wins = np.array([[0.0, 1.0], [2.0, 0.0]])
    expected = 2 * np.log(2 / 3) + np.log(1 / 3)
    assert bt_log_likelihood(theta, wins) == pytest.approx(expected, rel=1e-12)


def test_two_model_mle_is_log_odds():
    wins = np.array([[0.0, 3.0], [1.0, 0.0]])  # m0 beat m1 three times, lost once
    theta = fit_bt_counts(wins, alpha=0.0)
    assert theta[0] - theta[1] == pytest.approx(np.log(3.0), abs=1e-9)
    assert theta.sum() == pytest.approx(0.0, abs=1e-12)


def test_two_model_map_solves_stationarity():
    # theta = (d/2, -d/2); f(d) = -3 log s(d) - log s(-d) + d^2/4 -> f'(d) = -3(1-s) + s + d/2
    def score(d):
        s = 1.0 / (1.0 + np.exp(-d))
        return -3.0 * (1.0 - s) + s + d / 2.0

    d = brentq(score, -10, 10, xtol=1e-14)
    theta = fit_bt_counts(np.array([[0.0, 3.0], [1.0, 0.0]]), alpha=1.0)
    assert theta == pytest.approx([d / 2, -d / 2], abs=1e-9)


def test_balanced_cycle_gives_equal_scores():
    wins = np.array([[0, 2, 0], [0, 0, 2], [2, 0, 0]], dtype=float)
    assert fit_bt_counts(wins, alpha=0.0) == pytest.approx(np.zeros(3), abs=1e-9)
    assert fit_bt_counts(wins, alpha=1.0) == pytest.approx(np.zeros(3), abs=1e-9)


def test_three_model_chain_matches_generic_optimiser():
    from scipy.optimize import minimize

    wins = np.array([[0, 5, 7], [2, 0, 4], [1, 3, 0]], dtype=float)
    for alpha in (0.3, 1.0):
        theta = fit_bt_counts(wins, alpha=alpha)
        ref = minimize(
            bt_objective,
            np.zeros(3),
            args=(wins, alpha),
            jac=bt_objective_grad,
            method="BFGS",
            options={"gtol": 1e-12},
        ).x
        assert theta == pytest.approx(ref, abs=1e-7)
        assert theta[0] > theta[1] > theta[2]


def test_ties_count_half_each_direction():
    c = _comparisons([0, 0], [0, 0], [1, 1], [0.5, 1.0])
    wins = win_counts(c)
    assert wins == pytest.approx(np.array([[0.0, 0.5], [1.5, 0.0]]))
    tie_only = _comparisons([0], [0], [1], [0.5])
    assert fit_bt_pairwise(tie_only) == pytest.approx([0.0, 0.0], abs=1e-12)


def test_weights_scale_counts():
    c = _comparisons([0, 0, 1], [0, 1, 0], [1, 2, 2], [1.0, 0.0, 1.0])
    w = np.array([0.5, 2.0, 3.0])
    wins = win_counts(c, weights=w)
    expected = np.zeros((3, 3))
    expected[1, 0] += 0.5  # b=1 beat a=0
    expected[1, 2] += 2.0  # a=1 beat b=2
    expected[2, 0] += 3.0  # b=2 beat a=0
    assert wins == pytest.approx(expected)
    assert fit_bt_pairwise(c, weights=w) == pytest.approx(fit_bt_counts(expected), abs=1e-12)


def test_count_matrix_rows_and_normalisation():
    c = _comparisons([0, 0, 0, 2], [0, 1, 0, 1], [1, 2, 2, 2], [1.0, 0.5, 0.0, 1.0], n_queries=4)
    raw = count_matrix(c).toarray()
    assert raw.shape == (4, 9)
    assert raw[0, 1 * 3 + 0] == 1.0  # 1 beat 0
    assert raw[0, 1 * 3 + 2] == 0.5 and raw[0, 2 * 3 + 1] == 0.5  # tie
    assert raw[0, 0 * 3 + 2] == 1.0  # 0 beat 2
    assert raw.sum(axis=1) == pytest.approx([3.0, 0.0, 1.0, 0.0])
    norm = count_matrix(c, normalize=True).toarray()
    assert norm.sum(axis=1) == pytest.approx([1.0, 0.0, 1.0, 0.0])
    assert raw.sum(axis=0).reshape(3, 3) == pytest.approx(win_counts(c))


# ---------------------------------------------------------------- gradients


@pytest.mark.parametrize("alpha", [0.0, 1.0, 2.5])
def test_gradients_match_finite_differences(alpha):
    rng = np.random.default_rng(3)
    wins = rng.random((5, 5)) * 4
    np.fill_diagonal(wins, 0.0)
    for _ in range(5):
        theta = rng.normal(scale=2.0, size=5)
        err = check_grad(
            lambda t: bt_log_likelihood(t, wins), lambda t: bt_log_likelihood_grad(t, wins), theta
        )
        assert err < 1e-5
        err = check_grad(
            lambda t: bt_objective(t, wins, alpha=alpha),
            lambda t: bt_objective_grad(t, wins, alpha=alpha),
            theta,
        )
        assert err < 1e-5


def test_batched_gradient_matches_per_profile():
    rng = np.random.default_rng(4)
    wins = rng.random((3, 4, 4))
    theta = rng.normal(size=(3, 4))
    grads = bt_log_likelihood_grad(theta, wins)
    for k in range(3):
        assert grads[k] == pytest.approx(bt_log_likelihood_grad(theta[k], wins[k]))
    values = bt_log_likelihood(theta, wins)
    assert values.shape == (3,)
    assert values[1] == pytest.approx(bt_log_likelihood(theta[1], wins[1]))


def test_fit_reaches_zero_gradient():
    rng = np.random.default_rng(5)
    wins = rng.random((20, 6, 6)) * 10
    theta = fit_bt_counts(wins, alpha=1.0)
    assert np.abs(bt_objective_grad(theta, wins, alpha=1.0)).max() < 1e-8


# ---------------------------------------------------------------- invariances (property tests)

_wins = arrays(np.float64, (4, 4), elements=st.floats(0.0, 20.0, allow_nan=False))
_theta = arrays(np.float64, (4,), elements=st.floats(-5.0, 5.0, allow_nan=False))


@settings(max_examples=40, deadline=None)
@given(theta=_theta, wins=_wins, shift=st.floats(-50.0, 50.0))
def test_likelihood_is_shift_invariant(theta, wins, shift):
    base = bt_log_likelihood(theta, wins)
    assert bt_log_likelihood(theta + shift, wins) == pytest.approx(base, rel=1e-9, abs=1e-9)
    # the likelihood gradient is orthogonal to the all-ones direction
    assert bt_log_likelihood_grad(theta, wins).sum() == pytest.approx(0.0, abs=1e-8)


@settings(max_examples=30, deadline=None)
@given(wins=_wins, alpha=st.floats(0.05, 5.0))
def test_map_fit_is_centred_and_optimal(wins, alpha):
    theta = fit_bt_counts(wins, alpha=alpha)
    assert theta.sum() == pytest.approx(0.0, abs=1e-8)
    # no shift improves the penalised objective (the prior fixes the gauge)
    value = bt_objective(theta, wins, alpha=alpha)
    for shift in (-0.1, 0.1):
        assert bt_objective(theta + shift, wins, alpha=alpha) >= value - 1e-10


@settings(max_examples=25, deadline=None)
@given(wins=_wins, scale=st.floats(0.1, 10.0))
def test_relabelling_models_permutes_scores(wins, scale):
    perm = np.array([2, 0, 3, 1])
    theta = fit_bt_counts(wins * scale)
    permuted = fit_bt_counts((wins * scale)[np.ix_(perm, perm)])
    assert permuted == pytest.approx(theta[perm], abs=1e-7)


def test_batched_fit_equals_individual_fits():
    rng = np.random.default_rng(6)
    wins = rng.random((7, 5, 5)) * rng.uniform(0.01, 50, size=(7, 1, 1))
    batched = fit_bt_counts(wins, alpha=0.7)
    for k in range(7):
        assert batched[k] == pytest.approx(fit_bt_counts(wins[k], alpha=0.7), abs=1e-9)


def test_warm_start_reaches_same_optimum():
    rng = np.random.default_rng(7)
    wins = rng.random((4, 6, 6)) * 5
    cold = fit_bt_counts(wins)
    warm = fit_bt_counts(wins, theta0=rng.normal(scale=3, size=(4, 6)))
    assert warm == pytest.approx(cold, abs=1e-9)


def test_win_probability_and_ranks():
    theta = np.array([1.0, -1.0, 0.0])
    p = win_probability(theta)
    assert p[0, 1] == pytest.approx(1 / (1 + np.exp(-2.0)))
    assert p + p.T == pytest.approx(np.ones((3, 3)))
    assert score_ranks(theta).tolist() == [1.0, 3.0, 2.0]
    assert score_ranks(np.array([0.5, 0.5, 0.0])).tolist() == [1.5, 1.5, 3.0]


# ---------------------------------------------------------------- errors


def test_errors():
    with pytest.raises(ValueError, match="non-negative"):
        fit_bt_counts(np.array([[0.0, -1.0], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="shape"):
        fit_bt_counts(np.ones((2, 3)))
    with pytest.raises(ValueError, match="alpha"):
        fit_bt_counts(np.ones((2, 2)), alpha=-1.0)
    single = Comparisons(
        query=np.array([], dtype=np.int64),
        model_a=np.array([], dtype=np.int64),
        model_b=np.array([], dtype=np.int64),
        y=np.array([]),
        query_ids=np.array(["q0"]),
        models=("only",),
    )
    with pytest.raises(ValueError, match="at least 2 models"):
        fit_bt_pairwise(single)
    empty = Comparisons(
        query=np.array([], dtype=np.int64),
        model_a=np.array([], dtype=np.int64),
        model_b=np.array([], dtype=np.int64),
        y=np.array([]),
        query_ids=np.array(["q0"]),
        models=("a", "b"),
    )
    with pytest.raises(ValueError, match="no|at least one comparison"):
        fit_bt_pairwise(empty)


# ---------------------------------------------------------------- bootstrap


def _ladder_comparisons(n_queries=200, n_models=4, seed=0):
    rng = np.random.default_rng(seed)
    theta = np.linspace(1.5, -1.5, n_models)
    q = np.repeat(np.arange(n_queries), 3)
    a = rng.integers(0, n_models, len(q))
    b = (a + rng.integers(1, n_models, len(q))) % n_models
    y = (rng.random(len(q)) < 1 / (1 + np.exp(-(theta[b] - theta[a])))).astype(float)
    return _comparisons(q, a, b, y, n_queries=n_queries), theta


def test_bootstrap_intervals_cover_and_are_deterministic():
    c, truth = _ladder_comparisons()
    boot = bootstrap_bt(c, n_boot=200, random_state=1)
    assert boot.replicates.shape == (200, 4)
    assert np.all(boot.score_low <= boot.scores) and np.all(boot.scores <= boot.score_high)
    assert np.all(boot.score_high - boot.score_low > 0)
    assert boot.ranks.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert boot.rank_low[0] == 1.0 and boot.rank_high[-1] == 4.0
    assert np.all((boot.rank_low >= 1) & (boot.rank_high <= 4))
    again = bootstrap_bt(c, n_boot=200, random_state=1)
    assert np.array_equal(again.replicates, boot.replicates)
    other = bootstrap_bt(c, n_boot=200, random_state=2)
    assert not np.array_equal(other.replicates, boot.replicates)
    frame = boot.to_frame()
    assert list(frame["model"]) == ["m0", "m1", "m2", "m3"]


def test_bootstrap_replicate_equals_refit_on_resample():
    c, _ = _ladder_comparisons(n_queries=30, seed=2)
    boot = bootstrap_bt(c, n_boot=3, random_state=5, batch_size=2)
    draws = np.random.default_rng(5).integers(0, c.n_queries, size=(2, c.n_queries))
    # first replicate: queries resampled with multiplicity
    mult = np.bincount(draws[0], minlength=c.n_queries)
    expected = fit_bt_pairwise(c, weights=mult[c.query].astype(float))
    assert boot.replicates[0] == pytest.approx(expected, abs=1e-8)


def test_bootstrap_by_comparison_is_narrower_with_more_data():
    small, _ = _ladder_comparisons(n_queries=60, seed=3)
    large, _ = _ladder_comparisons(n_queries=600, seed=3)
    w_small = bootstrap_bt(small, n_boot=200, unit="comparison")
    w_large = bootstrap_bt(large, n_boot=200, unit="comparison")
    width = lambda b: (b.score_high - b.score_low).mean()  # noqa: E731
    assert width(w_large) < width(w_small)
    with pytest.raises(ValueError, match="unit"):
        bootstrap_bt(small, unit="model")
