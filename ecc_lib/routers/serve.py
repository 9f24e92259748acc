"""``serve-router``: an OpenAI-compatible chat endpoint in front of several upstream endpoints.

:class:`RouterServer` answers ``POST /v1/chat/completions``: it embeds the request's last user
message with the router's embedder, routes it (:meth:`ecc_lib.routers.deploy.DeployedRouter.
route_embeddings`, at the router's operating point) and forwards the request to the chosen
model's upstream with :class:`ecc_lib.collect.client.ChatClient`, so the collect client's rules
apply unchanged: requests stay on the upstream's origin, replies are read up to
:data:`~ecc_lib.collect.client.DEFAULT_MAX_RESPONSE_BYTES`, every attempt has a deadline and
retries back off; API keys appear in no error and no reply (:func:`ecc_lib.collect.client.redact`).
The reply is the upstream's JSON with ``model`` set to the chosen model and a ``router`` object
(the choice, predicted score, cost and utility); a failed upstream call is answered ``502`` with an
OpenAI-style error, and the server keeps serving. ``dry_run`` answers with the choice only (the
chosen model as the content).

Key policy (the collect runner's, per upstream): without ``api_key_envs`` the key in
``OPENAI_API_KEY`` goes to ``https://api.openai.com`` only
(:func:`ecc_lib.collect.runner.is_openai_host`); ``api_key_envs={"model": "ENV"}`` sends the key
in ``ENV`` to that model's upstream only, with a warning when that is plain http to another
machine. No other upstream gets a key.

Decisions are logged, one JSON line per request, to ``log_dir/decisions.jsonl`` when a log folder
is given; :func:`read_decisions` reads them back as a queries table and a decisions table, and
:func:`export_decisions` writes them as a dataset folder (``queries.csv``, read by
:func:`ecc_lib.data.tables.read_queries`, and ``decisions.csv``).

Standard library HTTP server (:class:`http.server.ThreadingHTTPServer`), one thread per
connection, HTTP/1.1 keep-alive; the upstream calls run on one asyncio loop in a background thread.
Routing one query at a time runs with BLAS and OpenMP limited to one thread while the server runs
(waking their thread pools per request costs more than it saves).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from ecc_lib.collect.client import (
    DEFAULT_MAX_RESPONSE_BYTES,
    ChatClient,
    check_api_key,
    check_base_url,
    public_url,
    redact,
)
from ecc_lib.collect.errors import CollectError
from ecc_lib.collect.runner import DEFAULT_API_KEY_ENV, _is_loopback, is_openai_host
from ecc_lib.data.sources import DECISIONS_TABLE
from ecc_lib.routers.deploy import DeployedRouter

logger = logging.getLogger(__name__)

DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024
"""Largest request body accepted (1 MiB); a longer one is answered 413."""
DECISIONS_FILE = "decisions.jsonl"
SAMPLING_FIELDS = ("temperature", "top_p", "max_tokens")
DROPPED_FIELDS = ("model", "messages", "stream", *SAMPLING_FIELDS)


def parse_upstreams(specs: Sequence[str]) -> dict[str, str]:
    """``NAME=URL`` strings as ``{name: base URL}``.

    Parameters
    ----------
    specs : sequence of str
        One ``NAME=URL`` each (the URL includes the API prefix, ``http://host:8000/v1``).

    Returns
    -------
    dict of str to str
    """
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, url = str(spec).partition("=")
        name, url = name.strip(), url.strip()
        if not sep or not name or not url:
            raise ValueError(f"upstream {spec!r} is not NAME=URL")
        if name in out:
            raise ValueError(f"upstream {name!r} is given twice")
        out[name] = check_base_url(url)
    return out


def upstream_key(name: str, base_url: str, api_key_envs: Mapping[str, str]) -> str | None:
    """The API key an upstream gets under the key policy (see the module docstring).

    Parameters
    ----------
    name : str
        The model the upstream serves.
    base_url : str
        Its base URL.
    api_key_envs : mapping of str to str
        Environment variable of the key per model, for upstreams other than api.openai.com.

    Returns
    -------
    str or None
        The stripped key, or None (no ``Authorization`` header).
    """
    env = api_key_envs.get(name)
    if env is None and is_openai_host(base_url):
        env = DEFAULT_API_KEY_ENV
    if env is None:
        return None
    if urlsplit(base_url).scheme.lower() == "http" and not _is_loopback(base_url):
        logger.warning(
            "the API key in %s goes to %s over plain http: anyone on the way can read it",
            env,
            public_url(base_url),
        )
    raw = os.environ.get(env) or None
    if raw is None:
        logger.warning("environment variable %s is not set: %s gets no API key", env, name)
    return check_api_key(raw, api_key_env=env)


def last_user_message(messages: Any) -> str:
    """Text of the last ``user`` message of a chat request.

    Parameters
    ----------
    messages : list of dict
        The request's ``messages``.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        No user message with text content.
    """
    if not isinstance(messages, list):
        raise ValueError("'messages' must be a list")
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # text parts
                content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            if isinstance(content, str) and content.strip():
                return content
    raise ValueError("the request has no user message with text to route")


class RouterServer:
    """OpenAI-compatible chat endpoint that routes each request (see the module docstring).

    Parameters
    ----------
    deployed : DeployedRouter
        The router, at its operating point.
    upstreams : mapping of str to str
        Base URL per model; every model of the router needs one unless ``dry_run``.
    api_key_envs : mapping of str to str, optional
        Environment variable of the key per model (the key policy).
    dry_run : bool, default False
        Answer with the choice only; nothing is forwarded.
    host : str, default "127.0.0.1"
    port : int, default 0
        0 picks a free port.
    timeout : float, default 60
        Deadline of one upstream attempt in seconds.
    max_retries : int, default 2
        Retries of a failed upstream call.
    max_request_bytes : int, default 1 MiB
    log_dir : str or Path, optional
        Folder of ``decisions.jsonl``.
    """

    def __init__(
        self,
        deployed: DeployedRouter,
        upstreams: Mapping[str, str],
        *,
        api_key_envs: Mapping[str, str] | None = None,
        dry_run: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        log_dir: str | Path | None = None,
    ) -> None:
        self.deployed = deployed
        self.upstreams = {m: check_base_url(u) for m, u in dict(upstreams).items()}
        models = deployed.models
        unknown = sorted(set(self.upstreams) - set(models))
        if unknown:
            raise ValueError(f"upstreams {unknown} are not models of the router ({list(models)})")
        missing = [m for m in models if m not in self.upstreams]
        if missing and not dry_run:
            raise ValueError(f"models {missing} have no --upstream NAME=URL (or use --dry-run)")
        api_key_envs = dict(api_key_envs or {})
        stray = sorted(set(api_key_envs) - set(self.upstreams))
        if stray:
            raise ValueError(f"API key variables given for {stray}, which have no upstream")
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        self.dry_run = bool(dry_run)
        self.host, self.port = host, int(port)
        self.timeout, self.max_retries = float(timeout), int(max_retries)
        self.max_request_bytes = int(max_request_bytes)
        self._keys = {m: upstream_key(m, u, api_key_envs) for m, u in self.upstreams.items()}
        self._secrets = [k for k in self._keys.values() if k]
        self.log_dir = Path(log_dir) if log_dir is not None else None
        self._route_lock = threading.Lock()
        self._log_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._clients: dict[str, ChatClient] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._thread_limits = None

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1`` once started."""
        if self._server is None:
            raise RuntimeError("the server is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> RouterServer:
        """Bind and serve in background threads.

        Returns
        -------
        RouterServer
            ``self``.
        """
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        # one query at a time: thread pools of BLAS / OpenMP cost more to wake than they save
        self._thread_limits = threadpool_limits(limits=1)
        if not self.dry_run:
            self._loop = asyncio.new_event_loop()
            self._loop_thread = threading.Thread(target=self._loop.run_forever, daemon=True)
            self._loop_thread.start()

            async def make_clients() -> dict[str, ChatClient]:
                return {
                    m: ChatClient(
                        u,
                        api_key=self._keys[m],
                        timeout=self.timeout,
                        max_retries=self.max_retries,
                        backoff_base=0.05,
                        backoff_max=1.0,
                        max_consecutive_errors=1_000_000,  # one slow upstream does not end serving
                        max_connections=16,  # per upstream
                        max_response_bytes=DEFAULT_MAX_RESPONSE_BYTES,
                    )
                    for m, u in self.upstreams.items()
                }

            self._clients = asyncio.run_coroutine_threadsafe(make_clients(), self._loop).result()
        handler = type("Handler", (_Handler,), {"app": self})
        self._server = _Server((self.host, self.port), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the upstream clients."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._loop is not None:

            async def close() -> None:
                for client in self._clients.values():
                    await client.aclose()

            asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._loop_thread is not None:
                self._loop_thread.join(timeout=10)
            self._loop.close()
            self._loop = None
        if self._thread_limits is not None:
            self._thread_limits.restore_original_limits()
            self._thread_limits = None

    def __enter__(self) -> RouterServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- one request -------------------------------------------------------------------------
    def decide(self, text: str) -> dict:
        """The routing decision for one text.

        Parameters
        ----------
        text : str

        Returns
        -------
        dict
            ``model``, ``predicted_score`` (None when not predicted), ``predicted_cost``,
            ``utility``.
        """
        with self._route_lock:
            choice, score, cost, utility = self.deployed.decisions(self.deployed.embed([text]))
        return {
            "model": self.deployed.models[int(choice[0])],
            "predicted_score": float(score[0]) if np.isfinite(score[0]) else None,
            "predicted_cost": float(cost[0]),
            "utility": float(utility[0]),
        }

    def handle(self, body: dict) -> tuple[int, dict]:
        """``(status, JSON reply)`` of one chat request body.

        Parameters
        ----------
        body : dict
            The decoded request.

        Returns
        -------
        status : int
        reply : dict
        """
        if body.get("stream"):
            return 400, _error("streaming is not supported by serve-router", "invalid_request")
        try:
            text = last_user_message(body.get("messages"))
        except ValueError as error:
            return 400, _error(str(error), "invalid_request")
        decision = self.decide(text)
        model = decision["model"]
        request_id = f"route-{uuid.uuid4().hex[:16]}"
        if self.dry_run:
            status, reply = (
                200,
                {
                    "id": request_id,
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": model},
                            "finish_reason": "stop",
                        }
                    ],
                    "router": {**decision, "dry_run": True},
                },
            )
        else:
            status, reply = self._forward(model, body, decision)
        self._log(request_id, text, decision, status)
        return status, reply

    def _forward(self, model: str, body: dict, decision: dict) -> tuple[int, dict]:
        """The request forwarded to ``model``'s upstream: its reply, or a 502 error."""
        extra = {k: v for k, v in body.items() if k not in DROPPED_FIELDS}
        future = asyncio.run_coroutine_threadsafe(
            self._clients[model].chat(
                model,
                body["messages"],
                temperature=float(body.get("temperature", 0.7)),
                top_p=float(body.get("top_p", 1.0)),
                max_tokens=body.get("max_tokens"),
                extra_body=extra or None,
            ),
            self._loop,
        )
        try:
            result = future.result(timeout=(self.max_retries + 1) * (self.timeout + 2.0) + 5.0)
        except (CollectError, TimeoutError) as error:
            future.cancel()
            message = redact(str(error) or type(error).__name__, self._secrets)
            reply = _error(f"upstream for {model} failed: {message}", "upstream_error")
            return 502, {**reply, "router": decision}
        reply = json.loads(redact(json.dumps(result.raw), self._secrets))
        if not isinstance(reply, dict):
            reply = {"choices": []}
        return 200, {**reply, "model": model, "router": decision}

    def _log(self, request_id: str, text: str, decision: dict, status: int) -> None:
        if self.log_dir is None:
            return
        line = json.dumps(
            {
                "query_id": request_id,
                "text": redact(text, self._secrets),
                **decision,
                "status": status,
                "time": time.time(),
            }
        )
        with self._log_lock, open(self.log_dir / DECISIONS_FILE, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def _error(message: str, kind: str) -> dict:
    return {"error": {"message": message, "type": kind}}


class _Server(ThreadingHTTPServer):
    block_on_close = False  # keep-alive connections must not hold up server_close

    def handle_error(self, request: Any, client_address: Any) -> None:
        logger.debug("connection from %s dropped", client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    app: RouterServer

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if "router" in payload:
                self.send_header("X-Router-Model", str(payload["router"].get("model", "")))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_GET(self) -> None:
        if urlsplit(self.path).path.rstrip("/") == "/v1/models":
            data = [{"id": n, "object": "model"} for n in self.app.deployed.models]
            self._send(200, {"object": "list", "data": data})
        else:
            self._send(404, _error(f"no route {urlsplit(self.path).path}", "not_found"))

    def do_POST(self) -> None:
        self._send(*self._post())

    def _post(self) -> tuple[int, dict]:
        if urlsplit(self.path).path.rstrip("/") != "/v1/chat/completions":
            return 404, _error(f"no route {urlsplit(self.path).path}", "not_found")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            return 400, _error("bad Content-Length", "invalid_request")
        if length > self.app.max_request_bytes:
            self.close_connection = True  # the body is not read
            message = f"request body of {length} bytes is over {self.app.max_request_bytes}"
            return 413, _error(message, "invalid_request")
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError):
            return 400, _error("request body is not JSON", "invalid_request")
        if not isinstance(body, dict):
            return 400, _error("request body must be a JSON object", "invalid_request")
        try:
            return self.app.handle(body)
        except Exception as error:  # a bug must not end the server
            logger.exception("serve-router failed on a request")
            return 500, _error(f"internal error: {type(error).__name__}", "server_error")


def read_decisions(log_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The logged decisions of a :class:`RouterServer` as a queries table and a decisions table.

    Parameters
    ----------
    log_dir : str or Path
        The server's ``log_dir`` (holding ``decisions.jsonl``), or an exported dataset folder
        (``queries.csv`` and ``decisions.csv``, see :func:`export_decisions`).

    Returns
    -------
    queries : DataFrame
        ``query_id, text`` (validated by :func:`ecc_lib.data.schema.validate_queries`).
    decisions : DataFrame
        ``query_id, model, predicted_score, predicted_cost, utility, status``.
    """
    from ecc_lib.data.schema import validate_queries
    from ecc_lib.data.tables import read_queries

    folder = Path(log_dir)
    columns = ["query_id", "model", "predicted_score", "predicted_cost", "utility", "status"]
    if (folder / "decisions.csv").is_file() and (folder / "queries.csv").is_file():
        return read_queries(folder / "queries.csv"), pd.read_csv(folder / "decisions.csv")
    path = folder / DECISIONS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{folder} holds no {DECISIONS_FILE} or queries.csv/decisions.csv")
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    frame = pd.DataFrame.from_records(records, columns=["text", *columns])
    queries = validate_queries(frame[["query_id", "text"]].copy())
    return queries, frame[columns].reset_index(drop=True)


def export_decisions(log_dir: str | Path, folder: str | Path) -> Path:
    """Write the logged decisions as a dataset folder: ``queries.csv`` and ``decisions.csv``.

    The queries table is the package's (``query_id, text``) and the queries input of ``ecc-lab
    collect``. No outcomes table is written: the log holds no reference answers and no scores of
    the routed replies (a forwarded reply's score is unknown, a dry-run has no reply), and none is
    invented. :func:`ecc_lib.data.sources.load_dataset` (and every ``--dataset`` reader) refuses
    the folder with one line naming the next step (:func:`ecc_lib.data.sources.
    logged_decisions_message`): ``ecc-lab collect --queries FOLDER/queries.csv ...`` (with an
    ``answer`` column for the scorer), then ``ecc-lab collect-export --store STORE --out DIR``,
    which writes a dataset folder ``load_dataset`` reads.

    Parameters
    ----------
    log_dir : str or Path
        The server's log folder.
    folder : str or Path
        Created when missing.

    Returns
    -------
    Path
    """
    queries, decisions = read_decisions(log_dir)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.glob("outcomes.*")):
        raise FileExistsError(
            f"{folder} already holds an outcomes table; export the decisions to another folder"
        )
    queries.to_csv(folder / "queries.csv", index=False)
    decisions.to_csv(folder / DECISIONS_TABLE, index=False)
    return folder


__all__ = [
    "RouterServer",
    "read_decisions",
]
