"""Comparison sampling: determinism per seed, ties, counts per query, splits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecc_lib.data.comparisons import Comparisons, make_comparisons, score_matrix
from ecc_lib.data.schema import DataValidationError
from ecc_lib.data.splits import split_probe, split_queries


def random_outcomes(n_queries=50, n_models=6, n_obs=1, seed=0, binary=True):
    rng = np.random.default_rng(seed)
    rows = pd.MultiIndex.from_product(
        [[f"q{i}" for i in range(n_queries)], [f"m{j}" for j in range(n_models)], range(n_obs)],
        names=["query_id", "model", "decode_id"],
    ).to_frame(index=False)
    rows["score"] = rng.integers(0, 2, len(rows)).astype(float) if binary else rng.random(len(rows))
    return rows


def test_same_seed_same_pairs_and_other_seed_differs():
    outcomes = random_outcomes()
    first = make_comparisons(outcomes, n_pairs=7, random_state=3).to_frame()
    second = make_comparisons(outcomes, n_pairs=7, random_state=3).to_frame()
    other = make_comparisons(outcomes, n_pairs=7, random_state=4).to_frame()
    pd.testing.assert_frame_equal(first, second)
    assert not first.equals(other)


def test_no_ties_when_dropped_and_half_when_kept():
    outcomes = random_outcomes()
    dropped = make_comparisons(outcomes, ties="drop", random_state=0)
    assert set(np.unique(dropped.y)) <= {0.0, 1.0}
    kept = make_comparisons(outcomes, ties="half", random_state=0)
    assert 0.5 in kept.y
    assert len(kept) == 50 * 15  # every pair of 6 models on every query


def test_counts_per_query_respect_n_pairs_and_availability():
    outcomes = random_outcomes(n_queries=200)
    comparisons = make_comparisons(outcomes, n_pairs=7, ties="drop", random_state=1)
    scores, _, _ = score_matrix(outcomes, query_ids=comparisons.query_ids)
    wins = np.nansum(scores, axis=1)
    available = wins * (6 - wins)  # non-tie pairs with binary scores
    counts = comparisons.pairs_per_query()
    np.testing.assert_array_equal(counts, np.minimum(available, 7))
    # pairs within a query are distinct
    frame = comparisons.to_frame()
    assert not frame.duplicated(["query_id", "model_a", "model_b"]).any()


def test_min_pairs_drops_and_reports(caplog):
    outcomes = random_outcomes(n_queries=30)
    outcomes.loc[outcomes["query_id"] == "q0", "score"] = 1.0  # all tied: no usable pair
    with caplog.at_level("INFO", logger="ecc_lib.data.comparisons"):
        comparisons = make_comparisons(outcomes, n_pairs=7, min_pairs=2, random_state=0)
    assert "q0" in comparisons.dropped_query_ids
    assert "q0" not in set(comparisons.query_ids)
    assert (comparisons.pairs_per_query() >= 2).all()
    assert "left out" in caplog.text


def test_repeated_observations_compared_by_mean():
    outcomes = pd.DataFrame(
        {
            "query_id": ["q"] * 6,
            "model": ["a", "a", "a", "b", "b", "b"],
            "decode_id": [0, 1, 2, 0, 1, 2],
            "score": [1, 1, 0, 1, 0, 0.0],
        }
    )
    comparisons = make_comparisons(outcomes, random_state=0)
    assert comparisons.to_frame()[["model_a", "model_b", "y"]].values.tolist() == [["a", "b", 0.0]]


def test_split_queries_is_seeded_and_sized():
    train, test = split_queries(100, test_size=0.2, random_state=42)
    assert test.sum() == 20 and not (train & test).any() and (train | test).all()
    np.testing.assert_array_equal(test, split_queries(100, test_size=0.2, random_state=42)[1])
    with pytest.raises(ValueError):
        split_queries(100, test_size=1.5)


def test_split_probe_takes_first_pairs_of_each_query():
    outcomes = random_outcomes(n_queries=40)
    comparisons = make_comparisons(outcomes, n_pairs=7, min_pairs=2, random_state=0)
    probe, scored = split_probe(comparisons, n_probes=2)
    assert (probe.pairs_per_query() == np.minimum(comparisons.pairs_per_query(), 2)).all()
    assert len(probe) + len(scored) == len(comparisons)
    first_rows = np.searchsorted(comparisons.query, np.arange(comparisons.n_queries))
    assert probe.model_a[::2].tolist() == comparisons.model_a[first_rows].tolist()


def test_round_trip_and_select_queries():
    comparisons = make_comparisons(random_outcomes(), n_pairs=3, random_state=0)
    again = Comparisons.from_frame(
        comparisons.to_frame(), query_ids=comparisons.query_ids, models=comparisons.models
    )
    np.testing.assert_array_equal(again.y, comparisons.y)
    mask = np.zeros(comparisons.n_queries, bool)
    mask[::2] = True
    part = comparisons.select_queries(mask)
    assert part.n_queries == mask.sum()
    assert set(part.to_frame()["query_id"]) <= set(comparisons.query_ids[mask])


def test_errors():
    one_model = pd.DataFrame({"query_id": ["q"], "model": ["a"], "score": [1.0]})
    with pytest.raises(DataValidationError, match="at least 2 models"):
        make_comparisons(one_model)
    with pytest.raises(ValueError, match="ties"):
        make_comparisons(random_outcomes(), ties="maybe")


@settings(max_examples=30, deadline=None)
@given(
    n_queries=st.integers(2, 30),
    n_models=st.integers(2, 7),
    n_pairs=st.integers(1, 10),
    seed=st.integers(0, 10_000),
)
def test_property_pairs_are_valid(n_queries, n_models, n_pairs, seed):
    outcomes = random_outcomes(n_queries, n_models, seed=seed, binary=False)
    comparisons = make_comparisons(outcomes, n_pairs=n_pairs, random_state=seed)
    assert (comparisons.pairs_per_query() <= n_pairs).all()
    assert (comparisons.model_a < comparisons.model_b).all()
    scores, _, _ = score_matrix(
        outcomes, query_ids=comparisons.query_ids, models=comparisons.models
    )
    left = scores[comparisons.query, comparisons.model_a]
    right = scores[comparisons.query, comparisons.model_b]
    np.testing.assert_array_equal(comparisons.y, (right > left).astype(float))
