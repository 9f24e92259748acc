"""ecc_lib: capability-aware LLM evaluation and routing (ECC clustering, DARS supervision).

The packages follow the data flow, bottom to top (``docs/design.md`` section 8; ``lint-imports``
checks that no package imports one above it):

- :mod:`~ecc_lib.data`: schema, table readers and sources, comparisons, repeated observations,
  the data policy and the checks; :mod:`~ecc_lib.embed`: query embeddings;
- :mod:`~ecc_lib.bradley_terry`; the estimators :mod:`~ecc_lib.ecc` and :mod:`~ecc_lib.dars`;
  :mod:`~ecc_lib.routers`; :mod:`~ecc_lib.distributed` (a data backend of the EM engine);
- :mod:`~ecc_lib.routing_evaluation` (the only place routing is scored);
- :mod:`~ecc_lib.protocol`: typed settings (:class:`~ecc_lib.protocol.settings.Protocol`), the
  ECC protocol, the typed results (:func:`run_ecc`, :func:`run_dars`) and the experiments;
- :mod:`~ecc_lib.bench`, :mod:`~ecc_lib.plotting`, :mod:`~ecc_lib.runs` (run folders),
  :mod:`~ecc_lib.report` and :mod:`~ecc_lib.cli`.

Below them all: :mod:`~ecc_lib.stats`, :mod:`~ecc_lib.grammar`, :mod:`~ecc_lib.metrics_schema`,
:mod:`~ecc_lib.serialization` and :mod:`~ecc_lib.paths`. The most used names are importable from
the package itself; the heavier ones are imported on first use.
"""

from __future__ import annotations

from ecc_lib._optional import lazy_exports

__version__ = "0.1.0"

_LAZY = {
    "load_bundled": "ecc_lib.data.sources",
    "embed_texts": "ecc_lib.embed.encode",
    "ECC": "ecc_lib.ecc.estimator",
    "Protocol": "ecc_lib.protocol.settings",
    "run_ecc": "ecc_lib.protocol.results",
}

__all__ = [
    "load_bundled",
    "embed_texts",
    "ECC",
    "Protocol",
    "run_ecc",
]

__getattr__ = lazy_exports(__name__, _LAZY)
