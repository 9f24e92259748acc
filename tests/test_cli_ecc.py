"""``ecc-lab ecc``: the command-line contract."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ecc_lib.cli import build_parser, main
from ecc_lib.synthetic.capability import make_capability_data

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ecc_cli")
    data = make_capability_data(n_queries=400, random_state=3)
    queries = folder / "queries.csv"
    outcomes = folder / "outcomes.parquet"
    embeddings = folder / "embeddings.npy"
    data.queries.to_csv(queries, index=False)
    data.outcomes.to_parquet(outcomes, index=False)
    np.save(embeddings, data.embeddings)
    nocat = folder / "queries_nocat.csv"
    data.queries.drop(columns="category").to_csv(nocat, index=False)
    return {
        "folder": folder,
        "queries": str(queries),
        "outcomes": str(outcomes),
        "embeddings": str(embeddings),
        "nocat": str(nocat),
        "data": data,
    }


def test_help_lists_the_contract_flags():
    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices["ecc"]
    flags = {opt for action in sub._actions for opt in action.option_strings}
    expected = {
        "--outcomes",
        "--queries",
        "--embeddings",
        "--k",
        "--lam",
        "--temperature",
        "--pairs",
        "--probes",
        "--test-size",
        "--seed",
        "--json",
        "--probe-strategy",
        "--evidence",
    }
    assert expected <= flags
    assert flags - expected <= {"-h", "--help"}
    args = parser.parse_args(["ecc", "--outcomes", "o", "--queries", "q"])
    assert (args.k, args.lam, args.temperature, args.pairs, args.probes) == (30, 3.0, 0.1, 7, 1)
    assert (args.test_size, args.seed, args.embeddings, args.json) == (0.2, 42, None, None)


def test_runs_and_writes_json(files, capsys):
    out = files["folder"] / "result.json"
    code = main(
        [
            "ecc",
            "--outcomes",
            files["outcomes"],
            "--queries",
            files["queries"],
            "--embeddings",
            files["embeddings"],
            "--k",
            "4",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    for name in ("global", "ecc", "emb_only", "comp_only", "human", "ecc - human"):
        assert name in printed
    payload = json.loads(out.read_text())
    assert payload["n_queries"] == 400 and payload["n_models"] == 8
    assert set(payload["nll"]) == {"global", "ecc", "emb_only", "comp_only", "human", "ecc_labels"}
    assert set(payload["ranking_quality_gain"]) == {
        "ecc",
        "emb_only",
        "comp_only",
        "human",
        "ecc_labels",
    }
    assert set(payload["ci95"]) == set(payload["ranking_quality_gain"])
    for low, high in payload["ci95"].values():
        assert low <= high
    assert payload["fit_seconds"] > 0 and payload["n_iter"] >= 1
    assert payload["params"]["n_clusters"] == 4 and payload["params"]["random_state"] == 42
    assert payload["ranking_quality_gain"]["ecc"] > payload["ranking_quality_gain"]["emb_only"]


def test_flags_reach_the_protocol(files, tmp_path):
    out = tmp_path / "r.json"
    code = main(
        [
            "ecc",
            "--outcomes",
            files["outcomes"],
            "--queries",
            files["nocat"],
            "--embeddings",
            files["embeddings"],
            "--k",
            "3",
            "--lam",
            "1.5",
            "--temperature",
            "0.2",
            "--pairs",
            "5",
            "--probes",
            "2",
            "--test-size",
            "0.25",
            "--seed",
            "7",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    payload = json.loads(out.read_text())
    assert "human" not in payload["nll"]
    assert payload["n_test"] == 100 and payload["n_probes"] == 2
    # 5 pairs per query, 2 probes: 3 scored pairs on each of the 100 test queries
    assert payload["n_scored"] == 300
    params = payload["params"]
    assert (params["n_clusters"], params["lam"], params["temperature"]) == (3, 1.5, 0.2)
    assert (params["n_pairs"], params["random_state"]) == (5, 7)


def test_embeds_texts_when_no_embeddings_given(files, monkeypatch, capsys):
    import ecc_lib.embeddings

    seen = {}

    def fake_embed(texts, **kwargs):
        seen["texts"] = list(texts)
        return files["data"].embeddings

    monkeypatch.setattr(ecc_lib.embeddings, "embed_texts", fake_embed)
    code = main(["ecc", "--outcomes", files["outcomes"], "--queries", files["queries"], "--k", "2"])
    assert code == 0
    assert seen["texts"] == list(files["data"].queries["text"])
    assert "ecc" in capsys.readouterr().out


def test_mismatched_embedding_rows_fail_clearly(files, tmp_path, capsys):
    bad = tmp_path / "bad.npy"
    np.save(bad, files["data"].embeddings[:-3])
    code = main(
        [
            "ecc",
            "--outcomes",
            files["outcomes"],
            "--queries",
            files["queries"],
            "--embeddings",
            str(bad),
        ]
    )
    assert code == 1
    err = capsys.readouterr().err
    assert "397" in err and "400 rows" in err


def test_single_model_and_missing_file_fail_clearly(files, tmp_path, capsys):
    data = files["data"]
    one = tmp_path / "one.csv"
    data.outcomes[data.outcomes["model"] == "model_0"].to_csv(one, index=False)
    code = main(
        [
            "ecc",
            "--outcomes",
            str(one),
            "--queries",
            files["queries"],
            "--embeddings",
            files["embeddings"],
        ]
    )
    assert code == 1
    assert "model" in capsys.readouterr().err
    code = main(["ecc", "--outcomes", str(tmp_path / "none.csv"), "--queries", files["queries"]])
    assert code == 1
    assert "none.csv" in capsys.readouterr().err
    code = main(
        [
            "ecc",
            "--outcomes",
            files["outcomes"],
            "--queries",
            files["queries"],
            "--embeddings",
            files["embeddings"],
            "--probes",
            "7",
        ]
    )
    assert code == 1
    assert "--probes" in capsys.readouterr().err


def test_probe_strategy_active_reports_the_shared_pair_comparison(files, capsys):
    out = files["folder"] / "active.json"
    code = main(
        [
            "ecc",
            "--outcomes",
            files["outcomes"],
            "--queries",
            files["nocat"],
            "--embeddings",
            files["embeddings"],
            "--k",
            "4",
            "--probe-strategy",
            "active",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    assert "probe strategy active vs first" in capsys.readouterr().out
    payload = json.loads(out.read_text())["probe_strategy_comparison"]
    assert set(payload["gain"]) == {"first", "active"}
    assert payload["n_shared_pairs"] > 0
    assert {(c["strategy"], c["n_probes"]) for c in payload["curve"]} == {
        (s, n) for s in ("first", "random", "active") for n in (1, 2, 3)
    }


def test_soft_evidence_needs_repeats(files, capsys):
    assert (
        main(
            [
                "ecc",
                "--outcomes",
                files["outcomes"],
                "--queries",
                files["nocat"],
                "--embeddings",
                files["embeddings"],
                "--evidence",
                "soft",
            ]
        )
        == 1
    )
    assert "repeated observations" in capsys.readouterr().err


def test_soft_evidence_on_repeated_outcomes(tmp_path, capsys):
    from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes

    s = make_repeated_outcomes(n_queries=150, n_models=3, n_rewrites=2, n_decodes=2)
    s.queries.drop(columns="category").to_csv(tmp_path / "q.csv", index=False)
    s.outcomes.to_parquet(tmp_path / "o.parquet", index=False)
    np.save(tmp_path / "e.npy", s.embeddings)
    out = tmp_path / "r.json"
    code = main(
        [
            "ecc",
            "--outcomes",
            str(tmp_path / "o.parquet"),
            "--queries",
            str(tmp_path / "q.csv"),
            "--embeddings",
            str(tmp_path / "e.npy"),
            "--k",
            "3",
            "--pairs",
            "3",
            "--evidence",
            "soft",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    payload = json.loads(out.read_text())
    assert payload["params"]["evidence"] == "soft"
    assert payload["soft_evidence"]["logloss"]["soft"] > 0
