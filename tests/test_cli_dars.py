"""Tests of ``ecc-lab dars``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ecc_lib.cli import build_parser, main
from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes

REQUIRED_KEYS = {
    "winner_flip_rate_strict",
    "winner_flip_rate_strict_ci95",
    "winner_change_rate",
    "winner_change_rate_ci95",
    "winner_change_rate_r",
    "flip_rate_chance",
    "n_queries",
    "n_models",
    "n_observations",
    "winner_flip_rate",
    "winner_flip_rate_ci95",
    "flip_rate_method",
    "tied_top_share",
    "single_vs_distribution_disagreement",
    "mean_sigma",
    "labels",
}


def hand_frame() -> pd.DataFrame:
    """q1: A and B right half of the time (flip 0.5); q2: A always right, B never (flip 0)."""
    rows = []
    for q, m, scores in (
        ("q1", "A", [1, 0]),
        ("q1", "B", [0, 1]),
        ("q2", "A", [1, 1]),
        ("q2", "B", [0, 0]),
    ):
        for v, s in enumerate(scores):
            rows.append({"query_id": q, "model": m, "score": s, "variant_id": v})
    return pd.DataFrame(rows)


def run_cli(tmp_path, frame: pd.DataFrame, *extra: str, suffix: str = ".csv"):
    path = tmp_path / f"outcomes{suffix}"
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    out = tmp_path / "out.json"
    code = main(["dars", "--outcomes", str(path), "--json", str(out), *extra])
    return code, (json.loads(out.read_text()) if out.exists() else None)


def test_parser_contract():
    parser = build_parser()
    args = parser.parse_args(["dars", "--outcomes", "f.csv"])
    assert (args.cost_weight, args.beta, args.draws, args.seed, args.json, args.change_draws) == (
        0.05,
        0.2,
        1000,
        0,
        None,
        None,
    )
    assert parser.parse_args("dars --outcomes f.csv --change-draws 7".split()).change_draws == 7
    args = parser.parse_args(
        "dars --outcomes f.csv --lambda 0.1 --beta 0.3 --draws 2000 --seed 4 --json o.json".split()
    )
    assert (args.cost_weight, args.beta, args.draws, args.seed, args.json) == (
        0.1,
        0.3,
        2000,
        4,
        "o.json",
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["dars"])  # --outcomes is required


def test_hand_case_json(tmp_path, capsys):
    code, result = run_cli(tmp_path, hand_frame())
    assert code == 0
    assert REQUIRED_KEYS <= set(result)
    assert result["n_queries"] == 2 and result["n_models"] == 2 and result["n_observations"] == 8
    assert result["flip_rate_method"] == "exact"
    assert result["winner_flip_rate"] == pytest.approx(0.25)
    assert result["tied_top_share"] == pytest.approx(0.25)
    low, high = result["winner_flip_rate_ci95"]
    assert low <= 0.25 <= high
    # A is argmax U on both queries (q1: equal mean and spread, tie split half/half)
    assert result["labels"] == pytest.approx({"A": 0.75, "B": 0.25})
    assert result["cost_available"] is False
    assert result["subsets"]["output"] is None  # one decode per pair
    printed = capsys.readouterr().out
    assert "flip rate: pairwise" in printed and "0.250" in printed
    # q1: top sets {A}, {B}, {A, B}, {A, B} with 1/4 each, disjoint only for ({A}, {B}) and
    # ({B}, {A}): 1/8; q2: A always alone on top: 0
    assert result["winner_flip_rate_strict"] == pytest.approx(0.0625)
    # R = 2 observations per pair: the change reading is the pairwise one
    assert result["winner_change_rate_r"] == 2
    assert result["winner_change_rate"] == pytest.approx(0.25)
    assert result["flip_rate_chance"] == pytest.approx(
        {"pairwise": 0.5, "strict": 0.0, "change": 0.5}
    )


def test_parquet_and_monte_carlo(tmp_path):
    data = make_repeated_outcomes(
        n_queries=30, n_models=3, n_rewrites=2, n_decodes=2, score_type="continuous"
    )
    code, result = run_cli(
        tmp_path, data.outcomes, "--draws", "1000", "--seed", "3", suffix=".parquet"
    )
    assert code == 0
    assert result["flip_rate_method"] == "monte_carlo"
    assert result["flip_rate_draws"] == 1000
    assert 0 <= result["winner_flip_rate"] <= 1 - 1 / 3
    assert set(result["subsets"]) == {"input", "output", "both"}
    assert all(result["subsets"][k] is not None for k in ("input", "output", "both"))
    assert result["cost_available"] is True
    code2, again = run_cli(
        tmp_path, data.outcomes, "--draws", "1000", "--seed", "3", suffix=".parquet"
    )
    assert again["winner_flip_rate"] == result["winner_flip_rate"]


def test_single_observation_data_reports_not_applicable(tmp_path):
    frame = pd.DataFrame(
        {"query_id": ["q1", "q1", "q2", "q2"], "model": ["A", "B"] * 2, "score": [1, 0, 0, 1]}
    )
    code, result = run_cli(tmp_path, frame)
    assert code == 0
    assert result["winner_flip_rate"] is None
    assert all(v is None for v in result["subsets"].values())
    assert result["labels"] == pytest.approx({"A": 0.5, "B": 0.5})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.drop(columns="score"), "score"),
        (lambda f: f.assign(cost=np.where(f.index == 0, -1.0, 1.0)), "cost"),
    ],
)
def test_errors_exit_1(tmp_path, capsys, change, message):
    code, _ = run_cli(tmp_path, change(hand_frame()))
    assert code == 1
    assert message in capsys.readouterr().err


def test_missing_file(tmp_path, capsys):
    assert main(["dars", "--outcomes", str(tmp_path / "nope.csv")]) == 1
    assert "nope.csv" in capsys.readouterr().err


# ------------------------------------------------ the three readings against brute force


def brute_force_readings(outcomes: pd.DataFrame, n_draws: int) -> dict[str, float]:
    """Mean over queries of the three readings for binary scores, by enumerating every success
    pattern of the models (and every pair of patterns): a code path separate from the library's
    closed forms (Gauss-Legendre winner probabilities, inclusion-exclusion strict reading)."""
    p = outcomes.pivot_table(index="query_id", columns="model", values="score", aggfunc="mean")
    p = p.to_numpy(float)
    n_models = p.shape[1]
    patterns = (np.arange(2**n_models)[:, None] >> np.arange(n_models)) & 1  # (P, M)
    patterns = patterns.astype(bool)
    prob = np.ones((len(p), len(patterns)))
    for m in range(n_models):
        prob *= np.where(patterns[None, :, m], p[:, m : m + 1], 1 - p[:, m : m + 1])
    top = patterns | ~patterns.any(axis=1, keepdims=True)
    win = top / top.sum(axis=1, keepdims=True)
    w = prob @ win
    overlap = (top.astype(float) @ top.T.astype(float)) > 0
    strict = ((prob @ (~overlap).astype(float)) * prob).sum(axis=1)
    return {
        "pairwise": float(np.mean(1 - (w**2).sum(axis=1))),
        "strict": float(np.mean(strict)),
        "change": float(np.mean(1 - (w**n_draws).sum(axis=1))),
    }


def check_readings(result: dict, outcomes: pd.DataFrame) -> None:
    expected = brute_force_readings(outcomes, result["winner_change_rate_r"])
    assert result["winner_flip_rate"] == pytest.approx(expected["pairwise"], abs=0.003)
    assert result["winner_flip_rate_strict"] == pytest.approx(expected["strict"], abs=0.003)
    assert result["winner_change_rate"] == pytest.approx(expected["change"], abs=0.003)
    for key in ("winner_flip_rate", "winner_flip_rate_strict", "winner_change_rate"):
        low, high = result[f"{key}_ci95"]
        assert low <= result[key] <= high


def test_many_decodes_readings_match_brute_force(tmp_path):
    # held-out style data: 7 models x 10 decodes, binary scores
    data = make_repeated_outcomes(
        n_queries=300, n_models=7, n_rewrites=1, n_decodes=10, random_state=11
    )
    code, result = run_cli(tmp_path, data.outcomes)
    assert code == 0
    assert result["flip_rate_method"] == "exact"
    assert result["winner_change_rate_r"] == 10
    assert result["flip_rate_chance"] == pytest.approx(
        {"pairwise": 6 / 7, "strict": 0.0, "change": 1 - 7.0**-9}
    )
    assert result["subsets"]["input"] is None  # no rewrites
    check_readings(result, data.outcomes)
    code, r4 = run_cli(tmp_path, data.outcomes, "--change-draws", "4")
    assert r4["winner_change_rate_r"] == 4
    check_readings(r4, data.outcomes)
    assert r4["winner_change_rate"] < result["winner_change_rate"]


def test_re2_readings_match_brute_force(tmp_path):
    from ecc_lib.data.sources import load_bundled

    _, outcomes = load_bundled("re2")
    code, result = run_cli(tmp_path, outcomes, suffix=".parquet")
    assert code == 0 and result["winner_change_rate_r"] == 4
    check_readings(result, outcomes)
