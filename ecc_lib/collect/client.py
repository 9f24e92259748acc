"""An asynchronous client for OpenAI-compatible chat-completions endpoints.

Works with vLLM, Ollama, llama.cpp's server, OpenAI, OpenRouter and any server that answers
``POST {base_url}/chat/completions``. The base URL follows the OpenAI SDK convention: it includes the
API prefix, e.g. ``http://localhost:8000/v1`` (vLLM), ``http://localhost:11434/v1`` (Ollama),
``https://api.openai.com/v1``, ``https://openrouter.ai/api/v1``.

Behaviour
---------
- 429, 408, 5xx, timeouts and connection errors are retried up to ``max_retries`` times with
  exponential backoff and jitter (``Retry-After`` is honoured, capped at ``backoff_max``). The jitter
  comes from ``np.random.default_rng(random_state)``.
- Each attempt has a total deadline of ``timeout`` seconds.
- A dead endpoint stops at once: a connection that cannot be opened before any call succeeded
  (connection refused, unknown host) raises :class:`EndpointUnreachableError` without retrying, and
  so do ``max_consecutive_errors`` connection errors or timeouts in a row over all calls (any
  success resets the count).
- The base URL needs a scheme (``http://`` or ``https://``); the API key is stripped of surrounding
  whitespace and must be printable ASCII without spaces (:class:`EndpointConfigError` otherwise).
  A query string of the base URL (``?api-version=...``) stays a query string of every request
  (``{path}/chat/completions?{query}``).
- Requests go only to the base URL's origin (scheme, host, port): a redirect elsewhere raises
  :class:`EndpointRedirectError` before anything is sent there (a 307/308 within the origin is
  followed; a 301/302/303, which would turn the POST into a GET, is an error).
- The decoded body of a reply is read up to ``max_response_bytes`` (default 4 MiB); a longer one
  raises :class:`EndpointResponseError` (recorded as a failed call by a collection) without being
  held in memory or stored. So does a reply whose content is neither text nor a list of text
  parts (a JSON object, a number), which must not be scored as an answer. Negative or
  non-integer token counts are read as unknown.
- 401/403 raise :class:`EndpointAuthError`, 404 raises :class:`EndpointNotFoundError`; both name the
  endpoint and the model. Other 4xx raise :class:`EndpointError` without retrying.
- The API key is sent as a bearer token when given and appears nowhere else: not in errors, not in
  ``repr``, and any echo of it in a server message is replaced by ``[REDACTED]``. Errors of the
  HTTP library that could quote a header value are reported without their text.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import logging
import math
import re
import time
import zlib
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

import numpy as np

from ecc_lib._optional import require
from ecc_lib.collect.errors import (
    EndpointAuthError,
    EndpointConfigError,
    EndpointError,
    EndpointNotFoundError,
    EndpointRedirectError,
    EndpointResponseError,
    EndpointUnreachableError,
)
from ecc_lib.collect.pricing import reported_cost
from ecc_lib.redaction import REDACTED, redact_url, url_secrets

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

RETRY_STATUSES: frozenset[int] = frozenset({408, 409, 425, 429})
"""Statuses retried besides every 5xx."""
ERROR_BODY_CHARS = 300
DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
"""Largest decoded reply body read (4 MiB; a chat completion of 1024 tokens is a few KB)."""
MAX_REDIRECTS = 5
"""Redirects followed within the base URL's origin."""


def utc_now() -> str:
    """Current UTC time as an ISO 8601 string with milliseconds.

    Returns
    -------
    str
        For example ``2026-01-31T12:00:00.123Z``.
    """
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def public_url(url: str) -> str:
    """``url`` safe to store and print: credentials redacted (:func:`ecc_lib.redaction.redact_url`),
    without a fragment or a trailing slash.

    Parameters
    ----------
    url : str
        Any URL.

    Returns
    -------
    str
    """
    parts = urlsplit(redact_url(str(url).strip()))
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), parts.query, ""))


def chat_url(base_url: str) -> str:
    """``{base path}/chat/completions``, keeping the base URL's query string as the query.

    Parameters
    ----------
    base_url : str
        A checked base URL (see :func:`check_base_url`).

    Returns
    -------
    str
        For example ``http://h/v1/chat/completions?api-version=2`` for ``http://h/v1?api-version=2``.
    """
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/") + "/chat/completions"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def origin(url: str | httpx.URL) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` of a URL, lower case, the port made explicit for http(s).

    Parameters
    ----------
    url : str or httpx.URL

    Returns
    -------
    tuple
    """
    parts = urlsplit(str(url))
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def _base64_forms(value: str) -> set[str]:
    """``value``'s UTF-8 bytes in base64 (standard and URL-safe, with and without padding), and the
    part of its encoding that is the same wherever it sits inside a longer base64 text (after
    ``Bearer ``, ``user:``...): the characters that encode its bytes alone, at each of the three
    byte alignments."""
    raw = value.encode("utf-8")
    forms: set[str] = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(raw).decode("ascii")
        forms |= {whole, whole.rstrip("=")}
        for offset in range(3):
            encoded = encode(b"\0" * offset + raw).decode("ascii").rstrip("=")
            start = 4 if offset else 0  # the first group mixes the bytes before it
            end = len(encoded) - (len(encoded) % 4 or 4) if (offset + len(raw)) % 3 else None
            core = encoded[start:end]
            if len(core) >= MIN_ENCODED_CORE:
                forms.add(core)
    return forms


def _percent_forms(value: str) -> set[str]:
    """``value`` percent-encoded as URLs and forms write it (upper- and lower-case escapes)."""
    forms = {quote(value, safe=""), quote(value), quote_plus(value), quote_plus(value, safe="")}
    lower = {re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), form) for form in forms}
    return {form for form in forms | lower if form != value}


MIN_ENCODED_CORE = 8
"""Shortest piece of a secret's base64 encoding replaced on its own (inside a longer base64 text)."""


def secret_forms(secrets: tuple[str, ...] | list[str]) -> list[str]:
    """Every way a secret can show up in text: as is, stripped, JSON-escaped and ``repr``-escaped,
    percent-encoded (``%2F`` and ``%2f``, ``+`` for spaces) and base64-encoded (standard and
    URL-safe, alone or inside a longer base64 text such as an encoded ``Bearer KEY`` header),
    longest first, so that a longer form is replaced before a part of it.

    Parameters
    ----------
    secrets : tuple or list of str
        The secrets (empty ones are skipped).

    Returns
    -------
    list of str
        The distinct non-empty forms, longest first.
    """
    forms: set[str] = set()
    for secret in secrets:
        if not secret:
            continue
        for value in (secret, secret.strip()):
            if value:
                forms |= {
                    value,
                    json.dumps(value, ensure_ascii=False)[1:-1],
                    json.dumps(value)[1:-1],
                    repr(value)[1:-1],
                    value.encode("unicode_escape").decode("ascii"),
                }
                forms |= _percent_forms(value) | _base64_forms(value)
    return sorted((f for f in forms if f), key=len, reverse=True)


def redact(text: str, secrets: tuple[str, ...] | list[str]) -> str:
    """Replace every occurrence of each non-empty secret (in every form of :func:`secret_forms`)
    in ``text`` by ``[REDACTED]``.

    Parameters
    ----------
    text : str
        Text to clean.
    secrets : sequence of str
        Values to hide (empty ones are ignored).

    Returns
    -------
    str
    """
    for form in secret_forms(secrets):
        text = text.replace(form, REDACTED)
    return text


def check_base_url(base_url: str) -> str:
    """The base URL, stripped of whitespace and a trailing slash, once it has a scheme and a host.

    Parameters
    ----------
    base_url : str
        The endpoint's base URL as given.

    Returns
    -------
    str
        The stripped URL.

    Raises
    ------
    EndpointConfigError
        No ``http://`` / ``https://`` scheme, another scheme, or no host.
    """
    url = str(base_url).strip()
    if "://" not in url:
        raise EndpointConfigError(
            f"base URL {public_url(url)!r} has no scheme (http:// or https://); did you mean "
            f"'http://{public_url(url)}'?"
        )
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise EndpointConfigError(
            f"base URL {public_url(url)!r} has the scheme '{parts.scheme}'; use http:// or https://"
        )
    if not parts.hostname:
        raise EndpointConfigError(f"base URL {public_url(url)!r} has no host name")
    try:
        _ = parts.port
    except ValueError:
        raise EndpointConfigError(f"base URL {public_url(url)!r} has an invalid port") from None
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), parts.query, ""))


def check_api_key(api_key: str | None, *, api_key_env: str | None = None) -> str | None:
    """The API key stripped of surrounding whitespace (``None`` when empty).

    Parameters
    ----------
    api_key : str or None
        The key as given.
    api_key_env : str, optional
        Name of the environment variable it came from (for the error message).

    Returns
    -------
    str or None
        The stripped key, or ``None`` when it is ``None`` or blank.

    Raises
    ------
    EndpointConfigError
        The key holds whitespace, control or non-ASCII characters inside it (it cannot be an HTTP
        header value). The message names the environment variable, never the key.
    """
    key = (api_key or "").strip()
    if not key:
        return None
    problems = {
        "whitespace": str.isspace,
        "a non-ASCII character": lambda ch: ord(ch) > 126,
        "a control character": lambda ch: ord(ch) < 33,
    }
    problem = next((name for name, bad in problems.items() if any(map(bad, key))), None)
    if problem:
        where = f"the environment variable {api_key_env}" if api_key_env else "the API key given"
        raise EndpointConfigError(
            f"the API key in {where} contains {problem} inside it, which an HTTP header cannot "
            "carry; check the variable's value (it is not shown)"
        )
    return key


@dataclass(frozen=True)
class ChatResult:
    """One successful chat completion.

    Attributes
    ----------
    content : str or None
        The first choice's message content (text parts joined when the server sends a list).
    finish_reason : str or None
    prompt_tokens, completion_tokens : int or None
        From the response's ``usage`` (``None`` when the server reports none).
    reported_cost : float or None
        Cost in USD when the API reports it (``usage.cost`` and similar), else ``None``.
    raw : dict
        The decoded JSON body as returned.
    latency_s : float
        Duration of the successful attempt.
    elapsed_s : float
        Duration of the whole call, retries and waits included.
    attempts : int
    started_at, finished_at : str
        ISO 8601 UTC timestamps of the call.
    """

    content: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    reported_cost: float | None
    raw: dict = field(repr=False)
    latency_s: float
    elapsed_s: float
    attempts: int
    started_at: str
    finished_at: str


class UnusableContent(ValueError):
    """A reply's content is neither text nor a list of text parts."""


def _message_content(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, list):  # content parts: only the text ones count
        texts = [
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        if content and len(texts) < sum(isinstance(p, dict) and "text" in p for p in content):
            raise UnusableContent("reply content holds a text part that is not a string")
        content = "".join(texts)
    if content is None or isinstance(content, str):
        return content
    raise UnusableContent(
        f"reply content is a JSON {type(content).__name__.replace('dict', 'object')}, not text"
    )


def _as_int(value: Any) -> int | None:
    """A token count: a whole number >= 0, else None (unknown)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):  # a 4,000-digit count overflows float() (issue 36): unknown
        return value if 0 <= value <= 2**53 else None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if not number >= 0 or not number.is_integer() or number > 2**53:
        return None
    return int(number)


def parse_chat_response(body: dict) -> tuple[str | None, str | None, int | None, int | None]:
    """``(content, finish_reason, prompt_tokens, completion_tokens)`` of a chat-completions body.

    Parameters
    ----------
    body : dict
        A chat-completions response body.

    Returns
    -------
    tuple
        ``(content, finish_reason, prompt_tokens, completion_tokens)``, each possibly None.

    Raises
    ------
    ValueError
        The body holds no ``choices``.
    UnusableContent
        The content is a JSON object or another non-text value (a ``ValueError``).
    """
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("response has no 'choices'")
    first = choices[0]
    content = _message_content(first.get("message"))
    if content is None and isinstance(first.get("text"), str):  # completions-style servers
        content = first["text"]
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    prompt_tokens = _as_int(usage.get("prompt_tokens", usage.get("input_tokens")))
    completion_tokens = _as_int(usage.get("completion_tokens", usage.get("output_tokens")))
    finish_reason = first["finish_reason"] if isinstance(first.get("finish_reason"), str) else None
    return content, finish_reason, prompt_tokens, completion_tokens


@dataclass(eq=False)
class _Retryable(Exception):
    reason: str
    status: int | None = None
    retry_after: float | None = None
    _: KW_ONLY
    connection: bool = False  # a transport error or a timeout: the endpoint may be gone
    connect: bool = False  # the connection could not even be opened


def _connect_reason(error: BaseException) -> str:
    """A short reason for a failed connection (refused, unknown host, ...)."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(chain) < 10:
        chain.append(current)
        current = current.__cause__ or current.__context__
    text = " ".join(str(e) for e in chain).lower()
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "refused" in text:
        return "connection refused"
    lookup = ("name or service not known", "nodename nor servname", "getaddrinfo")
    if any(words in text for words in lookup) or "name resolution" in text:
        return "host name not found"
    if "unreachable" in text:
        return "network unreachable"
    return f"{type(error).__name__}: {error}"


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers.get("retry-after")))
    except (TypeError, ValueError):
        return None  # none, or an HTTP date: fall back to our own backoff


class ChatClient:
    """Asynchronous chat-completions client with retries, backoff and a per-call deadline.

    Use as ``async with ChatClient(...) as client: result = await client.chat(model, messages)``.

    Parameters
    ----------
    base_url : str
        Endpoint root including the API prefix, e.g. ``http://127.0.0.1:8000/v1``.
    api_key : str, optional
        Sent as ``Authorization: Bearer ...``; no header when ``None`` or empty (local servers).
    api_key_env : str, optional
        Name of the environment variable the key came from; only used in error messages.
    timeout : float, default 60
        Deadline of one attempt in seconds.
    max_retries : int, default 5
        Retries after the first attempt for retryable failures.
    backoff_base, backoff_max : float, default 0.5 and 30
        Wait before retry ``k`` (0-based) is ``d/2 + U(0, d/2)`` with ``d = min(backoff_max,
        backoff_base * 2**k)``; a ``Retry-After`` header raises it (capped at ``backoff_max``).
    max_consecutive_errors : int, default 10
        Connection errors or timeouts in a row (over all calls, retries included) after which the
        endpoint is taken to be gone and :class:`EndpointUnreachableError` is raised.
    max_connections : int, default 8
        Connection pool size (set it to the collection's concurrency).
    max_response_bytes : int, default 4 MiB
        Largest decoded body read from a reply (:data:`DEFAULT_MAX_RESPONSE_BYTES`); a longer
        reply raises :class:`EndpointResponseError` (not retried).
    random_state : int, Generator or None, default 0
        Seed of the jitter.
    transport : httpx.AsyncBaseTransport, optional
        For tests.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        api_key_env: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        max_consecutive_errors: int = 10,
        max_connections: int = 8,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        random_state: int | np.random.Generator | None = 0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if max_consecutive_errors < 1:
            raise ValueError(f"max_consecutive_errors must be >= 1, got {max_consecutive_errors}")
        if isinstance(max_response_bytes, bool) or not int(max_response_bytes) >= 1:
            raise ValueError(f"max_response_bytes must be >= 1, got {max_response_bytes}")
        raw_key = api_key
        api_key = check_api_key(api_key, api_key_env=api_key_env)
        self.base_url = check_base_url(base_url)
        if api_key and urlsplit(self.base_url).username is not None:
            # httpx sends the URL's user:password as Basic auth, replacing the Bearer key
            where = f"the environment variable {api_key_env}" if api_key_env else "the API key"
            raise EndpointConfigError(
                f"base URL {public_url(self.base_url)!r} carries a user:password and {where} "
                "gives a Bearer key too; only one can be the Authorization header: drop one"
            )
        self.url = chat_url(self.base_url)
        self.origin = origin(self.url)
        self.max_response_bytes = int(max_response_bytes)
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.max_consecutive_errors = int(max_consecutive_errors)
        self._consecutive_errors = 0
        self._reached = False  # some call got an HTTP response from the endpoint
        self._rng = np.random.default_rng(random_state)
        self._secrets = tuple(s for s in (raw_key, api_key, *url_secrets(self.base_url)) if s)
        self.public_url = redact(public_url(self.url), self._secrets)  # a key in the path too
        headers = {"Content-Type": "application/json", "Accept-Encoding": "gzip, deflate"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        httpx = require("httpx", extra="collect", purpose="collecting from an endpoint")
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(self.timeout),
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            transport=transport,
            follow_redirects=False,  # followed by hand, within the base URL's origin only
        )

    def __repr__(self) -> str:
        return f"ChatClient(base_url={public_url(self.base_url)!r}, timeout={self.timeout})"

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    def backoff_delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry ``attempt`` (0-based).

        Parameters
        ----------
        attempt : int
            0-based retry number.
        retry_after : float, optional
            Seconds the server asked to wait (``Retry-After``); used when larger.

        Returns
        -------
        float
            Seconds, at most the client's ``backoff_max``.
        """
        ceiling = min(self.backoff_max, self.backoff_base * (2.0**attempt))
        delay = ceiling / 2.0 + float(self._rng.uniform(0.0, ceiling / 2.0))
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.backoff_max))
        return delay

    def _server_message(self, data: bytes, encoding: str | None) -> str:
        text = data.decode(encoding or "utf-8", errors="replace")
        try:
            body = json.loads(data)
        except (json.JSONDecodeError, ValueError, RecursionError):
            body = None
        if isinstance(body, dict):
            error = body.get("error", body.get("detail", body.get("message")))
            if isinstance(error, dict):
                error = error.get("message", error)
            if error is not None:
                text = str(error)
        text = " ".join(text.split())[:ERROR_BODY_CHARS]
        return redact(text, self._secrets)

    def _key_hint(self) -> str:
        if not self.api_key_env:
            return "no API key environment variable was given"
        state = "set" if self._secrets else "not set"
        return f"the API key is read from the environment variable {self.api_key_env} ({state})"

    async def _read_capped(self, response: httpx.Response, model: str) -> bytes:
        """The decoded body, read chunk by chunk and given up beyond ``max_response_bytes``.

        gzip and deflate are decompressed here with an output limit, so that a small compressed
        body that expands to gigabytes never does; other encodings (only sent when a server
        ignores ``Accept-Encoding``) go through httpx's decoders, checked chunk by chunk.
        """
        cap = self.max_response_bytes
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        declared = response.headers.get("content-length", "")
        if encoding in ("", "identity") and declared.isdigit() and int(declared) > cap:
            raise self._too_large(model, response.status_code, f"{int(declared):,} bytes")
        chunks: list[bytes] = []
        size = 0

        def keep(piece: bytes) -> None:
            nonlocal size
            size += len(piece)
            if size > cap:
                raise self._too_large(model, response.status_code, f"over {cap:,} bytes")
            chunks.append(piece)

        if encoding in ("gzip", "x-gzip", "deflate"):
            decoder = zlib.decompressobj(zlib.MAX_WBITS | (16 if encoding != "deflate" else 0))
            first = True
            try:
                async for data in response.aiter_raw():
                    while data:
                        try:
                            piece = decoder.decompress(data, cap + 1 - size)
                        except zlib.error:
                            if not (first and encoding == "deflate"):
                                raise
                            decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate
                            piece = decoder.decompress(data, cap + 1 - size)
                        first = False
                        keep(piece)
                        data = decoder.unconsumed_tail
                keep(decoder.flush())
            except zlib.error as error:
                raise _Retryable(f"reply body is not valid {encoding} ({error})", None) from None
        else:
            async for piece in response.aiter_bytes():
                keep(piece)
        return b"".join(chunks)

    def _error(
        self, kind: type[EndpointError], model: str, status: int | None, **extra: Any
    ) -> Callable[[str], EndpointError]:
        """``kind``'s constructor for an error of a call of ``model`` to this endpoint: give it the
        message."""
        return functools.partial(kind, status=status, url=self.public_url, model=model, **extra)

    def _too_large(self, model: str, status: int, size: str) -> EndpointError:
        return self._error(EndpointResponseError, model, status)(
            f"{self.public_url} for model '{model}': the reply (status {status}) is {size} once "
            f"decoded, over the limit of {self.max_response_bytes:,} bytes; it was not read or "
            "stored (raise --max-response-bytes if such replies are expected)"
        )

    async def _send(self, model: str, body: dict) -> tuple[httpx.Response, bytes]:
        """POST ``body``, following 307/308 redirects within the origin; the capped body."""
        url = self.url
        for _ in range(MAX_REDIRECTS + 1):
            request = self._client.build_request("POST", url, json=body)
            response = await self._client.send(request, stream=True)
            try:
                if response.has_redirect_location:
                    target = response.url.join(response.headers["location"])
                    status = response.status_code
                    # the Location is the server's text: it may quote the key (in any form)
                    shown = redact(public_url(str(target)), self._secrets)
                    if origin(target) != self.origin:
                        raise self._error(EndpointRedirectError, model, status)(
                            f"{status} redirect from {self.public_url} to another host "
                            f"({shown}) refused for model '{model}': prompts "
                            "and the API key go only to the base URL; if you trust that host, "
                            "give its URL as the base URL"
                        )
                    if status not in (307, 308):
                        raise self._error(EndpointError, model, status)(
                            f"{status} redirect from {self.public_url} to "
                            f"{shown} for model '{model}' would turn the POST "
                            "into a GET; give the target's URL as the base URL"
                        )
                    url = str(target)
                    continue
                return response, await self._read_capped(response, model)
            finally:
                await response.aclose()
        raise self._error(EndpointError, model, None)(
            f"{self.public_url} for model '{model}': more than {MAX_REDIRECTS} redirects"
        )

    async def _attempt(self, model: str, body: dict) -> tuple[dict, float]:
        httpx = require("httpx", extra="collect")
        started = time.perf_counter()
        try:
            response, data = await asyncio.wait_for(self._send(model, body), self.timeout)
        except (TimeoutError, httpx.TimeoutException) as error:
            raise _Retryable(f"timed out after {self.timeout:g} s", connection=True) from error
        except httpx.LocalProtocolError as error:  # its text may quote a header value
            raise self._error(EndpointError, model, None)(
                f"{self.public_url} for model '{model}': the HTTP library refused to send the "
                f"request ({type(error).__name__}; details hidden: they may quote header values)"
            ) from None
        except httpx.ConnectError as error:
            reason = redact(_connect_reason(error), self._secrets)
            raise _Retryable(reason, connection=True, connect=True) from error
        except httpx.TransportError as error:
            reason = redact(f"{type(error).__name__}: {error}", self._secrets)
            raise _Retryable(f"connection error ({reason})", connection=True) from error
        self._reached = True
        latency = time.perf_counter() - started
        status = response.status_code
        if status == 200:
            try:
                payload = json.loads(data)
            except RecursionError:  # a reply nested thousands of levels deep (issue 36)
                raise self._error(EndpointResponseError, model, status)(
                    f"{self.public_url} for model '{model}': the reply is JSON nested too deeply "
                    "to read (not a chat completion); not scored"
                ) from None
            except (json.JSONDecodeError, ValueError) as error:
                raise _Retryable("response is not valid JSON", status) from error
            if isinstance(payload, dict) and "error" in payload and "choices" not in payload:
                # Some gateways report upstream failures inside a 200 body.
                message = self._server_message(data, response.encoding)
                raise _Retryable(f"error in response body: {message}", 200)
            if not isinstance(payload, dict):
                raise _Retryable("response is not a JSON object", status)
            return payload, latency
        message = self._server_message(data, response.encoding)
        where = f"{status} {response.reason_phrase} from {self.public_url} for model '{model}'"
        if status in (401, 403):
            raise self._error(EndpointAuthError, model, status)(
                f"{where}: {message}. Check the API key: {self._key_hint()}."
            )
        if status == 404:
            raise self._error(EndpointNotFoundError, model, status)(
                f"{where}: {message}. Check the model name and that the base URL includes the "
                "API prefix (usually '/v1')."
            )
        if status in RETRY_STATUSES or status >= 500:
            raise _Retryable(
                f"{status} {response.reason_phrase}: {message}", status, _retry_after(response)
            )
        raise self._error(EndpointError, model, status)(f"{where}: {message}")

    def _check_reachable(self, model: str, failure: _Retryable) -> None:
        """Count a connection error or timeout; raise when the endpoint looks gone."""
        self._consecutive_errors += 1
        if failure.connect and not self._reached:
            raise self._error(EndpointUnreachableError, model, None)(
                f"cannot connect to {self.public_url} for model '{model}': {failure.reason}; "
                "is the server running, and is the base URL right?"
            )
        if self._consecutive_errors >= self.max_consecutive_errors:
            raise self._error(EndpointUnreachableError, model, None)(
                f"stopped after {self.max_consecutive_errors} consecutive connection errors or "
                f"timeouts from {self.public_url} (last, for model '{model}': {failure.reason}). "
                "Is the server running and answering? (Raise --timeout for slow models.)"
            )

    async def chat(
        self,
        model: str,
        messages: list[dict[str, str]],
        *,
        temperature: float = 0.7,
        top_p: float = 1.0,
        max_tokens: int | None = 1024,
        extra_body: dict | None = None,
        max_retries: int | None = None,
    ) -> ChatResult:
        """Send one chat completion, retrying retryable failures.

        Parameters
        ----------
        model : str
        messages : list of dict
            ``[{"role": "system" | "user" | "assistant", "content": str}, ...]``.
        temperature, top_p, max_tokens
            Sampling parameters (``max_tokens=None`` leaves it to the server).
        extra_body : dict, optional
            Extra request fields merged into the body (e.g. ``{"seed": 1}`` or OpenRouter's
            ``{"usage": {"include": True}}``).
        max_retries : int, optional
            Retries of this call (default: the client's ``max_retries``).

        Returns
        -------
        ChatResult

        Raises
        ------
        EndpointAuthError, EndpointNotFoundError
            401/403 and 404; never retried.
        EndpointUnreachableError
            The endpoint refused the connection before any call succeeded, or
            ``max_consecutive_errors`` connection errors or timeouts came in a row.
        EndpointRedirectError
            The endpoint redirected to another origin (nothing was sent there).
        EndpointResponseError
            The reply is over ``max_response_bytes`` or its content is not text; not retried.
        EndpointError
            Another 4xx, an unusable 200 body after retries, or retries exhausted.
        """
        for name, value in (("temperature", temperature), ("top_p", top_p)):
            if isinstance(value, bool) or not math.isfinite(float(value)) or float(value) < 0:
                # JSON has no inf or NaN: the server would refuse the body six times (issue 36)
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "temperature": float(temperature),
            "top_p": float(top_p),
        }
        if max_tokens is not None:
            body["max_tokens"] = int(max_tokens)
        if extra_body:
            body.update(extra_body)
        started_at = utc_now()
        started = time.perf_counter()
        last: _Retryable | None = None
        retries = self.max_retries if max_retries is None else int(max_retries)
        for attempt in range(retries + 1):
            try:
                payload, latency = await self._attempt(model, body)
                parsed = parse_chat_response(payload)  # ChatResult's first four fields
            except _Retryable as retryable:
                last = retryable
            except UnusableContent as error:  # would be scored as an answer: a failed call
                raise self._error(EndpointResponseError, model, 200)(
                    f"{self.public_url} for model '{model}': {error}; not scored"
                ) from None
            except ValueError as error:  # no choices in a 200 body
                last = _Retryable(str(error), 200)
            else:
                self._consecutive_errors = 0
                return ChatResult(
                    *parsed,
                    reported_cost=reported_cost(payload),
                    raw=payload,
                    latency_s=latency,
                    elapsed_s=time.perf_counter() - started,
                    attempts=attempt + 1,
                    started_at=started_at,
                    finished_at=utc_now(),
                )
            if last.connection:
                self._check_reachable(model, last)
            else:
                self._consecutive_errors = 0
            if attempt == retries:
                break
            delay = self.backoff_delay(attempt, last.retry_after)
            logger.debug(
                "%s model %s: %s; retry %d/%d in %.2f s",
                self.public_url,
                model,
                last.reason,
                attempt + 1,
                retries,
                delay,
            )
            await asyncio.sleep(delay)
        assert last is not None
        raise self._error(EndpointError, model, last.status, attempts=retries + 1)(
            f"{self.public_url} for model '{model}' failed after {retries + 1} "
            f"attempt(s); last error: {last.reason}"
        )


__all__: list[str] = []
