"""Many models: pair sampling by index, counts over observed pairs, Newton-CG BT fits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

import ecc_lib.bradley_terry as bt
import ecc_lib.data.comparisons as comparisons_module
from ecc_lib.bradley_terry import (
    count_matrix,
    fit_bt_counts,
    fit_bt_pairs,
    pair_counts,
    pair_log_probs,
)
from ecc_lib.data.comparisons import Comparisons, sample_pairs
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.mixture import log_prob_table

# ---------------------------------------------------------------- sampling


def _eligible(row: np.ndarray, ties: str) -> set[tuple[int, int]]:
    ia, ib = np.triu_indices(len(row), 1)
    ok = ~np.isnan(row[ia]) & ~np.isnan(row[ib])
    if ties == "drop":
        ok &= row[ia] != row[ib]
    return set(zip(ia[ok].tolist(), ib[ok].tolist()))


@pytest.mark.parametrize("ties", ["drop", "half"])
def test_index_draw_is_uniform_over_eligible_pairs_and_probe_slot(ties):
    row = np.array([0.1, 0.5, 0.5, np.nan, 0.9, 0.1, 0.3, 0.5])
    n = 6000
    scores = np.repeat(row[None], n, axis=0)
    ids = np.arange(n).astype(str)
    models = tuple(f"m{j}" for j in range(len(row)))
    c = sample_pairs(scores, ids, models, n_pairs=3, ties=ties, random_state=0)
    eligible = _eligible(row, ties)
    pairs = pd.Series(list(zip(c.model_a.tolist(), c.model_b.tolist())))
    counts = pairs.value_counts()
    assert set(counts.index) == eligible
    assert (c.pairs_per_query() == 3).all()
    assert chisquare(counts.to_numpy()).pvalue > 1e-3
    first = np.searchsorted(c.query, np.arange(n))
    probe = pairs.iloc[first].value_counts()
    assert set(probe.index) == eligible and chisquare(probe.to_numpy()).pvalue > 1e-3
    frame = c.to_frame()
    assert not frame.duplicated(["query_id", "model_a", "model_b"]).any()
    left, right = row[c.model_a], row[c.model_b]
    np.testing.assert_array_equal(c.y, np.where(right > left, 1.0, np.where(right < left, 0, 0.5)))


@settings(max_examples=25, deadline=None)
@given(
    n_queries=st.integers(1, 25),
    n_models=st.integers(17, 40),
    n_pairs=st.integers(1, 12),
    levels=st.integers(1, 4),
    missing=st.floats(0.0, 0.6),
    ties=st.sampled_from(["drop", "half"]),
    seed=st.integers(0, 10_000),
)
def test_property_index_draw_takes_min_of_eligible_and_n_pairs(
    n_queries, n_models, n_pairs, levels, missing, ties, seed
):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, levels, (n_queries, n_models)).astype(float)
    scores[rng.random(scores.shape) < missing] = np.nan
    c = sample_pairs(
        scores,
        np.arange(n_queries).astype(str),
        tuple(map(str, range(n_models))),
        n_pairs=n_pairs,
        ties=ties,
        random_state=seed,
    )
    kept = c.query_ids.astype(int)
    per_query = np.zeros(n_queries, dtype=int)
    per_query[kept] = c.pairs_per_query()
    available = np.array([len(_eligible(r, ties)) for r in scores])
    np.testing.assert_array_equal(per_query, np.minimum(available, n_pairs))
    rows = kept[c.query]
    got = set(zip(rows.tolist(), c.model_a.tolist(), c.model_b.tolist()))
    assert len(got) == len(c)  # distinct within a query
    for q, a, b in got:
        assert (a, b) in _eligible(scores[q], ties)


def test_small_leaderboards_keep_the_key_draw_and_chunking_does_not_matter(monkeypatch):
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 2, (300, 9)).astype(float)
    args = (scores, np.arange(300).astype(str), tuple(map(str, range(9))))
    whole = sample_pairs(*args, n_pairs=7, random_state=4).to_frame()
    monkeypatch.setattr(comparisons_module, "KEY_CHUNK_ROWS", 7)
    chunked = sample_pairs(*args, n_pairs=7, random_state=4).to_frame()
    pd.testing.assert_frame_equal(whole, chunked)
    monkeypatch.setattr(comparisons_module, "DENSE_MAX_MODELS", 2)
    by_index = sample_pairs(*args, n_pairs=7, random_state=4)
    assert (
        by_index.pairs_per_query()
        == pd.Series(whole["query_id"])
        .value_counts()
        .sort_index(key=lambda s: s.astype(int))
        .to_numpy()
    ).all()


def test_sample_pairs_checks_shape():
    with pytest.raises(ValueError, match="queries x models"):
        sample_pairs(np.zeros((3, 4)), ["a", "b"], ["m0", "m1", "m2", "m3"], n_pairs=2)


# ---------------------------------------------------------------- counts over observed pairs


def _random_comparisons(n=60, m=40, pairs=5, tie_share=0.2, seed=0) -> Comparisons:
    rng = np.random.default_rng(seed)
    q = np.repeat(np.arange(n), pairs)
    a = rng.integers(0, m, len(q))
    b = (a + rng.integers(1, m, len(q))) % m
    y = rng.integers(0, 2, len(q)).astype(float)
    y[rng.random(len(q)) < tie_share] = 0.5
    return Comparisons(
        query=q,
        model_a=a,
        model_b=b,
        y=y,
        query_ids=np.arange(n).astype(str),
        models=tuple(f"m{j}" for j in range(m)),
    )


def test_pair_counts_are_count_matrix_without_empty_columns():
    c = _random_comparisons()
    dense = count_matrix(c, normalize=True).toarray()
    counts = pair_counts(c, normalize=True)
    m = c.n_models
    assert counts.n_pairs <= 2 * len(c)
    np.testing.assert_array_equal(counts.codes, np.flatnonzero(dense.any(axis=0)))
    np.testing.assert_allclose(counts.matrix.toarray(), dense[:, counts.codes], atol=1e-15)
    theta = np.random.default_rng(2).normal(size=(4, m))
    np.testing.assert_allclose(
        pair_log_probs(theta, counts.winner, counts.loser), log_prob_table(theta)[counts.codes]
    )
    with pytest.raises(ValueError, match="missing from codes"):
        pair_counts(c, codes=counts.codes[1:])


# ---------------------------------------------------------------- BT on observed pairs


@pytest.mark.parametrize("alpha", [1.0, 0.2])
def test_newton_cg_matches_dense_newton(alpha):
    c = _random_comparisons(n=200, m=30, seed=3)
    counts = pair_counts(c)
    rng = np.random.default_rng(5)
    weights = rng.random((6, counts.n_pairs)) * np.asarray(counts.matrix.sum(axis=0))
    dense = np.zeros((6, 30 * 30))
    dense[:, counts.codes] = weights
    reference = fit_bt_counts(dense.reshape(6, 30, 30), alpha=alpha)
    for solver in ("newton", "newton-cg"):
        theta = fit_bt_pairs(counts.winner, counts.loser, weights, 30, alpha=alpha, solver=solver)
        np.testing.assert_allclose(theta, reference, atol=1e-9)
    warm = fit_bt_pairs(
        counts.winner,
        counts.loser,
        weights,
        30,
        alpha=alpha,
        solver="newton-cg",
        theta0=reference + rng.normal(size=reference.shape),
    )
    np.testing.assert_allclose(warm, reference, atol=1e-9)
    single = fit_bt_pairs(counts.winner, counts.loser, weights[2], 30, alpha=alpha)
    np.testing.assert_allclose(single, reference[2], atol=1e-9)


def test_fit_bt_pairs_errors():
    w, lo = np.array([0, 1]), np.array([1, 2])
    with pytest.raises(ValueError, match="shape"):
        fit_bt_pairs(w, lo, np.ones((2, 3)), 3)
    with pytest.raises(ValueError, match="outside"):
        fit_bt_pairs(w, np.array([1, 5]), np.ones(2), 3)
    with pytest.raises(ValueError, match="non-negative"):
        fit_bt_pairs(w, lo, -np.ones(2), 3)
    with pytest.raises(ValueError, match="solver"):
        fit_bt_pairs(w, lo, np.ones(2), 3, solver="lbfgs")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_ecc_with_newton_cg_equals_dense_newton(monkeypatch):
    c = _random_comparisons(n=150, m=12, seed=7)
    x = np.random.default_rng(8).normal(size=(150, 16))
    params = dict(n_clusters=4, max_iter=25, dtype="float64", random_state=0)
    dense = ECC(**params).fit(x, c)
    monkeypatch.setattr(bt, "DENSE_NEWTON_MAX_MODELS", 1)
    cg = ECC(**params).fit(x, c)
    assert cg.n_iter_ == dense.n_iter_
    np.testing.assert_allclose(cg.theta_, dense.theta_, atol=1e-6)
    np.testing.assert_allclose(cg.responsibilities_, dense.responsibilities_, atol=1e-6)
    assert np.all(np.diff(cg.objective_history_) >= -1e-8 * np.abs(cg.objective_history_[1:]))
