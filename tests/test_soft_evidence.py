"""Soft evidence: win probabilities under empirical score distributions, equality with sampled
evidence when every pair has one observation, and the held-out comparison."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from ecc_lib.data.comparisons import make_comparisons
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.soft_evidence import (
    has_repeats,
    sampled_outcomes,
    soft_outcomes,
    true_win_probability,
)
from ecc_lib.protocol.experiments.soft_evidence import soft_evidence_comparison
from ecc_lib.protocol.settings import Protocol
from ecc_lib.synthetic.capability import make_capability_data
from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes


def _outcomes(observations: dict) -> pd.DataFrame:
    rows = [
        {"query_id": q, "model": m, "score": s}
        for (q, m), scores in observations.items()
        for s in scores
    ]
    return pd.DataFrame(rows)


def test_soft_outcome_matches_hand_computation():
    out = _outcomes({("q", "a"): [0.0, 1.0], ("q", "b"): [1.0, 1.0, 0.0]})
    pairs = make_comparisons(out, ties="half")
    soft = soft_outcomes(out, pairs)
    # a=0: b wins twice, ties once -> 2.5/3; a=1: b ties twice, loses once -> 1/3
    expected = (2.5 / 3 + 1 / 3) / 2
    y = soft.y[0] if pairs.models[pairs.model_b[0]] == "b" else 1 - soft.y[0]
    assert y == pytest.approx(expected)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]), min_size=1, max_size=5),
    st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]), min_size=1, max_size=5),
    st.lists(st.floats(0, 1), min_size=1, max_size=4),
)
def test_soft_outcome_equals_all_pairs_count(xa, xb, xc):
    out = _outcomes(
        {("q1", "a"): xa, ("q1", "b"): xb, ("q1", "c"): xc, ("q2", "a"): xc, ("q2", "b"): xa}
    )
    pairs = make_comparisons(out, ties="half", query_ids=["q1", "q2"])
    soft = soft_outcomes(out, pairs)
    obs = {
        k: np.asarray(v)
        for k, v in {
            ("q1", "a"): xa,
            ("q1", "b"): xb,
            ("q1", "c"): xc,
            ("q2", "a"): xc,
            ("q2", "b"): xa,
        }.items()
    }
    for q, a, b, y in zip(soft.query, soft.model_a, soft.model_b, soft.y, strict=True):
        sa = obs[(soft.query_ids[q], soft.models[a])]
        sb = obs[(soft.query_ids[q], soft.models[b])]
        diff = sb[None, :] - sa[:, None]
        expected = ((diff > 0) + 0.5 * (diff == 0)).mean()
        assert y == pytest.approx(expected, abs=1e-12)


def test_soft_equals_sampled_with_one_observation_per_pair():
    data = make_capability_data(n_queries=150, n_models=5, random_state=2)
    assert not has_repeats(data.outcomes)
    pairs = make_comparisons(data.outcomes, ties="half", random_state=0)
    soft = soft_outcomes(data.outcomes, pairs)
    sampled = sampled_outcomes(data.outcomes, pairs, random_state=5)
    np.testing.assert_array_equal(soft.y, pairs.y)
    np.testing.assert_array_equal(soft.y, sampled.y)
    rows = pd.Index(data.queries["query_id"]).get_indexer(pairs.query_ids)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = ECC(n_clusters=3, random_state=0).fit(data.embeddings[rows], soft)
        b = ECC(n_clusters=3, random_state=0).fit(data.embeddings[rows], sampled)
    np.testing.assert_array_equal(a.theta_, b.theta_)


def test_sampled_outcomes_draw_observed_values():
    out = _outcomes({("q", "a"): [0.0, 1.0], ("q", "b"): [0.5]})
    pairs = make_comparisons(out, ties="half")
    ys = {float(sampled_outcomes(out, pairs, random_state=s).y[0]) for s in range(20)}
    assert ys == {0.0, 1.0}


def test_true_win_probability_is_complementary():
    p = np.random.default_rng(0).random((3, 2, 4))
    t = true_win_probability(p)
    np.testing.assert_allclose(t + t.transpose(0, 2, 1), 1.0)


def test_soft_evidence_comparison_on_repeated_data():
    s = make_repeated_outcomes(n_queries=200, n_models=3, n_rewrites=2, n_decodes=2, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = soft_evidence_comparison(
            s.queries,
            s.outcomes,
            s.embeddings,
            protocol=Protocol(seeds=(0,), mode="embedding", n_boot=200),
            estimator=ECC(n_clusters=3),
            n_draws=2,
            truth=true_win_probability(s.truth.p),
        )
    for part in ("logloss", "vs_truth"):
        t = r[part]
        assert len(t["sampled"]) == 2
        assert t["target_entropy"] <= t["soft"] + 1e-12 or part == "vs_truth"
        low, high = t["sampled_minus_soft_ci95"]
        assert low <= t["sampled_minus_soft"] <= high
    assert r["n_test"] == 40


def test_soft_evidence_needs_repeats():
    data = make_capability_data(n_queries=50, n_models=3, random_state=0)
    with pytest.raises(ValueError, match="repeated observations"):
        soft_evidence_comparison(data.queries, data.outcomes, data.embeddings)
