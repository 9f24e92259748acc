"""Issue 24: endpoints that would take the API key, the prompts or the memory (127.0.0.1 only).

The proxy mode of the fake server stands in for any host name: the client is given
``HTTP_PROXY=<fake server>``, so ``http://api.evilopenai.com/v1`` reaches 127.0.0.1 and the server
records which host the request was meant for and what it carried.
"""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from urllib.parse import urlsplit

import pytest
from fake_openai_server import FakeOpenAIServer
from test_collect_support import QUERIES, fast

from ecc_lib.cli import main
from ecc_lib.collect import collect
from ecc_lib.collect.client import ChatClient, parse_chat_response, public_url
from ecc_lib.collect.errors import EndpointError, EndpointRedirectError, EndpointResponseError
from ecc_lib.collect.runner import is_openai_host

SECRET = "sk-test-0123456789abcdef"
ONE = QUERIES.head(1)
PROXY_VARIABLES = ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy")


def once(**overrides):
    return fast(n_rewrites=0, n_decodes=1, max_retries=0, **overrides)


def chat(base_url: str, **options):
    async def go():
        async with ChatClient(base_url, max_retries=0, timeout=20, **options) as client:
            return await client.chat("m1", [{"role": "user", "content": "What is 2 + 2?"}])

    return asyncio.run(go())


def lines(path) -> list[dict]:
    return (
        [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []
    )


@pytest.fixture
def proxy(monkeypatch):
    """A fake server every plain-http request goes through, and OPENAI_API_KEY set."""
    with FakeOpenAIServer() as server:
        for name in PROXY_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", server.proxy_url)
        monkeypatch.setenv("http_proxy", server.proxy_url)
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        yield server


# -- item 2: the key goes only where it belongs -----------------------------------------------


@pytest.mark.parametrize(
    "base_url",
    [
        "http://api.evilopenai.com/v1",  # a look-alike host
        "http://api.openai.com/v1",  # the right host over plain http
        "http://api.openai.com.evil.example/v1",
    ],
)
def test_openai_key_is_not_sent_to_look_alike_hosts_or_over_plain_http(proxy, tmp_path, base_url):
    summary = collect(ONE, ["m1"], base_url, tmp_path / "store", **once())
    assert summary.n_collected == 1  # the request did arrive (through the proxy)
    assert [r["host"] for r in proxy.requests] == [urlsplit(base_url).netloc]
    assert proxy.requests[0]["authorization"] is None
    assert SECRET not in (tmp_path / "store" / "manifest.json").read_text()


def test_a_named_key_variable_goes_to_the_named_base_url_with_a_warning_over_http(
    proxy, tmp_path, caplog
):
    base_url = "http://models.example.org/v1"
    collect(ONE, ["m1"], base_url, tmp_path / "store", **once(api_key_env="OPENAI_API_KEY"))
    assert proxy.requests[0]["host"] == "models.example.org"
    assert proxy.requests[0]["authorization"] == f"Bearer {SECRET}"
    assert "plain http" in caplog.text and SECRET not in caplog.text


def test_only_https_api_openai_com_gets_the_openai_key_unasked():
    assert is_openai_host("https://api.openai.com/v1")
    assert is_openai_host("https://API.OpenAI.com:443/v1")
    for url in (
        "https://api.evilopenai.com/v1",
        "https://evil.api.openai.com.example/v1",
        "https://notapi.openai.com/v1",
        "http://api.openai.com/v1",
        "https://api.openai.com:8443/v1",
        "https://user@api.openai.com/v1",
        "https://openrouter.ai/api/v1",
        "http://127.0.0.1:8000/v1",
    ):
        assert not is_openai_host(url), url


# -- item 4: redirects ------------------------------------------------------------------------


def test_a_redirect_to_another_host_is_refused_and_nothing_reaches_it(tmp_path):
    with FakeOpenAIServer() as other:
        target = other.base_url + "/chat/completions"
        with FakeOpenAIServer(redirect_to=target) as server:
            with pytest.raises(EndpointRedirectError, match="another host"):
                chat(server.base_url, api_key=SECRET)
            with pytest.raises(EndpointRedirectError, match="refused"):
                collect(ONE, ["m1"], server.base_url, tmp_path / "store", **once())
            assert server.n_calls == 2
        assert other.n_calls == 0  # neither prompt nor key went there


def test_the_cli_reports_a_refused_redirect_in_one_line(tmp_path, capsys):
    queries = tmp_path / "q.csv"
    ONE.to_csv(queries, index=False)
    with FakeOpenAIServer() as other:
        with FakeOpenAIServer(redirect_to=other.base_url + "/chat/completions") as server:
            status = main(
                [
                    "collect",
                    "--queries",
                    str(queries),
                    "--models",
                    "m1",
                    "--base-url",
                    server.base_url,
                    "--store",
                    str(tmp_path / "s"),
                    "--rewrites",
                    "0",
                    "--decodes",
                    "1",
                    "--max-retries",
                    "0",
                ]  # fmt: skip
            )
        assert other.n_calls == 0
    err = capsys.readouterr().err.strip()
    last = err.splitlines()[-1]  # after the progress bar
    assert status == 1 and "Traceback" not in err
    assert last.startswith("ecc-lab collect: error: 307 redirect") and "refused" in last


def test_a_redirect_within_the_origin_is_followed_a_few_times():
    with FakeOpenAIServer() as server:
        server.redirect_to = server.base_url + "/chat/completions"  # to itself, forever
        with pytest.raises(EndpointError, match="more than 5 redirects"):
            chat(server.base_url)
        assert server.n_calls == 6


# -- item 5: response size --------------------------------------------------------------------


def test_an_oversized_gzip_reply_is_refused_without_being_held_in_memory():
    with FakeOpenAIServer(oversize_bytes=48 * 2**20) as server:  # ~50 KB on the wire
        tracemalloc.start()
        try:
            with pytest.raises(EndpointResponseError, match="over the limit of 4,194,304 bytes"):
                chat(server.base_url)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB"


def test_a_large_reply_within_the_cap_is_read_whole():
    with FakeOpenAIServer(oversize_bytes=5 * 2**20) as server:
        result = chat(server.base_url, max_response_bytes=8 * 2**20)
    assert len(result.content) > 5 * 2**20 and result.content.startswith("Thinking")


def test_an_oversized_reply_is_recorded_as_a_failed_call_and_not_stored(tmp_path):
    store = tmp_path / "store"
    with FakeOpenAIServer(oversize_bytes=3 * 2**20) as server:
        summary = collect(ONE, ["m1"], server.base_url, store, **once(max_response_bytes=2**20))
    assert (summary.n_collected, summary.n_failed) == (0, 1)
    failures = lines(store / "failures.jsonl")
    assert len(failures) == 1 and "over the limit of 1,048,576 bytes" in failures[0]["error"]
    assert (
        max((len(x) for x in (store / "records.jsonl").read_bytes().splitlines()), default=0)
        < 2**16
    )
    assert max(p.stat().st_size for p in store.rglob("*") if p.is_file()) < 2**20


def test_the_cli_takes_max_response_bytes(tmp_path, capsys):
    queries = tmp_path / "q.csv"
    ONE.to_csv(queries, index=False)
    common = ["collect", "--queries", str(queries), "--models", "m1", "--store",
              str(tmp_path / "s"), "--rewrites", "0", "--decodes", "1", "--max-retries", "0"]  # fmt: skip
    assert main([*common, "--base-url", "http://127.0.0.1:9/v1", "--max-response-bytes", "0"]) == 2
    assert "--max-response-bytes must be > 0" in capsys.readouterr().err
    with FakeOpenAIServer(oversize_bytes=2 * 2**20) as server:
        status = main([*common, "--base-url", server.base_url, "--max-response-bytes", "1000000"])
    assert status == 1
    assert "1 failed call" in capsys.readouterr().out


# -- item 16 (part): content objects, negative token counts, a base URL with a query ----------


def test_a_content_object_is_a_failed_call_not_an_answer(tmp_path):
    with FakeOpenAIServer(fault="object") as server:
        with pytest.raises(EndpointResponseError, match="JSON object, not text"):
            chat(server.base_url)
        summary = collect(ONE, ["m1"], server.base_url, tmp_path / "store", **once())
    assert (summary.n_collected, summary.n_failed) == (0, 1)
    assert lines(tmp_path / "store" / "records.jsonl") == []
    assert "JSON object" in lines(tmp_path / "store" / "failures.jsonl")[0]["error"]
    with pytest.raises(ValueError, match="not a string"):
        parse_chat_response({"choices": [{"message": {"content": [{"type": "text", "text": 3}]}}]})


def test_negative_token_counts_are_unknown(tmp_path):
    with FakeOpenAIServer(fault="negative_usage") as server:
        result = chat(server.base_url)
        summary = collect(
            ONE, ["m1"], server.base_url, tmp_path / "s", prices={"m1": [1.0, 2.0]}, **once()
        )
    assert result.prompt_tokens is None and result.completion_tokens is None
    assert summary.n_collected == 1
    (record,) = lines(tmp_path / "s" / "records.jsonl")
    assert record["prompt_tokens"] is None and record["cost"] is None  # no negative cost either
    for bad in (-1, -0.5, 2.5, True, "many", float("nan"), float("inf")):
        usage = {"prompt_tokens": bad, "completion_tokens": 3}
        body = {"choices": [{"message": {"content": "x"}}], "usage": usage}
        assert parse_chat_response(body)[2:] == (None, 3), bad


def test_a_base_url_with_a_query_string_keeps_the_query_after_the_path():
    with FakeOpenAIServer() as server:
        result = chat(server.base_url + "/?api-version=2024-06-01")
        (request,) = server.requests
    assert result.content.startswith("Thinking")
    assert (request["path"], request["query"]) == ("/v1/chat/completions", "api-version=2024-06-01")


def test_a_key_in_the_base_url_query_is_sent_but_never_recorded(tmp_path):
    store = tmp_path / "store"
    with FakeOpenAIServer() as server:
        base_url = f"{server.base_url}?api_key={SECRET}&api-version=2"
        collect(ONE, ["m1"], base_url, store, **once())
        assert server.requests[0]["query"] == f"api_key={SECRET}&api-version=2"
    for path in store.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path
    assert "api_key=[REDACTED]&api-version=2" in (store / "manifest.json").read_text()
    assert (
        public_url("https://u:pw@h/v1/?token=abc#frag") == "https://REDACTED@h/v1?token=[REDACTED]"
    )
