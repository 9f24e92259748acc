"""Probe strategies: candidate pairs, the expected-entropy selector against a brute-force
computation, and the strategy comparison on shared pairs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from ecc_lib.data.comparisons import Comparisons
from ecc_lib.data.splits import split_probe
from ecc_lib.ecc.baselines import GlobalBT
from ecc_lib.ecc.estimator import ECC
from ecc_lib.protocol.active_probes import candidate_pairs, expected_entropy, probes_from_scores
from ecc_lib.protocol.data import prepare_protocol
from ecc_lib.protocol.experiments.probe_strategies import compare_probe_strategies
from ecc_lib.protocol.settings import Protocol
from ecc_lib.synthetic.capability import make_capability_data


@pytest.fixture(scope="module")
def small():
    data = make_capability_data(n_queries=240, n_models=5, n_pairs=6, random_state=1)
    protocol = prepare_protocol(data.queries, data.outcomes, data.embeddings, n_pairs=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = ECC(n_clusters=4, random_state=0).fit(protocol.x_train, protocol.train)
    reference = GlobalBT().fit(None, protocol.train)
    return protocol, model, reference


def _entropy(r):
    r = r[r > 0]
    return float(-(r * np.log(r)).sum())


def _brute_force_choice(model, x, scores, test, chosen, score_from, q):
    """Expected entropy of every candidate of query ``q`` by explicit loops and
    ``predict_responsibilities`` on the revealed probes plus the candidate."""
    m = test.n_models
    scored = split_probe(test, n_probes=score_from)[1]
    used = {
        tuple(sorted(p))
        for p in zip(
            scored.model_a[scored.query == q], scored.model_b[scored.query == q], strict=True
        )
    }
    used |= {tuple(sorted(p)) for p in chosen}
    one = np.array(["q"])

    def probe_of(pairs, ys):
        return Comparisons(
            np.zeros(len(pairs), np.int64),
            np.array([p[0] for p in pairs], np.int64),
            np.array([p[1] for p in pairs], np.int64),
            np.array(ys, float),
            one,
            test.models,
        )

    revealed_y = []
    for a, b in chosen:
        revealed_y.append(1.0 if scores[q, b] > scores[q, a] else 0.0)
    current = model.predict_responsibilities(
        x[q : q + 1], probe_of(chosen, revealed_y) if chosen else None
    )[0]
    best, best_value = None, np.inf
    for a in range(m):
        for b in range(a + 1, m):
            if (a, b) in used or scores[q, a] == scores[q, b]:
                continue
            p_b = float(
                current @ (1.0 / (1.0 + np.exp(-(model.theta_[:, b] - model.theta_[:, a]))))
            )
            value = 0.0
            for y, weight in ((1.0, p_b), (0.0, 1.0 - p_b)):
                pairs = [*chosen, (a, b)]
                r = model.predict_responsibilities(x[q : q + 1], probe_of(pairs, [*revealed_y, y]))[
                    0
                ]
                value += weight * _entropy(r)
            if value < best_value - 1e-12:
                best, best_value = (a, b), value
    return best


@pytest.mark.parametrize("n_probes", [1, 2])
def test_active_choice_matches_brute_force_expected_entropy(small, n_probes):
    protocol, model, _ = small
    test = protocol.test
    scores = protocol.scores[protocol.test_mask]
    x = protocol.x_test
    probe = probes_from_scores(
        model, scores, test, n_probes=n_probes, strategy="active", score_from=3, embeddings=x
    )
    for q in range(6):
        rows = np.flatnonzero(probe.query == q)
        chosen = []
        for row in rows:
            expected = _brute_force_choice(model, x, scores, test, chosen, 3, q)
            assert (probe.model_a[row], probe.model_b[row]) == expected
            chosen.append(expected)
        assert len(rows) == n_probes


def test_expected_entropy_is_below_current_entropy_on_average(small):
    protocol, model, _ = small
    x = protocol.x_test
    base = np.log(model.predict_responsibilities(x, None, "embedding"))
    n = len(x)
    cand = candidate_pairs(protocol.scores[protocol.test_mask])
    value = expected_entropy(
        model.theta_,
        base,
        np.zeros_like(base),
        np.zeros(n),
        model.temperature,
        cand.query,
        cand.model_a,
        cand.model_b,
    )
    r = np.exp(base)
    current = -(r * np.where(r > 0, base, 0)).sum(axis=1)
    # information never hurts in expectation for a Bayesian posterior; ECC's tempered one can
    # exceed it, but not on average over candidates
    assert value.mean() < current[cand.query].mean()


def test_candidate_pairs_exclude_scored_ties_and_missing():
    scores = np.array([[1.0, 0.0, 1.0, np.nan], [0.0, 0.5, 1.0, 0.2]])
    scored = Comparisons(
        np.array([1]),
        np.array([2]),
        np.array([0]),
        np.array([0.0]),
        np.array(["a", "b"]),
        ("m0", "m1", "m2", "m3"),
    )
    cand = candidate_pairs(scores, [scored], ties="drop")
    got = set(zip(cand.query, cand.model_a, cand.model_b, cand.y, strict=True))
    assert got == {
        (0, 0, 1, 0.0),
        (0, 1, 2, 1.0),
        (1, 0, 1, 1.0),
        (1, 0, 3, 1.0),
        (1, 1, 2, 1.0),
        (1, 1, 3, 0.0),
        (1, 2, 3, 0.0),
    }
    with_ties = candidate_pairs(scores, [scored], ties="half")
    assert (0, 0, 2, 0.5) in set(
        zip(with_ties.query, with_ties.model_a, with_ties.model_b, with_ties.y, strict=True)
    )


def test_first_is_the_protocol_probe_and_random_is_seeded(small):
    protocol, model, _ = small
    scores = protocol.scores[protocol.test_mask]
    first = probes_from_scores(model, scores, protocol.test, n_probes=2, strategy="first")
    expected = split_probe(protocol.test, n_probes=2)[0]
    np.testing.assert_array_equal(first.model_a, expected.model_a)
    one = probes_from_scores(
        model, scores, protocol.test, n_probes=2, strategy="random", random_state=3
    )
    two = probes_from_scores(
        model, scores, protocol.test, n_probes=2, strategy="random", random_state=3
    )
    np.testing.assert_array_equal(one.model_b, two.model_b)
    scored = split_probe(protocol.test, n_probes=2)[1]
    scored_pairs = set(
        zip(
            scored.query,
            np.minimum(scored.model_a, scored.model_b),
            np.maximum(scored.model_a, scored.model_b),
            strict=True,
        )
    )
    assert not scored_pairs & set(zip(one.query, one.model_a, one.model_b, strict=True))
    with pytest.raises(ValueError, match="probe_strategy"):
        probes_from_scores(model, scores, protocol.test, n_probes=1, strategy="greedy")


def test_strategies_are_scored_on_the_same_pairs(small):
    protocol, model, reference = small
    rows = compare_probe_strategies(
        protocol, model, reference, protocol=Protocol(seeds=(0,)), probe_counts=(1, 2)
    )
    assert {r["strategy"] for r in rows} == {"first", "random", "active"}
    for n in (1, 2):
        counts = {r["n_shared_pairs"] for r in rows if r["n_probes"] == n}
        assert len(counts) == 1 and counts.pop() > 0
        refs = {round(r["nll_reference"], 12) for r in rows if r["n_probes"] == n}
        assert len(refs) == 1


def test_probe_active_without_profiles_takes_the_first_candidates(small):
    from ecc_lib.protocol.leak_free import probe_candidate_rows
    from ecc_lib.protocol.probes import probe_active, probe_first

    protocol, _, reference = small
    candidates, _ = probe_candidate_rows(protocol, n_probes=2, score_from=3)
    first = probe_first(protocol.test, 2, candidates)
    assert first.sum() > 0
    for model in (reference, None):
        np.testing.assert_array_equal(
            probe_active(protocol.test, 2, candidates, model=model), first
        )


def test_select_probes_and_the_protocol_strategy_share_the_greedy_choice(small):
    """``probes_from_scores(strategy="active")`` over every unscored pair is the protocol's
    ``probe_active`` with those pairs as its candidates."""
    from ecc_lib.protocol.probes import probe_active

    protocol, model, _ = small
    test = protocol.test
    scores = protocol.scores[protocol.test_mask]
    probe = probes_from_scores(
        model,
        scores,
        test,
        n_probes=2,
        strategy="active",
        score_from=3,
        embeddings=protocol.x_test,
    )
    cand = candidate_pairs(scores, [split_probe(test, n_probes=3)[1]])
    mask = probe_active(
        cand, 2, np.ones(len(cand), dtype=bool), model=model, embeddings=protocol.x_test
    )
    chosen = cand.take(mask)
    assert len(probe) > test.n_queries  # two probes for most queries
    assert sorted(zip(probe.query, probe.model_a, probe.model_b, probe.y, strict=True)) == sorted(
        zip(chosen.query, chosen.model_a, chosen.model_b, chosen.y, strict=True)
    )


def test_probe_active_strategy_of_the_protocol(small):
    from ecc_lib.protocol.leak_free import probe_candidate_rows
    from ecc_lib.protocol.probes import probe_active

    protocol, model, reference = small
    candidates, _ = probe_candidate_rows(protocol, n_probes=1, score_from=3)
    test = protocol.test
    mask = probe_active(test, 1, candidates, model=model, embeddings=protocol.x_test, labels=None)
    assert not (mask & ~candidates).any()
    np.testing.assert_array_equal(np.bincount(test.query[mask]), 1)
    rows = np.flatnonzero(candidates)
    base = np.log(model.predict_responsibilities(protocol.x_test, None, "embedding"))
    value = expected_entropy(
        model.theta_,
        base,
        np.zeros_like(base),
        np.zeros(test.n_queries),
        model.temperature,
        test.query[rows],
        test.model_a[rows],
        test.model_b[rows],
    )
    for q in range(5):
        mine = rows[test.query[rows] == q]
        best = mine[np.argmin(value[test.query[rows] == q])]
        assert mask[best]
    # the global model has no clusters to tell apart: it keeps the first candidate
    first = probe_active(
        test, 1, candidates, model=reference, embeddings=protocol.x_test, labels=None
    )
    np.testing.assert_array_equal(
        first, candidates & (np.arange(len(test)) == np.searchsorted(test.query, test.query))
    )
