"""Evidence across datasets: the checks, the ECC protocol over seeds, the flip readings and routing,
for several datasets at once (``ecc-lab bench``, notebook 06; issue 27).

For each dataset :func:`bench_dataset`

1. loads it, embeds its texts (through the cache) and applies the imperfect-data policy exactly as
   ``ecc-lab ecc`` does;
2. runs the checks of :mod:`ecc_lib.data.checks`; a dataset that fails one is listed with the failure
   and **left out** of every table and mean;
3. runs the ECC protocol seed by seed with :func:`ecc_lib.protocol.seeds.run_seeds` (the same call, the
   same seeds ``seed, seed + 1, ...`` and the same methods as ``ecc-lab ecc --seeds S``, plus
   ``ecc_cv`` when it is registered), so the bench's mean +- sd agree with ``ecc-lab ecc`` to the
   printed digit; per seed also paired differences on disjoint pairs against the human-label
   baseline, and the routing experiment of :mod:`ecc_lib.protocol.routing` with two paired readings:
   the best router minus the best fixed model without a probe (both call one model per query) and
   the best router minus the probe's winner with the probe (both pay the probe);
4. reads the three winner-flip readings with their chance level where the data hold repeats.

Each seed's numbers are kept in ``DIR/work/<dataset>/seed_<s>.json`` and each finished dataset in
``DIR/datasets/<dataset>.json``: a rerun with the same settings recomputes nothing that is done.
:class:`BenchResult` gathers the datasets: one row per dataset plus the mean row (average over the
datasets that passed), and one sentence per method (on how many datasets it is better than, worse
than or not distinguishable from the global BT and from human labels on disjoint pairs).

Intervals of a dataset's reading over seeds: mean +- t(0.975, S - 1) sd / sqrt(S) over the ``S``
seeds (each seed redraws pairs, split and EM start); with one seed, that seed's 95% bootstrap
interval over test queries.

The package, one job per module (:func:`run_bench` and :class:`BenchSettings`, the names notebook 06
and the benchmarks use, are importable from :mod:`ecc_lib.bench`):

- :mod:`ecc_lib.bench.settings`: :class:`BenchSettings`, the methods, the interval over seeds;
- :mod:`ecc_lib.bench.seed`: :func:`bench_seed`, one seed of one dataset;
- :mod:`ecc_lib.bench.summary`: :func:`summarise_seeds`, the readings over seeds;
- :mod:`ecc_lib.bench.dataset`: :func:`bench_dataset`, one dataset (resumable);
- :mod:`ecc_lib.bench.result`: :func:`run_bench` and :class:`BenchResult`.
"""

from __future__ import annotations

from ecc_lib.bench.result import run_bench
from ecc_lib.bench.settings import BenchSettings

__all__ = [
    "BenchSettings",
    "run_bench",
]
