"""Checks before numbers (issue 27): each check on a planted defect and on the bundled data."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from ecc_lib.data import check_result, checks, table_checks, text_checks
from ecc_lib.data.comparisons import DEFAULT_TIE_TOLERANCE, make_comparisons
from ecc_lib.data.sources import BUNDLED_DATASETS, load_bundled


def shared_difficulty_outcomes(
    n_queries: int = 2000, n_models: int = 8, random_state: int = 0
) -> pd.DataFrame:
    """Binary outcomes from a shared-difficulty (Rasch) model: P(correct) = sigmoid(a_m - b_q)."""
    rng = np.random.default_rng(random_state)
    difficulty = rng.normal(0.0, 1.5, n_queries)
    ability = np.linspace(-1.0, 1.0, n_models)
    p = 1.0 / (1.0 + np.exp(-(ability[None, :] - difficulty[:, None])))
    scores = (rng.random(p.shape) < p).astype(float)
    return _long(scores)


def _long(scores: np.ndarray, models: list[str] | None = None) -> pd.DataFrame:
    q, m = scores.shape
    models = models or [f"m{j}" for j in range(m)]
    return pd.DataFrame(
        {
            "query_id": np.repeat([f"q{i}" for i in range(q)], m),
            "model": np.tile(models, q),
            "score": scores.ravel(),
        }
    )


def _wide(outcomes: pd.DataFrame) -> np.ndarray:
    return check_result.score_table(outcomes).scores


def permute_items_between_groups(
    outcomes: pd.DataFrame, group: list[str], random_state: int = 1
) -> pd.DataFrame:
    """The item columns of the models in ``group`` permuted (the defect of issue 27)."""
    rng = np.random.default_rng(random_state)
    ids = outcomes["query_id"].unique()
    mapping = dict(zip(ids, rng.permutation(ids), strict=True))
    out = outcomes.copy()
    rows = out["model"].isin(group)
    out.loc[rows, "query_id"] = out.loc[rows, "query_id"].map(mapping)
    return out


# --------------------------------------------------------------------------------------------------
# item alignment


def test_alignment_fails_on_items_permuted_between_two_groups():
    outcomes = shared_difficulty_outcomes()
    group = ["m1", "m3", "m5", "m7"]
    result = table_checks.check_item_alignment(
        check_result.score_table(permute_items_between_groups(outcomes, group))
    )
    assert result.status == "fail"
    blocks = [sorted(b) for b in result.numbers["blocks"]]
    assert sorted(blocks) == [["m0", "m2", "m4", "m6"], sorted(group)]
    assert abs(result.numbers["mean_r_across"]) < 0.05
    assert result.numbers["mean_r_within"] > 0.2
    assert "m1" in result.detail and "permuted" in result.detail


def test_alignment_passes_on_the_unpermuted_table():
    result = table_checks.check_item_alignment(
        check_result.score_table(shared_difficulty_outcomes())
    )
    assert result.status == "ok"
    assert len(result.numbers["blocks"]) == 1 and result.numbers["min_r"] > 0.1


def test_alignment_warns_on_one_random_model():
    outcomes = shared_difficulty_outcomes()
    rows = outcomes["model"] == "m2"
    rng = np.random.default_rng(3)
    outcomes.loc[rows, "score"] = rng.integers(0, 2, rows.sum()).astype(float)
    result = table_checks.check_item_alignment(check_result.score_table(outcomes))
    assert result.status == "warn"
    assert result.numbers["isolated"] == ["m2"]


def test_item_correlations_match_pandas_with_missing_cells():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(300, 5))
    scores[:, 1] += scores[:, 0]
    scores[rng.random(scores.shape) < 0.2] = np.nan
    r, n, _ = table_checks.item_correlations(scores)
    expected = pd.DataFrame(scores).corr().to_numpy()
    np.testing.assert_allclose(r, expected, atol=1e-10)
    assert n[0, 1] == int((np.isfinite(scores[:, 0]) & np.isfinite(scores[:, 1])).sum())


# --------------------------------------------------------------------------------------------------
# models


def test_near_identical_models_names_the_copied_model():
    outcomes = shared_difficulty_outcomes(n_models=4)
    copy = outcomes[outcomes["model"] == "m1"].assign(model="m1-copy")
    result = table_checks.check_near_identical_models(
        check_result.score_table(pd.concat([outcomes, copy], ignore_index=True))
    )
    assert result.status == "warn"
    assert result.numbers["pairs"] == [["m1", "m1-copy", pytest.approx(1.0), True]]
    clean = table_checks.check_near_identical_models(check_result.score_table(outcomes))
    assert clean.status == "ok" and clean.numbers["n_pairs"] == 0


def test_constant_model_is_named():
    outcomes = shared_difficulty_outcomes(n_models=4)
    outcomes.loc[outcomes["model"] == "m2", "score"] = 0.0
    result = table_checks.check_constant_models(check_result.score_table(outcomes))
    assert result.status == "warn" and result.numbers["models"] == {"m2": 0.0}


def test_never_and_always_winning_models():
    rng = np.random.default_rng(0)
    scores = rng.random((200, 4))
    scores[:, 0] = scores[:, 1:].min(axis=1) - 0.01  # loses every pair
    scores[:, 3] = scores[:, :3].max(axis=1) + 0.01  # wins every pair
    result = table_checks.check_never_or_always_wins(check_result.score_table(_long(scores)))
    assert result.status == "warn"
    assert result.numbers["never_wins"] == ["m0"] and result.numbers["always_wins"] == ["m3"]
    assert result.numbers["wins"]["m3"] == 600 and result.numbers["losses"]["m0"] == 600
    fair = table_checks.check_never_or_always_wins(
        check_result.score_table(shared_difficulty_outcomes())
    )
    assert fair.status == "ok"


# --------------------------------------------------------------------------------------------------
# ties and score type


def test_all_tie_share_and_categories():
    scores = np.array([[1, 1, 1], [0, 0, 0], [1, 0, 1], [0, 1, 1], [1, 1, 1]], dtype=float)
    queries = pd.DataFrame(
        {"query_id": [f"q{i}" for i in range(5)], "category": ["a", "a", "b", "b", "b"]}
    )
    result = table_checks.check_all_ties(check_result.score_table(_long(scores), queries))
    assert result.numbers["n_all_tie"] == 3
    assert result.numbers["all_tie_share"] == pytest.approx(0.6)
    assert result.numbers["per_category"] == {"a": [2, 2], "b": [3, 1]}
    assert result.numbers["all_tie_categories"] == ["a"]
    assert result.numbers["n_usable_by_protocol"] == 2  # [1, 0, 1] and [0, 1, 1]: 2 pairs each
    assert result.status == "warn"


def test_all_ties_fails_without_any_decisive_pair_and_warns_for_two_models():
    tied = table_checks.check_all_ties(check_result.score_table(_long(np.ones((10, 3)))))
    assert tied.status == "fail"
    # with 2 models the protocol runs on the one pair per query (issue 23 item 9)
    outcomes = shared_difficulty_outcomes(n_models=2)
    two = table_checks.check_all_ties(check_result.score_table(outcomes))
    assert two.status == "warn" and "one pair per query" in two.detail
    assert "does not apply" not in two.detail and "at least 1 decisive pair;" in two.detail
    assert two.numbers["min_pairs"] == 1
    kept = make_comparisons(outcomes, n_pairs=7, min_pairs=1).n_queries
    assert two.numbers["n_usable_by_protocol"] == kept > 0
    # the old rule (2 decisive pairs) still reads "does not apply"
    strict = table_checks.check_all_ties(check_result.score_table(outcomes), min_pairs=2)
    assert strict.status == "warn" and "does not apply" in strict.detail


def test_all_ties_reads_ties_with_the_protocols_tolerance():
    """Scores closer than the protocol's tie tolerance tie in the check as in the protocol."""
    rng = np.random.default_rng(3)
    base = 0.1 + 0.8 * rng.random((300, 1))
    scores = np.hstack([base, base + 5e-5, base + 2e-5])  # decisive only at tolerance 0
    scores[:100, 2] += 0.05  # a real gap on 100 queries
    outcomes = _long(scores)
    result = table_checks.check_all_ties(check_result.score_table(outcomes))
    kept = make_comparisons(outcomes, min_pairs=2)
    assert result.numbers["tolerance"] == DEFAULT_TIE_TOLERANCE
    assert result.numbers["n_usable_by_protocol"] == kept.n_queries
    assert result.numbers["n_all_tie"] == 300 - kept.n_queries == 200


@pytest.mark.parametrize(
    ("values", "kind"),
    [([0.0, 1.0], "binary"), ([0.0, 0.5, 1.0], "graded"), (None, "continuous")],
)
def test_score_type(values, kind):
    rng = np.random.default_rng(0)
    scores = rng.random((50, 3)) if values is None else rng.choice(values, (50, 3))
    result = table_checks.check_score_type(check_result.score_table(_long(scores)))
    assert result.numbers["score_type"] == kind
    assert result.numbers["tolerance"] == DEFAULT_TIE_TOLERANCE
    assert result.status == "ok"


def test_score_type_warns_on_float_noise_wins():
    rng = np.random.default_rng(0)
    base = rng.random(100)
    scores = np.column_stack([base, base + 1e-13, rng.random(100) * 3])
    result = table_checks.check_score_type(check_result.score_table(_long(scores)))
    assert result.status == "warn" and result.numbers["near_tie_share"] > 0.3
    assert "reads them as ties" in result.detail  # the protocol's tolerance ties them
    # gaps of 5e-5 are within the protocol's tolerance too; gaps of 1e-3 are not
    close = np.column_stack([base * 0.9, base * 0.9 + 5e-5, base * 0.9 + 1e-3])
    near = table_checks.check_score_type(check_result.score_table(_long(close)))
    assert near.numbers["near_tie_share"] == pytest.approx(0.5, abs=0.02)


# --------------------------------------------------------------------------------------------------
# texts and embeddings


def test_empty_and_duplicate_texts_also_across_the_split():
    queries = pd.DataFrame(
        {"query_id": ["a", "b", "c", "d", "e"], "text": ["x", " x ", "", "y", "z"]}
    )
    result = text_checks.check_texts(queries, train_ids=["a", "c", "d"], test_ids=["b", "e"])
    assert result.status == "warn"
    assert result.numbers["n_empty"] == 1 and result.numbers["empty_examples"] == ["c"]
    assert result.numbers["n_duplicate_texts"] == 2 and result.numbers["n_duplicate_groups"] == 1
    assert result.numbers["n_across_split"] == 1
    assert result.numbers["across_split_examples"] == ["b"]
    clean = text_checks.check_texts(queries.iloc[3:], train_ids=["d"], test_ids=["e"])
    assert clean.status == "ok" and clean.numbers["n_across_split"] == 0


def test_text_longer_than_the_embedder_limit_warns():
    # 600 words: too long for certain; 100 long words: too long only once tokenised (several word
    # pieces each); 100 short words over 254 characters: fits
    texts = ["short", "word " * 600, "antidisestablishmentarianism " * 100, "a bc " * 100]
    queries = pd.DataFrame({"query_id": list("abcd"), "text": texts})
    result = text_checks.check_text_length(queries)
    assert result.status == "warn"
    assert result.numbers["n_too_long"] == 2 and result.numbers["max_seq_length"] == 256
    from ecc_lib.embed.views import text_views

    assert int(text_views(texts, model_name=None, text_view="full")[1].sum()) == 2
    ok = text_checks.check_text_length(queries.iloc[:1])
    assert ok.status == "ok"


def test_embedding_collapse():
    rng = np.random.default_rng(0)
    texts = [f"t{i}" for i in range(40)]
    spread = rng.normal(size=(40, 8))
    assert text_checks.check_embedding_collapse(spread, texts).status == "ok"
    collapsed = np.tile(rng.normal(size=(1, 8)), (40, 1))
    result = text_checks.check_embedding_collapse(collapsed, texts)
    assert result.status == "fail" and result.numbers["n_sharing_a_vector"] == 40
    some = spread.copy()
    some[1] = some[0]
    assert text_checks.check_embedding_collapse(some, texts).status == "warn"


# --------------------------------------------------------------------------------------------------
# speed and the bundled data


def test_each_table_check_takes_under_two_seconds_on_29_by_12000():
    rng = np.random.default_rng(0)
    difficulty = rng.normal(size=12_000)
    ability = rng.normal(size=29)
    p = 1.0 / (1.0 + np.exp(-(ability[None, :] - difficulty[:, None])))
    outcomes = _long((rng.random(p.shape) < p).astype(float))
    queries = pd.DataFrame(
        {
            "query_id": [f"q{i}" for i in range(12_000)],
            "text": [f"question {i}" for i in range(12_000)],
        }
    )
    start = time.perf_counter()
    table = check_result.score_table(outcomes, queries)
    assert time.perf_counter() - start < 2.0
    assert table.shape == (12_000, 29)
    for name, check in checks.TABLE_CHECKS.items():
        result = check(table)
        assert result.seconds < 2.0, f"{name} took {result.seconds:.2f} s"
    for result in (
        text_checks.check_texts(queries),
        text_checks.check_text_length(queries),
        text_checks.check_embedding_collapse(rng.normal(size=(12_000, 384)), queries["text"]),
    ):
        assert result.seconds < 2.0, f"{result.name} took {result.seconds:.2f} s"


@pytest.fixture(scope="module", params=BUNDLED_DATASETS)
def bundled_checks(request):
    from ecc_lib.embed.encode import embed_texts

    queries, outcomes = load_bundled(request.param)
    vectors = embed_texts(queries["text"].astype(str).tolist(), show_progress=False)
    return request.param, checks.run_checks(outcomes, queries, embeddings=vectors)


def test_bundled_data_passes_or_warns_with_a_reason(bundled_checks):
    name, results = bundled_checks
    assert list(results) == list(checks.CHECK_NAMES)
    for check, result in results.items():
        assert result.status in ("ok", "warn"), f"{name}.{check}: {result.detail}"
        assert result.detail
    assert results["item_alignment"].status == "ok", results["item_alignment"].detail
    assert len(results["item_alignment"].numbers["blocks"]) == 1


def test_check_results_serialise(bundled_checks):
    _, results = bundled_checks
    payload = checks.checks_to_dict(results)
    for entry in payload.values():
        assert set(entry) == {"status", "detail", "numbers"}
    import json

    json.dumps(payload, allow_nan=False)


def test_report_puts_the_checks_first_and_names_what_fails():
    from ecc_lib.report.document import HeadlineTable, ReportSection
    from ecc_lib.report.sections.checks import add_checks

    section = ReportSection("01", "Data", findings="The run covers 1 dataset.")
    section.tables.append(HeadlineTable("05_data_headline", "Datasets", pd.DataFrame()))
    values = {
        "bad": {
            "texts": {"status": "ok", "detail": "fine", "numbers": {}},
            "item_alignment": {"status": "fail", "detail": "2 blocks", "numbers": {}},
        },
        "good": {"texts": {"status": "warn", "detail": "1 empty text", "numbers": {}}},
    }
    add_checks(section, values)
    assert section.findings.startswith(
        "Checks before numbers: bad FAILS (item alignment: 2 blocks)"
    )
    assert "good passes with warnings (texts: 1 empty text)" in section.findings
    assert section.findings.endswith("The run covers 1 dataset.")
    assert section.tables[0].name == "05_data_headline"  # the main body keeps the datasets table
    checks_table = section.tables[1]
    assert checks_table.name == "05_data_checks"
    assert checks_table.frame["check"].tolist() == ["item_alignment", "texts", "texts"]
    add_checks(section, {})  # nothing recorded: nothing added
    assert len(section.tables) == 2


def test_all_ties_use_the_protocols_tolerance():
    from ecc_lib.data.comparisons import DEFAULT_TIE_TOLERANCE

    scores = np.array([[0.5, 0.5 + DEFAULT_TIE_TOLERANCE / 2, 0.5], [0.5, 0.7, 0.5]])
    long = pd.DataFrame(
        {
            "query_id": np.repeat(["q1", "q2"], 3),
            "model": ["a", "b", "c"] * 2,
            "score": scores.ravel(),
        }
    )
    result = table_checks.check_all_ties(check_result.score_table(long))
    assert result.numbers["n_all_tie"] == 1 and result.numbers["tolerance"] == DEFAULT_TIE_TOLERANCE
