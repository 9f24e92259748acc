"""The ECC estimator and its baselines: EM against a direct implementation, invariants (property
tests), determinism, planted-cluster recovery, inference interface and input errors."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit, softmax
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.metrics import adjusted_rand_score

from ecc_lib.bradley_terry import fit_bt_pairwise
from ecc_lib.data.comparisons import Comparisons
from ecc_lib.ecc import engine as ecc_engine
from ecc_lib.ecc.baselines import (
    ComparisonOnlyECC,
    EmbeddingClusters,
    GlobalBT,
    HumanLabelClusters,
)
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.mixture import evidence
from ecc_lib.ecc.validation import with_defaults
from ecc_lib.synthetic.capability import make_capability_data


def random_problem(n=60, m=4, d=5, pairs=4, seed=0, tie_share=0.0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = np.repeat(np.arange(n), pairs)
    a = rng.integers(0, m, len(q))
    b = (a + rng.integers(1, m, len(q))) % m
    y = rng.integers(0, 2, len(q)).astype(float)
    y[rng.random(len(q)) < tie_share] = 0.5
    c = Comparisons(
        query=q,
        model_a=a,
        model_b=b,
        y=y,
        query_ids=np.array([f"q{i}" for i in range(n)]),
        models=tuple(f"m{j}" for j in range(m)),
    )
    return x, c


def fit_quiet(model, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(*args, **kwargs)


@pytest.fixture(scope="module")
def planted():
    return make_capability_data(n_queries=1200, random_state=0)


# ---------------------------------------------------------------- the EM against a direct version


def test_evidence_matches_loop_over_comparisons():
    x, c = random_problem(n=8, m=3, pairs=3, tie_share=0.3, seed=1)
    theta = np.random.default_rng(2).normal(size=(4, 3))
    got = evidence(theta, c)
    expected = np.zeros((8, 4))
    counts = np.zeros(8)
    for q, a, b, y in zip(c.query, c.model_a, c.model_b, c.y, strict=True):
        p = expit(theta[:, b] - theta[:, a])
        expected[q] += y * np.log(p) + (1 - y) * np.log(1 - p)
        counts[q] += 1
    expected /= counts[:, None]
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_first_em_step_matches_direct_formulas():
    x, c = random_problem(n=40, m=4, pairs=3, tie_share=0.2, seed=3)
    k, lam, temp = 3, 2.0, 0.5
    model = fit_quiet(
        ECC(n_clusters=k, lam=lam, temperature=temp, max_iter=1, dtype="float64", random_state=9),
        x,
        c,
    )
    r0 = np.random.default_rng(9).dirichlet(np.ones(k), size=40)
    n_q = np.bincount(c.query, minlength=40)
    theta = np.stack([fit_bt_pairwise(c, weights=r0[c.query, j] / n_q[c.query]) for j in range(k)])
    centroids = r0.T @ x.astype(float)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    r1 = softmax((evidence(theta, c) + lam * x @ centroids.T) / temp, axis=1)
    np.testing.assert_allclose(model.theta_, theta, atol=1e-8)
    np.testing.assert_allclose(model.centroids_, centroids, atol=1e-8)
    np.testing.assert_allclose(model.responsibilities_, r1, atol=1e-8)
    lse = temp * np.log(np.exp((evidence(theta, c) + lam * x @ centroids.T) / temp).sum(axis=1))
    assert model.objective_ == pytest.approx(lse.sum() - 0.5 * np.sum(theta**2), rel=1e-10)


def test_blocks_and_threads_do_not_change_the_fit(monkeypatch):
    x, c = random_problem(n=70, seed=4)
    ref = fit_quiet(ECC(n_clusters=3, max_iter=15, dtype="float64", random_state=0), x, c)
    monkeypatch.setattr(ecc_engine, "BLOCK_ROWS", 8)
    for n_jobs in (1, 3):
        other = fit_quiet(
            ECC(n_clusters=3, max_iter=15, dtype="float64", n_jobs=n_jobs, random_state=0), x, c
        )
        np.testing.assert_allclose(other.theta_, ref.theta_, atol=1e-10)
        np.testing.assert_allclose(other.responsibilities_, ref.responsibilities_, atol=1e-10)
        assert other.n_iter_ == ref.n_iter_


def test_the_fit_is_the_same_with_any_number_of_threads():
    """The E-step blocks depend on the rows only: one, two or five threads (one machine or
    another) give bit-identical fits at the default float32 (on the old main the blocks followed
    the threads, and so did the last bits of every sum)."""
    x, c = random_problem(n=3000, m=5, d=8, seed=7)
    fits = [
        fit_quiet(ECC(n_clusters=4, max_iter=30, n_jobs=n_jobs, random_state=0), x, c)
        for n_jobs in (1, 2, 5)
    ]
    for other in fits[1:]:
        np.testing.assert_array_equal(other.theta_, fits[0].theta_)
        np.testing.assert_array_equal(other.responsibilities_, fits[0].responsibilities_)
        assert other.objective_history_ == fits[0].objective_history_


# ---------------------------------------------------------------- invariants


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    k=st.integers(1, 5),
    lam=st.floats(0.0, 5.0),
    temperature=st.floats(0.05, 2.0),
    tie_share=st.sampled_from([0.0, 0.3]),
)
def test_objective_never_decreases_float64(seed, k, lam, temperature, tie_share):
    x, c = random_problem(n=50, seed=seed, tie_share=tie_share)
    model = fit_quiet(
        ECC(
            n_clusters=k,
            lam=lam,
            temperature=temperature,
            max_iter=40,
            dtype="float64",
            random_state=seed,
        ),
        x,
        c,
    )
    history = np.asarray(model.objective_history_)
    assert len(history) == model.n_iter_
    steps = np.diff(history)
    assert np.all(steps >= -1e-9 * np.maximum(1.0, np.abs(history[1:])))


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_objective_never_decreases_float32(seed):
    x, c = random_problem(n=120, seed=seed)
    model = fit_quiet(ECC(n_clusters=4, max_iter=40, random_state=seed), x, c)
    history = np.asarray(model.objective_history_)
    assert np.all(np.diff(history) >= -1e-5 * np.abs(history[1:]))


def test_logsumexp_part_alone_is_not_monotone():
    """Why the recorded objective includes the BT prior: on this small problem the logsumexp part
    alone (objective + 0.5 sum ||theta_k||^2) decreases at some step while the objective does not."""
    x, c = random_problem(n=12, pairs=6, seed=15)
    objective, lse_part = [], []
    for steps in range(1, 15):
        model = fit_quiet(
            ECC(
                n_clusters=3,
                lam=0.5,
                max_iter=steps,
                tol=0.0,
                objective_tol=0.0,
                dtype="float64",
                random_state=15,
            ),
            x,
            c,
        )
        objective.append(model.objective_)
        lse_part.append(model.objective_ + 0.5 * np.sum(model.theta_**2))
    assert np.allclose(objective, model.objective_history_, rtol=1e-12)
    assert np.all(np.diff(objective) >= -1e-10)
    assert np.diff(lse_part).min() < -1e-4


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    mode=st.sampled_from(["both", "embedding", "probe"]),
    n_probe=st.integers(0, 3),
)
def test_responsibilities_sum_to_one(seed, mode, n_probe):
    x, c = random_problem(n=40, seed=seed)
    model = fit_quiet(ECC(n_clusters=4, max_iter=5, random_state=seed), x, c)
    np.testing.assert_allclose(model.responsibilities_.sum(axis=1), 1.0, atol=1e-5)
    assert np.all(model.responsibilities_ >= 0)
    x_new, c_new = random_problem(n=9, seed=seed + 1, pairs=max(n_probe, 1))
    probe = c_new if n_probe else c_new.take(np.zeros(len(c_new), dtype=bool))
    r = model.predict_responsibilities(x_new, probe, mode=mode)
    assert r.shape == (9, 4)
    np.testing.assert_allclose(r.sum(axis=1), 1.0, atol=1e-10)
    assert np.all(r >= 0)


def test_inference_modes_use_the_right_terms():
    x, c = random_problem(n=60, seed=5)
    model = fit_quiet(ECC(n_clusters=3, lam=2.0, temperature=0.3, random_state=1), x, c)
    x_new, probe = random_problem(n=6, seed=6, pairs=2)
    cos = x_new.astype(float) @ model.centroids_.T
    ev = evidence(model.theta_, probe)
    np.testing.assert_allclose(
        model.predict_responsibilities(x_new, probe, "both"),
        softmax((ev + 2.0 * cos) / 0.3, axis=1),
        atol=1e-6,
    )
    np.testing.assert_allclose(
        model.predict_responsibilities(x_new, probe, "embedding"),
        softmax(2.0 * cos / 0.3, axis=1),
        atol=1e-6,
    )
    np.testing.assert_allclose(
        model.predict_responsibilities(x_new, probe, "probe"), softmax(ev / 0.3, axis=1), atol=1e-9
    )


def test_determinism_per_seed():
    x, c = random_problem(n=80, seed=7)
    first = fit_quiet(ECC(n_clusters=4, random_state=11), x, c)
    second = fit_quiet(ECC(n_clusters=4, random_state=11), x, c)
    other = fit_quiet(ECC(n_clusters=4, random_state=12), x, c)
    assert np.array_equal(first.theta_, second.theta_)
    assert np.array_equal(first.responsibilities_, second.responsibilities_)
    assert first.objective_history_ == second.objective_history_
    assert not np.allclose(first.responsibilities_, other.responsibilities_)


def test_n_init_keeps_the_best_objective():
    x, c = random_problem(n=80, seed=8)
    single = fit_quiet(ECC(n_clusters=4, random_state=3), x, c)
    multi = fit_quiet(ECC(n_clusters=4, n_init=4, random_state=3), x, c)
    assert multi.objective_ >= single.objective_ - 1e-9


def test_non_convergence_warns_not_raises():
    x, c = random_problem(n=50, seed=9)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        model = ECC(n_clusters=3, max_iter=2, random_state=0).fit(x, c)
    assert not model.converged_ and model.n_iter_ == 2


def test_convergence_flag_and_stopping():
    x, c = random_problem(n=60, seed=10)
    model = ECC(n_clusters=3, max_iter=500, random_state=0).fit(x, c)
    assert model.converged_ and model.n_iter_ < 500
    assert len(model.step_seconds_) == model.n_iter_


# ---------------------------------------------------------------- planted clusters


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_ecc_recovers_capability_clusters_embedding_only_does_not(planted):
    x, c = planted.embeddings, planted.comparisons
    ecc = ECC(n_clusters=4, n_init=4, random_state=0).fit(x, c)
    emb = EmbeddingClusters(n_clusters=4, n_init=4, random_state=0).fit(x, c)
    ecc_labels = ecc.responsibilities_.argmax(axis=1)
    emb_labels = emb.responsibilities_.argmax(axis=1)
    assert adjusted_rand_score(planted.capability, ecc_labels) > 0.8
    assert adjusted_rand_score(planted.topic, ecc_labels) < 0.1
    # embedding-only clustering finds the topics, not the capabilities
    assert adjusted_rand_score(planted.topic, emb_labels) > 0.8
    assert adjusted_rand_score(planted.capability, emb_labels) < 0.1
    # and the recovered ECC profiles rank models like the planted ones
    for j in range(4):
        members = planted.capability == j
        cluster = np.bincount(ecc_labels[members]).argmax()
        rho = np.corrcoef(ecc.theta_[cluster], planted.theta[j])[0, 1]
        assert rho > 0.9


# ---------------------------------------------------------------- prediction interface


def test_predict_proba_win_matrix_ranking_and_route():
    x, c = random_problem(n=60, seed=11)
    model = fit_quiet(ECC(n_clusters=3, random_state=0), x, c)
    x_new, probe = random_problem(n=5, seed=12, pairs=1)
    _, scored = random_problem(n=5, seed=13, pairs=3)
    r = model.predict_responsibilities(x_new, probe)
    p = model.predict_proba(scored, responsibilities=r)
    direct = np.array(
        [
            r[q] @ expit(model.theta_[:, b] - model.theta_[:, a])
            for q, a, b in zip(scored.query, scored.model_a, scored.model_b, strict=True)
        ]
    )
    np.testing.assert_allclose(p, direct, atol=1e-12)
    np.testing.assert_allclose(p, model.predict_proba(scored, embeddings=x_new, probe=probe))
    wm = model.win_matrix(r)
    assert wm.shape == (5, 4, 4)
    np.testing.assert_allclose(wm + wm.transpose(0, 2, 1), 1.0, atol=1e-12)
    np.testing.assert_allclose(
        wm[scored.query, scored.model_b, scored.model_a], p, atol=1e-12
    )  # P(b beats a)
    scores = model.routing_scores(responsibilities=r)
    ranking = model.rank_models(responsibilities=r)
    assert np.array_equal(ranking[:, 0], scores.argmax(axis=1))
    assert np.all(np.diff(np.take_along_axis(scores, ranking, axis=1), axis=1) <= 0)
    names = model.route(responsibilities=r)
    assert list(names) == [model.models_[i] for i in scores.argmax(axis=1)]
    assert model.nll(scored, responsibilities=r) > 0


def test_global_bt_is_the_weighted_pairwise_fit():
    x, c = random_problem(n=50, seed=14, tie_share=0.2)
    model = GlobalBT().fit(None, c)
    n_q = np.bincount(c.query)
    expected = fit_bt_pairwise(c, weights=1.0 / n_q[c.query])
    np.testing.assert_allclose(model.theta_[0], expected, atol=1e-10)
    r = model.predict_responsibilities(x[:7])
    assert r.shape == (7, 1) and np.all(r == 1)
    assert model.route(responsibilities=r)[0] == c.models[int(np.argmax(expected))]


def test_human_label_clusters():
    x, c = random_problem(n=60, seed=15)
    labels = np.array(["math", "code", None] * 20, dtype=object)
    model = HumanLabelClusters().fit(x, c, labels=labels)
    assert list(model.categories_) == ["<missing>", "code", "math"]
    n_q = np.bincount(c.query)
    mask = np.array([lab == "math" for lab in labels])[c.query]
    expected = fit_bt_pairwise(c.take(mask), weights=1.0 / n_q[c.query][mask])
    np.testing.assert_allclose(model.theta_[2], expected, atol=1e-10)
    r = model.predict_responsibilities(x[:3], labels=np.array(["code", "math", "chemistry"]))
    assert r[0].tolist() == [0.0, 1.0, 0.0] and r[1].tolist() == [0.0, 0.0, 1.0]
    assert r[2].sum() == pytest.approx(1.0) and r[2].max() < 1.0  # unknown label: embedding
    _, probe = random_problem(n=3, seed=16, pairs=2)
    r_probe = model.predict_responsibilities(x[:3], probe, mode="probe", labels=["code"] * 3)
    np.testing.assert_allclose(
        r_probe, softmax(evidence(model.theta_, probe) / model.temperature, axis=1)
    )
    with pytest.raises(ValueError, match="labels"):
        HumanLabelClusters().fit(x, c)


def test_embedding_clusters_and_comparison_only():
    x, c = random_problem(n=80, seed=17)
    emb = fit_quiet(EmbeddingClusters(n_clusters=3, dtype="float64", random_state=0), x, c)
    assert np.all(np.diff(emb.objective_history_) >= -1e-9)
    # the profiles are the weighted BT fits of the final responsibilities
    n_q = np.bincount(c.query)
    r = emb.responsibilities_
    for j in range(3):
        expected = fit_bt_pairwise(c, weights=r[c.query, j] / n_q[c.query])
        np.testing.assert_allclose(emb.theta_[j], expected, atol=1e-6)
    # responsibilities depend on embeddings only: softmax(lam cos / T)
    np.testing.assert_allclose(
        r,
        softmax(emb.lam * x.astype(float) @ emb.centroids_.T / emb.temperature, axis=1),
        atol=1e-4,
    )
    comp = fit_quiet(ComparisonOnlyECC(n_clusters=3, random_state=0), x, c)
    assert comp.lam == 0.0
    uniform = comp.predict_responsibilities(x[:4], mode="embedding")
    np.testing.assert_allclose(uniform, 1 / 3)
    with pytest.raises(ValueError, match="lam must be 0"):
        ComparisonOnlyECC(lam=1.0).fit(x, c)


def test_sklearn_conventions():
    model = ECC(n_clusters=5, lam=2.0, random_state=3)
    assert model.get_params()["lam"] == 2.0
    copy = clone(model)
    assert copy.get_params() == model.get_params()
    with pytest.raises(NotFittedError, match="not fitted"):
        model.predict_responsibilities(np.ones((2, 3)))
    assert not hasattr(model, "n_clusters_")
    x, c = random_problem(n=30, seed=18)
    assert fit_quiet(model, x, c) is model
    assert model.theta_.shape == (5, 4) and model.centroids_.shape == (5, 5)
    np.testing.assert_allclose(np.linalg.norm(model.centroids_, axis=1), 1.0, atol=1e-6)


def test_comparison_only_has_the_parameters_of_ecc_with_lam_zero():
    ecc_params = inspect.signature(ECC).parameters
    own = inspect.signature(ComparisonOnlyECC).parameters
    assert list(own) == list(ecc_params)
    assert own["lam"].default == 0.0
    assert all(own[n].default == p.default for n, p in ecc_params.items() if n != "lam")
    model = ComparisonOnlyECC(4, temperature=0.2)  # positional as in ECC
    assert model.get_params() == {**ECC(4, temperature=0.2, lam=0.0).get_params()}
    assert clone(model).get_params() == model.get_params()
    with pytest.raises(TypeError):
        ComparisonOnlyECC(bogus=1)
    with pytest.raises(ValueError, match="lam must be 0"):
        fit_quiet(ComparisonOnlyECC(lam=1.0), *random_problem(n=20))
    with pytest.raises(TypeError, match="no parameter"):
        with_defaults(ECC.__init__, bogus=1)


# ---------------------------------------------------------------- errors


def test_clear_errors_on_bad_input():
    x, c = random_problem(n=20, seed=19)
    single = Comparisons(
        query=np.array([], dtype=np.int64),
        model_a=np.array([], dtype=np.int64),
        model_b=np.array([], dtype=np.int64),
        y=np.array([]),
        query_ids=c.query_ids,
        models=("only",),
    )
    for estimator in (ECC(n_clusters=2), GlobalBT(), EmbeddingClusters(n_clusters=2)):
        with pytest.raises(ValueError, match="at least 2 models"):
            estimator.fit(x, single)
    empty = c.take(np.zeros(len(c), dtype=bool))
    with pytest.raises(ValueError, match="no comparisons"):
        ECC(n_clusters=2).fit(x, empty)
    with pytest.raises(ValueError, match="19 row.*20 queries"):
        ECC(n_clusters=2).fit(x[:19], c)
    with pytest.raises(ValueError, match="2-D"):
        ECC(n_clusters=2).fit(x[:, 0], c)
    bad = x.copy()
    bad[3] = 0.0
    with pytest.raises(ValueError, match="row 3 is all zeros"):
        ECC(n_clusters=2).fit(bad, c)
    model = fit_quiet(ECC(n_clusters=2, max_iter=3), x, c)
    with pytest.raises(ValueError, match="mode"):
        model.predict_responsibilities(x, mode="text")
    with pytest.raises(ValueError, match="needs a probe"):
        model.predict_responsibilities(x, mode="probe")
    with pytest.raises(ValueError, match="probe refers to 20 queries"):
        model.predict_responsibilities(x[:5], c)
    with pytest.raises(ValueError, match="dimension"):
        model.predict_responsibilities(np.ones((2, 3)), mode="embedding")
    other_models = Comparisons(
        c.query, c.model_a, c.model_b, c.y, c.query_ids, ("a", "b", "c", "d")
    )
    with pytest.raises(ValueError, match="probe models"):
        model.predict_responsibilities(x, other_models)
    with pytest.raises(ValueError, match="n_clusters"):
        ECC(n_clusters=0).fit(x, c)
    with pytest.raises(ValueError, match="temperature"):
        ECC(temperature=0.0).fit(x, c)
