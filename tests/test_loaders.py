"""Each loader on a small file in its real format, and the bundled datasets."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ecc_lib.data.schema import DataValidationError
from ecc_lib.data.sources import (
    BUNDLED_DATASETS,
    from_dars_release,
    from_routerbench,
    from_sprout,
    load_bundled,
    load_dataset,
    load_public,
)
from ecc_lib.data.tables import read_outcomes, read_queries, read_table, write_table


@pytest.mark.parametrize("name", BUNDLED_DATASETS)
def test_bundled_datasets_load_and_validate(name):
    queries, outcomes = load_bundled(name)
    assert queries["query_id"].is_unique
    assert set(outcomes["query_id"]) <= set(queries["query_id"])
    assert outcomes["score"].between(0, 1).all()
    assert outcomes["model"].nunique() >= 2


def test_bundled_counts():
    queries, outcomes = load_bundled("dcrouter")
    assert (len(queries), outcomes["model"].nunique(), queries["category"].nunique()) == (
        5989,
        9,
        14,
    )
    assert len(outcomes) == 5989 * 9
    queries, outcomes = load_bundled("re2")
    assert len(queries) == 1319 + 1221
    assert sorted(outcomes["variant_id"].unique()) == [0, 1, 2, 3]
    assert outcomes.groupby(["query_id", "model"]).size().eq(4).all()
    queries, outcomes = load_bundled("mmlu2")
    assert queries["category"].nunique() == 57 and outcomes["model"].nunique() == 2


def test_unknown_bundled_name():
    with pytest.raises(ValueError, match="unknown bundled dataset 'nope'"):
        load_bundled("nope")


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".pq", ".jsonl", ".ndjson"])
def test_generic_long_round_trip(tmp_path, suffix):
    queries = pd.DataFrame({"query_id": ["q1", "q2"], "text": ["a", "b"], "category": ["x", "y"]})
    outcomes = pd.DataFrame(
        {
            "query_id": ["q1", "q1", "q2", "q2", "q1"],
            "model": ["m1", "m2", "m1", "m2", "m1"],
            "score": [1.0, 0.0, 0.5, 1.0, 0.0],
            "variant_id": [0, 0, 0, 0, 1],
            "cost": [0.1, 0.2, 0.1, 0.2, 0.1],
        }
    )
    write_table(queries, tmp_path / f"queries{suffix}")
    write_table(outcomes, tmp_path / f"outcomes{suffix}")
    q = read_queries(tmp_path / f"queries{suffix}")
    o = read_outcomes(tmp_path / f"outcomes{suffix}", q)
    assert len(o) == 5 and o["variant_id"].tolist() == [0, 0, 0, 0, 1]
    q2, o2 = load_dataset(str(tmp_path))
    pd.testing.assert_frame_equal(o, o2)


def test_write_table_refuses_an_unknown_extension_before_creating_folders(tmp_path):
    with pytest.raises(ValueError, match=r"new/t\.xlsx: write \.csv, .*\.ndjson"):
        write_table(pd.DataFrame({"a": [1]}), tmp_path / "new" / "t.xlsx")
    assert not (tmp_path / "new").exists()


def test_generic_wide_csv_reports_empty_cells(tmp_path, caplog):
    path = tmp_path / "wide.csv"
    path.write_text("query_id,prompt,category,gpt,llama\nq1,hi,chat,1,0\nq2,yo,chat,0,\n")
    with caplog.at_level("WARNING"):
        outcomes = read_outcomes(path)
    assert len(outcomes) == 3
    assert "left out 1 empty score cell" in caplog.text


def test_routerbench_format(tmp_path):
    frame = pd.DataFrame(
        {
            "sample_id": ["mmlu.1", "gsm.2"],
            "prompt": ["Q1", "Q2"],
            "eval_name": ["mmlu", "gsm8k"],
            "gpt-4": [1.0, 0.0],
            "gpt-4|model_response": ["A", "B"],
            "gpt-4|total_cost": [0.01, 0.02],
            "mistral": [0.0, 1.0],
            "mistral|model_response": ["C", "D"],
            "mistral|total_cost": [0.001, 0.002],
            "oracle_model_to_route_to": ["gpt-4", "mistral"],
        }
    )
    frame.to_pickle(tmp_path / "routerbench_0shot.pkl")
    queries, outcomes = from_routerbench(
        read_table(tmp_path / "routerbench_0shot.pkl", allow_pickle=True)
    )
    assert queries["category"].tolist() == ["mmlu", "gsm8k"]
    assert sorted(outcomes["model"].unique()) == ["gpt-4", "mistral"]
    cost = outcomes.set_index(["query_id", "model"])["cost"]
    assert cost[("gsm.2", "mistral")] == pytest.approx(0.002)
    with pytest.raises(DataValidationError, match="eval_name"):
        from_routerbench(frame.drop(columns="eval_name"))


def test_sprout_format(tmp_path):
    frame = pd.DataFrame(
        {
            "id": [1, 2],
            "prompt": ["P1", "P2"],
            "dataset": ["math", "code"],
            "model-a": [
                {"score": 1.0, "num_input_tokens": 3},
                {"score": 0.0, "num_input_tokens": 3},
            ],
            "model-b": [{"score": 0.5}, {"score": 1.0}],
        }
    )
    frame.to_parquet(tmp_path / "sprout.parquet")
    queries, outcomes = from_sprout(read_table(tmp_path / "sprout.parquet"))
    assert queries["text"].tolist() == ["P1", "P2"]
    assert queries["category"].tolist() == ["math", "code"]
    assert outcomes.set_index(["query_id", "model"])["score"][("1", "model-b")] == 0.5


def test_dars_release_format(tmp_path):
    rows = []
    for variant in range(2):
        for decode in range(2):
            for model in ("m1", "m2"):
                rows.append(
                    {
                        "query_id": "gpqa-7",
                        "model": model,
                        "score": float((variant + decode + (model == "m2")) % 2),
                        "cost": 0.001,
                        "prompt_variant_id": variant,
                        "decode_id": decode,
                        "observation_type": "train_grid",
                        "question": "original text" if variant == 0 else "reworded text",
                        "dataset": "gpqa",
                    }
                )
    path = tmp_path / "dars.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    queries, outcomes = from_dars_release(read_table(path))
    assert queries["text"].tolist() == ["original text"]
    assert queries["category"].tolist() == ["gpqa"]
    assert len(outcomes) == 8 and sorted(outcomes["variant_id"].unique()) == [0, 1]
    assert np.isclose(outcomes["score"].mean(), 0.5)


def test_public_download_fails_clearly_offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConnectionError, match="withmartian/routerbench"):
        load_public("routerbench", cache_dir=tmp_path)
