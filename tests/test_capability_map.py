"""Which model for which queries (issue 37): the capability map, its names, P(best), the held-out
value, show_group and the metrics schema."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecc_lib.metrics_schema import validate_section
from ecc_lib.protocol.capability_map import (
    capability_map,
    class_tfidf_terms,
    show_group,
    unique_group_names,
)
from ecc_lib.protocol.data import prepare_protocol
from ecc_lib.protocol.methods import fit_methods, make_methods
from ecc_lib.synthetic.capability import assemble_capability_data, make_capability_data

WORDS = np.array(["algebra", "poetry", "chemistry", "history", "python", "football", "opera"])


def _planted(
    theta: np.ndarray,
    *,
    n_queries: int = 1000,
    seed: int = 0,
    capability_strength: float = 0.6,
    hidden_capability: int | None = None,
):
    """Planted data with one BT profile per capability cluster; the category is the cluster
    (``gpqa`` for ``hidden_capability``), each text names a word of its cluster, embeddings point
    mostly to the cluster's direction."""
    rng = np.random.default_rng(seed)
    k, m = theta.shape
    capability = rng.integers(0, k, n_queries)
    dim = 32
    basis, _ = np.linalg.qr(rng.standard_normal((dim, k)))
    emb = capability_strength * basis.T[capability] + rng.standard_normal(
        (n_queries, dim)
    ) / np.sqrt(dim)
    emb = (emb / np.linalg.norm(emb, axis=1, keepdims=True)).astype(np.float32)
    words = WORDS[capability % len(WORDS)]
    categories = ["gpqa" if c == hidden_capability else f"skill_{c}" for c in capability]
    data = assemble_capability_data(
        embeddings=emb,
        theta=theta,
        capability=capability,
        topic=capability,
        models=tuple(f"model_{j}" for j in range(m)),
        texts=[f"question {i} about {w} and the {w} exam" for i, w in enumerate(words)],
        categories=categories,
        n_pairs=7,
        rng=rng,
    )
    return data


def _protocol(planted, seed: int = 0):
    return prepare_protocol(
        planted.queries, planted.outcomes, planted.embeddings, random_state=seed
    )


def _winners_theta(k: int, m: int) -> np.ndarray:
    """Each capability cluster has another planted winner (a ladder, rolled)."""
    ladder = np.linspace(-3.0, 3.0, m)
    return np.stack([np.roll(ladder, c + 1) for c in range(k)])


# ------------------------------------------------------------------------------------------- done when


def test_the_map_names_the_planted_winner_with_high_p_best_by_categories():
    theta = _winners_theta(4, 6)
    planted = _planted(theta, n_queries=1000)
    data = _protocol(planted)
    cmap = capability_map(data, method="categories", n_boot=200, random_state=1)
    assert len(cmap.groups) == 4
    hits = []
    for c in range(4):
        row = cmap.groups[cmap.groups["group"] == f"skill_{c}"].iloc[0]
        winner = f"model_{int(np.argmax(theta[c]))}"
        hits.append(row["best_model"] == winner and row["p_best"] >= 0.9)
    assert np.mean(hits) >= 0.9
    # the winners differ across groups, so the map is worth something held out
    assert cmap.share_groups_other_best >= 0.5
    low, high = cmap.held_out["ci95"]
    assert cmap.held_out["estimate"] > 0 and low > 0
    assert len(cmap.groups_needing_other_model) >= 2


def test_the_map_of_an_ecc_fit_names_the_planted_winners():
    theta = _winners_theta(4, 6)
    planted = _planted(theta, n_queries=1000, capability_strength=1.0, seed=3)
    data = _protocol(planted, seed=3)
    fitted, _ = fit_methods(
        data, make_methods(methods=("global", "ecc"), n_clusters=4, random_state=0)
    )
    cmap = capability_map(data, fitted, n_boot=200, random_state=0)  # default grouping: ecc
    assert cmap.method == "ecc"
    truth = planted.capability[
        pd.Index(planted.queries["query_id"]).get_indexer(data.train.query_ids)
    ]
    hits = []
    for c in range(4):
        # the group holding most of the planted cluster's training queries
        group = np.bincount(cmap.train_group[truth == c]).argmax()
        row = cmap.groups[cmap.groups["group"] == group].iloc[0]
        hits.append(
            row["best_model"] == f"model_{int(np.argmax(theta[c]))}" and row["p_best"] >= 0.9
        )
    assert np.mean(hits) >= 0.9


def test_one_dominant_model_means_no_group_needs_another():
    rng = np.random.default_rng(5)
    theta = rng.normal(scale=0.3, size=(4, 5))
    theta[:, 2] = 4.0  # model_2 wins everywhere
    planted = _planted(theta, n_queries=800, seed=5)
    data = _protocol(planted, seed=5)
    cmap = capability_map(data, method="categories", n_boot=100, random_state=0)
    assert cmap.global_best == "model_2"
    assert cmap.groups_needing_other_model == []
    assert cmap.share_groups_other_best == 0.0
    assert (cmap.groups["best_model"] == "model_2").all()
    # every test query goes to the global best: the held-out value is exactly zero
    assert cmap.held_out["estimate"] == 0.0
    assert cmap.held_out["ci95"] == [0.0, 0.0]
    metrics = cmap.to_metrics(dataset="dominant")
    assert metrics["n_groups_needing_other_model"] == 0


# ------------------------------------------------------------------------------------------- properties


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    n_models=st.integers(3, 6),
    k=st.integers(1, 5),
    seed=st.integers(0, 10_000),
    n_boot=st.integers(5, 60),
)
def test_p_best_sums_to_one_names_are_unique_and_the_value_has_an_interval(
    n_models, k, seed, n_boot
):
    rng = np.random.default_rng(seed)
    theta = rng.normal(scale=1.5, size=(k, n_models))
    planted = _planted(theta, n_queries=150, seed=seed)
    data = _protocol(planted, seed=seed % 97)
    cmap = capability_map(data, method="categories", n_boot=n_boot, random_state=seed)
    sums = cmap.rows.groupby("group")["p_best"].sum()
    np.testing.assert_allclose(sums.to_numpy(), 1.0, atol=1e-12)
    assert cmap.groups["name"].is_unique
    assert (cmap.rows.groupby("group")["best"].sum() == 1).all()
    low, high = cmap.held_out["ci95"]
    assert np.isfinite(low) and np.isfinite(high) and low <= high
    assert np.isfinite(cmap.held_out["estimate"])
    best = cmap.rows[cmap.rows["best"]]
    assert not best["distinguishable"].any()  # the best is never distinguishable from itself
    validate_section("capability_map", cmap.to_metrics(dataset="x"), strict=True)


def test_names_stay_unique_when_groups_share_categories_and_terms():
    names = unique_group_names(
        ["math 90%", "math 90%", "math 90%", ""],
        [["add", "sum", "total", "carry"], ["add", "sum", "total", "minus"], ["add"], []],
        [0, 1, 2, 3],
    )
    assert len(set(names)) == 4
    assert names[0] == "math 90%: add, sum, total, carry"  # a fourth term tells them apart
    assert names[3] == "group 3"


def test_class_tfidf_prefers_a_groups_own_words():
    texts = np.array(
        ["solve the algebra equation", "algebra equation again", "sonnet poetry rhyme", "poetry"]
    )
    terms = class_tfidf_terms(texts, np.array([0, 0, 1, 1]), 2, n_terms=2)
    assert set(terms[0]) == {"algebra", "equation"}
    assert terms[1][0] == "poetry"
    # excluded texts (hidden categories) give no terms
    none = class_tfidf_terms(texts, np.array([0, 0, 1, 1]), 2, exclude=np.array([1, 1, 0, 0], bool))
    assert none[0] == []


# ------------------------------------------------------------------------------------------- exploring


def test_show_group_quotes_typical_queries_and_losses_but_never_gpqa():
    theta = _winners_theta(3, 5)
    planted = _planted(theta, n_queries=600, seed=2, hidden_capability=1)
    data = _protocol(planted, seed=2)
    cmap = capability_map(data, method="categories", n_boot=50, random_state=0)
    view = show_group(cmap, "skill_0", n_examples=4, n_losses=3)
    assert view.table["P(best)"].iloc[0] == view.table["P(best)"].max()
    assert len(view.examples) == 4
    # the examples are the queries nearest the centroid, nearest first
    cos = view.examples["cosine to centroid"].to_numpy()
    assert np.all(np.diff(cos) <= 0)
    assert (view.examples["category"] == "skill_0").all()
    assert view.n_losses > 0 and len(view.losses) == min(3, view.n_losses)
    best = view.best_model
    assert (view.losses["its score"] > view.losses[f"{best} score"]).all()
    text = str(view)
    assert "most typical queries" in text and best in text
    hidden = show_group(cmap, "gpqa")
    assert hidden.examples.empty and hidden.losses.empty and hidden.n_hidden > 0
    with pytest.raises(ValueError, match="no group"):
        show_group(cmap, "no such group")


def test_bad_settings_are_refused_in_one_line():
    planted = make_capability_data(n_queries=120, n_models=4, random_state=0)
    data = _protocol(planted)
    with pytest.raises(ValueError, match="n_boot"):
        capability_map(data, method="categories", n_boot=1)
    with pytest.raises(ValueError, match="fitted methods"):
        capability_map(data, method="ecc")
    with pytest.raises(ValueError, match="was not fitted"):
        capability_map(data, {"global": object()}, method="ecc")
