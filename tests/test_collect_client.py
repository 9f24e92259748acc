"""The chat-completions client against a real HTTP server on 127.0.0.1 with injected faults."""

from __future__ import annotations

import asyncio
import time

import pytest
from fake_openai_server import FakeOpenAIServer

from ecc_lib.collect.client import ChatClient, public_url
from ecc_lib.collect.errors import (
    EndpointAuthError,
    EndpointConfigError,
    EndpointError,
    EndpointNotFoundError,
    EndpointUnreachableError,
)

MESSAGES = [{"role": "user", "content": "What is 2 + 2?"}]


def chat(base_url: str, model: str = "m1", **client_kwargs):
    async def run():
        kwargs = {"backoff_base": 0.01, "timeout": 5.0, **client_kwargs}
        async with ChatClient(base_url, **kwargs) as client:
            return await client.chat(model, MESSAGES, temperature=0.3, top_p=0.9, max_tokens=64)

    return asyncio.run(run())


def test_success_parses_content_usage_and_sends_settings():
    with FakeOpenAIServer(report_cost=True) as server:
        result = chat(server.base_url)
        body = server.requests[0]["body"]
        assert server.requests[0]["authorization"] is None  # no key: no header
    assert result.content.startswith("Thinking about it.\nFinal answer: ")
    assert result.attempts == 1 and result.finish_reason == "stop"
    # the fake server counts words: 5 in the prompt, 6 in "Thinking about it. Final answer: N"
    assert (result.prompt_tokens, result.completion_tokens) == (5, 6)
    assert result.reported_cost == pytest.approx((5 + 2 * 6) / 1e6)
    assert (body["model"], body["temperature"], body["top_p"], body["max_tokens"]) == (
        "m1",
        0.3,
        0.9,
        64,
    )


@pytest.mark.parametrize("statuses", [{0: 429, 1: 429}, {0: 500, 1: 503, 2: 502}])
def test_retryable_statuses_are_retried(statuses):
    with FakeOpenAIServer(status_plan=statuses, retry_after=0) as server:
        result = chat(server.base_url)
        assert server.statuses() == [*statuses.values(), 200]
    assert result.attempts == len(statuses) + 1


def test_slow_response_hits_the_per_call_timeout_and_is_retried():
    with FakeOpenAIServer(slow_calls={0}, slow_seconds=2.0) as server:
        started = time.perf_counter()
        result = chat(server.base_url, timeout=0.3)
        elapsed = time.perf_counter() - started
        assert server.n_calls == 2
    assert result.attempts == 2
    assert elapsed < 1.5  # the first attempt was abandoned at its deadline, not after 2 s


def test_retries_exhausted_names_endpoint_model_and_last_error():
    with FakeOpenAIServer(fail_models={"m1": 500}) as server:
        with pytest.raises(EndpointError) as caught:
            chat(server.base_url, max_retries=2)
        assert server.n_calls == 3
    error = caught.value
    assert error.attempts == 3 and error.status == 500 and error.model == "m1"
    assert server.base_url in str(error) and "'m1'" in str(error) and "500" in str(error)


def test_connection_refused_before_any_answer_fails_at_once():
    server = FakeOpenAIServer().start()
    base_url = server.base_url
    server.stop()
    started = time.perf_counter()
    with pytest.raises(EndpointUnreachableError, match="connection refused") as caught:
        chat(base_url, max_retries=5, backoff_base=1.0)  # no retry, so no backoff wait
    assert time.perf_counter() - started < 1.0
    assert caught.value.model == "m1" and base_url in str(caught.value)


def test_connection_refused_after_answers_is_retried_up_to_the_consecutive_limit():
    async def run(server):
        async with ChatClient(
            server.base_url, backoff_base=0.01, backoff_max=0.02, max_consecutive_errors=3
        ) as client:
            first = await client.chat("m1", MESSAGES)
            server.stop()  # the server goes away mid-run
            try:
                await client.chat("m1", MESSAGES)
            except EndpointUnreachableError as error:
                return first, error
        return first, None

    server = FakeOpenAIServer().start()
    first, error = asyncio.run(run(server))
    assert first.attempts == 1
    assert error is not None and "3 consecutive" in str(error)


def test_401_is_not_retried_and_names_endpoint_model_and_env_but_not_the_key():
    with FakeOpenAIServer(api_key="sk-right") as server:
        with pytest.raises(EndpointAuthError) as caught:
            chat(server.base_url, api_key="sk-wrong-123", api_key_env="MY_KEY")
        assert server.n_calls == 1
        assert server.requests[0]["authorization"] == "Bearer sk-wrong-123"
        message = str(caught.value)
        assert "401" in message and server.base_url in message and "'m1'" in message
        assert "MY_KEY (set)" in message and "sk-wrong-123" not in message
        with pytest.raises(EndpointAuthError, match=r"MY_KEY \(not set\)"):
            chat(server.base_url, api_key=None, api_key_env="MY_KEY")
        assert chat(server.base_url, api_key="sk-right").attempts == 1


def test_404_and_400_are_not_retried():
    with FakeOpenAIServer(models=["m1"], status_plan={1: 400}) as server:
        with pytest.raises(EndpointNotFoundError, match=r"404.*'m9'.*/v1"):
            chat(server.base_url, model="m9")
        with pytest.raises(EndpointError, match="400") as caught:
            chat(server.base_url, model="m1")
        assert not isinstance(caught.value, EndpointNotFoundError)
        assert server.n_calls == 2


def test_backoff_is_exponential_capped_and_seeded():
    def delays(seed):
        client = ChatClient(
            "http://127.0.0.1:1/v1", backoff_base=1.0, backoff_max=8.0, random_state=seed
        )
        values = [client.backoff_delay(k) for k in range(6)]
        asyncio.run(client.aclose())
        return values

    first = delays(3)
    assert first == delays(3) and first != delays(4)
    for k, delay in enumerate(first):
        ceiling = min(8.0, 2.0**k)
        assert ceiling / 2 <= delay <= ceiling
    client = ChatClient("http://127.0.0.1:1/v1", backoff_base=0.1, backoff_max=5.0)
    assert client.backoff_delay(0, retry_after=3.0) == 3.0  # Retry-After raises the wait
    assert client.backoff_delay(0, retry_after=60.0) == 5.0  # ...up to the cap
    asyncio.run(client.aclose())


def test_public_url_redacts_credentials_and_drops_the_fragment():
    assert public_url("https://user:pw@host:8443/v1/?key=abc#x") == (
        "https://REDACTED@host:8443/v1?key=[REDACTED]"
    )
    assert "sk-" not in repr(ChatClient("http://h/v1", api_key="sk-hidden"))


def test_openai_key_goes_only_to_openai_host():
    from ecc_lib.collect.runner import is_openai_host

    assert is_openai_host("https://api.openai.com/v1")
    assert not is_openai_host("https://openrouter.ai/api/v1")
    assert not is_openai_host("http://127.0.0.1:8000/v1")


def test_base_url_and_api_key_checks():
    from ecc_lib.collect.client import check_api_key, check_base_url, redact

    assert check_base_url(" http://h:8000/v1/ ") == "http://h:8000/v1"
    for bad, match in [("h:8000/v1", "no scheme"), ("ftp://h/v1", "scheme 'ftp'"),
                       ("http:///v1", "no host")]:  # fmt: skip
        with pytest.raises(EndpointConfigError, match=match):
            check_base_url(bad)
    assert check_api_key(" sk-abc\n", api_key_env="K") == "sk-abc"
    assert check_api_key("  ", api_key_env="K") is None
    with pytest.raises(EndpointConfigError, match="environment variable K") as caught:
        check_api_key("sk-a\tb", api_key_env="K")
    assert "sk-a" not in str(caught.value)
    text = "b'Bearer sk-abc\\n' and \"sk-abc\\n\""  # repr and JSON forms of "sk-abc\n"
    assert "sk-abc" not in redact(text, ["sk-abc\n"])
