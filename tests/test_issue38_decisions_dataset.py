"""Issue 38: serve-router's logged decisions read back as a dataset folder (no invented scores)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from ecc_lib.cli import main
from ecc_lib.data.schema import DataValidationError
from ecc_lib.data.sources import load_bundled, load_dataset
from ecc_lib.data.tables import read_queries
from ecc_lib.routers.deploy import train_deployed
from ecc_lib.routers.serve import RouterServer, export_decisions

pytest.importorskip("httpx")
sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer  # noqa: E402
from test_serve_router import _client_calls  # noqa: E402

CHEAP, STRONG = "gemma-2-9b-it", "llama-3.1-nemotron-51b-instruct"


@pytest.fixture(scope="module")
def deployed_and_texts():
    queries, outcomes = load_bundled("dcrouter")
    queries = queries.iloc[:600]
    outcomes = outcomes[
        outcomes["model"].isin([CHEAP, STRONG]) & outcomes["query_id"].isin(queries["query_id"])
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        deployed, _ = train_deployed(queries, outcomes, family="kNN", embedder="static")
    deployed.calibrate(budget=0.5)
    return deployed, queries["text"].tolist()[:12]


@pytest.mark.parametrize("mode", ["dry-run", "forwarding"])
def test_logged_decisions_export_reads_back_after_collect(
    deployed_and_texts, tmp_path, capsys, mode
):
    deployed, texts = deployed_and_texts
    with FakeOpenAIServer() as upstream_a, FakeOpenAIServer() as upstream_b:
        upstreams = {} if mode == "dry-run" else {CHEAP: upstream_a.base_url,
                                                  STRONG: upstream_b.base_url}  # fmt: skip
        with RouterServer(
            deployed, upstreams, dry_run=mode == "dry-run", log_dir=tmp_path / "log"
        ) as server:
            replies = _client_calls(server.base_url, texts, n_threads=2)
    assert [status for status, _ in replies] == [200] * len(texts)
    folder = export_decisions(tmp_path / "log", tmp_path / "logged")
    # queries (the collect input) and the decisions; no outcomes: the scores are unknown
    assert sorted(p.name for p in folder.iterdir()) == ["decisions.csv", "queries.csv"]
    logged = read_queries(folder / "queries.csv")
    assert sorted(logged["text"]) == sorted(texts)
    decisions = pd.read_csv(folder / "decisions.csv")
    assert list(decisions["query_id"]) == list(logged["query_id"])
    assert "score" not in decisions.columns
    # every dataset reader refuses the folder with one line naming the next step
    with pytest.raises(DataValidationError) as error:
        load_dataset(str(folder))
    message = str(error.value)
    assert "\n" not in message and "scores of the routed replies are unknown" in message
    assert f"ecc-lab collect --queries {folder / 'queries.csv'}" in message
    assert main(["run", "--dataset", str(folder), "--out", str(tmp_path / "run")]) != 0
    assert "ecc-lab collect --queries" in capsys.readouterr().err
    # the next step: collect (reference answers added by the user), export, read back
    with_answers = logged.assign(answer="3")
    with_answers.to_csv(folder / "queries.csv", index=False)
    store, dataset = tmp_path / "store", tmp_path / "dataset"
    with FakeOpenAIServer() as upstream:
        status = main(
            ["collect", "--queries", str(folder / "queries.csv"), "--models", f"{CHEAP},{STRONG}",
             "--base-url", upstream.base_url, "--rewrites", "0", "--decodes", "1",
             "--store", str(store)]
        )  # fmt: skip
    assert status == 0
    assert main(["collect-export", "--store", str(store), "--out", str(dataset)]) == 0
    queries, outcomes = load_dataset(str(dataset))
    assert sorted(queries["query_id"]) == sorted(logged["query_id"])
    assert set(outcomes["model"]) == {CHEAP, STRONG}
    assert len(outcomes) == 2 * len(texts) and outcomes["score"].between(0, 1).all()


def test_export_does_not_overwrite_a_dataset(deployed_and_texts, tmp_path):
    deployed, texts = deployed_and_texts
    with RouterServer(deployed, {}, dry_run=True, log_dir=tmp_path / "log") as server:
        _client_calls(server.base_url, texts[:3], n_threads=1)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "outcomes.csv").write_text("query_id,model,score\n")
    with pytest.raises(FileExistsError, match="already holds an outcomes table"):
        export_decisions(tmp_path / "log", tmp_path / "data")
