"""``ecc-lab map`` (issue 37): the capability map of a dataset folder, with the protocol flags of
``ecc-lab ecc``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ecc_lib.cli import build_parser, main
from ecc_lib.metrics_schema import validate_section
from ecc_lib.synthetic.capability import make_capability_data

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _flags(name: str) -> set[str]:
    sub = build_parser()._subparsers._group_actions[0].choices[name]
    return {opt for action in sub._actions for opt in action.option_strings}


def test_map_takes_every_protocol_flag_of_ecc():
    assert _flags("ecc") <= _flags("map")
    assert _flags("map") - _flags("ecc") == {"--out", "--method", "--boot"}


@pytest.fixture
def fast_methods(monkeypatch):
    """The protocol with global BT and ECC only (ECC-CV's grid is what makes a run slow)."""
    from ecc_lib.protocol import results

    monkeypatch.setattr(results, "default_methods", lambda has_labels: ("global", "ecc"))


def test_map_writes_csv_json_and_the_figure(tmp_path, capsys, fast_methods):
    folder = tmp_path / "planted"
    folder.mkdir()
    data = make_capability_data(n_queries=150, n_models=4, random_state=4)
    data.queries.to_csv(folder / "queries.csv", index=False)
    data.outcomes.to_parquet(folder / "outcomes.parquet", index=False)
    np.save(tmp_path / "embeddings.npy", data.embeddings)
    out = tmp_path / "map"
    code = main(
        [
            "map",
            str(folder),
            "--out",
            str(out),
            "--embeddings",
            str(tmp_path / "embeddings.npy"),
            "--k",
            "3",
            "--boot",
            "50",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "held out" in printed and "capability map of planted" in printed
    rows = pd.read_csv(out / "capability_map.csv")
    groups = pd.read_csv(out / "capability_map_groups.csv")
    assert set(rows["model"]) == set(data.models)
    np.testing.assert_allclose(rows.groupby("group")["p_best"].sum(), 1.0)
    payload = json.loads((out / "capability_map.json").read_text())
    assert payload["method"] == "ecc" and payload["n_groups"] == len(groups)  # the default here
    assert len(payload["held_out"]["ci95"]) == 2
    payload.pop("inputs")
    validate_section("capability_map", payload, strict=True)
    assert (out / "capability_map.png").stat().st_size > 0
    assert (out / "capability_map.pdf").exists()


@pytest.mark.slow
def test_map_of_the_default_methods_groups_by_what_ecc_cv_chose(tmp_path, capsys):
    folder = tmp_path / "planted"
    folder.mkdir()
    data = make_capability_data(n_queries=150, n_models=4, random_state=4)
    data.queries.to_csv(folder / "queries.csv", index=False)
    data.outcomes.to_parquet(folder / "outcomes.parquet", index=False)
    np.save(tmp_path / "embeddings.npy", data.embeddings)
    out = tmp_path / "map"
    args = ["map", str(folder), "--out", str(out), "--embeddings", str(tmp_path / "embeddings.npy")]
    assert main([*args, "--k", "3", "--boot", "20"]) == 0
    payload = json.loads((out / "capability_map.json").read_text())
    assert payload["method"] == "ecc_cv" and "which chose" in payload["method_detail"]


def test_map_refuses_a_folder_and_files_together(tmp_path, capsys):
    code = main(["map", str(tmp_path), "--out", str(tmp_path / "o"), "--queries", "q.csv"])
    assert code == 2
    assert "not both" in capsys.readouterr().err
    code = main(["map", str(tmp_path / "nothing"), "--out", str(tmp_path / "o")])
    assert code == 1
    assert "not a folder with queries" in capsys.readouterr().err
