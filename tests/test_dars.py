"""Tests of ecc_lib.dars.distributions: capability distributions, utility, labels, single-shot draws, diagnostics."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ecc_lib.dars import distributions as dars
from ecc_lib.dars import label_instability as dars_diagnostics
from ecc_lib.dars import winners as dars_winners
from ecc_lib.data.schema import DataValidationError
from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes


def long_frame(table: dict[tuple[str, str], list[float]], cost=None) -> pd.DataFrame:
    """Outcomes from {(query, model): [scores over variants]} (decode_id 0)."""
    rows = []
    for (q, m), scores in table.items():
        for v, s in enumerate(scores):
            row = {"query_id": q, "model": m, "score": s, "variant_id": v, "decode_id": 0}
            if cost is not None:
                row["cost"] = cost[(q, m)][v] if isinstance(cost[(q, m)], list) else cost[(q, m)]
            rows.append(row)
    return pd.DataFrame(rows)


def brute_force_winners(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Winner probabilities and tied-top probability by enumerating all success patterns."""
    n_q, n_m = p.shape
    win = np.zeros_like(p)
    tie = np.zeros(n_q)
    for q in range(n_q):
        for pattern in itertools.product((0, 1), repeat=n_m):
            s = np.array(pattern)
            prob = np.prod(np.where(s == 1, p[q], 1 - p[q]))
            winners = np.flatnonzero(s) if s.any() else np.arange(n_m)
            win[q, winners] += prob / len(winners)
            tie[q] += prob * (len(winners) >= 2)
    return win, tie


# ------------------------------------------------------------------ closed-form flip rate


def test_flip_two_models_half_each():
    probs = dars_winners.winner_probabilities_exact(np.array([[0.5, 0.5]]))
    np.testing.assert_allclose(probs, [[0.5, 0.5]])
    np.testing.assert_allclose(dars_winners.flip_probability(probs), [0.5])
    np.testing.assert_allclose(
        dars_winners.tied_top_probability_exact(np.array([[0.5, 0.5]])), [0.5]
    )


def test_flip_one_model_always_right():
    # A always right, B right with 0.3: A wins 0.7 + 0.3 / 2 = 0.85
    p = np.array([[1.0, 0.3], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    probs = dars_winners.winner_probabilities_exact(p)
    np.testing.assert_allclose(probs[0], [0.85, 0.15])
    np.testing.assert_allclose(
        dars_winners.flip_probability(probs), [1 - 0.85**2 - 0.15**2, 0, 0.5, 0.5]
    )
    np.testing.assert_allclose(dars_winners.tied_top_probability_exact(p), [0.3, 0.0, 1.0, 1.0])


def test_flip_three_models_hand_case():
    # p = (1, 1, 0): the two sure models split the win; p = (0.5, 0, 0): A wins 0.5 + 0.5 / 3
    p = np.array([[1.0, 1.0, 0.0], [0.5, 0.0, 0.0]])
    probs = dars_winners.winner_probabilities_exact(p)
    np.testing.assert_allclose(probs[0], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(probs[1], [0.5 + 0.5 / 3, 0.5 / 3, 0.5 / 3])


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=2, max_value=7).flatmap(
        lambda m: arrays(
            float,
            (3, m),
            elements=st.sampled_from([0.0, 1.0, 0.5]) | st.floats(0.0, 1.0),
        )
    )
)
def test_exact_winners_match_enumeration(p):
    probs = dars_winners.winner_probabilities_exact(p)
    expected, tie = brute_force_winners(p)
    np.testing.assert_allclose(probs, expected, atol=1e-12)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(dars_winners.tied_top_probability_exact(p), tie, atol=1e-12)
    flip = dars_winners.flip_probability(probs)
    n_models = p.shape[1]
    assert np.all(flip >= -1e-12) and np.all(flip <= 1 - 1 / n_models + 1e-12)


def test_flip_rate_from_outcomes_hand_case():
    frame = long_frame(
        {
            ("q1", "A"): [1, 0],
            ("q1", "B"): [0, 1],
            ("q2", "A"): [1, 1],
            ("q2", "B"): [0, 0],
        }
    )
    winners = dars_winners.single_shot_winners(frame)
    assert winners.method == "exact"
    np.testing.assert_allclose(winners.flip, [0.5, 0.0])
    np.testing.assert_allclose(winners.tied_top, [0.5, 0.0])


def test_disagreement_hand_case():
    # A always right (U = 1), B right half of the time: single-shot winner is B with 0.25
    frame = long_frame({("q", "A"): [1, 1, 1, 1], ("q", "B"): [1, 0, 1, 0]})
    obs = dars.repeated_observations(frame)
    u = dars.capability_distributions(obs).utility()
    winners = dars_winners.single_shot_winners(obs, u)
    np.testing.assert_allclose(winners.disagreement, [0.25])


def test_monte_carlo_agrees_with_exact_hand_case():
    frame = long_frame({("q", "A"): [1, 0, 1, 0], ("q", "B"): [1, 1, 1, 0]})
    exact = dars_winners.single_shot_winners(frame, method="exact")
    mc = dars_winners.single_shot_winners(
        frame, method="monte_carlo", n_draws=20000, random_state=3
    )
    assert mc.method == "monte_carlo" and mc.n_draws == 20000
    # sd of a 20000-pair estimate is below 0.004
    np.testing.assert_allclose(mc.flip, exact.flip, atol=0.015)
    np.testing.assert_allclose(mc.tied_top, exact.tied_top, atol=0.015)
    np.testing.assert_allclose(mc.winner_probabilities, exact.winner_probabilities, atol=0.015)


def test_exact_and_monte_carlo_agree_within_ci_on_synthetic():
    data = make_repeated_outcomes(n_queries=300, n_models=4, n_rewrites=3, n_decodes=3)
    obs = dars.repeated_observations(data.outcomes)
    exact = dars_diagnostics.subset_diagnostics(obs, method="exact", n_boot=500)
    mc = dars_diagnostics.subset_diagnostics(obs, method="monte_carlo", n_draws=1000, n_boot=500)
    e, m = exact.summary, mc.summary
    assert e["flip_rate_method"] == "exact" and m["flip_rate_method"] == "monte_carlo"
    for key in ("winner_flip_rate", "tied_top_share", "single_vs_distribution_disagreement"):
        low, high = m[f"{key}_ci95"]
        assert low <= e[key] <= high, key
        low, high = e[f"{key}_ci95"]
        assert low <= m[key] <= high, key


def test_continuous_scores_use_monte_carlo():
    data = make_repeated_outcomes(
        n_queries=40, n_models=3, n_rewrites=2, n_decodes=2, score_type="continuous"
    )
    obs = dars.repeated_observations(data.outcomes)
    assert not obs.is_binary
    assert dars_winners.single_shot_winners(obs, n_draws=1000).method == "monte_carlo"
    with pytest.raises(ValueError, match="binary"):
        dars_winners.single_shot_winners(obs, method="exact")


# ------------------------------------------------------------------ distributions, utility


def test_capability_distributions_hand_case():
    frame = long_frame(
        {("q1", "A"): [1, 0, 1], ("q1", "B"): [0.5], ("q2", "A"): [1, 1, 1], ("q2", "B"): [0.2]},
        cost={("q1", "A"): [1.0, 1.0, 4.0], ("q1", "B"): 3.0, ("q2", "A"): 2.0, ("q2", "B"): 5.0},
    )
    dist = dars.capability_distributions(frame)
    assert dist.models == ("A", "B")
    np.testing.assert_array_equal(dist.n_obs, [[3, 1], [3, 1]])
    np.testing.assert_allclose(dist.mu_q, [[2 / 3, 0.5], [1.0, 0.2]])
    # ddof = 1; a single observation has sigma 0 by definition
    np.testing.assert_allclose(dist.sigma_q, [[np.std([1, 0, 1], ddof=1), 0], [0, 0]])
    # pair mean costs 2, 3, 2, 5 -> min-max over the dataset -> 0, 1/3, 0, 1
    np.testing.assert_allclose(dist.mu_c, [[0, 1 / 3], [0, 1]])
    u = dist.utility(cost_weight=0.5, beta=0.2)
    np.testing.assert_allclose(u, dist.mu_q - 0.5 * dist.mu_c - 0.2 * dist.sigma_q)
    frame_out = dist.to_frame()
    assert list(frame_out.columns) == ["query_id", "model", "n_obs", "mu_q", "sigma_q", "mu_c"]
    assert len(frame_out) == 4


def test_utility_defaults_and_labels():
    u = dars.utility(np.array([[0.8, 0.9]]), np.array([[0.0, 1.0]]), np.array([[0.0, 0.1]]))
    np.testing.assert_allclose(u, [[0.8, 0.9 - 0.05 - 0.02]])
    assert dars.hard_labels(u).tolist() == [1]
    assert dars.DEFAULT_LAMBDA == 0.05 and dars.DEFAULT_BETA == 0.2


def test_no_cost_means_zero_mu_c(caplog):
    frame = long_frame({("q", "A"): [1, 0], ("q", "B"): [1, 1]})
    with caplog.at_level(logging.INFO, logger="ecc_lib.data.observations"):
        obs = dars.repeated_observations(frame)
    assert not obs.cost_available
    assert "no cost" in caplog.text
    np.testing.assert_array_equal(dars.capability_distributions(obs).mu_c, 0.0)


@settings(max_examples=50, deadline=None)
@given(
    arrays(float, (4, 3), elements=st.floats(-5, 5)),
    st.floats(0.01, 10.0),
)
def test_soft_labels_are_distributions(u, tau):
    soft = dars.soft_labels(u, tau=tau)
    np.testing.assert_allclose(soft.sum(axis=1), 1.0)
    assert np.all(soft >= 0)
    # the hard label carries the largest soft mass
    assert np.all(soft[np.arange(4), dars.hard_labels(u)] >= soft.max(axis=1) - 1e-12)


def test_soft_labels_temperature_limits():
    u = np.array([[0.1, 0.3, 0.2]])
    np.testing.assert_allclose(dars.soft_labels(u, tau=1e-4), [[0, 1, 0]], atol=1e-12)
    np.testing.assert_allclose(dars.soft_labels(u, tau=1e4), [[1 / 3] * 3], atol=1e-4)
    with pytest.raises(ValueError):
        dars.soft_labels(u, tau=0.0)


def test_label_shares_split_ties():
    u = np.array([[1.0, 1.0, 0.0], [0.0, 0.5, 0.2]])
    shares = dars.label_shares(u, ("a", "b", "c"))
    assert shares == pytest.approx({"a": 0.25, "b": 0.75, "c": 0.0})


def test_regression_targets():
    frame = long_frame({("q", "A"): [1, 0], ("q", "B"): [1, 1]})
    targets = dars.regression_targets(dars.capability_distributions(frame))
    assert set(targets) == {"mu_q", "mu_c", "sigma_q"}
    np.testing.assert_allclose(targets["mu_q"], [[0.5, 1.0]])


# ------------------------------------------------------------------ single shot and seeds


def test_single_shot_draws_deterministic_per_seed():
    data = make_repeated_outcomes(n_queries=50, n_models=3, n_rewrites=3, n_decodes=2)
    obs = dars.repeated_observations(data.outcomes)
    a = dars.single_shot_draws(obs, n_draws=5, random_state=7)
    b = dars.single_shot_draws(obs, n_draws=5, random_state=7)
    c = dars.single_shot_draws(obs, n_draws=5, random_state=8)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    assert a[0].shape == (5, 50, 3)


def test_single_shot_draws_come_from_the_pair():
    frame = long_frame(
        {("q1", "A"): [0.1, 0.2], ("q1", "B"): [0.7], ("q2", "A"): [0.3], ("q2", "B"): [0.8, 0.9]}
    )
    scores, _ = dars.single_shot_draws(frame, n_draws=400, random_state=0)
    assert set(np.unique(scores[:, 0, 0])) == {0.1, 0.2}
    assert set(np.unique(scores[:, 1, 1])) == {0.8, 0.9}
    np.testing.assert_array_equal(scores[:, 0, 1], 0.7)
    # uniform among the pair's observations
    assert abs((scores[:, 0, 0] == 0.1).mean() - 0.5) < 0.1
    dist = dars.single_shot_distributions(frame, random_state=1)
    assert dist.kind == "single_shot"
    np.testing.assert_array_equal(dist.sigma_q, 0.0)
    np.testing.assert_array_equal(dist.n_obs, 1)


def test_monte_carlo_deterministic_per_seed():
    data = make_repeated_outcomes(n_queries=30, n_models=3, n_rewrites=2, n_decodes=2)
    obs = dars.repeated_observations(data.outcomes)
    a = dars_winners.single_shot_winners(obs, method="monte_carlo", n_draws=1000, random_state=1)
    b = dars_winners.single_shot_winners(obs, method="monte_carlo", n_draws=1000, random_state=1)
    c = dars_winners.single_shot_winners(obs, method="monte_carlo", n_draws=1000, random_state=2)
    np.testing.assert_array_equal(a.flip, b.flip)
    assert not np.array_equal(a.flip, c.flip)


# ------------------------------------------------------------------ subsets and diagnostics


def grid_frame() -> pd.DataFrame:
    """2 queries x 2 models x 2 variants x 2 decodes with known values."""
    rows = []
    for q, m, v, d in itertools.product(("q1", "q2"), ("A", "B"), (0, 1), (0, 1)):
        score = float((v + d + (m == "A")) % 2) if q == "q1" else float(m == "A")
        rows.append({"query_id": q, "model": m, "score": score, "variant_id": v, "decode_id": d})
    return pd.DataFrame(rows)


def test_observation_subsets_definitions():
    subsets = dars.observation_subsets(grid_frame())
    assert set(subsets) == {"input", "output", "both"}
    assert np.all(subsets["input"].decode_id == 0)
    assert np.all(subsets["output"].variant_id == 0)
    assert subsets["both"].n_observations == 16
    assert subsets["input"].n_observations == 8 and subsets["output"].n_observations == 8


def test_subset_not_applicable_is_none():
    # rewrites only (decode_id 0): the decode subset holds one observation per pair
    frame = long_frame({("q", "A"): [1, 0, 1], ("q", "B"): [0, 0, 1]})
    result = dars_diagnostics.label_instability(frame, n_boot=100)
    assert result["output"] is None
    assert result["input"] is not None and result["both"] is not None
    # one observation per pair everywhere: nothing applies
    single = long_frame({("q", "A"): [1], ("q", "B"): [0]})
    assert all(v is None for v in dars_diagnostics.label_instability(single, n_boot=100).values())


def test_label_instability_summary_values():
    result = dars_diagnostics.label_instability(grid_frame(), n_boot=200)
    both = result["both"].summary
    # q1: both models alternate 0/1 (p = 0.5 each): flip 0.5; q2: A always wins: flip 0
    assert both["winner_flip_rate"] == pytest.approx(0.25)
    assert both["tied_top_share"] == pytest.approx(0.25)
    assert both["unstable_pair_share"] == pytest.approx(0.5)
    assert both["mean_sigma"] == pytest.approx(0.5 * np.std([0, 1, 1, 0], ddof=1))
    assert both["flip_rate_method"] == "exact"
    low, high = both["winner_flip_rate_ci95"]
    assert low <= both["winner_flip_rate"] <= high
    assert set(both["labels"]) == {"A", "B"}
    assert sum(both["labels"].values()) == pytest.approx(1.0)
    per_query = result["both"].per_query
    assert list(per_query["query_id"]) == ["q1", "q2"]
    np.testing.assert_allclose(per_query["flip"], [0.5, 0.0])


# ------------------------------------------------------------------ errors


def test_query_with_one_model_raises():
    frame = long_frame({("q1", "A"): [1], ("q1", "B"): [0], ("q2", "A"): [1]})
    with pytest.raises(DataValidationError, match="single model.*q2"):
        dars.repeated_observations(frame)


def test_negative_cost_raises():
    frame = long_frame({("q", "A"): [1], ("q", "B"): [0]}, cost={("q", "A"): -1.0, ("q", "B"): 1})
    with pytest.raises(DataValidationError, match="cost"):
        dars.repeated_observations(frame)
    with pytest.raises(DataValidationError, match="cost"):
        dars.repeated_observations(frame, validate=False)


def test_missing_columns_raise():
    frame = long_frame({("q", "A"): [1], ("q", "B"): [0]}).drop(columns="score")
    with pytest.raises(DataValidationError, match="score"):
        dars.repeated_observations(frame)
    with pytest.raises(DataValidationError, match="score"):
        dars.repeated_observations(frame, validate=False)


def test_cost_missing_for_one_model_raises():
    frame = long_frame(
        {("q", "A"): [1], ("q", "B"): [0]}, cost={("q", "A"): 1.0, ("q", "B"): np.nan}
    )
    with pytest.raises(DataValidationError, match="model.*B"):
        dars.repeated_observations(frame)


def test_incomplete_query_dropped_and_logged(caplog):
    frame = long_frame(
        {
            ("q1", "A"): [1],
            ("q1", "B"): [0],
            ("q1", "C"): [0],
            ("q2", "A"): [1],
            ("q2", "B"): [1],
        }
    )
    with caplog.at_level(logging.INFO, logger="ecc_lib.data.observations"):
        obs = dars.repeated_observations(frame)
    assert obs.query_ids.tolist() == ["q1"]
    assert obs.dropped_query_ids == ("q2",)
    assert "dropped" in caplog.text
    with pytest.raises(DataValidationError, match="q2"):
        dars.repeated_observations(frame, incomplete="raise")


def test_select_queries_keeps_grouping():
    data = make_repeated_outcomes(n_queries=20, n_models=3, n_rewrites=2, n_decodes=2)
    obs = dars.repeated_observations(data.outcomes)
    mask = np.arange(20) % 3 == 0
    part = obs.select_queries(mask)
    np.testing.assert_array_equal(part.query_ids, obs.query_ids[mask])
    full = dars.capability_distributions(obs)
    np.testing.assert_allclose(dars.capability_distributions(part).mu_q, full.mu_q[mask])
    np.testing.assert_allclose(dars.capability_distributions(part).mu_c, full.mu_c[mask])


# ------------------------------------------------------------------ the three flip readings


def brute_force_readings(p: np.ndarray, n_draws: int) -> dict[str, np.ndarray]:
    """Pairwise, strict and change readings by enumerating success patterns (and pairs of them).

    Independent of the library's closed forms: every pattern's top set and winner distribution is
    spelled out, and the strict reading sums over all pairs of patterns.
    """
    n_q, n_m = p.shape
    patterns = np.array(list(itertools.product((0, 1), repeat=n_m)), dtype=bool)  # (P, M)
    prob = np.prod(np.where(patterns[None], p[:, None, :], 1 - p[:, None, :]), axis=2)  # (Q, P)
    top = np.where(patterns.any(axis=1, keepdims=True), patterns, True)  # ties at 0: all models
    win = top / top.sum(axis=1, keepdims=True)  # uniform among the top set
    w = prob @ win
    disjoint = ~(top[:, None, :] & top[None, :, :]).any(axis=2)  # (P, P)
    strict = np.einsum("qk,kl,ql->q", prob, disjoint.astype(float), prob)
    # change: P(all R independent draws name model m) = (enumerated w_m)^R, summed over m
    same = np.zeros(n_q)
    for m in range(n_m):
        same += (prob @ win[:, m]) ** n_draws
    return {"pairwise": 1 - np.sum(w**2, axis=1), "strict": strict, "change": 1 - same}


def outcomes_from_successes(successes: np.ndarray, n_obs: int) -> pd.DataFrame:
    """Binary outcomes with ``successes[q, m]`` ones among ``n_obs`` observations of each pair."""
    n_q, n_m = successes.shape
    q, m, v = np.meshgrid(np.arange(n_q), np.arange(n_m), np.arange(n_obs), indexing="ij")
    score = (v < successes[:, :, None]).astype(float)
    return pd.DataFrame(
        {
            "query_id": [f"q{i}" for i in q.ravel()],
            "model": [f"m{j}" for j in m.ravel()],
            "score": score.ravel(),
            "variant_id": v.ravel(),
            "decode_id": 0,
        }
    )


@settings(max_examples=40, deadline=None)
@given(
    n_models=st.integers(2, 4),
    n_obs=st.integers(1, 5),
    n_draws=st.integers(1, 6),
    data=st.data(),
)
def test_three_readings_match_brute_force(n_models, n_obs, n_draws, data):
    successes = data.draw(arrays(np.int64, (3, n_models), elements=st.integers(0, n_obs)))
    frame = outcomes_from_successes(successes, n_obs)
    winners = dars_winners.single_shot_winners(frame, change_draws=n_draws)
    assert winners.method == "exact" and winners.change_draws == n_draws
    expected = brute_force_readings(successes / n_obs, n_draws)
    np.testing.assert_allclose(winners.flip, expected["pairwise"], atol=1e-12)
    np.testing.assert_allclose(winners.strict, expected["strict"], atol=1e-12)
    np.testing.assert_allclose(winners.change, expected["change"], atol=1e-12)
    # orderings that hold for every query: strict <= pairwise <= change (R >= 2)
    assert np.all(winners.strict <= winners.flip + 1e-12)
    if n_draws >= 2:
        assert np.all(winners.flip <= winners.change + 1e-12)


def enumerate_observation_combos(frame: pd.DataFrame, n_draws: int) -> dict[str, np.ndarray]:
    """Exact readings for any scores: every combination of one observation per model, equally
    likely, compared in float64 (small data only)."""
    out = {"pairwise": [], "strict": [], "change": []}
    for _, group in frame.groupby("query_id", sort=False):
        per_model = [g["score"].to_numpy(float) for _, g in group.groupby("model", sort=True)]
        tops, wins = [], []
        for combo in itertools.product(*per_model):
            combo = np.array(combo)
            top = combo == combo.max()
            tops.append(top)
            wins.append(top / top.sum())
        tops, wins = np.array(tops), np.array(wins)
        w = wins.mean(axis=0)
        disjoint = ~(tops[:, None, :] & tops[None, :, :]).any(axis=2)
        out["pairwise"].append(1 - np.sum(w**2))
        out["strict"].append(disjoint.mean())
        out["change"].append(1 - np.sum(w**n_draws))
    return {k: np.array(v) for k, v in out.items()}


def test_monte_carlo_readings_match_enumeration_on_continuous_scores():
    rng = np.random.default_rng(5)
    rows = []
    for q in range(4):
        for m in "ABC":
            # coarse grid: many exact ties, plus a near-tie that float32 would merge
            scores = rng.choice([0.0, 0.25, 0.5, 0.5 + 1e-9, 1.0], size=3)
            rows += [
                {"query_id": f"q{q}", "model": m, "score": s, "variant_id": v}
                for v, s in enumerate(scores)
            ]
    frame = pd.DataFrame(rows)
    mc = dars_winners.single_shot_winners(
        frame, method="monte_carlo", n_draws=20000, random_state=2, change_draws=3
    )
    expected = enumerate_observation_combos(frame, 3)
    # 20000 pairs (40000 draws): the sd of each estimate is below 0.0036
    np.testing.assert_allclose(mc.flip, expected["pairwise"], atol=0.015)
    np.testing.assert_allclose(mc.strict, expected["strict"], atol=0.015)
    np.testing.assert_allclose(mc.change, expected["change"], atol=0.015)


def test_near_equal_scores_are_not_ties():
    # B beats A by 1e-9 on every draw: never a flip in any reading (float32 would tie them)
    frame = long_frame({("q", "A"): [0.5, 0.5], ("q", "B"): [0.5 + 1e-9, 0.5 + 1e-9]})
    mc = dars_winners.single_shot_winners(frame, n_draws=500, change_draws=4)
    assert mc.method == "monte_carlo"
    np.testing.assert_array_equal([mc.flip, mc.strict, mc.change, mc.tied_top], 0.0)


@pytest.mark.parametrize("method", ["exact", "monte_carlo"])
@pytest.mark.parametrize("n_models", [2, 3, 5])
def test_identical_tied_models_sit_at_chance(method, n_models):
    frame = long_frame({("q", f"m{j}"): [1, 1, 1] for j in range(n_models)})
    winners = dars_winners.single_shot_winners(
        frame, method=method, n_draws=5000, random_state=1, change_draws=4
    )
    chance = dars_winners.chance_flip_rates(n_models, 4)
    assert chance["pairwise"] == pytest.approx(1 - 1 / n_models)
    assert chance["strict"] == 0.0
    assert chance["change"] == pytest.approx(1 - n_models ** (1 - 4))
    tol = 1e-12 if method == "exact" else 0.02
    np.testing.assert_allclose(winners.flip, chance["pairwise"], atol=tol)
    np.testing.assert_allclose(winners.strict, chance["strict"], atol=tol)
    np.testing.assert_allclose(winners.change, chance["change"], atol=tol)


def test_change_with_two_draws_is_pairwise_and_monte_carlo_tracks_exact():
    data = make_repeated_outcomes(n_queries=60, n_models=4, n_rewrites=1, n_decodes=6)
    exact = dars_winners.single_shot_winners(data.outcomes, method="exact", change_draws=2)
    np.testing.assert_allclose(exact.change, exact.flip, atol=1e-12)
    mc = dars_winners.single_shot_winners(
        data.outcomes, method="monte_carlo", n_draws=2000, random_state=0, change_draws=2
    )
    np.testing.assert_allclose(mc.change, mc.flip, atol=1e-12)  # same U-statistic
    for field in ("flip", "strict", "change"):
        # mean over 60 queries of 4000-draw estimates: sd well below 0.005
        assert getattr(mc, field).mean() == pytest.approx(getattr(exact, field).mean(), abs=0.01)


def test_default_change_draws_is_median_count():
    frame = long_frame({("q", "A"): [1, 0, 1, 0, 1], ("q", "B"): [1, 0, 1]})
    frame2 = long_frame({("r", "A"): [1, 0, 1], ("r", "B"): [0, 1, 1]})
    winners = dars_winners.single_shot_winners(pd.concat([frame, frame2]))
    assert winners.change_draws == 3  # counts 5, 3, 3, 3
    with pytest.raises(ValueError, match="change_draws"):
        dars_winners.single_shot_winners(frame, change_draws=0)
    with pytest.raises(ValueError, match="n_draws"):
        dars_winners.single_shot_winners(
            long_frame({("q", "A"): [0.3, 0.4], ("q", "B"): [0.5, 0.2]}), n_draws=2, change_draws=9
        )


def test_label_instability_reports_three_readings_with_chance():
    data = make_repeated_outcomes(n_queries=80, n_models=3, n_rewrites=2, n_decodes=3)
    diagnostics = dars_diagnostics.label_instability(data.outcomes, n_boot=200)
    for side in ("input", "output", "both"):
        summary = diagnostics[side].summary
        assert summary["winner_change_rate_r"] == 6  # median of all observations, every side
        assert summary["flip_rate_chance"] == pytest.approx(
            {"pairwise": 2 / 3, "strict": 0.0, "change": 1 - 3.0**-5}
        )
        for key in ("winner_flip_rate", "winner_flip_rate_strict", "winner_change_rate"):
            low, high = summary[f"{key}_ci95"]
            assert low <= summary[key] <= high
        assert summary["winner_flip_rate_strict"] <= summary["winner_flip_rate"]


def test_flip_rate_table_and_figure_show_three_readings_with_chance():
    import matplotlib

    matplotlib.use("Agg")
    from ecc_lib import plotting

    frame = long_frame(
        {("q1", "A"): [1, 0], ("q1", "B"): [0, 1], ("q2", "A"): [1, 1], ("q2", "B"): [0, 0]}
    )
    diagnostics = dars_diagnostics.label_instability(frame, n_boot=100)
    table = plotting.flip_rate_table(diagnostics)
    assert len(table) == 9  # 3 sides x 3 readings
    both = table[table["side"] == "both"].set_index("reading")
    assert both.loc["pairwise", "flip_rate"] == pytest.approx(0.25)
    assert both.loc["strict", "flip_rate"] == pytest.approx(0.0625)
    assert both.loc["change", "chance"] == pytest.approx(0.5)  # M = 2, R = 2
    assert table[table["side"] == "output"]["flip_rate"].isna().all()  # one decode per pair
    fig = plotting.plot_flip_rates(table)
    ax = fig.axes[0]
    # one bar per reading on the measured side only: the output side has no repeats and 'both'
    # equals the input side, so neither is drawn (issue 25: no empty or repeated groups)
    assert len(ax.patches) == 3
    assert any("chance" in text.get_text() for text in ax.get_legend().get_texts())
    matplotlib.pyplot.close(fig)
