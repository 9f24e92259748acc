"""Routing evaluation: held-out quality, cost and utility of routers; cost-quality curves.

Protocol (DARS, Lai et al. 2026, arXiv 2606.06924, section 4; ``docs/design.md`` section 4):
queries are split into train and test (80/20, seed 42); routers learn from the training queries'
targets, either DARS distributions (all observations) or single-shot draws (one observation per
pair, repeated over ``n_runs`` seeds and reported as mean +- std); on each test query the chosen
model is scored with the held-out observations of that query:

- ``score``: its mean score over all observations; ``score_rewrite`` over rewrite observations
  (``decode_id == 0``) and ``score_decode`` over decode observations (``variant_id == 0``) when the
  data hold rewrites or decodes;
- ``decode_instability``: the standard deviation of its decode observations (when there are
  repeated decodes);
- ``cost``: its mean normalised cost; ``utility``: ``mu_q - lambda mu_c - beta sigma_q``.

References: the best fixed model (highest mean training utility), a uniformly random model (its
expectation, computed exactly) and the per-query oracle (``argmax`` of held-out utility). The gap
closed is ``(U_router - U_fixed) / (U_oracle - U_fixed)``. Sweeping ``lambda`` gives a cost-quality
curve; its Pareto front and the area under the front summarise it.

DARS against single-shot is a paired difference on the same test queries (per family: DARS minus
the mean over the single-shot runs) with a bootstrap interval that resamples the test queries and
the single-shot runs jointly; so is every router against the best fixed model, and when no
router's interval lies above the best fixed model the result says so (``no_router_beats_best_fixed``).

One module per job; the names notebook 04 and the scripts use are importable from this package:

- :mod:`~ecc_lib.routing_evaluation.held_out`: held-out truth, per-query metrics of a choice,
  the references and the gap closed;
- :mod:`~ecc_lib.routing_evaluation.curves`: cost-quality curves, Pareto front and area;
- :mod:`~ecc_lib.routing_evaluation.experiment`: :func:`routing_table`, the whole experiment;
- :mod:`~ecc_lib.routing_evaluation.paired`: paired DARS-minus-single-shot and
  versus-best-fixed differences with joint bootstrap intervals;
- :mod:`~ecc_lib.routing_evaluation.table`: :class:`RoutingTable`, the result of the experiment;
- :mod:`~ecc_lib.routing_evaluation.summary`: the headline and the readable tables.
"""

from __future__ import annotations

from ecc_lib.routing_evaluation.experiment import routing_table
from ecc_lib.routing_evaluation.summary import (
    format_paired_differences,
    format_routing_table,
    routing_headline,
)

__all__ = [
    "format_paired_differences",
    "format_routing_table",
    "routing_headline",
    "routing_table",
]
