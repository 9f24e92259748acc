"""Live collection of DARS-style observations from OpenAI-compatible chat endpoints.

Rewrites x decodes for every query and model, scored, costed, stored append-only and resumable::

    from ecc_lib.collect import collect, read_collected

    summary = collect("queries.csv", ["model-a", "model-b"], "http://localhost:8000/v1", "runs/c1",
                      n_rewrites=2, n_decodes=3)
    queries, outcomes = read_collected("runs/c1")

Modules: :mod:`~ecc_lib.collect.runner` (:func:`collect`, :func:`acollect`) runs the phases of
:mod:`~ecc_lib.collect.rewriting` and :mod:`~ecc_lib.collect.answers` on the state of
:mod:`~ecc_lib.collect.context` with the worker pools of :mod:`~ecc_lib.collect.workers`, and records
its :mod:`~ecc_lib.collect.summary`; :mod:`~ecc_lib.collect.client` (HTTP client, retries),
:mod:`~ecc_lib.collect.prompts`, :mod:`~ecc_lib.collect.scorers`, :mod:`~ecc_lib.collect.pricing`,
:mod:`~ecc_lib.collect.queries`, :mod:`~ecc_lib.collect.models` (model variants),
:mod:`~ecc_lib.collect.store` (the append-only store), :mod:`~ecc_lib.collect.export` (outcomes and
dataset folders), :mod:`~ecc_lib.collect.local_server` (a local llama.cpp server).
"""

from ecc_lib.collect.client import ChatClient, ChatResult
from ecc_lib.collect.errors import (
    CollectError,
    CollectionInterrupted,
    EndpointAuthError,
    EndpointConfigError,
    EndpointError,
    EndpointNotFoundError,
    EndpointRedirectError,
    EndpointResponseError,
    EndpointUnreachableError,
    StoreError,
)
from ecc_lib.collect.export import (
    collected_outcomes,
    collected_queries,
    export_dataset,
    export_outcomes,
    read_collected,
    records_frame,
)
from ecc_lib.collect.models import ModelSpec, parse_model_spec, parse_models
from ecc_lib.collect.pricing import Price, call_cost, price_table, read_price_table
from ecc_lib.collect.prompts import ParsedRewrites, read_rewrites
from ecc_lib.collect.queries import read_queries_file
from ecc_lib.collect.runner import CollectionSummary, acollect, collect
from ecc_lib.collect.scorers import (
    SCORERS,
    ScoringFailure,
    choose_scorer,
    exact_match,
    extract_final_answer,
    multiple_choice_letter,
    numeric_equivalence,
    token_f1,
)
from ecc_lib.collect.store import CollectionStore, observation_type

__all__ = [
    "SCORERS",
    "ChatClient",
    "ChatResult",
    "CollectError",
    "CollectionInterrupted",
    "CollectionStore",
    "CollectionSummary",
    "EndpointAuthError",
    "EndpointConfigError",
    "EndpointError",
    "EndpointNotFoundError",
    "EndpointRedirectError",
    "EndpointResponseError",
    "EndpointUnreachableError",
    "ModelSpec",
    "ParsedRewrites",
    "Price",
    "ScoringFailure",
    "StoreError",
    "acollect",
    "call_cost",
    "choose_scorer",
    "collect",
    "collected_outcomes",
    "collected_queries",
    "exact_match",
    "export_dataset",
    "export_outcomes",
    "extract_final_answer",
    "multiple_choice_letter",
    "numeric_equivalence",
    "observation_type",
    "parse_model_spec",
    "parse_models",
    "price_table",
    "read_collected",
    "read_price_table",
    "read_queries_file",
    "read_rewrites",
    "records_frame",
    "token_f1",
]
