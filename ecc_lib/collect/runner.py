"""Collection runs: rewrites x decodes for every query and model, scored, costed, resumable.

:func:`collect` is the entry point (a notebook can call it directly; inside a running event loop it
runs in a helper thread); :func:`acollect` is its coroutine.

A run has two phases, each with a pool of ``concurrency`` asyncio workers and a progress bar:

1. **rewrites** -- for each query lacking some of variants ``1..n_rewrites`` in the store, the
   rewriting model is asked for the missing ones (up to :data:`REWRITE_ATTEMPTS` calls; a variant
   that equals the original or another variant, or that reveals the reference answer, is refused).
   Variant 0 is the original text.
2. **decodes** -- each candidate model answers each variant ``n_decodes`` times; each response is
   scored and costed and appended to the store as soon as it arrives. Original-query tasks come first,
   so a stopped run already holds single-shot data for every query.

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
import logging
import math
import os
import re
import signal
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ecc_lib.collect.client import (
    ChatClient,
    ChatResult,
    check_api_key,
    check_base_url,
    public_url,
    utc_now,
)
from ecc_lib.collect.errors import (
    CollectionInterrupted,
    EndpointAuthError,
    EndpointError,
    EndpointNotFoundError,
    EndpointUnreachableError,
    StoreError,
)
from ecc_lib.collect.models import ModelSpec, parse_model_spec, parse_models
from ecc_lib.collect.pricing import Price, call_cost, price_table
from ecc_lib.collect.prompts import (
    PROMPT_VERSION,
    RESPONSE_FORMATS,
    answer_messages,
    read_rewrites,
    rewrite_messages,
    rewrite_refusal,
    rewrite_response_format,
)
from ecc_lib.collect.queries import check_queries, read_queries_file
from ecc_lib.collect.scorers import Scorer, apply_scorer, choose_scorer, extract_final_answer
from ecc_lib.collect.store import CollectionStore, observation_type

logger = logging.getLogger(__name__)

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"


def _is_openai_host(base_url: str) -> bool:
    """True for OpenAI's own API host (the only one that gets OPENAI_API_KEY unasked)."""
    from urllib.parse import urlparse

    return (urlparse(base_url).hostname or "").endswith("openai.com")


REWRITE_ATTEMPTS = 3
"""Calls to the rewriting model per query before its missing variants are given up (this run)."""
REWRITE_TEMPERATURE = 0.7
FATAL_ERRORS: tuple[type[EndpointError], ...] = (
    EndpointAuthError,
    EndpointNotFoundError,
    EndpointUnreachableError,
)
"""Errors that stop the whole run (every later call would fail the same way)."""
UNSUPPORTED_FORMAT_STATUSES: frozenset[int] = frozenset({400, 415, 422})
"""Statuses of a rewriting call with ``response_format`` taken to mean "not supported"."""


@dataclass
class CollectionSummary:
    """What a collection run did.

    Attributes
    ----------
    store_dir : str
    n_planned : int
        ``queries x models x (1 + n_rewrites) x n_decodes``.
    n_done : int
        Planned records in the store at the end of the run.
    n_skipped : int
        Planned records already in the store when the run started.
    n_collected : int
        Records added by this run.
    n_failed : int
        Answer calls that failed for good in this run, empty replies included (rerun to try them
        again).
    n_empty_replies : int
        Answer calls whose reply was empty (``content`` null or blank), recorded as failures with
        their ``finish_reason``, never scored.
    n_missing_variants : int
        Rewrites still missing after this run (their decodes were not asked for).
    n_scoring_failures : int
        Records of this run stored with ``score = None``.
    n_unpriced : int
        Calls of this run with unknown cost (no reported cost, model not in the price table).
    n_rewrite_calls : int
        Rewriting calls answered by the endpoint in this run.
    n_rewrite_structured : int
        Of those, calls whose rewrites were read as complete JSON.
    n_rewrite_fallback : int
        Calls whose rewrites were read by the tolerant parser (a numbered or one-per-line list, or
        the complete strings of a JSON answer cut short).
    n_rewrite_unusable : int
        Calls that gave no accepted rewrite (empty reply, nothing readable, every candidate
        refused) or failed for good; ``rewrite_problems`` counts the reasons.
    rewrite_problems : dict
        Reason -> number of rewriting calls.
    rewrite_format : str or None
        The ``response_format`` the run ended up using for rewrites.
    spend_usd : float
        Known cost of this run's calls (answers and rewrites).
    elapsed_s : float
    """

    store_dir: str
    n_queries: int = 0
    n_models: int = 0
    n_variants: int = 0
    n_decodes: int = 0
    n_planned: int = 0
    n_done: int = 0
    n_skipped: int = 0
    n_collected: int = 0
    n_failed: int = 0
    n_empty_replies: int = 0
    n_missing_variants: int = 0
    n_scoring_failures: int = 0
    n_unpriced: int = 0
    n_rewrite_calls: int = 0
    n_rewrite_structured: int = 0
    n_rewrite_fallback: int = 0
    n_rewrite_unusable: int = 0
    rewrite_problems: dict = field(default_factory=dict)
    rewrite_format: str | None = None
    spend_usd: float = 0.0
    elapsed_s: float = 0.0

    @property
    def complete(self) -> bool:
        """Every planned record is in the store."""
        return self.n_done == self.n_planned

    def as_dict(self) -> dict:
        """The summary as a plain dict (with ``complete``), for JSON.

        Returns
        -------
        dict
        """
        return {**asdict(self), "complete": self.complete}

    def rewrite_report(self) -> str:
        """One sentence on the rewriting calls: structured, fallback, unusable, and why.

        Returns
        -------
        str
            ``"no rewrite calls"`` when there were none.
        """
        if not self.n_rewrite_calls and not self.n_rewrite_unusable:
            return "no rewrite calls"
        text = (
            f"{self.n_rewrite_calls} rewrite call(s): {self.n_rewrite_structured} read as JSON, "
            f"{self.n_rewrite_fallback} needed the list fallback, {self.n_rewrite_unusable} gave "
            "no usable rewrite"
        )
        if self.rewrite_problems:
            reasons = "; ".join(
                f"{reason}: {count}"
                for reason, count in sorted(self.rewrite_problems.items(), key=lambda kv: -kv[1])
            )
            text += f" ({reasons})"
        if self.rewrite_format:
            text += f"; response_format {self.rewrite_format}"
        return text


@dataclass
class _Query:
    query_id: str
    text: str
    category: str | None
    answer: Any
    choices: list[str] | None
    passage: str | None
    scorer_name: str
    scorer: Scorer = field(repr=False)
    temperature: float
    top_p: float
    max_tokens: int | None


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float) and math.isnan(value)


def _plain(value: Any) -> Any:
    """A JSON-friendly value (numpy scalars and arrays to Python, NA to None)."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return None if _missing(value) else value


def _prepare_queries(
    queries: pd.DataFrame,
    scorer: Any,
    temperature: float,
    top_p: float,
    max_tokens: int | None,
) -> list[_Query]:
    prepared = []
    for row in queries.to_dict("records"):
        choices = row.get("choices") if isinstance(row.get("choices"), list) else None
        category = None if _missing(row.get("category")) else str(row["category"])
        name, function = choose_scorer(
            category,
            has_choices=bool(choices),
            override=scorer,
            query_scorer=None if _missing(row.get("scorer")) else str(row["scorer"]),
        )

        def setting(column: str, default: Any, cast: Callable, row: dict = row) -> Any:
            value = row.get(column)
            return default if _missing(value) else cast(value)

        passage = row.get("passage")
        prepared.append(
            _Query(
                query_id=str(row["query_id"]),
                text=str(row["text"]),
                category=category,
                answer=_plain(row.get("answer")),
                choices=choices,
                passage=None if _missing(passage) or not str(passage).strip() else str(passage),
                scorer_name=name,
                scorer=function,
                temperature=setting("temperature", temperature, float),
                top_p=setting("top_p", top_p, float),
                max_tokens=setting("max_tokens", max_tokens, lambda v: int(float(v))),
            )
        )
    return prepared


def _normalised(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _reveals_answer(candidate: str, query: _Query) -> bool:
    """A rewrite that states the reference answer the original does not state is a hint."""
    if query.answer is None or query.scorer_name == "multiple_choice":
        return False
    answers = query.answer if isinstance(query.answer, list) else [query.answer]
    for answer in answers:
        text = str(answer).strip()
        if len(text) < 2 and not text.isdigit():
            continue
        pattern = rf"(?<!\w){re.escape(text)}(?!\w)"
        if re.search(pattern, candidate, re.I) and not re.search(pattern, query.text, re.I):
            return True
    return False


async def _run_pool(jobs: Sequence, handle: Callable[[Any], Awaitable[None]], concurrency: int):
    """Run ``handle`` on every job with ``concurrency`` workers; the first error cancels the rest."""
    if not jobs:
        return
    iterator = iter(jobs)

    async def worker() -> None:
        for job in iterator:
            await handle(job)

    tasks = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(jobs)))]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class _Progress:
    """A tqdm bar with done / remaining / failed counts and spend in the postfix."""

    def __init__(self, desc: str, total: int, done: int, show: bool) -> None:
        try:  # widget bars need ipywidgets; tqdm.auto fails in a kernel without it
            import ipywidgets  # noqa: F401
            from tqdm.auto import tqdm
        except ImportError:
            from tqdm import tqdm

        self.total, self.done, self.failed, self.spend = total, done, 0, 0.0
        self.bar = tqdm(
            total=total, initial=done, desc=desc, unit="call", disable=not show, dynamic_ncols=True
        )
        self._postfix()

    def _postfix(self) -> None:
        self.bar.set_postfix(
            done=self.done,
            remaining=self.total - self.done - self.failed,
            failed=self.failed,
            spend=f"${self.spend:.4f}",
            refresh=False,
        )

    def step(self, ok: bool, spend: float) -> None:
        if ok:
            self.done += 1
        else:
            self.failed += 1
        self.spend = spend
        self._postfix()
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


class _Run:
    """State of one collection run (kept off the public API)."""

    def __init__(
        self,
        store: CollectionStore,
        client: ChatClient,
        queries: list[_Query],
        models: list[ModelSpec],
        rewriter: ModelSpec | None,
        settings: dict,
        prices: Mapping[str, Price],
        summary: CollectionSummary,
        run_id: str,
    ) -> None:
        self.store = store
        self.client = client
        self.queries = queries
        self.models = {spec.label: spec for spec in models}
        self.rewriter = rewriter
        self.settings = settings
        self.prices = prices
        self.summary = summary
        self.run_id = run_id
        self.first_failure_logged = False
        # response_format of the rewriting calls; "auto" steps down on "not supported"
        wanted = settings["rewrite_format"]
        self.formats = list(RESPONSE_FORMATS) if wanted == "auto" else [wanted]
        self.confirmed: set[str] = set()  # formats that worked once in this run
        self.problems: Counter = Counter()

    def _cost(self, spec: ModelSpec, result: ChatResult) -> tuple[float | None, str | None]:
        name = spec.label if spec.label in self.prices else spec.endpoint_model
        cost, source = call_cost(
            name, result.prompt_tokens, result.completion_tokens, result.reported_cost, self.prices
        )
        if cost is None:
            self.summary.n_unpriced += 1
        else:
            self.summary.spend_usd += cost
        return cost, source

    def _failure(self, kind: str, error: EndpointError | str, **key: Any) -> None:
        entry = {"kind": kind, **key}
        if isinstance(error, EndpointError):
            entry.update(error=str(error), status=error.status, attempts=error.attempts)
        else:
            entry.update(error=error, status=200, attempts=1)
        self.store.add_failure({**entry, "at": utc_now(), "run_id": self.run_id})
        if not self.first_failure_logged:
            logger.warning("%s call failed (rerun to retry): %s", kind, entry["error"])
            self.first_failure_logged = True

    def _problem(self, reason: str) -> None:
        self.problems[reason] += 1
        self.summary.n_rewrite_unusable += 1
        self.summary.rewrite_problems = dict(self.problems)

    # -- rewrites ----------------------------------------------------------------------------

    async def _rewrite_call(self, messages: list[dict], max_tokens: int) -> ChatResult:
        """One rewriting call with the best ``response_format`` the server accepts.

        Until a format has worked once, a call asking for it is sent without retries, so that a
        server that refuses the field (400/415/422, or any status whose message names
        ``response_format``: llama-cpp-python answers 500) costs one call, not a round of retries;
        ``"auto"`` then steps down to the next format.
        """
        spec = self.rewriter
        assert spec is not None
        sampling = spec.sampling
        probed: set[str] = set()
        while True:
            kind = self.formats[0]
            extra = {**(self.settings["extra_body"] or {}), **spec.extra_body}
            response_format = rewrite_response_format(kind)
            if response_format is not None:
                extra["response_format"] = response_format
            probing = (
                response_format is not None and kind not in self.confirmed and kind not in probed
            )
            try:
                result = await self.client.chat(
                    spec.endpoint_model,
                    messages,
                    temperature=sampling.get("temperature", self.settings["rewrite_temperature"]),
                    top_p=sampling.get("top_p", 1.0),
                    max_tokens=sampling.get("max_tokens", max_tokens),
                    extra_body=extra or None,
                    max_retries=0 if probing else None,
                )
            except FATAL_ERRORS:
                raise
            except EndpointError as error:
                refused = response_format is not None and (
                    error.status in UNSUPPORTED_FORMAT_STATUSES or "response_format" in str(error)
                )
                if refused and self.settings["rewrite_format"] == "auto":
                    if kind in self.formats and len(self.formats) > 1:  # "none" stays
                        self.formats.remove(kind)
                        logger.info(
                            "%s: response_format %s refused (%s); using %s",
                            self.client.public_url,
                            kind,
                            error.status,
                            self.formats[0],
                        )
                    if self.formats[0] != kind:
                        continue
                if probing and not refused:  # an ordinary failure: now with the retries
                    probed.add(kind)
                    continue
                raise
            self.confirmed.add(kind)
            self.summary.rewrite_format = kind
            return result

    async def rewrite(self, query: _Query, progress: _Progress) -> None:
        n_rewrites = self.settings["n_rewrites"]
        assert self.rewriter is not None
        rewriter = self.rewriter.label
        key = query.query_id
        variants = [
            self.store.rewrites[(key, v)]["text"]
            for v in range(n_rewrites + 1)
            if (key, v) in self.store.rewrites
        ]
        missing = [v for v in range(1, n_rewrites + 1) if (key, v) not in self.store.rewrites]
        seen = {_normalised(text) for text in variants} | {_normalised(query.text)}
        ok = True
        for _attempt in range(REWRITE_ATTEMPTS):
            if not missing:
                break
            messages = rewrite_messages(
                query.text,
                len(missing),
                choices=query.choices,
                passage=query.passage,
                avoid=[v for v in variants[1:]] or None,
            )
            try:
                result = await self._rewrite_call(
                    messages, max(1024, 256 + len(missing) * (len(query.text) // 2))
                )
            except FATAL_ERRORS:
                raise
            except EndpointError as error:
                self._failure("rewrite", error, query_id=key, model=rewriter)
                self._problem("call failed")
                ok = False
                break
            self.summary.n_rewrite_calls += 1
            cost, cost_source = self._cost(self.rewriter, result)
            parsed = read_rewrites(result.content, result.finish_reason, question=query.text)
            accepted: list[str] = []
            refused = Counter()
            for candidate in parsed.rewrites:
                normal = _normalised(candidate)
                if not normal or normal in seen:
                    refused["same as the question or another variant"] += 1
                    continue
                if _reveals_answer(candidate, query):
                    refused["states the reference answer"] += 1
                    continue
                reason = rewrite_refusal(candidate, query.text)
                if reason is not None:
                    refused[reason] += 1
                    continue
                seen.add(normal)
                accepted.append(candidate)
            problem = parsed.problem
            if problem is None and not accepted:
                problem = "every candidate refused (" + ", ".join(sorted(refused)) + ")"
            if parsed.method == "json":
                self.summary.n_rewrite_structured += 1
            elif parsed.fallback:
                self.summary.n_rewrite_fallback += 1
            if problem is not None:
                self._problem(problem)
            produced = list(zip(missing, accepted, strict=False))
            call_id = f"{self.run_id}/{key}/{_attempt}"
            self.store.add_rewrite_call(
                {
                    "call_id": call_id,
                    "query_id": key,
                    "model": rewriter,
                    "endpoint_model": self.rewriter.endpoint_model,
                    "model_settings": self.rewriter.settings,
                    "variant_ids": [v for v, _ in produced],
                    "n_parsed": len(parsed.rewrites),
                    "n_accepted": len(accepted),
                    "parse_method": parsed.method,
                    "problem": problem,
                    "refused": dict(refused),
                    "response_format": self.summary.rewrite_format,
                    "content": result.content,
                    "finish_reason": result.finish_reason,
                    "response": result.raw,
                    "prompt_tokens": result.prompt_tokens,
                    "completion_tokens": result.completion_tokens,
                    "cost": cost,
                    "cost_source": cost_source,
                    "latency_s": result.latency_s,
                    "attempts": result.attempts,
                    "started_at": result.started_at,
                    "finished_at": result.finished_at,
                    "temperature": self.rewriter.sampling.get(
                        "temperature", self.settings["rewrite_temperature"]
                    ),
                    "prompt_version": PROMPT_VERSION,
                    "run_id": self.run_id,
                }
            )
            for variant_id, text in produced:
                self.store.add_rewrite(
                    {
                        "query_id": key,
                        "variant_id": variant_id,
                        "text": text,
                        "source": "rewrite",
                        "rewriter": rewriter,
                        "call_id": call_id,
                        "prompt_version": PROMPT_VERSION,
                        "created_at": result.finished_at,
                    }
                )
                variants.append(text)
            missing = missing[len(produced) :]
        if missing:
            logger.debug("query %s: %d rewrite(s) still missing", key, len(missing))
        progress.step(ok and not missing, self.summary.spend_usd)

    # -- decodes -----------------------------------------------------------------------------

    async def decode(self, task: tuple[_Query, int, int, str], progress: _Progress) -> None:
        query, variant_id, decode_id, model = task
        spec = self.models[model]
        text = self.store.rewrites[(query.query_id, variant_id)]["text"]
        messages = answer_messages(
            text, choices=query.choices, passage=query.passage, scorer_name=query.scorer_name
        )
        key = {
            "query_id": query.query_id,
            "model": model,
            "variant_id": variant_id,
            "decode_id": decode_id,
        }
        sampling = {
            "temperature": query.temperature,
            "top_p": query.top_p,
            "max_tokens": query.max_tokens,
            **spec.sampling,  # a variant's own settings define it: they win
        }
        extra = {**(self.settings["extra_body"] or {}), **spec.extra_body}
        try:
            result = await self.client.chat(
                spec.endpoint_model,
                messages,
                temperature=sampling["temperature"],
                top_p=sampling["top_p"],
                max_tokens=sampling["max_tokens"],
                extra_body=extra or None,
            )
        except FATAL_ERRORS:
            raise
        except EndpointError as error:
            self._failure("decode", error, **key)
            self.summary.n_failed += 1
            progress.step(False, self.summary.spend_usd)
            return
        cost, cost_source = self._cost(spec, result)
        if result.content is None or not result.content.strip():
            shown = "null" if result.content is None else repr(result.content)
            reason = (
                f"empty reply (content {shown}, finish_reason {result.finish_reason!r}) from "
                f"{self.client.public_url} for model '{spec.endpoint_model}'"
            )
            if result.finish_reason == "length":
                reason += f"; max_tokens={sampling['max_tokens']} may be too small"
            self._failure(
                "decode",
                reason,
                **key,
                finish_reason=result.finish_reason,
                completion_tokens=result.completion_tokens,
                cost=cost,
                response=result.raw,
            )
            self.summary.n_failed += 1
            self.summary.n_empty_replies += 1
            progress.step(False, self.summary.spend_usd)
            return
        score, scoring_error = apply_scorer(
            query.scorer, result.content, query.answer, query.choices
        )
        record = {
            **key,
            "observation_type": observation_type(variant_id, decode_id),
            "score": score,
            "scoring_error": scoring_error,
            "scorer": query.scorer_name,
            "extracted_answer": extract_final_answer(result.content),
            "content": result.content,
            "finish_reason": result.finish_reason,
            "response": result.raw,
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "cost": cost,
            "cost_source": cost_source,
            "latency_s": result.latency_s,
            "elapsed_s": result.elapsed_s,
            "attempts": result.attempts,
            "started_at": result.started_at,
            "finished_at": result.finished_at,
            "endpoint_model": spec.endpoint_model,
            "model_settings": spec.settings,
            "temperature": sampling["temperature"],
            "top_p": sampling["top_p"],
            "max_tokens": sampling["max_tokens"],
            "extra_body": extra or None,
            "prompt_version": PROMPT_VERSION,
            "base_url": self.settings["base_url"],
            "run_id": self.run_id,
        }
        if self.store.add_record(record):
            self.summary.n_collected += 1
            if score is None:
                self.summary.n_scoring_failures += 1
        progress.step(True, self.summary.spend_usd)


SETTINGS_THAT_SHAPE_RECORDS: tuple[str, ...] = (
    "temperature",
    "top_p",
    "max_tokens",
    "rewriter",
    "rewrite_temperature",
    "prompt_version",
    "extra_body",
)


def _warn_on_changed_settings(store: CollectionStore, settings: dict) -> None:
    """Warn when this run decodes differently from the store's previous run (records would mix)."""
    runs = store.manifest().get("runs", [])
    if not runs:
        return
    previous = runs[-1].get("settings", {})
    changed = {
        name: (previous.get(name), settings.get(name))
        for name in SETTINGS_THAT_SHAPE_RECORDS
        if name in previous and previous.get(name) != settings.get(name)
    }
    if changed:
        logger.warning(
            "%s was collected with other settings (previous, now): %s; new records will mix "
            "them (each record stores its own settings)",
            store.directory,
            changed,
        )


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
    concurrency: int = 8,
    prices: Mapping | str | Path | None = None,
    scorer: str | Scorer | Mapping[str, str | Scorer] | None = None,
    timeout: float = 60.0,
    max_retries: int = 5,
    max_consecutive_errors: int = 10,
    backoff_base: float = 0.5,
    backoff_max: float = 30.0,
    extra_body: dict | None = None,
    random_state: int | np.random.Generator | None = 0,
    show_progress: bool = True,
    fsync: bool = True,
) -> CollectionSummary:
    """Coroutine version of :func:`collect` (use ``await acollect(...)`` inside an event loop).

    Parameters
    ----------
    queries, models, base_url, store_dir
        As in :func:`collect`.
    api_key_env, rewriter, n_rewrites, n_decodes, temperature, top_p, max_tokens, rewrite_temperature, concurrency, prices, scorer, timeout, max_retries, backoff_base, backoff_max, extra_body, random_state, show_progress, fsync
        Keyword options, as in :func:`collect`.

    Returns
    -------
    CollectionSummary
        Counts of planned, stored and failed records.
    """
    started = time.perf_counter()
    specs = parse_models(models)
    labels = [spec.label for spec in specs]
    if n_rewrites < 0:
        raise ValueError(f"n_rewrites must be >= 0, got {n_rewrites}")
    if n_decodes < 1:
        raise ValueError(f"n_decodes must be >= 1, got {n_decodes}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    if not (temperature >= 0 and 0 < top_p <= 1):
        raise ValueError(f"need temperature >= 0 and 0 < top_p <= 1, got {temperature}, {top_p}")
    if not timeout > 0 or not math.isfinite(timeout):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout}")
    if max_retries < 0 or max_consecutive_errors < 1:
        raise ValueError(
            f"need max_retries >= 0 and max_consecutive_errors >= 1, got {max_retries}, "
            f"{max_consecutive_errors}"
        )
    if rewrite_format != "auto" and rewrite_format not in RESPONSE_FORMATS:
        raise ValueError(
            f"rewrite_format must be 'auto' or one of {RESPONSE_FORMATS}, got {rewrite_format!r}"
        )
    base_url = check_base_url(base_url)
    if isinstance(queries, (str, Path)):
        table = read_queries_file(queries)
    else:
        table = check_queries(queries)
    prepared = _prepare_queries(table, scorer, temperature, top_p, max_tokens)
    price_map = price_table(prices)
    rewriter_spec: ModelSpec | None = None
    if n_rewrites > 0:
        if rewriter is None:
            rewriter_spec = ModelSpec(specs[0].endpoint_model, specs[0].endpoint_model)
            logger.info("no rewriter given: %s writes the rewrites", rewriter_spec.label)
        elif isinstance(rewriter, ModelSpec):
            rewriter_spec = rewriter
        else:
            rewriter_spec = parse_model_spec(rewriter)
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

    raw_key = None
    if api_key_env is None and _is_openai_host(base_url):
        api_key_env = DEFAULT_API_KEY_ENV
    if api_key_env:
        raw_key = os.environ.get(api_key_env) or None
        if raw_key is None:
            logger.warning("environment variable %s is not set: sending no API key", api_key_env)
    api_key = check_api_key(raw_key, api_key_env)  # stripped; refused before anything is written
    if raw_key is not None and api_key != raw_key:
        logger.info("stripped surrounding whitespace from the API key in %s", api_key_env)

    settings = {
        "base_url": public_url(base_url),
        "api_key_env": api_key_env,
        "models": labels,
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
        "concurrency": int(concurrency),
        "timeout": float(timeout),
        "max_retries": int(max_retries),
        "max_consecutive_errors": int(max_consecutive_errors),
        "prices": {m: asdict(p) for m, p in price_map.items()},
        "scorer": scorer if isinstance(scorer, str) or scorer is None else "custom",
        "extra_body": extra_body,
        "random_state": random_state if isinstance(random_state, int) else None,
        "prompt_version": PROMPT_VERSION,
        "n_queries": len(prepared),
    }
    summary = CollectionSummary(
        store_dir=str(store_dir),
        n_queries=len(prepared),
        n_models=len(specs),
        n_variants=n_rewrites + 1,
        n_decodes=n_decodes,
        n_planned=len(prepared) * len(specs) * (n_rewrites + 1) * n_decodes,
    )
    run_id = f"{utc_now()}-{os.getpid()}"
    store = CollectionStore(
        store_dir, secrets=[s for s in (raw_key, api_key) if s], fsync=fsync, read=False
    )
    from ecc_lib import __version__

    manifest_run = {
        "run_id": run_id,
        "started_at": utc_now(),
        "status": "started",
        "ecc_lib_version": __version__,
        "settings": settings,
    }
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
        _warn_on_changed_settings(store, settings)
        store.close_stale_runs(run_id)
        store.update_manifest(manifest_run)
        store.add_queries(
            {
                "query_id": q.query_id,
                "text": q.text,
                "category": q.category,
                "answer": q.answer,
                "choices": q.choices,
                "passage": q.passage,
                "scorer": q.scorer_name,
            }
            for q in prepared
        )
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

        summary.n_skipped = sum(key in store.records for key in planned)
        client = ChatClient(
            base_url,
            api_key=api_key,
            api_key_env=api_key_env,
            timeout=timeout,
            max_retries=max_retries,
            max_consecutive_errors=max_consecutive_errors,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            max_connections=concurrency,
            random_state=random_state,
        )
        async with client:
            run = _Run(
                store, client, prepared, specs, rewriter_spec, settings, price_map, summary, run_id
            )
            to_rewrite = [
                q
                for q in prepared
                if any((q.query_id, v) not in store.rewrites for v in range(1, n_rewrites + 1))
            ]
            if to_rewrite:
                progress = _Progress(
                    "rewrites", len(prepared), len(prepared) - len(to_rewrite), show_progress
                )
                try:
                    await _run_pool(to_rewrite, lambda q: run.rewrite(q, progress), concurrency)
                finally:
                    progress.close()
            tasks = [
                (q, v, d, m)
                for v in range(n_rewrites + 1)
                for d in range(n_decodes)
                for q in prepared
                for m in labels
                if (q.query_id, v) in store.rewrites and (q.query_id, m, v, d) not in store.records
            ]
            summary.n_missing_variants = sum(
                (q.query_id, v) not in store.rewrites
                for q in prepared
                for v in range(1, n_rewrites + 1)
            )
            blocked = summary.n_planned - summary.n_skipped - len(tasks)
            progress = _Progress(
                "answers", summary.n_planned - blocked, summary.n_skipped, show_progress
            )
            try:
                await _run_pool(tasks, lambda t: run.decode(t, progress), concurrency)
            finally:
                progress.close()
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
    if summary.n_unpriced:
        logger.warning(
            "%d call(s) have no cost: the API reported none and no price was given",
            summary.n_unpriced,
        )
    if summary.n_failed or summary.n_missing_variants:
        logger.warning(
            "%d answer call(s) failed (%d empty repl(ies)) and %d rewrite(s) are missing; run "
            "again to retry them",
            summary.n_failed,
            summary.n_empty_replies,
            summary.n_missing_variants,
        )
    if summary.n_rewrite_fallback or summary.n_rewrite_unusable:
        logger.info("%s", summary.rewrite_report())
    return summary


def _run_in_main_thread(make: Callable[[], Awaitable[Any]]) -> Any:
    """``asyncio.run`` with SIGTERM turned into a cancellation of the run (the manifest then says
    "interrupted") and then into :class:`CollectionInterrupted`; the previous handler is restored.
    """
    received: list[int] = []
    holder: dict[str, asyncio.Task] = {}

    async def main() -> Any:
        task = asyncio.current_task()
        assert task is not None
        holder["task"] = task
        return await make()

    with asyncio.Runner() as runner:
        loop = runner.get_loop()

        def on_signal(signum: int, frame: Any) -> None:
            received.append(signum)
            if "task" in holder:
                loop.call_soon_threadsafe(holder["task"].cancel)

        previous = signal.signal(signal.SIGTERM, on_signal)
        try:
            return runner.run(main())
        except asyncio.CancelledError:
            if not received:
                raise
            raise CollectionInterrupted(
                "collection interrupted by SIGTERM; every record written is kept and the manifest "
                "says 'interrupted': run the same command again to resume",
                signal_number=received[0],
            ) from None
        finally:
            signal.signal(signal.SIGTERM, previous)


def _run_coroutine(make: Callable[[], Awaitable[Any]]) -> Any:
    """Run a coroutine to completion from synchronous code, also inside a running event loop
    (Jupyter), where it runs in a helper thread; Ctrl-C cancels it cleanly in both cases, and so
    does SIGTERM when called from the main thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        if threading.current_thread() is threading.main_thread():
            return _run_in_main_thread(make)
        return asyncio.run(make())
    state: dict[str, Any] = {}
    ready = threading.Event()

    def target() -> None:
        loop = asyncio.new_event_loop()
        try:
            task = loop.create_task(make())
            state["loop"], state["task"] = loop, task
            ready.set()
            state["value"] = loop.run_until_complete(task)
        except BaseException as error:  # handed to the caller's thread
            state["error"] = error
        finally:
            ready.set()
            loop.close()

    thread = threading.Thread(target=target, name="ecc-lib-collect", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.1)
    except KeyboardInterrupt:
        ready.wait()
        if "task" in state:
            state["loop"].call_soon_threadsafe(state["task"].cancel)
        thread.join()
        raise
    if "error" in state:
        raise state["error"]
    return state["value"]


def collect(
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
    concurrency: int = 8,
    prices: Mapping | str | Path | None = None,
    scorer: str | Scorer | Mapping[str, str | Scorer] | None = None,
    timeout: float = 60.0,
    max_retries: int = 5,
    max_consecutive_errors: int = 10,
    backoff_base: float = 0.5,
    backoff_max: float = 30.0,
    extra_body: dict | None = None,
    random_state: int | np.random.Generator | None = 0,
    show_progress: bool = True,
    fsync: bool = True,
) -> CollectionSummary:
    """Collect rewrite x decode observations of ``models`` on ``queries`` into ``store_dir``.

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
        Environment variable holding the API key. When None, ``OPENAI_API_KEY`` is used for
        OpenAI's own host only, so that key never travels to a third-party endpoint; other
        endpoints get no key unless a variable is named. The key is never written to the store
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
    rewrite_format : {"auto", "json_schema", "json_object", "none"}, default "auto"
        ``response_format`` of the rewriting calls. ``"auto"`` asks for JSON-schema structured
        output and steps down (JSON mode with the schema, then plain text) when the server
        answers 400/415/422. Whatever comes back, a tolerant parser also reads numbered and
        one-per-line lists; the summary counts the calls that needed it.
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
    arguments = dict(locals())
    return _run_coroutine(lambda: acollect(**arguments))
