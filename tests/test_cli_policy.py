"""``ecc-lab ecc`` and ``ecc-lab dars`` on imperfect data: the shared policy, sizes and weights
(issue 9)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ecc_lib.cli import main
from ecc_lib.embed.cache import EmbeddingCache, text_digests
from ecc_lib.synthetic.capability import make_capability_data

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _write(folder, n_queries, n_models=6, categories=True, random_state=0):
    data = make_capability_data(n_queries=n_queries, random_state=random_state)
    queries = data.queries if categories else data.queries.assign(category="all")
    queries.to_csv(folder / "queries.csv", index=False)
    models = sorted(data.outcomes["model"].unique())[:n_models]
    outcomes = data.outcomes[data.outcomes["model"].isin(models)]
    outcomes.to_csv(folder / "outcomes.csv", index=False)
    np.save(folder / "emb.npy", data.embeddings)
    return data


def _ecc(folder, *extra):
    return main(
        [
            "ecc",
            "--queries",
            str(folder / "queries.csv"),
            "--outcomes",
            str(folder / "outcomes.csv"),
            "--embeddings",
            str(folder / "emb.npy"),
            "--k",
            "3",
            *extra,
        ]
    )


@pytest.mark.parametrize(
    ("n_queries", "extra", "message"),
    [
        (3, [], "training queries; at least 10"),  # was "ECC +23.23 [+23.23, +23.23]"
        (55, ["--k", "100"], "K = [100] clusters exceed the 44 training queries"),
        (200, ["--test-size", "0.99"], "training queries; at least 10"),
    ],
)
def test_ecc_refuses_sizes_that_give_nonsense(tmp_path, capsys, n_queries, extra, message):
    _write(tmp_path, n_queries)
    assert _ecc(tmp_path, *extra) == 1
    assert message in capsys.readouterr().err


def test_ecc_refuses_one_dimensional_embeddings(tmp_path, capsys):
    data = _write(tmp_path, 200)
    np.save(tmp_path / "emb.npy", data.embeddings[:, :1])
    assert _ecc(tmp_path) == 1
    assert "1 dimension(s); at least 2" in capsys.readouterr().err


def test_ecc_with_two_models_runs_on_the_one_pair_and_says_so(tmp_path, capsys):
    # issue 23 item 9: with 2 models ECC runs on the one pair per query, with a warning
    _write(tmp_path, 80, n_models=2)
    assert _ecc(tmp_path) == 0
    captured = capsys.readouterr()
    assert "only 2 models: each query has a single comparison pair" in captured.out + captured.err


def test_ecc_small_data_and_one_category_are_said(tmp_path, capsys):
    _write(tmp_path, 80, categories=False)
    assert _ecc(tmp_path, "--json", str(tmp_path / "out.json")) == 0
    out = capsys.readouterr().out
    assert "warning: small data: 64 training queries" in out
    assert "human-label baseline needs at least 2" in out
    payload = json.loads((tmp_path / "out.json").read_text())
    assert payload["ranking_quality_gain"]["human"] is None  # n/a, not +0.00
    assert "human" not in payload["nll"]


def test_ecc_json_has_embedding_check_and_left_out_queries(tmp_path, capsys, monkeypatch):
    data = _write(tmp_path, 150)
    outcomes = data.outcomes
    lonely = data.queries["query_id"].iloc[:2].tolist()
    keep = ~outcomes["query_id"].isin(lonely) | (outcomes["model"] == outcomes["model"].iloc[0])
    outcomes.loc[keep].to_csv(tmp_path / "outcomes.csv", index=False)
    # embeddings through the cache (no model): vectors stored for the query texts
    monkeypatch.setenv("ECC_LIB_CACHE_DIR", str(tmp_path / "cache"))
    EmbeddingCache(None, write_dir=tmp_path / "cache", read_dirs=[]).add(
        text_digests(data.queries["text"].tolist()), data.embeddings
    )
    code = main(
        [
            "ecc",
            "--queries",
            str(tmp_path / "queries.csv"),
            "--outcomes",
            str(tmp_path / "outcomes.csv"),
            "--k",
            "3",
            "--json",
            str(tmp_path / "out.json"),
        ]
    )
    assert code == 0
    assert "2 of 150 queries were left out" in capsys.readouterr().out
    payload = json.loads((tmp_path / "out.json").read_text())
    check = payload["embedding_check"]
    assert check["n_texts"] == 150 and check["text_view"] == "auto"
    assert {"n_truncated", "n_duplicate_vectors"} <= set(check)
    assert payload["data_policy"]["n_left_out"] == 2
    assert payload["inputs"]["n_input_queries"] == 150


# ------------------------------------------------------------------------------- dars


def _dars_frame():
    rows = [
        {
            "query_id": f"{q:03d}",
            "model": m,
            "score": float((q + d + k) % 2),
            "decode_id": d,
            "cost": 0.1 * (k + 1),
        }
        for q in range(6)
        for k, m in enumerate(("A", "B", "C"))
        for d in (1, 2)  # 1-based decode ids
    ]
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--lambda", "nan"), ("--lambda", "-0.1"), ("--beta", "-1"), ("--beta", "inf")],
)
def test_dars_weights_must_be_finite_and_non_negative(tmp_path, capsys, flag, value):
    _dars_frame().to_csv(tmp_path / "o.csv", index=False)
    assert main(["dars", "--outcomes", str(tmp_path / "o.csv"), flag, value]) == 1
    err = capsys.readouterr().err
    assert "finite number >= 0" in err and "Traceback" not in err


def test_dars_leaves_out_single_model_queries_and_reads_one_based_ids(tmp_path, capsys):
    frame = _dars_frame()
    frame = frame[~((frame["query_id"] == "002") & (frame["model"] != "A"))]
    frame.to_csv(tmp_path / "o.csv", index=False)
    code = main(["dars", "--outcomes", str(tmp_path / "o.csv"), "--json", str(tmp_path / "o.json")])
    assert code == 0
    assert "1 of 6 queries were left out" in capsys.readouterr().out
    summary = json.loads((tmp_path / "o.json").read_text())
    assert summary["n_queries"] == 5 and summary["data_policy"]["n_left_out"] == 1
    assert summary["subsets"]["output"] is not None  # decodes 1, 2 are repeats of variant 0


def test_dars_text_and_infinite_costs_are_errors(tmp_path, capsys):
    frame = _dars_frame().astype({"cost": object})
    frame.loc[4, "cost"] = "inf"
    frame.to_csv(tmp_path / "o.csv", index=False)
    assert main(["dars", "--outcomes", str(tmp_path / "o.csv")]) == 1
    assert "infinite; first at row 4" in capsys.readouterr().err
