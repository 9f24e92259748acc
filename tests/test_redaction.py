"""Issue 24 item 3: a credential in a URL is never written down (one ``redact_url`` everywhere)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ecc_lib.redaction import redact_url, redact_urls_in, secret_replacements, url_secrets

SECRET = "sk-live-5ecret-0123456789"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://h:8000/v1", "http://h:8000/v1"),
        (f"http://h/v1?api_key={SECRET}", "http://h/v1?api_key=[REDACTED]"),
        (f"http://h/v1?api-version=2&access_token={SECRET}", "http://h/v1?api-version=2&access_token=[REDACTED]"),
        (f"https://bob:{SECRET}@h/v1", "https://REDACTED@h/v1"),
        (f"https://{SECRET}@h/v1", "https://REDACTED@h/v1"),
        (f"https://h/v1?X-Amz-Signature={SECRET}&sig=abc&password=p", "https://h/v1?X-Amz-Signature=[REDACTED]&sig=[REDACTED]&password=[REDACTED]"),
        (f"https://h/cb#access_token={SECRET}", "https://h/cb#[REDACTED]"),
        ("not a url", "not a url"),
    ],
)  # fmt: skip
def test_redact_url(url, expected):
    assert redact_url(url) == expected


def test_urls_inside_values_and_text_are_redacted():
    params = {
        "endpoint": f"http://127.0.0.1:1/v1?key={SECRET}",
        "models": ["a", f"see https://u:{SECRET}@h/x for details"],
        "n": 3,
        "plain": "no url here",
    }
    clean = redact_urls_in(params)
    assert SECRET not in json.dumps(clean)
    assert clean["n"] == 3 and clean["plain"] == "no url here"
    assert clean["endpoint"] == "http://127.0.0.1:1/v1?key=[REDACTED]"
    assert url_secrets(params["endpoint"]) == [SECRET]
    pairs = secret_replacements(params)
    assert pairs[SECRET] == "[REDACTED]" and pairs[params["endpoint"]] == clean["endpoint"]
    assert "3" not in pairs  # short values are not replaced on their own


def test_run_json_and_metrics_never_hold_a_url_credential(tmp_path):
    from ecc_lib.runs import folder as run_folder
    from ecc_lib.runs import metrics as run_metrics
    from ecc_lib.runs.config import recorded_parameters
    from ecc_lib.runs.provenance import write_metrics

    run = run_folder.run_context(tmp_path / "run")
    endpoint = f"http://127.0.0.1:9/v1?api_key={SECRET}"
    run_metrics.record_metrics(run, "data", {"n": 1}, parameters={"endpoint": endpoint})
    write_metrics(run)
    for path in (run.metrics_path, run.metrics_dir / "data.json"):
        text = path.read_text()
        assert SECRET not in text and "api_key=[REDACTED]" in text
    assert recorded_parameters({"endpoint": endpoint})["endpoint"].endswith("api_key=[REDACTED]")


def test_a_key_in_the_endpoint_of_notebook_01_is_written_nowhere(tmp_path):
    """01 collects from ``endpoint?api_key=...``: the key reaches the server, and no file of the
    run folder (executed notebooks, run.json, metrics, the report) holds it."""
    sys.path.insert(0, str(Path(__file__).parent))
    from fake_openai_server import FakeOpenAIServer

    from ecc_lib.runs import pipeline

    queries = tmp_path / "queries.csv"
    queries.write_text("query_id,text,answer\na,What is 2 + 3?,5\nb,What is 10 - 6?,4\n")
    with FakeOpenAIServer() as server:
        endpoint = f"{server.base_url}?api_key={SECRET}"
        config = {
            "01_data": {
                "endpoint": endpoint,
                "collect_queries": str(queries),
                "collect_models": ["model-a", "model-b"],
                "collect_rewrites": 0,
                "collect_decodes": 1,
                "n_boot": 20,
            }
        }
        result = pipeline.run_pipeline(
            config=config, only="01,05", out=tmp_path / "run", progress=False
        )
        assert {r["query"] for r in server.requests} == {f"api_key={SECRET}"}  # the key did go
    files = [p for p in result.run_dir.rglob("*") if p.is_file()]
    assert result.run_dir / "01_data.ipynb" in files and result.report_path in files
    leaks = [str(p) for p in files if SECRET.encode() in p.read_bytes()]
    assert not leaks, leaks
    metrics = json.loads(result.metrics_path.read_text())
    assert metrics["parameters"]["data"]["endpoint"] == f"{server.base_url}?api_key=[REDACTED]"
    run_record = json.loads((result.run_dir / "run.json").read_text())
    assert run_record["parameters"]["01_data"]["endpoint"].endswith("api_key=[REDACTED]")
    assert "api_key=[REDACTED]" in (result.run_dir / "01_data.ipynb").read_text()
