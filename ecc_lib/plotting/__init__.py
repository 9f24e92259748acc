"""Figures of the notebooks: each function takes its data first, ``ax=None``, and returns the figure.

Saving is the caller's job (:func:`ecc_lib.runs.artifacts.save_figure`). Every figure carries a title,
axis labels with units and a legend where colours carry meaning, so that it reads without the code.
No figure shows query text (GPQA examples must not be published in plain text).

One module per subject, all drawing through :mod:`ecc_lib.plotting.style`:

- :mod:`ecc_lib.plotting.estimates`: estimates with 95% intervals (notebook 00, the tour);
- :mod:`ecc_lib.plotting.data`: scores per model and category, observations per pair (01);
- :mod:`ecc_lib.plotting.label_instability`: flip rates, spread sigma, label disagreement (02);
- :mod:`ecc_lib.plotting.clustering`: ECC gains, cluster profiles, query map, the probe's leak (03);
- :mod:`ecc_lib.plotting.capability_map`: which model for which queries (03, the report);
- :mod:`ecc_lib.plotting.routing`: router tables, cost-quality fronts, routing settings (03, 04).

Every public name of these modules is importable from :mod:`ecc_lib.plotting` itself.
"""

from __future__ import annotations

from ecc_lib._optional import require

require("matplotlib", extra="plot", purpose="ecc_lib.plotting")  # before any figure module

from ecc_lib.plotting.capability_map import plot_capability_map
from ecc_lib.plotting.clustering import (
    cluster_names,
    plot_cluster_category,
    plot_cluster_profiles,
    plot_gain_curve,
    plot_gains,
    plot_leak_gains,
    plot_query_map,
)
from ecc_lib.plotting.data import (
    model_score_table,
    plot_model_scores,
    plot_observations_per_pair,
    plot_scores_by_category,
    scores_by_category_table,
)
from ecc_lib.plotting.estimates import plot_estimates
from ecc_lib.plotting.label_instability import (
    flip_rate_table,
    label_confusion,
    plot_flip_rates,
    plot_label_disagreement,
    plot_sigma_distribution,
)
from ecc_lib.plotting.routing import (
    plot_cost_quality,
    plot_routing_cost_quality,
    plot_routing_settings,
    plot_routing_table,
)

__all__ = [
    "plot_capability_map",
    "cluster_names",
    "flip_rate_table",
    "label_confusion",
    "model_score_table",
    "plot_cluster_category",
    "plot_cluster_profiles",
    "plot_cost_quality",
    "plot_estimates",
    "plot_flip_rates",
    "plot_gain_curve",
    "plot_gains",
    "plot_label_disagreement",
    "plot_leak_gains",
    "plot_model_scores",
    "plot_observations_per_pair",
    "plot_query_map",
    "plot_routing_cost_quality",
    "plot_routing_settings",
    "plot_routing_table",
    "plot_scores_by_category",
    "plot_sigma_distribution",
    "scores_by_category_table",
]
