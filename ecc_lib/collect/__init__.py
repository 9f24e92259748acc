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

from ecc_lib.collect.export import read_collected, records_frame
from ecc_lib.collect.runner import collect
from ecc_lib.collect.store import CollectionStore

__all__ = [
    "CollectionStore",
    "collect",
    "read_collected",
    "records_frame",
]
