"""What one collection run shares between its rewrite and answer phases: the queries prepared with
their scorer and decoding settings, and the run's store, client, prices and summary, through which
every call's cost and every failure are recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ecc_lib.collect.client import ChatClient, ChatResult, utc_now
from ecc_lib.collect.errors import (
    EndpointAuthError,
    EndpointError,
    EndpointNotFoundError,
    EndpointRedirectError,
    EndpointUnreachableError,
)
from ecc_lib.collect.models import ModelSpec
from ecc_lib.collect.pricing import Price, call_cost
from ecc_lib.collect.queries import is_missing
from ecc_lib.collect.scorers import Scorer, choose_scorer
from ecc_lib.collect.store import CollectionStore
from ecc_lib.collect.summary import CollectionSummary

logger = logging.getLogger(__name__)

FATAL_ERRORS: tuple[type[EndpointError], ...] = (
    EndpointAuthError,
    EndpointNotFoundError,
    EndpointUnreachableError,
    EndpointRedirectError,
)
"""Errors that stop the whole run (every later call would fail the same way)."""


@dataclass
class PreparedQuery:
    """One query as a run uses it: its text and reference, the scorer chosen for it and its
    decoding settings (a query's own columns win over the run's).

    Attributes
    ----------
    query_id, text, category, answer, choices, passage
        As in the queries table (``answer`` JSON-friendly, missing values None).
    scorer_name : str
    scorer : callable
    temperature, top_p, max_tokens
        Decoding settings of its answers.
    """

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


def _plain(value: Any) -> Any:
    """A JSON-friendly value (numpy scalars and arrays to Python, NA to None)."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return None if is_missing(value) else value


def prepare_queries(
    queries: pd.DataFrame,
    scorer: Any,
    temperature: float,
    top_p: float,
    max_tokens: int | None,
) -> list[PreparedQuery]:
    """The queries of a run, each with its scorer and decoding settings.

    Parameters
    ----------
    queries : DataFrame
        Checked queries (:func:`ecc_lib.collect.queries.check_queries`).
    scorer : str, callable, mapping or None
        The run's scorer choice (see :func:`ecc_lib.collect.scorers.choose_scorer`).
    temperature, top_p, max_tokens
        The run's decoding settings, overridden by a query's own columns.

    Returns
    -------
    list of PreparedQuery
    """
    prepared = []
    for row in queries.to_dict("records"):
        choices = row.get("choices") if isinstance(row.get("choices"), list) else None
        category = None if is_missing(row.get("category")) else str(row["category"])
        name, function = choose_scorer(
            category,
            has_choices=bool(choices),
            override=scorer,
            query_scorer=None if is_missing(row.get("scorer")) else str(row["scorer"]),
        )

        def setting(column: str, default: Any, cast: Callable, row: dict = row) -> Any:
            value = row.get(column)
            return default if is_missing(value) else cast(value)

        passage = row.get("passage")
        prepared.append(
            PreparedQuery(
                query_id=str(row["query_id"]),
                text=str(row["text"]),
                category=category,
                answer=_plain(row.get("answer")),
                choices=choices,
                passage=None if is_missing(passage) or not str(passage).strip() else str(passage),
                scorer_name=name,
                scorer=function,
                temperature=setting("temperature", temperature, float),
                top_p=setting("top_p", top_p, float),
                max_tokens=setting("max_tokens", max_tokens, lambda v: int(float(v))),
            )
        )
    return prepared


def call_fields(result: ChatResult, cost: float | None, cost_source: str | None) -> dict:
    """What every stored call (an answer record, a rewriting call) keeps of its result.

    Parameters
    ----------
    result : ChatResult
        The call's result.
    cost, cost_source
        From :meth:`RunContext.cost`.

    Returns
    -------
    dict
        Content, finish reason, raw response, token counts, cost, latency, attempts, timestamps.
    """
    return {
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
    }


@dataclass
class RunContext:
    """The state one run's phases share; every call's cost and failure are recorded through it.

    Attributes
    ----------
    store : CollectionStore
        The open store.
    client : ChatClient
        The endpoint's client.
    models : dict of str to ModelSpec
        Candidate models by label.
    settings : dict
        The run's settings (as in the manifest).
    prices : mapping of str to Price
        The price table.
    summary : CollectionSummary
        The run's counts, updated as calls return.
    run_id : str
        The run's id in the manifest and in every line it writes.
    """

    store: CollectionStore
    client: ChatClient
    models: dict[str, ModelSpec]
    settings: dict
    prices: Mapping[str, Price]
    summary: CollectionSummary
    run_id: str
    first_failure_logged: bool = field(default=False, init=False)

    def cost(self, spec: ModelSpec, result: ChatResult) -> tuple[float | None, str | None]:
        """Cost of one call (reported, else from the price table) added to the summary.

        Parameters
        ----------
        spec : ModelSpec
            The model called (its label is looked up first, then its endpoint model).
        result : ChatResult
            The call's result.

        Returns
        -------
        cost : float or None
            USD, None when unknown.
        source : str or None
            Where the cost comes from.
        """
        name = spec.label if spec.label in self.prices else spec.endpoint_model
        cost, source = call_cost(
            name, result.prompt_tokens, result.completion_tokens, result.reported_cost, self.prices
        )
        if cost is None:
            self.summary.n_unpriced += 1
        else:
            self.summary.spend_usd += cost
        return cost, source

    def failure(self, kind: str, error: EndpointError | str, **key: Any) -> None:
        """Record a call that failed for good in ``failures.jsonl`` (the first one is logged).

        Parameters
        ----------
        kind : str
            ``"rewrite"`` or ``"decode"``.
        error : EndpointError or str
            The error, or the reason of a failure the endpoint did not report (status 200).
        **key
            What identifies the call (query, model, variant, decode) and any detail to keep.
        """
        entry = {"kind": kind, **key}
        if isinstance(error, EndpointError):
            entry.update(error=str(error), status=error.status, attempts=error.attempts)
        else:
            entry.update(error=error, status=200, attempts=1)
        self.store.add_failure({**entry, "at": utc_now(), "run_id": self.run_id})
        if not self.first_failure_logged:
            logger.warning("%s call failed (rerun to retry): %s", kind, entry["error"])
            self.first_failure_logged = True


__all__: list[str] = []
