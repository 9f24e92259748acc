"""A real HTTP server speaking the OpenAI chat-completions protocol, for tests and demos.

Binds 127.0.0.1 on a free port in a background thread, answers ``POST /v1/chat/completions``
deterministically from (model, prompt), reports token usage, and injects faults on request::

    with FakeOpenAIServer(fail_first=2) as server:
        collect(queries, ["m1", "m2"], server.base_url, store_dir)

Standard library only, so the notebooks and any test can import it (add ``tests/`` to ``sys.path``).
Run ``python tests/fake_openai_server.py --port 8000`` to serve one by hand.

Faults, applied in this order to the n-th chat call (0-based, counted over all models):

- ``api_key``: a request without ``Authorization: Bearer <api_key>`` gets 401;
- ``models``: a model not listed gets 404;
- ``status_plan[n]`` (or ``fail_status`` for the first ``fail_first`` calls, or ``fail_models[model]``
  for every call of that model): that status with an OpenAI-style error body (429 with
  ``Retry-After: retry_after`` when given);
- ``slow_calls`` (call numbers) sleep ``slow_seconds`` before answering, beyond a client's timeout;
- ``faults[n]`` (or ``fault`` for every call): ``"hang"`` never answers (until the server stops),
  ``"close"`` closes the connection without a response, ``"null"`` answers ``content: null`` with
  ``finish_reason: "length"``, ``"empty"`` answers ``content: ""`` with ``finish_reason: "stop"``,
  ``"object"`` answers the content as a JSON object (``{"answer": ...}``), ``"negative_usage"``
  reports negative token counts; ``"deep_json"`` answers a body nested 100,000 levels deep,
  ``"huge_tokens"`` reports a 4,000-digit token count, ``"absurd_cost"`` reports ``usage.cost``
  1e300 (issue 36);
- ``delay`` seconds before every answer (to make a run last long enough to be killed);
- ``response_formats``: the ``response_format`` types accepted (others are refused; ``None`` accepts
  any; refused with ``format_refusal_status``, 400 by default, 500 as llama-cpp-python does); a
  rewriting request without an accepted format is answered in ``rewrite_style``:
  ``"json"``, ``"numbered"`` (a numbered list after a preamble, as small models write) or
  ``"prose"`` (nothing usable).

Modes for the safety tests (network tests use 127.0.0.1 only):

- ``redirect_to``: every chat call is answered with ``redirect_status`` (307) and ``Location:
  redirect_to`` (another server's chat URL, say);
- ``oversize_bytes``: the answer's content is padded to that many bytes and the body sent
  gzip-compressed (``Content-Encoding: gzip``), so that a few hundred KB on the wire decode to
  many MB; the compressed body is built chunk by chunk, never held decoded;
- ``echo_key`` (issue 36): the server echoes the bearer key of each request and its query string,
  encoded as ``"plain"``, ``"percent"`` (``quote(..., safe="")``), ``"base64"`` (of the key alone)
  or ``"bearer64"`` (base64 of the whole ``Bearer KEY`` header, as a debugging proxy shows it): in
  the answer (status 200), or in the error message of a reply with ``echo_status`` (say 400);
- proxy: the server also accepts absolute request targets (``POST http://api.example.com/v1/...``)
  as an HTTP proxy receives them, so a client given ``HTTP_PROXY=<server.proxy_url>`` can "reach"
  any host name while only 127.0.0.1 is contacted; every request records the ``host`` it was
  meant for, its ``path`` and ``query``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, urlsplit

LETTERS = "ABCDEFGHIJ"
ECHO_ENCODINGS: tuple[str, ...] = ("plain", "percent", "base64", "bearer64")
FAULTS: tuple[str, ...] = (
    "hang",
    "close",
    "null",
    "empty",
    "object",
    "negative_usage",
    "deep_json",
    "huge_tokens",
    "absurd_cost",
)
DEEP = 100_000
Responder = Callable[[str, list, dict], str]


def _digest(*parts: str) -> int:
    return int(hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:12], 16)


def _echo(encoding: str | None, authorization: str, query: str) -> str:
    """The request's bearer key and query string as a careless server echoes them (``echo_key``)."""
    if encoding is None:
        return ""
    key = authorization.removeprefix("Bearer ")
    if encoding == "plain":
        return f"key={key} query={query}"
    if encoding == "percent":
        return f"key={quote(key, safe='')} query={quote(query, safe='')}"
    if encoding == "base64":
        return f"key={base64.b64encode(key.encode()).decode()} query={base64.b64encode(query.encode()).decode()}"
    return f"header={base64.b64encode(authorization.encode()).decode()}"


def _user_text(messages: list) -> str:
    users = [m.get("content", "") for m in messages if m.get("role") == "user"]
    return users[-1] if users else ""


def is_rewrite_request(messages: list) -> bool:
    system = " ".join(m.get("content", "") for m in messages if m.get("role") == "system")
    return "rewrite" in system.lower() and '"rewrites"' in _user_text(messages)


def rewrite_response(model: str, messages: list) -> str:
    """``{"rewrites": [...]}`` with as many rewrites as asked for ("exactly N")."""
    text = _user_text(messages)
    wanted = re.search(r"exactly (\d+)", text)
    count = int(wanted.group(1)) if wanted else 1
    question = re.search(r"Question:\n(.*?)(?:\n\n(?:Options|Make each)|\Z)", text, re.S)
    stem = question.group(1).strip() if question else text
    offset = len(re.findall(r"^- ", text, re.M))  # existing rewrites to differ from
    # numbered in words: a digit the question lacks would be refused as an added number
    words = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
    rewrites = [
        f"Rephrasing {words[(offset + k + 1) % 10]} by {model}: {stem}" for k in range(count)
    ]
    return json.dumps({"rewrites": rewrites})


def restyle_rewrites(content: str, style: str) -> str:
    """A JSON rewriting answer as a small model without structured output might write it."""
    if style == "json":
        return content
    if style == "prose":
        return "I think the question is already clear as it is."
    rewrites = json.loads(content)["rewrites"]
    lines = [f"{k + 1}. {text}" for k, text in enumerate(rewrites)]
    return "Here are the rewrites:\n" + "\n".join(lines)


def default_answer(model: str, messages: list) -> str:
    """A deterministic answer: an option letter when options are shown, else a digit."""
    text = _user_text(messages)
    value = _digest(model, text)
    options = re.findall(r"^([A-J])\. ", text, re.M)
    answer = options[value % len(options)] if options else str(value % 10)
    return f"Thinking about it.\nFinal answer: {answer}"


def answer_key_responder(
    answer_key: dict[str, str], accuracy: dict[str, float], wrong: str = "none of these"
) -> Responder:
    """Answers correctly with probability ``accuracy[model]``, deterministically per prompt.

    ``answer_key`` maps a marker found in the question (e.g. the query id written in its text) to
    the correct answer. Rewrite requests are answered by :func:`rewrite_response`.
    """

    def respond(model: str, messages: list, body: dict) -> str:
        if is_rewrite_request(messages):
            return rewrite_response(model, messages)
        text = _user_text(messages)
        correct = next((a for marker, a in answer_key.items() if marker in text), None)
        hit = _digest(model, text, "hit") % 1000 < 1000 * accuracy.get(model, 0.5)
        answer = correct if (hit and correct is not None) else wrong
        return f"Let me work it out.\nFinal answer: {answer}"

    return respond


def default_responder(model: str, messages: list, body: dict) -> str:
    if is_rewrite_request(messages):
        return rewrite_response(model, messages)
    return default_answer(model, messages)


class FakeOpenAIServer:
    """OpenAI-compatible chat-completions server on 127.0.0.1 (see the module docstring)."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        models: Iterable[str] | None = None,
        responder: Responder = default_responder,
        fail_first: int = 0,
        fail_status: int = 429,
        status_plan: dict[int, int] | None = None,
        fail_models: dict[str, int] | None = None,
        retry_after: float | None = None,
        slow_calls: Iterable[int] = (),
        slow_seconds: float = 2.0,
        delay: float = 0.0,
        faults: dict[int, str] | None = None,
        fault: str | None = None,
        response_formats: Iterable[str] | None = None,
        rewrite_style: str = "json",
        format_refusal_status: int = 400,
        report_cost: bool = False,
        redirect_to: str | None = None,
        redirect_status: int = 307,
        oversize_bytes: int = 0,
        echo_key: str | None = None,
        echo_status: int = 200,
        port: int = 0,
    ) -> None:
        self.api_key = api_key
        self.models = set(models) if models is not None else None
        self.responder = responder
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.status_plan = dict(status_plan or {})
        self.fail_models = dict(fail_models or {})
        self.retry_after = retry_after
        self.slow_calls = set(slow_calls)
        self.slow_seconds = slow_seconds
        self.delay = delay
        self.faults = dict(faults or {})
        self.fault = fault
        for name in [*self.faults.values(), fault]:
            if name is not None and name not in FAULTS:
                raise ValueError(f"unknown fault {name!r}; one of {FAULTS}")
        self.stopped = threading.Event()
        self.response_formats = set(response_formats) if response_formats is not None else None
        if rewrite_style not in ("json", "numbered", "prose"):
            raise ValueError(f"unknown rewrite_style {rewrite_style!r}")
        self.rewrite_style = rewrite_style
        self.format_refusal_status = format_refusal_status
        self.report_cost = report_cost
        self.redirect_to = redirect_to
        self.redirect_status = redirect_status
        self.oversize_bytes = int(oversize_bytes)
        if echo_key not in (None, *ECHO_ENCODINGS):
            raise ValueError(f"unknown echo_key {echo_key!r}; one of {ECHO_ENCODINGS}")
        self.echo_key = echo_key
        self.echo_status = int(echo_status)
        self.requests: list[dict[str, Any]] = []
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._base_url: str | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (kept after ``stop()``)."""
        assert self._base_url is not None, "server not started"
        return self._base_url

    @property
    def proxy_url(self) -> str:
        """``http://127.0.0.1:PORT``: the server as an HTTP proxy (see the module docstring)."""
        return self.base_url.rsplit("/v1", 1)[0]

    @property
    def n_calls(self) -> int:
        with self._lock:
            return len(self.requests)

    def statuses(self) -> list[int]:
        with self._lock:
            return [r["status"] for r in self.requests]

    def start(self) -> FakeOpenAIServer:
        self.stopped.clear()
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = _Server(("127.0.0.1", self._port), handler)
        host, port = self._server.server_address[:2]
        self._base_url = f"http://{host}:{port}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and drop open connections (as a dead server would)."""
        self.stopped.set()  # wakes hanging handlers
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            connections, self._connections = list(self._connections), set()
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- behaviour ---------------------------------------------------------------------------

    def _register(self, entry: dict) -> int:
        with self._lock:
            entry["index"] = len(self.requests)
            self.requests.append(entry)
            return entry["index"]

    def handle_chat(
        self, headers: dict, body: dict, target: dict | None = None
    ) -> tuple[int, dict, dict]:
        """``(status, json_body, extra_headers)`` for one chat call; status 0 means "close the
        connection without answering". ``target`` holds the ``host``, ``path`` and ``query`` the
        request was sent to."""
        model = str(body.get("model", ""))
        entry = {
            "model": model,
            "authorization": headers.get("authorization"),
            "body": body,
            "status": None,
            **(target or {}),
        }
        index = self._register(entry)
        if self.redirect_to is not None:
            entry["status"] = self.redirect_status
            return self.redirect_status, {}, {"Location": self.redirect_to}

        def error(status: int, message: str, kind: str) -> tuple[int, dict, dict]:
            entry["status"] = status
            extra = {}
            if status == 429 and self.retry_after is not None:
                extra["Retry-After"] = str(self.retry_after)
            return status, {"error": {"message": message, "type": kind, "code": status}}, extra

        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return error(401, "Incorrect API key provided.", "invalid_request_error")
        echo = _echo(
            self.echo_key, headers.get("authorization") or "", (target or {}).get("query", "")
        )
        if echo and self.echo_status != 200:
            return error(
                self.echo_status, f"request refused; it carried {echo}", "invalid_request_error"
            )
        if self.models is not None and model not in self.models:
            return error(404, f"The model `{model}` does not exist.", "invalid_request_error")
        status = self.status_plan.get(index)
        if status is None and index < self.fail_first:
            status = self.fail_status
        if status is None:
            status = self.fail_models.get(model)
        if status is not None and status != 200:
            return error(status, f"injected fault {status} on call {index}", "server_error")
        response_format = body.get("response_format")
        if response_format is not None and self.response_formats is not None:
            kind = response_format.get("type") if isinstance(response_format, dict) else None
            if kind not in self.response_formats:
                return error(
                    self.format_refusal_status,
                    f"body.response_format.type: {kind!r} is not supported",
                    "invalid_request_error",
                )
        fault = self.faults.get(index, self.fault)
        if fault == "hang":
            entry["status"] = "hang"
            self.stopped.wait()
            return 0, {}, {}
        if fault == "close":
            entry["status"] = "close"
            return 0, {}, {}
        if index in self.slow_calls:
            time.sleep(self.slow_seconds)
        if self.delay:
            time.sleep(self.delay)
        messages = body.get("messages", [])
        content = self.responder(model, messages, body)
        if is_rewrite_request(messages) and response_format is None:
            content = restyle_rewrites(content, self.rewrite_style)
        if echo:
            content = f"{content}\n(debug: this request carried {echo})"
        finish_reason = "stop"
        if fault == "null":
            content, finish_reason = None, "length"
        elif fault == "empty":
            content = ""
        elif fault == "object":
            content = {"answer": content}
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
        completion_tokens = len(str(content or "").split()) or (16 if fault == "null" else 0)
        if fault == "negative_usage":
            prompt_tokens, completion_tokens = -prompt_tokens - 1, -completion_tokens - 1
        if fault == "huge_tokens":
            prompt_tokens = 10**3999 + 7
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if self.report_cost and fault != "huge_tokens":
            usage["cost"] = (prompt_tokens * 1.0 + completion_tokens * 2.0) / 1e6
        if fault == "absurd_cost":
            usage["cost"] = 1e300
        entry["status"] = 200
        if fault == "deep_json":  # sent as is (json.dumps would recurse as deep)
            return 200, {"__raw__": ('{"choices": ' + "[" * DEEP + "]" * DEEP + "}").encode()}, {}
        return (
            200,
            {
                "id": f"chatcmpl-{index}",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": finish_reason,
                    }
                ],
                "usage": usage,
            },
            {},
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that time out close their sockets: not worth a traceback


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        with self.fake._lock:
            self.fake._connections.add(self.connection)

    def finish(self) -> None:
        with self.fake._lock:
            self.fake._connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def _send(self, status: int, payload: dict, extra: dict | None = None) -> None:
        extra = dict(extra or {})
        if "__raw__" in payload:
            data = payload["__raw__"]
        elif status == 200 and self.fake.oversize_bytes and payload.get("choices"):
            data = _gzip_padded(payload, self.fake.oversize_bytes)
            extra["Content-Encoding"] = "gzip"
        else:
            data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_GET(self) -> None:
        if self._target()["path"].rstrip("/") == "/v1/models":
            names = sorted(self.fake.models or [])
            self._send(
                200, {"object": "list", "data": [{"id": n, "object": "model"} for n in names]}
            )
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def _target(self) -> dict:
        """Where the request was meant to go: an absolute target (a proxied request) names it."""
        parts = urlsplit(self.path)
        host = parts.netloc if parts.scheme else self.headers.get("Host", "")
        return {"host": host, "path": parts.path, "query": parts.query}

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        target = self._target()
        if target["path"].rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "body is not JSON"}})
            return
        headers = {key.lower(): value for key, value in self.headers.items()}
        status, payload, extra = self.fake.handle_chat(headers, body, target)
        if status == 0:  # a fault: drop the connection without a response
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self._send(status, payload, extra)


def _gzip_padded(payload: dict, size: int) -> bytes:
    """``payload`` as JSON with its first answer padded to ``size`` bytes, gzip-compressed one
    megabyte at a time (the decoded body never exists in memory)."""
    content = payload["choices"][0]["message"].get("content")
    marker = "@@PAD@@"
    payload = json.loads(json.dumps(payload))
    payload["choices"][0]["message"]["content"] = f"{content or ''}{marker}"
    head, tail = json.dumps(payload).encode().split(marker.encode())
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: gzip framing
    parts = [compressor.compress(head)]
    block = b" " * (1 << 20)
    left = size
    while left > 0:
        parts.append(compressor.compress(block[: min(left, len(block))]))
        left -= len(block)
    parts.append(compressor.compress(tail))
    parts.append(compressor.flush())
    return b"".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--fault", choices=FAULTS, default=None, help="fault of every call")
    args = parser.parse_args()
    server = FakeOpenAIServer(
        port=args.port, delay=args.delay, api_key=args.api_key, fault=args.fault
    ).start()
    print(f"serving {server.base_url} (Ctrl-C to stop)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
