"""The rewrite phase of a collection run: the rewriting model is asked for each query's missing
variants ``1..n_rewrites``; variant 0 is the original text.

Rewrites are asked for as structured JSON (``response_format``) where the server accepts it:
``"auto"`` steps down (JSON schema, JSON mode, plain text) when the server refuses the field. A
tolerant parser also reads numbered or one-per-line lists (:func:`ecc_lib.collect.prompts.read_rewrites`).
A candidate that equals the original or another variant, that states the reference answer the
original does not (for a multiple-choice question, that names one of its options), or that does
not keep the question's content (:func:`ecc_lib.collect.prompts.rewrite_refusal`) is refused; a query gets up to
:data:`REWRITE_ATTEMPTS` calls per run (``rewrite_calls``). With ``rewrite_format="single"`` each
call asks for one paraphrase after worked examples
(:func:`ecc_lib.collect.prompts.single_rewrite_messages`), which small models manage far more often
than a list.
"""

from __future__ import annotations

import logging
import re
from collections import Counter

from ecc_lib.collect.client import ChatResult
from ecc_lib.collect.context import FATAL_ERRORS, PreparedQuery, RunContext, call_fields
from ecc_lib.collect.errors import EndpointError
from ecc_lib.collect.models import ModelSpec
from ecc_lib.collect.prompts import (
    PROMPT_VERSION,
    RESPONSE_FORMATS,
    read_rewrites,
    read_single_rewrite,
    rewrite_messages,
    rewrite_refusal,
    rewrite_response_format,
    single_rewrite_messages,
)
from ecc_lib.collect.scorers import LETTERS, reference_letter
from ecc_lib.collect.workers import Progress

logger = logging.getLogger(__name__)

REWRITE_ATTEMPTS = 3
"""Calls to the rewriting model per query before its missing variants are given up (this run),
per missing variant with ``rewrite_format="single"``; ``rewrite_calls`` overrides it."""
REWRITE_TEMPERATURE = 0.7
"""Default temperature of the rewriting calls."""
UNSUPPORTED_FORMAT_STATUSES: frozenset[int] = frozenset({400, 415, 422})
"""Statuses of a rewriting call with ``response_format`` taken to mean "not supported"."""


def _normalised(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _mentions(phrase: str, text: str) -> bool:
    pattern = rf"(?<!\w){re.escape(phrase)}(?!\w)"
    return re.search(pattern, text, re.I) is not None


def reveals_answer(candidate: str, query: PreparedQuery) -> str | None:
    """Why a rewrite gives a hint the original does not, or ``None``.

    A rewrite must not state the reference answer (for a multiple-choice question: the text of the
    right option), nor name any other option: "where would he issue such a decree, in Washington?"
    no longer asks the same question.

    Parameters
    ----------
    candidate : str
        A rewrite.
    query : PreparedQuery
        The original question with its reference answer and options.

    Returns
    -------
    str or None
        The reason (``"states the reference answer"``, ``"names an option"``), or None.
    """
    if query.answer is None:
        return None
    if query.scorer_name == "multiple_choice":
        options = [str(option).strip() for option in query.choices or []]
        letter = reference_letter(query.answer, options or None)
        index = LETTERS.find(letter) if isinstance(letter, str) else -1
        right = options[index] if 0 <= index < len(options) else None
        for option in options:
            if option and _mentions(option, candidate) and not _mentions(option, query.text):
                return "states the reference answer" if option == right else "names an option"
        return None
    answers = query.answer if isinstance(query.answer, list) else [query.answer]
    for answer in answers:
        text = str(answer).strip()
        if len(text) < 2 and not text.isdigit():
            continue
        if _mentions(text, candidate) and not _mentions(text, query.text):
            return "states the reference answer"
    return None


def accept_rewrites(
    candidates: list[str], query: PreparedQuery, seen: set[str]
) -> tuple[list, Counter]:
    """The candidates that are new (not in ``seen``, which grows), give no hint and keep the
    question's content, and the count of the refused ones by reason.

    Parameters
    ----------
    candidates : list of str
        Rewrites proposed by the model.
    query : PreparedQuery
        The original question.
    seen : set of str
        Normalised texts already taken (the question and earlier variants); grows.

    Returns
    -------
    accepted : list of str
    refused : Counter
        Refused candidates by reason.
    """
    accepted: list[str] = []
    refused: Counter = Counter()
    for candidate in candidates:
        normal = _normalised(candidate)
        same = "same as the question or another variant" if not normal or normal in seen else None
        reason = same or reveals_answer(candidate, query) or rewrite_refusal(candidate, query.text)
        if reason is not None:
            refused[reason] += 1
            continue
        seen.add(normal)
        accepted.append(candidate)
    return accepted, refused


class Rewriter:
    """Writes the missing rewrites of a run's queries with one rewriting model.

    Parameters
    ----------
    context : RunContext
        The run's shared state (store, client, settings, summary).
    spec : ModelSpec
        The rewriting model (a variant's settings apply to its calls).
    """

    def __init__(self, context: RunContext, spec: ModelSpec) -> None:
        self.context = context
        self.spec = spec
        self.temperature = spec.sampling.get("temperature", context.settings["rewrite_temperature"])
        # response_format of the rewriting calls; "auto" steps down on "not supported"
        wanted = context.settings["rewrite_format"]
        self.formats = list(RESPONSE_FORMATS) if wanted == "auto" else [wanted]
        self.confirmed: set[str] = set()  # formats that worked once in this run
        self.problems: Counter = Counter()

    def _problem(self, reason: str) -> None:
        self.problems[reason] += 1
        self.context.summary.n_rewrite_unusable += 1
        self.context.summary.rewrite_problems = dict(self.problems)

    async def _call(self, messages: list[dict], max_tokens: int) -> ChatResult:
        """One rewriting call with the best ``response_format`` the server accepts.

        Until a format has worked once, a call asking for it is sent without retries, so that a
        server that refuses the field (400/415/422, or any status whose message names
        ``response_format``: llama-cpp-python answers 500) costs one call, not a round of retries;
        ``"auto"`` then steps down to the next format.
        """
        spec, settings = self.spec, self.context.settings
        sampling = spec.sampling
        probed: set[str] = set()
        while True:
            kind = self.formats[0]
            extra = {**(settings["extra_body"] or {}), **spec.extra_body}
            response_format = None if kind == "single" else rewrite_response_format(kind)
            if response_format is not None:
                extra["response_format"] = response_format
            probing = response_format is not None and kind not in self.confirmed | probed
            try:
                result = await self.context.client.chat(
                    spec.endpoint_model,
                    messages,
                    temperature=self.temperature,
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
                if refused and settings["rewrite_format"] == "auto":
                    if kind in self.formats and len(self.formats) > 1:  # "none" stays
                        self.formats.remove(kind)
                        logger.info(
                            "%s: response_format %s refused (%s); using %s",
                            self.context.client.public_url,
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
            self.context.summary.rewrite_format = kind
            return result

    async def rewrite(self, query: PreparedQuery, progress: Progress) -> None:
        """Ask for the query's missing variants (up to :data:`REWRITE_ATTEMPTS` calls) and store the
        accepted ones with their call.

        Parameters
        ----------
        query : PreparedQuery
            The query.
        progress : Progress
            The phase's bar (one step per query).
        """
        n_rewrites = self.context.settings["n_rewrites"]
        store, summary = self.context.store, self.context.summary
        rewriter = self.spec.label
        key = query.query_id
        variants = [
            store.rewrites[(key, v)]["text"]
            for v in range(n_rewrites + 1)
            if (key, v) in store.rewrites
        ]
        missing = [v for v in range(1, n_rewrites + 1) if (key, v) not in store.rewrites]
        seen = {_normalised(text) for text in variants} | {_normalised(query.text)}
        ok = True
        single = self.formats == ["single"]
        n_calls = self.context.settings.get("rewrite_calls") or REWRITE_ATTEMPTS * (
            len(missing) if single else 1
        )
        for _attempt in range(n_calls):
            if not missing:
                break
            if single:
                messages = single_rewrite_messages(query.text, passage=query.passage)
                budget = 64 + len(query.text) // 2  # one paraphrase, about as long as the text
            else:
                messages = rewrite_messages(
                    query.text,
                    len(missing),
                    choices=query.choices,
                    passage=query.passage,
                    avoid=variants[1:] or None,
                )
                budget = max(1024, 256 + len(missing) * (len(query.text) // 2))
            try:
                result = await self._call(messages, budget)
            except FATAL_ERRORS:
                raise
            except EndpointError as error:
                self.context.failure("rewrite", error, query_id=key, model=rewriter)
                self._problem("call failed")
                ok = False
                break
            summary.n_rewrite_calls += 1
            cost, cost_source = self.context.cost(self.spec, result)
            if single:
                parsed = read_single_rewrite(result.content, result.finish_reason)
            else:
                parsed = read_rewrites(result.content, result.finish_reason, question=query.text)
            accepted, refused = accept_rewrites(parsed.rewrites, query, seen)
            problem = parsed.problem
            if problem is None and not accepted:
                problem = "every candidate refused (" + ", ".join(sorted(refused)) + ")"
            if parsed.method == "json":
                summary.n_rewrite_structured += 1
            elif parsed.fallback:
                summary.n_rewrite_fallback += 1
            if problem is not None:
                self._problem(problem)
            produced = list(zip(missing, accepted, strict=False))
            call_id = f"{self.context.run_id}/{key}/{_attempt}"
            store.add_rewrite_call(
                {
                    "call_id": call_id,
                    "query_id": key,
                    "model": rewriter,
                    "endpoint_model": self.spec.endpoint_model,
                    "model_settings": self.spec.settings,
                    "variant_ids": [v for v, _ in produced],
                    "n_parsed": len(parsed.rewrites),
                    "n_accepted": len(accepted),
                    "parse_method": parsed.method,
                    "problem": problem,
                    "refused": dict(refused),
                    "response_format": summary.rewrite_format,
                    **call_fields(result, cost, cost_source),
                    "temperature": self.temperature,
                    "prompt_version": PROMPT_VERSION,
                    "run_id": self.context.run_id,
                }
            )
            for variant_id, text in produced:
                store.add_rewrite(
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
        progress.step(ok and not missing, summary.spend_usd)


__all__: list[str] = []
