"""``ecc-lab collect`` and ``ecc-lab collect-export``: the command-line contract."""

from __future__ import annotations

import argparse

import pandas as pd
from fake_openai_server import FakeOpenAIServer
from test_collect_support import QUERIES, responder

from ecc_lib.cli import collect as collect_cli


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="ecc-lab")
    subparsers = root.add_subparsers(dest="command")
    for subcommand in collect_cli.SUBCOMMANDS:
        subcommand.add_to(subparsers)
    return root


def run(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return args.handler(args)


def test_contract_flags_and_defaults():
    args = parser().parse_args(
        ["collect", "--queries", "q.csv", "--models", "m1,m2", "--base-url", "http://h/v1",
         "--store", "out"]
    )  # fmt: skip
    assert (args.queries, args.models, args.base_url, args.store) == (
        "q.csv",
        "m1,m2",
        "http://h/v1",
        "out",
    )
    assert (args.api_key_env, args.rewriter, args.rewrites, args.decodes) == (
        None,
        None,
        2,
        3,
    )
    assert (args.temperature, args.concurrency, args.prices) == (0.7, 8, None)
    full = parser().parse_args(
        ["collect", "--queries", "q.csv", "--models", "a", "--base-url", "u", "--api-key-env",
         "K", "--rewriter", "r", "--rewrites", "5", "--decodes", "4", "--temperature", "0.2",
         "--concurrency", "2", "--prices", "p.yaml", "--store", "d"]
    )  # fmt: skip
    assert (full.api_key_env, full.rewriter, full.rewrites, full.decodes) == ("K", "r", 5, 4)
    assert (full.temperature, full.concurrency, full.prices) == (0.2, 2, "p.yaml")
    export = parser().parse_args(["collect-export", "--store", "d", "--out", "o.csv"])
    assert (export.store, export.out, export.handler) == (
        "d",
        "o.csv",
        collect_cli._export,
    )


def test_collect_then_export_from_the_command_line(tmp_path, capsys):
    queries = tmp_path / "queries.csv"
    QUERIES.to_csv(queries, index=False)
    prices = tmp_path / "prices.json"
    prices.write_text('{"m1": [1, 2], "m2": [1, 2]}')
    store, out = tmp_path / "store", tmp_path / "outcomes.parquet"
    with FakeOpenAIServer(responder=responder()) as server:
        argv = ["collect", "--queries", str(queries), "--models", "m1,m2", "--base-url",
                server.base_url, "--api-key-env", "ECC_UNSET_KEY", "--rewrites", "1",
                "--decodes", "2", "--concurrency", "3", "--prices", str(prices),
                "--store", str(store)]  # fmt: skip
        assert run(argv) == 0
        assert "24/24 records (24 new, 0 already there)" in capsys.readouterr().out
        assert run(argv) == 0  # rerun: nothing to do
        assert "24/24 records (0 new, 24 already there)" in capsys.readouterr().out
    assert run(["collect-export", "--store", str(store), "--out", str(out)]) == 0
    outcomes = pd.read_parquet(out)
    assert len(outcomes) == 24 and outcomes["cost"].notna().all()
    assert f"{out}: 24 outcome row(s)" in capsys.readouterr().out


def test_401_from_the_command_line_exits_1_with_the_endpoint_and_model(
    tmp_path, capsys, monkeypatch
):
    queries = tmp_path / "queries.jsonl"
    QUERIES.to_json(queries, orient="records", lines=True)
    monkeypatch.setenv("ECC_TEST_KEY", "sk-nope")
    with FakeOpenAIServer(responder=responder(), api_key="sk-yes") as server:
        from ecc_lib.cli import main

        status = main(
            ["collect", "--queries", str(queries), "--models", "m1", "--base-url",
             server.base_url, "--api-key-env", "ECC_TEST_KEY", "--store", str(tmp_path / "s")]
        )  # fmt: skip
    err = capsys.readouterr().err
    assert status == 1
    assert "ecc-lab collect: error: 401" in err and server.base_url in err and "'m1'" in err
    assert "ECC_TEST_KEY" in err and "sk-nope" not in err


def test_export_of_a_missing_store_is_a_clear_error(tmp_path, capsys):
    from ecc_lib.cli import main

    status = main(["collect-export", "--store", str(tmp_path / "none"), "--out", "o.csv"])
    assert status == 1
    assert "does not exist" in capsys.readouterr().err


def test_export_to_a_folder_gives_a_dataset_every_loader_reads(tmp_path, capsys):
    from test_collect_support import fast

    from ecc_lib.collect import collect
    from ecc_lib.data.sources import load_dataset

    store, folder = tmp_path / "store", tmp_path / "export"
    with FakeOpenAIServer(responder=responder()) as server:
        collect(QUERIES, ["m1", "m2"], server.base_url, store, **fast(n_rewrites=1, n_decodes=2))
    assert run(["collect-export", "--store", str(store), "--out", str(folder)]) == 0
    assert "use it with --dataset" in capsys.readouterr().out
    queries, outcomes = load_dataset(str(folder))
    assert sorted(queries["query_id"]) == ["q1", "q2", "q3"]
    assert len(outcomes) == 3 * 2 * 2 * 2
    assert set(outcomes["variant_id"]) == {0, 1} and set(outcomes["decode_id"]) == {0, 1}


def test_an_incomplete_collection_is_said_in_the_export_the_metrics_and_the_report(
    tmp_path, caplog
):
    """Rewrites the rewriter never gives leave their answers unasked: the exported folder says
    the collection is incomplete, and loading it puts that note first in the data policy that
    metrics.json and the report show."""
    import json

    from fake_openai_server import is_rewrite_request
    from test_collect_support import fast

    from ecc_lib.collect import collect
    from ecc_lib.report.sections.other import data_notes
    from ecc_lib.runs import folder as run_folder
    from ecc_lib.runs import provenance
    from ecc_lib.runs.inputs import recorded_policy

    answers = responder()

    def no_rewrites(model, messages, body):  # every rewrite call is unusable
        return "42" if is_rewrite_request(messages) else answers(model, messages, body)

    store, folder = tmp_path / "store", tmp_path / "export"
    with FakeOpenAIServer(responder=no_rewrites) as server:
        result = collect(QUERIES, ["m1", "m2"], server.base_url, store, **fast(n_rewrites=1))
    assert not result.complete and result.n_missing_variants == 3
    with caplog.at_level("WARNING"):
        assert run(["collect-export", "--store", str(store), "--out", str(folder)]) == 0
    status = json.loads((folder / "collection.json").read_text())
    assert status["complete"] is False and status["last_run_status"] == "incomplete"
    assert (status["n_done"], status["n_planned"]) == (3 * 2 * 3, 3 * 2 * 2 * 3)
    expected = "collection incomplete: the store holds 18 of 36 planned records (50.0%)"
    assert any(expected in message for message in caplog.messages)

    run_dir = run_folder.run_context(tmp_path / "run")
    provenance.load_dataset(str(folder), run_dir=run_dir)
    notes = recorded_policy(run_dir, "export")["notes"]
    assert notes[0].startswith(expected) and "3 rewrite(s) missing" in notes[0]
    report_notes = data_notes({"export": {"notes": notes}})
    assert report_notes[0].startswith("export: Collection incomplete: the store holds 18 of 36")


def test_a_complete_collection_exports_without_a_note(tmp_path):
    import json

    from test_collect_support import fast

    from ecc_lib.collect import collect
    from ecc_lib.collect.export import collection_notes

    store, folder = tmp_path / "store", tmp_path / "export"
    with FakeOpenAIServer(responder=responder()) as server:
        collect(QUERIES, ["m1", "m2"], server.base_url, store, **fast(n_rewrites=1, n_decodes=1))
    assert run(["collect-export", "--store", str(store), "--out", str(folder)]) == 0
    status = json.loads((folder / "collection.json").read_text())
    assert status["complete"] is True and status["n_done"] == status["n_planned"] == 12
    assert status["n_without_final_answer"] == 0  # the fake models end with "Final answer:"
    assert collection_notes(folder) == []
    (folder / "collection.json").write_text("{not json")
    (note,) = collection_notes(folder)
    assert "whether the collection is complete is unknown" in note
    (folder / "collection.json").write_text("[1, 2]")
    (note,) = collection_notes(folder)
    assert "not a JSON object" in note


def test_answers_without_a_final_answer_line_are_counted_and_noted(tmp_path, caplog):
    """A model that ignores the answer format is scored by the scorer's fallback or as wrong: the
    run, the exported folder and the data notes say how many answers that was."""
    import json

    from fake_openai_server import is_rewrite_request, rewrite_response
    from test_collect_support import fast

    from ecc_lib.collect import collect
    from ecc_lib.collect.export import collection_notes

    def no_format(model, messages, body):
        if is_rewrite_request(messages):
            return rewrite_response(model, messages)
        text = json.dumps(messages)
        if "[Q1]" in text:
            return "Final answer: 72"
        return "I think the answer is Paris." if "[Q2]" in text else "Jupiter, of course."

    store, folder = tmp_path / "store", tmp_path / "export"
    with FakeOpenAIServer(responder=no_format) as server, caplog.at_level("WARNING"):
        result = collect(QUERIES, ["m1"], server.base_url, store, **fast(n_rewrites=0, n_decodes=2))
    assert result.complete and result.n_collected == 6
    assert result.n_without_final_answer == 4
    assert any("4 of 6 answer(s) have no 'Final answer:' line" in m for m in caplog.messages)
    assert run(["collect-export", "--store", str(store), "--out", str(folder)]) == 0
    outcomes = pd.read_parquet(folder / "outcomes.parquet").set_index("query_id")["score"]
    # exact match reads q2's last line whole; q3 names no option letter
    assert outcomes.groupby(level=0).mean().to_dict() == {"q1": 1.0, "q2": 0.0, "q3": 0.0}
    (note,) = collection_notes(folder)
    assert note.startswith("4 of 6 answer(s) have no 'Final answer:' line")
