"""The answer phase of a collection run: each candidate model answers each variant of each query
``n_decodes`` times; every response is scored and costed and appended to the store as it arrives.

Empty replies (``content`` null or blank, e.g. ``finish_reason`` "length") are never scored: they
are recorded as failures, like calls that failed for good, and tried again by the next run.
"""

from __future__ import annotations

from ecc_lib.collect.context import FATAL_ERRORS, PreparedQuery, RunContext, call_fields
from ecc_lib.collect.errors import EndpointError
from ecc_lib.collect.prompts import PROMPT_VERSION, answer_messages
from ecc_lib.collect.scorers import apply_scorer, extract_final_answer
from ecc_lib.collect.store import observation_type
from ecc_lib.collect.workers import Progress


async def answer(
    context: RunContext, task: tuple[PreparedQuery, int, int, str], progress: Progress
) -> None:
    """Ask one model for one answer to one variant of a query; score, cost and store it.

    A call that fails for good, or whose reply is empty, is recorded in ``failures.jsonl`` (and
    tried again by the next run); a fatal error (:data:`~ecc_lib.collect.context.FATAL_ERRORS`)
    stops the run.

    Parameters
    ----------
    context : RunContext
        The run's shared state.
    task : tuple
        ``(query, variant_id, decode_id, model)``.
    progress : Progress
        The phase's bar (one step per call).
    """
    query, variant_id, decode_id, model = task
    spec = context.models[model]
    text = context.store.rewrites[(query.query_id, variant_id)]["text"]
    messages = answer_messages(
        text, choices=query.choices, passage=query.passage, scorer_name=query.scorer_name
    )
    key = dict(query_id=query.query_id, model=model, variant_id=variant_id, decode_id=decode_id)
    sampling = {
        "temperature": query.temperature,
        "top_p": query.top_p,
        "max_tokens": query.max_tokens,
        **spec.sampling,  # a variant's own settings define it: they win
    }
    extra = {**(context.settings["extra_body"] or {}), **spec.extra_body}
    try:
        result = await context.client.chat(
            spec.endpoint_model, messages, **sampling, extra_body=extra or None
        )
    except FATAL_ERRORS:
        raise
    except EndpointError as error:
        context.failure("decode", error, **key)
        context.summary.n_failed += 1
        progress.step(False, context.summary.spend_usd)
        return
    cost, cost_source = context.cost(spec, result)
    if result.content is None or not result.content.strip():
        shown = "null" if result.content is None else repr(result.content)
        reason = (
            f"empty reply (content {shown}, finish_reason {result.finish_reason!r}) from "
            f"{context.client.public_url} for model '{spec.endpoint_model}'"
        )
        if result.finish_reason == "length":
            reason += f"; max_tokens={sampling['max_tokens']} may be too small"
        context.failure(
            "decode",
            reason,
            **key,
            finish_reason=result.finish_reason,
            completion_tokens=result.completion_tokens,
            cost=cost,
            response=result.raw,
        )
        context.summary.n_failed += 1
        context.summary.n_empty_replies += 1
        progress.step(False, context.summary.spend_usd)
        return
    score, scoring_error = apply_scorer(query.scorer, result.content, query.answer, query.choices)
    extracted = extract_final_answer(result.content)
    record = {
        **key,
        "observation_type": observation_type(variant_id, decode_id),
        "score": score,
        "scoring_error": scoring_error,
        "scorer": query.scorer_name,
        "extracted_answer": extracted,
        **call_fields(result, cost, cost_source),
        "endpoint_model": spec.endpoint_model,
        "model_settings": spec.settings,
        **sampling,  # temperature, top_p, max_tokens
        "extra_body": extra or None,
        "prompt_version": PROMPT_VERSION,
        "base_url": context.settings["base_url"],
        "run_id": context.run_id,
    }
    if context.store.add_record(record):
        context.summary.n_collected += 1
        if score is None:
            context.summary.n_scoring_failures += 1
        elif extracted is None:
            context.summary.n_without_final_answer += 1
    progress.step(True, context.summary.spend_usd)


__all__: list[str] = []
