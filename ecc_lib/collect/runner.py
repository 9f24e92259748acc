"""Collection runs: rewrites x decodes for every query and model, scored, costed, resumable.

:func:`collect` is the entry point (a notebook can call it directly; inside a running event loop it
runs in a helper thread); :func:`acollect` is its coroutine.

This module checks the arguments, prepares the queries, opens the store and records the run in its
manifest; the run has two phases, each with a pool of ``concurrency`` asyncio workers and a progress
bar (:mod:`ecc_lib.collect.workers`):

1. **rewrites** (:mod:`ecc_lib.collect.rewriting`) -- for each query lacking some of variants
   ``1..n_rewrites`` in the store, the rewriting model is asked for the missing ones (up to
   :data:`~ecc_lib.collect.rewriting.REWRITE_ATTEMPTS` calls; a variant that equals the original or
   another variant, or that reveals the reference answer, is refused). Variant 0 is the original
   text.
2. **decodes** (:mod:`ecc_lib.collect.answers`) -- each candidate model answers each variant
   ``n_decodes`` times; each response is scored and costed and appended to the store as soon as it
   arrives. Original-query tasks come first, so a stopped run already holds single-shot data for
   every query.

Tasks already in the store are skipped, so rerunning the same call completes an interrupted run.
Calls that fail for good (after retries) are logged in ``failures.jsonl`` and tried again by the next
run; so are empty replies (``content`` null or blank, e.g. ``finish_reason`` "length"), which are
never scored. 401/403/404, an unreachable endpoint (connection refused, ``max_consecutive_errors``
connection errors or timeouts in a row) and a store that cannot be written stop the run at once with
one message; the store keeps everything written before. SIGTERM (and Ctrl-C) mark the run
"interrupted" in the manifest; a run killed outright is marked "interrupted" by the next one.

Models may be variants, ``NAME@KEY=VALUE;...`` (see :mod:`ecc_lib.collect.models`): each variant is
its own model in the outcomes, and every record stores the endpoint model and the variant's
settings. Rewrites are asked for as structured JSON (``response_format``) where the server accepts
it; otherwise, and for small models that answer with lists anyway, a tolerant parser reads numbered
or one-per-line lists. The summary counts the rewriting calls that needed that fallback or gave
nothing usable, with the reasons.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import math
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from ecc_lib.collect.answers import answer
from ecc_lib.collect.client import (
    DEFAULT_MAX_RESPONSE_BYTES,
    ChatClient,
    check_api_key,
    check_base_url,
    public_url,
    utc_now,
)
from ecc_lib.collect.context import RunContext, prepare_queries
from ecc_lib.collect.errors import StoreError
from ecc_lib.collect.models import ModelSpec, parse_model_spec, parse_models
from ecc_lib.collect.pricing import price_table
from ecc_lib.collect.prompts import PROMPT_VERSION, REWRITE_FORMATS
from ecc_lib.collect.queries import check_queries, read_queries_file
from ecc_lib.collect.rewriting import REWRITE_TEMPERATURE, Rewriter
from ecc_lib.collect.scorers import Scorer
from ecc_lib.collect.store import CollectionStore
from ecc_lib.collect.summary import CollectionSummary, log_summary, warn_on_changed_settings
from ecc_lib.collect.workers import Progress, run_coroutine, run_pool
from ecc_lib.redaction import MIN_BARE_SECRET, url_secrets

logger = logging.getLogger(__name__)

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
OPENAI_API_HOST = "api.openai.com"
"""The one host that gets ``OPENAI_API_KEY`` without ``api_key_env`` (over https only)."""


def is_openai_host(base_url: str) -> bool:
    """True for ``https://api.openai.com`` exactly (default port, no user info): the only base URL
    that gets ``OPENAI_API_KEY`` unasked. Look-alike hosts (``api.evilopenai.com``,
    ``api.openai.com.evil.org``) and plain http do not.

    Parameters
    ----------
    base_url : str
        The endpoint's base URL.

    Returns
    -------
    bool
    """
    parts = urlsplit(str(base_url).strip())
    try:
        port = parts.port
    except ValueError:
        return False
    return (
        parts.scheme.lower() == "https"
        and (parts.hostname or "").lower().rstrip(".") == OPENAI_API_HOST
        and port in (None, 443)
        and "@" not in parts.netloc
    )


def _is_loopback(base_url: str) -> bool:
    """True for a base URL on this machine (localhost, 127.0.0.0/8, ::1)."""
    import ipaddress

    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_sizes(n_rewrites: int, n_decodes: int, concurrency: int) -> None:
    """Refuse negative rewrite counts, and decode counts or concurrency below one."""
    if n_rewrites < 0:
        raise ValueError(f"n_rewrites must be >= 0, got {n_rewrites}")
    if n_decodes < 1:
        raise ValueError(f"n_decodes must be >= 1, got {n_decodes}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")


def _check_decoding(
    temperature: float, top_p: float, rewrite_temperature: float, timeout: float
) -> None:
    """Refuse non-finite or out-of-range temperatures, ``top_p`` and timeouts."""
    if not (math.isfinite(temperature) and temperature >= 0 and 0 < top_p <= 1):
        raise ValueError(
            f"need a finite temperature >= 0 and 0 < top_p <= 1, got {temperature}, {top_p}"
        )
    if not (math.isfinite(rewrite_temperature) and rewrite_temperature >= 0):
        raise ValueError(f"need a finite rewrite_temperature >= 0, got {rewrite_temperature}")
    if not timeout > 0 or not math.isfinite(timeout):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout}")


def _check_limits(
    max_retries: int,
    max_consecutive_errors: int,
    rewrite_format: str,
    rewrite_calls: int | None,
    max_response_bytes: int,
) -> None:
    """Refuse out-of-range retry, rewriting-call and response-size limits."""
    if max_retries < 0 or max_consecutive_errors < 1:
        raise ValueError(
            f"need max_retries >= 0 and max_consecutive_errors >= 1, got {max_retries}, "
            f"{max_consecutive_errors}"
        )
    if rewrite_format not in REWRITE_FORMATS:
        raise ValueError(f"rewrite_format must be one of {REWRITE_FORMATS}, got {rewrite_format!r}")
    if rewrite_calls is not None and (isinstance(rewrite_calls, bool) or rewrite_calls < 1):
        raise ValueError(f"rewrite_calls must be a whole number >= 1, got {rewrite_calls!r}")
    if isinstance(max_response_bytes, bool) or not max_response_bytes >= 1:
        raise ValueError(f"max_response_bytes must be >= 1, got {max_response_bytes!r}")


def _rewriter_spec(
    rewriter: str | ModelSpec | None, n_rewrites: int, specs: Sequence[ModelSpec]
) -> ModelSpec | None:
    """The model writing the rewrites: None without rewrites, else ``rewriter`` or the first
    candidate's endpoint model (without its variant's settings)."""
    if n_rewrites <= 0:
        return None
    if rewriter is None:
        spec = ModelSpec(specs[0].endpoint_model, specs[0].endpoint_model)
        logger.info("no rewriter given: %s writes the rewrites", spec.label)
        return spec
    return rewriter if isinstance(rewriter, ModelSpec) else parse_model_spec(rewriter)


def _warn_unscored_and_unpriced(
    prepared: Sequence[Any],
    specs: Sequence[ModelSpec],
    rewriter_spec: ModelSpec | None,
    price_map: Mapping,
) -> None:
    """Warn about queries without a reference answer and models missing from the price table."""
    unanswered = sum(q.answer is None for q in prepared)
    if unanswered:
        logger.warning(
            "%d of %d queries have no reference answer: their records are stored unscored",
            unanswered,
            len(prepared),
        )
    priced = set(price_map)
    unpriced_models = [
        s.label
        for s in [*specs, rewriter_spec]
        if s is not None and price_map and not {s.label, s.endpoint_model} & priced
    ]
    if unpriced_models:
        logger.warning(
            "model(s) %s are not in the price table: their cost is known only if the API reports it",
            sorted(set(unpriced_models)),
        )


def _api_key(base_url: str, api_key_env: str | None) -> tuple[str | None, str | None, str | None]:
    """``(api_key_env, raw key, checked key)``: ``OPENAI_API_KEY`` for api.openai.com only, a
    warning for a key over plain http to another machine, surrounding whitespace stripped."""
    raw_key = None
    if api_key_env is None and is_openai_host(base_url):
        api_key_env = DEFAULT_API_KEY_ENV
    elif api_key_env and urlsplit(base_url).scheme.lower() == "http" and not _is_loopback(base_url):
        logger.warning(
            "the API key in %s goes to %s over plain http: anyone on the way can read it",
            api_key_env,
            public_url(base_url),
        )
    if api_key_env:
        raw_key = os.environ.get(api_key_env) or None
        if raw_key is None:
            logger.warning("environment variable %s is not set: sending no API key", api_key_env)
    # stripped; refused before anything is written
    api_key = check_api_key(raw_key, api_key_env=api_key_env)
    if raw_key is not None and api_key != raw_key:
        logger.info("stripped surrounding whitespace from the API key in %s", api_key_env)
    return api_key_env, raw_key, api_key


async def _run_phases(
    context: RunContext,
    prepared: Sequence[Any],
    rewriter_spec: ModelSpec | None,
    show_progress: bool,
) -> None:
    """The two phases of a run: the missing rewrites, then the missing decodes (their counts and
    concurrency as in the run's settings)."""
    store, summary, labels = context.store, context.summary, list(context.models)
    n_rewrites, n_decodes = context.settings["n_rewrites"], context.settings["n_decodes"]
    concurrency = context.settings["concurrency"]
    to_rewrite = [
        q
        for q in prepared
        if any((q.query_id, v) not in store.rewrites for v in range(1, n_rewrites + 1))
    ]
    if to_rewrite:
        await run_pool(
            to_rewrite,
            Rewriter(context, rewriter_spec).rewrite,
            concurrency,
            Progress("rewrites", len(prepared), len(prepared) - len(to_rewrite), show_progress),
        )
    tasks = [
        (q, v, d, m)
        for v in range(n_rewrites + 1)
        for d in range(n_decodes)
        for q in prepared
        for m in labels
        if (q.query_id, v) in store.rewrites and (q.query_id, m, v, d) not in store.records
    ]
    summary.n_missing_variants = sum(
        (q.query_id, v) not in store.rewrites for q in prepared for v in range(1, n_rewrites + 1)
    )
    blocked = summary.n_planned - summary.n_skipped - len(tasks)
    await run_pool(
        tasks,
        lambda task, progress: answer(context, task, progress),
        concurrency,
        Progress("answers", summary.n_planned - blocked, summary.n_skipped, show_progress),
    )


def _new_store(
    store_dir: str | Path, raw_key: str | None, api_key: str | None, base_url: str, fsync: bool
) -> CollectionStore:
    """The run's store (not yet open), told the secrets it must never write."""
    return CollectionStore(
        store_dir,
        # the key, and any credential of the base URL a server might echo back
        secrets=[
            s
            for s in (raw_key, api_key, *url_secrets(str(base_url)))
            if s and (s in (raw_key, api_key) or len(s) >= MIN_BARE_SECRET)
        ],
        fsync=fsync,
        read=False,
    )


def _record_start(store: CollectionStore, prepared: Sequence[Any], manifest_run: dict) -> None:
    """Record the run in the open store: its manifest entry, the queries and their originals."""
    warn_on_changed_settings(store, manifest_run["settings"])
    store.close_stale_runs(manifest_run["run_id"])
    store.update_manifest(manifest_run)
    # the store keeps its query fields of each PreparedQuery, the scorer by name
    store.add_queries({**vars(q), "scorer": q.scorer_name} for q in prepared)
    for q in prepared:
        store.add_rewrite(
            {
                "query_id": q.query_id,
                "variant_id": 0,
                "text": q.text,
                "source": "original",
                "rewriter": None,
                "created_at": utc_now(),
            }
        )


@contextlib.contextmanager
def _recorded_run(
    store: CollectionStore,
    store_dir: str | Path,
    prepared: Sequence[Any],
    settings: dict,
    started: float,
) -> Iterator[tuple[CollectionSummary, str]]:
    """Open the store and record the run's start (its manifest entry); yield the run's summary and
    id; on the way out count what the store holds of the planned records (originals first), record
    how the run ended ("completed", "incomplete", "interrupted" or "failed: ERROR") and close the
    store. The models and the rewrite and decode counts are the settings'."""
    from ecc_lib import __version__

    labels, n_rewrites, n_decodes = (
        settings["models"],
        settings["n_rewrites"],
        settings["n_decodes"],
    )

    manifest_run = {
        "run_id": f"{utc_now()}-{os.getpid()}",
        "started_at": utc_now(),
        "status": "started",
        "ecc_lib_version": __version__,
        "settings": settings,
    }
    summary = CollectionSummary(
        store_dir=str(store_dir),
        n_queries=len(prepared),
        n_models=len(labels),
        n_variants=n_rewrites + 1,
        n_decodes=n_decodes,
        n_planned=len(prepared) * len(labels) * (n_rewrites + 1) * n_decodes,
    )
    planned = [
        (q.query_id, m, v, d)
        for v in range(n_rewrites + 1)
        for d in range(n_decodes)
        for q in prepared
        for m in labels
    ]
    status = "failed"
    store.open()
    try:
        _record_start(store, prepared, manifest_run)
        summary.n_skipped = sum(key in store.records for key in planned)
        yield summary, manifest_run["run_id"]
        status = "completed"
    except (KeyboardInterrupt, asyncio.CancelledError):
        status = "interrupted"
        raise
    except Exception as error:
        status = f"failed: {type(error).__name__}"
        raise
    finally:
        summary.n_done = sum(key in store.records for key in planned)
        summary.elapsed_s = time.perf_counter() - started
        if status == "completed" and not summary.complete:
            status = "incomplete"
        manifest_run.update(status=status, finished_at=utc_now(), summary=summary.as_dict())
        try:
            store.update_manifest(manifest_run)
        except StoreError as error:  # e.g. the disk is full: the next run closes this entry
            logger.warning("could not record the end of the run in the manifest: %s", error)
        finally:
            store.close()


async def acollect(
    queries: pd.DataFrame | str | Path,
    models: str | Sequence[str | ModelSpec],
    base_url: str,
    store_dir: str | Path,
    *,
    api_key_env: str | None = None,
    rewriter: str | ModelSpec | None = None,
    n_rewrites: int = 2,
    n_decodes: int = 3,
    temperature: float = 0.7,
    top_p: float = 1.0,
    max_tokens: int | None = 1024,
    rewrite_temperature: float = REWRITE_TEMPERATURE,
    rewrite_format: str = "auto",
    rewrite_calls: int | None = None,
    concurrency: int = 8,
    prices: Mapping | str | Path | None = None,
    scorer: str | Scorer | Mapping[str, str | Scorer] | None = None,
    timeout: float = 60.0,
    max_retries: int = 5,
    max_consecutive_errors: int = 10,
    backoff_base: float = 0.5,
    backoff_max: float = 30.0,
    extra_body: dict | None = None,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    random_state: int | np.random.Generator | None = 0,
    show_progress: bool = True,
    fsync: bool = True,
) -> CollectionSummary:
    """Coroutine version of :func:`collect` (use ``await acollect(...)`` inside an event loop).

    Parameters
    ----------
    queries, models, base_url, store_dir
        As in :func:`collect`.
    api_key_env, rewriter, n_rewrites, n_decodes, temperature, top_p, max_tokens, rewrite_temperature, rewrite_format, rewrite_calls, concurrency, prices, scorer, timeout, max_retries, max_consecutive_errors, backoff_base, backoff_max, extra_body, max_response_bytes, random_state, show_progress, fsync
        Keyword options, as in :func:`collect`.

    Returns
    -------
    CollectionSummary
        Counts of planned, stored and failed records.
    """
    started = time.perf_counter()
    specs = parse_models(models)
    _check_sizes(n_rewrites, n_decodes, concurrency)
    _check_decoding(temperature, top_p, rewrite_temperature, timeout)
    _check_limits(
        max_retries, max_consecutive_errors, rewrite_format, rewrite_calls, max_response_bytes
    )
    base_url = check_base_url(base_url)
    read = read_queries_file if isinstance(queries, (str, Path)) else check_queries
    prepared = prepare_queries(read(queries), scorer, temperature, top_p, max_tokens)
    price_map = price_table(prices)
    rewriter_spec = _rewriter_spec(rewriter, n_rewrites, specs)
    _warn_unscored_and_unpriced(prepared, specs, rewriter_spec, price_map)
    api_key_env, raw_key, api_key = _api_key(base_url, api_key_env)

    limits = {  # the client's, also recorded in the settings
        "timeout": float(timeout),
        "max_retries": int(max_retries),
        "max_consecutive_errors": int(max_consecutive_errors),
        "max_response_bytes": int(max_response_bytes),
    }
    settings = {
        "base_url": public_url(base_url),
        "api_key_env": api_key_env,
        "models": [spec.label for spec in specs],
        "model_settings": {
            s.label: {"endpoint_model": s.endpoint_model, **s.settings} for s in specs
        },
        "rewriter": rewriter_spec.label if rewriter_spec else None,
        "n_rewrites": int(n_rewrites),
        "n_decodes": int(n_decodes),
        "temperature": float(temperature),
        "top_p": float(top_p),
        "max_tokens": max_tokens,
        "rewrite_temperature": float(rewrite_temperature),
        "rewrite_format": rewrite_format,
        "rewrite_calls": None if rewrite_calls is None else int(rewrite_calls),
        "concurrency": int(concurrency),
        **limits,
        "prices": {m: asdict(p) for m, p in price_map.items()},
        "scorer": scorer if isinstance(scorer, str) or scorer is None else "custom",
        "extra_body": extra_body,
        "random_state": random_state if isinstance(random_state, int) else None,
        "prompt_version": PROMPT_VERSION,
        "n_queries": len(prepared),
    }
    store = _new_store(store_dir, raw_key, api_key, base_url, fsync)
    with _recorded_run(store, store_dir, prepared, settings, started) as (summary, run_id):
        client = ChatClient(
            base_url,
            api_key=api_key,
            api_key_env=api_key_env,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            max_connections=concurrency,
            random_state=random_state,
            **limits,
        )
        async with client:
            models_by_label = {spec.label: spec for spec in specs}
            context = RunContext(
                store, client, models_by_label, settings, price_map, summary, run_id
            )
            await _run_phases(context, prepared, rewriter_spec, show_progress)
    log_summary(summary)
    return summary


def collect(*args: Any, **kwargs: Any) -> CollectionSummary:
    """Collect rewrite x decode observations of ``models`` on ``queries`` into ``store_dir``.

    Runs :func:`acollect` to completion (its signature is this function's).

    Parameters
    ----------
    queries : DataFrame or path
        ``query_id``, ``text`` and optional ``category``, ``answer``, ``choices``, ``passage``,
        ``scorer``, ``temperature``, ``top_p``, ``max_tokens`` (see :mod:`ecc_lib.collect.queries`);
        a path is read by extension (CSV, TSV, Parquet, JSON lines).
    models : str or sequence of str or ModelSpec
        Candidate models (a comma-separated string is split). A model may be a variant,
        ``NAME@KEY=VALUE[;KEY=VALUE]`` (e.g. ``"smollm2@temperature=0.2,smollm2@temperature=1.0"``):
        each variant is a separate model in the outcomes, its settings override the decoding
        settings (``temperature``, ``top_p``, ``max_tokens``) or are sent as request fields (any
        other key), and every record stores them (see :mod:`ecc_lib.collect.models`).
    base_url : str
        OpenAI-compatible endpoint including the API prefix, e.g. ``http://localhost:8000/v1``
        (the scheme is required).
    store_dir : str or Path
        Collection folder (created when missing; reused and completed when it exists).
    api_key_env : str or None
        Environment variable holding the API key, sent to ``base_url`` (a warning when that is
        plain http to another machine). When None, ``OPENAI_API_KEY`` is sent only to
        ``https://api.openai.com`` exactly, so that key never travels to a look-alike host
        (``api.evilopenai.com``) or over plain http; other endpoints get no key unless a variable
        is named. The key is never written to the store
        or to logs; surrounding whitespace (a trailing newline) is stripped.
    rewriter : str or ModelSpec, optional
        Model writing the rewrites (a variant's settings apply to its calls); the first candidate's
        endpoint model, without the variant's settings, when omitted.
    n_rewrites : int, default 2
        Rewrites per query (variants ``1..n_rewrites``; variant 0 is the original).
    n_decodes : int, default 3
        Answers per (query, variant, model).
    temperature, top_p, max_tokens
        Decoding settings of the answers (per-query columns override them).
    rewrite_temperature : float, default 0.7
    rewrite_format : {"auto", "json_schema", "json_object", "none", "single"}, default "auto"
        ``response_format`` of the rewriting calls. ``"auto"`` asks for JSON-schema structured
        output and steps down (JSON mode with the schema, then plain text) when the server
        answers 400/415/422. Whatever comes back, a tolerant parser also reads numbered and
        one-per-line lists; the summary counts the calls that needed it. ``"single"`` asks for
        one paraphrase per call after worked examples, for small models.
    rewrite_calls : int, optional
        Rewriting calls per query per run before its missing variants are given up (default 3,
        or 3 per missing variant with ``"single"``).
    concurrency : int, default 8
        Calls in flight at once.
    prices : mapping or path, optional
        Price table, USD per 1M input / output tokens (see :mod:`ecc_lib.collect.pricing`); used
        when the API reports no cost.
    scorer : str, callable or mapping, optional
        One scorer for every query, or a mapping from category to scorer; by default chosen per
        query (see :func:`ecc_lib.collect.scorers.choose_scorer`).
    timeout : float, default 60
        Deadline of one attempt, seconds.
    max_retries, backoff_base, backoff_max
        Retries of 429 / 5xx / timeouts and their exponential backoff with jitter.
    max_consecutive_errors : int, default 10
        Connection errors or timeouts in a row (over all calls) that stop the run; a refused
        connection before any call succeeded stops it at once.
    extra_body : dict, optional
        Extra fields for every request (e.g. ``{"seed": 0}``).
    max_response_bytes : int, default 4 MiB
        Largest decoded reply read; a longer one is recorded as a failed call, not stored.
    random_state : int, Generator or None, default 0
        Seed of the retry jitter.
    show_progress : bool, default True
        tqdm progress bars with done / remaining / failed counts and spend.
    fsync : bool, default True
        ``fsync`` each stored line (durability against power loss, not only crashes).

    Returns
    -------
    CollectionSummary

    Raises
    ------
    EndpointAuthError, EndpointNotFoundError
        401/403 or 404 (the store keeps everything collected before).
    EndpointUnreachableError
        Connection refused, or ``max_consecutive_errors`` connection errors / timeouts in a row.
    EndpointConfigError
        A base URL without ``http://`` / ``https://``, or an API key that cannot be a header value
        (raised before anything is written).
    StoreError
        The store is in use by another process, holds a different query under the same id, cannot
        be written (read-only, permission denied, disk full: what was written stays valid) or is a
        file.
    CollectionInterrupted
        SIGTERM (main thread only): the manifest says "interrupted"; rerun to resume.
    DataValidationError, ValueError
        Bad queries, price table or arguments.
    KeyboardInterrupt
        Ctrl-C: the calls in flight are dropped, the store stays consistent; rerun to resume.
    """
    _SIGNATURE.bind(*args, **kwargs)  # a wrong argument fails here, not inside the event loop
    return run_coroutine(lambda: acollect(*args, **kwargs))


_SIGNATURE = inspect.signature(acollect)
collect.__signature__ = _SIGNATURE  # type: ignore[attr-defined]  # help() and the docs show it


__all__ = [
    "collect",
]
