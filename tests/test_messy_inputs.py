"""Messy, real-shaped input files: each case of issue 9 ("inputs mean what they say", the shared
imperfect-data policy, dataset resolution)."""

from __future__ import annotations

import json
import logging

import numpy as np
import pandas as pd
import pytest

from ecc_lib.data import policy as data_checks
from ecc_lib.data import protocol_policy, sources, tables
from ecc_lib.data.observations import repeated_observations
from ecc_lib.data.policy import apply_data_policy
from ecc_lib.data.protocol_policy import DataPolicyError
from ecc_lib.data.schema import DataValidationError
from ecc_lib.runs import provenance
from ecc_lib.synthetic.messy import write_foreign_dataset

IDS = ["001", "002", "1e1", "010", "0x1"]


def _long(ids=IDS, models=("m1", "m2")):
    rows = [
        {"query_id": q, "model": m, "score": float((i + j) % 2), "cost": 0.1 * (j + 1)}
        for i, q in enumerate(ids)
        for j, m in enumerate(models)
    ]
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------- query ids


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".tsv", ".json"])
def test_query_ids_stay_strings_in_every_format(tmp_path, suffix):
    queries = pd.DataFrame({"query_id": IDS, "text": [f"question {q}" for q in IDS]})
    path = tmp_path / f"queries{suffix}"
    if suffix == ".tsv":
        queries.to_csv(path, sep="\t", index=False)
    elif suffix == ".json":
        path.write_text(json.dumps(queries.to_dict(orient="records")))
    else:
        tables.write_table(queries, path)
    assert tables.read_queries(path)["query_id"].tolist() == IDS


def test_mixing_formats_keeps_ids_aligned(tmp_path):
    queries = pd.DataFrame({"query_id": IDS, "text": [f"question {q}" for q in IDS]})
    tables.write_table(queries, tmp_path / "queries.parquet")
    tables.write_table(_long(), tmp_path / "outcomes.csv")
    q, o = sources.load_dataset(str(tmp_path))
    assert sorted(o["query_id"].unique()) == sorted(IDS)
    tables.write_table(_long(), tmp_path / "other.jsonl")
    o2 = tables.read_outcomes(tmp_path / "other.jsonl", queries=q)
    assert sorted(o2["query_id"].unique()) == sorted(IDS)


# ------------------------------------------------------------------------------- wide tables


def _wide_frame():
    return pd.DataFrame(
        {
            "query_id": ["001", "002", "003", "004"],
            "prompt": ["a", "b", "c", "d"],
            "gpt": [1.0, 0.0, 1.0, 1.0],
            "llama": [0.0, 0.0, 1.0, 0.5],
            "is_hard": [True, False, True, False],
            "difficulty": [1, 3, 5, 2],
        }
    )


def test_wide_table_infers_models_among_scores_in_unit_interval(tmp_path, caplog):
    path = tmp_path / "wide.csv"
    _wide_frame().to_csv(path, index=False)
    caplog.set_level(logging.INFO, logger="ecc_lib.data.tables")
    queries, outcomes = tables.from_wide(tables.read_table(path), source=str(path))
    assert sorted(outcomes["model"].unique()) == ["gpt", "llama"]
    assert queries["query_id"].tolist() == ["001", "002", "003", "004"]
    assert (
        "is_hard (boolean)" in caplog.text and "difficulty (values outside [0, 1])" in caplog.text
    )
    assert "inferred 2 model column(s): ['gpt', 'llama']" in caplog.text


def test_wide_table_text_cell_is_an_error_naming_the_cell(tmp_path):
    frame = _wide_frame().astype({"llama": object})
    frame.loc[2, "llama"] = "timeout"
    path = tmp_path / "wide.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(DataValidationError, match=r"'llama'.*row 2.*'timeout'"):
        tables.read_outcomes(path)
    with pytest.raises(DataValidationError, match=r"'llama'.*row 2"):
        tables.from_wide(tables.read_table(path), model_columns=["gpt", "llama"])


def test_routerbench_text_cell_in_a_model_column_is_an_error():
    frame = pd.DataFrame(
        {
            "sample_id": ["a.1", "a.2"],
            "prompt": ["p", "q"],
            "eval_name": ["mmlu", "gsm8k"],
            "gpt-4": [1.0, "n/a"],
            "gpt-4|total_cost": [0.1, 0.2],
            "llama": [0.0, 1.0],
            "llama|total_cost": [0.01, 0.02],
        }
    )
    with pytest.raises(DataValidationError, match=r"'gpt-4'.*row 1.*'n/a'"):
        sources.from_routerbench(frame)


# ------------------------------------------------------------------------------- costs and ids


@pytest.mark.parametrize(
    ("value", "what"), [("free", "text"), ("inf", "infinite"), (-1.0, "negative")]
)
def test_bad_costs_are_errors_naming_the_row(tmp_path, value, what):
    frame = _long().astype({"cost": object})
    frame.loc[3, "cost"] = value
    path = tmp_path / "outcomes.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(DataValidationError, match=rf"cost.*{what}.*row 3"):
        tables.read_outcomes(path)


def test_empty_cost_cells_stay_missing(tmp_path):
    frame = _long().astype({"cost": object})
    frame.loc[3, "cost"] = None
    path = tmp_path / "outcomes.csv"
    frame.to_csv(path, index=False)
    assert tables.read_outcomes(path)["cost"].isna().sum() == 1


def test_one_based_variant_and_decode_ids(tmp_path):
    rows = [
        {
            "query_id": q,
            "model": m,
            "score": float((v + d + len(m) + i) % 2),
            "variant_id": v,
            "decode_id": d,
        }
        for i, q in enumerate(IDS)
        for m in ("m1", "m22")
        for v in (1, 2)
        for d in (1, 2, 3)
    ]
    path = tmp_path / "outcomes.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    outcomes = tables.read_outcomes(path)
    assert outcomes["variant_id"].min() == 0 and outcomes["decode_id"].min() == 0
    obs = repeated_observations(outcomes)
    for side in ("input", "output"):
        part = obs.subset_of(side)
        assert part.n_queries == len(IDS) and part.has_repeats, side


# ------------------------------------------------------------------------------- the policy


def test_queries_seen_for_one_model_are_left_out_with_a_reason(caplog):
    outcomes = pd.concat(
        [_long(), pd.DataFrame([{"query_id": "lonely", "model": "m1", "score": 1.0}])]
    )
    queries = pd.DataFrame({"query_id": [*IDS, "lonely", "unseen"], "text": "t"})
    with pytest.raises(DataValidationError, match="single model"):
        repeated_observations(outcomes)  # what 02, 04 and `ecc-lab dars` did before
    caplog.set_level(logging.WARNING, logger="ecc_lib.data.policy")
    q, o, report = apply_data_policy(queries, outcomes, dataset="messy")
    assert report.n_left_out == 2 and report.n_queries == len(IDS)
    assert report.left_out_examples[data_checks.REASON_FEWER_THAN_2_MODELS] == ["lonely", "unseen"]
    assert "left out 2 of 7 queries observed for fewer than 2 models" in caplog.text
    assert set(q["query_id"]) == set(IDS) and "lonely" not in set(o["query_id"])
    assert repeated_observations(o).n_queries == len(IDS)
    assert any("left out" in note for note in report.notes)
    assert json.dumps(report.to_dict())


def test_policy_notes_no_repeats_one_category_and_two_models():
    queries = pd.DataFrame({"query_id": IDS, "text": "t", "category": "math"})
    _, _, report = apply_data_policy(queries, _long(), dataset="flat")
    assert not report.has_repeats and report.has_cost and report.n_categories == 1
    joined = " ".join(report.notes)
    assert "no repeated observations" in joined
    assert "human-label baseline" in joined and "n/a" in joined
    assert "only 2 models" in joined
    assert protocol_policy.human_baseline_reason(np.array(["a", "b", None], dtype=object)) is None
    assert data_checks.no_repeats_reason(pd.concat([_long(), _long()])) is None


@pytest.mark.parametrize(
    ("cost_weight", "beta"), [(-0.1, 0.2), (0.05, -1.0), (float("nan"), 0.2), (0.05, float("inf"))]
)
def test_utility_weights_must_be_finite_and_non_negative(cost_weight, beta):
    with pytest.raises(DataPolicyError, match="finite number >= 0"):
        protocol_policy.check_utility_weights(cost_weight, beta)
    protocol_policy.check_utility_weights(0.0, 0.0)


def test_protocol_sizes():
    with pytest.raises(DataPolicyError, match="2 training queries"):
        protocol_policy.check_protocol_sizes(2, 1)
    with pytest.raises(DataPolicyError, match="K = \\[100\\].*44 training"):
        protocol_policy.check_protocol_sizes(44, 11, embedding_dim=384, n_clusters=[5, 100])
    with pytest.raises(DataPolicyError, match="1 dimension"):
        protocol_policy.check_protocol_sizes(50, 10, embedding_dim=1)
    with pytest.raises(DataPolicyError, match="no test query"):
        protocol_policy.check_protocol_sizes(50, 0)
    assert (
        "small data"
        in protocol_policy.check_protocol_sizes(44, 11, embedding_dim=384, n_clusters=10)[0]
    )
    assert protocol_policy.check_protocol_sizes(400, 100, embedding_dim=384, n_clusters=30) == []


# ------------------------------------------------------------------------------- resolution


def test_a_local_folder_wins_over_a_public_name(tmp_path, monkeypatch):
    folder = tmp_path / "sprout"
    write_foreign_dataset(folder, n_queries=30)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sources, "download_public", lambda *a, **k: pytest.fail("went online"))
    queries, outcomes = sources.load_dataset("sprout")
    assert len(queries) == 30 and queries["query_id"].iloc[0] == "000"


def test_provenance_load_dataset_applies_and_records_the_policy(tmp_path):
    planted = write_foreign_dataset(tmp_path / "foreign", n_queries=40)
    run = tmp_path / "run"
    queries, outcomes = provenance.load_dataset(str(planted.folder), run_dir=run)
    assert len(queries) == 40 - len(planted.single_model)
    assert "1e1" in set(queries["query_id"])
    fragment = json.loads((run / "metrics" / "data_policy.json").read_text())["values"]
    assert fragment["foreign"]["n_left_out"] == len(planted.single_model)
    assert provenance.dataset_label(str(planted.folder) + "/") == "foreign"
