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
from ecc_lib.data.comparisons import Comparisons, make_comparisons
from ecc_lib.data.schema import DataValidationError, validate_outcomes, validate_queries
from ecc_lib.data.splits import split_probe, split_queries

__version__ = "0.1.0"

_LAZY = {
    "load_bundled": "ecc_lib.data.sources",
    "read_queries": "ecc_lib.data.tables",
    "read_outcomes": "ecc_lib.data.tables",
    "embed_texts": "ecc_lib.embed.encode",
    "fit_bt_pairwise": "ecc_lib.bradley_terry",
    "ECC": "ecc_lib.ecc.estimator",
    "ComparisonOnlyECC": "ecc_lib.ecc.baselines",
    "EmbeddingClusters": "ecc_lib.ecc.baselines",
    "GlobalBT": "ecc_lib.ecc.baselines",
    "HumanLabelClusters": "ecc_lib.ecc.baselines",
    "run_protocol": "ecc_lib.protocol.ecc_protocol",
    "Protocol": "ecc_lib.protocol.settings",
    "run_ecc": "ecc_lib.protocol.results",
    "run_dars": "ecc_lib.protocol.dars",
    "capability_distributions": "ecc_lib.dars.distributions",
    "label_instability": "ecc_lib.dars.label_instability",
    "make_router": "ecc_lib.routers",
    "routing_table": "ecc_lib.routing_evaluation",
}

__all__ = [
    "Comparisons",
    "DataValidationError",
    "__version__",
    "make_comparisons",
    "split_probe",
    "split_queries",
    "validate_outcomes",
    "validate_queries",
    *_LAZY,
]

__getattr__ = lazy_exports(__name__, _LAZY)
