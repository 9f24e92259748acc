"""Issue 35 follow-up (i35c): the routing dataset's headline and the Pareto-front area read the one
interval of :mod:`ecc_lib.stats`; the figures of gains draw it."""

from __future__ import annotations

import numpy as np
import pytest

from ecc_lib import routing_evaluation as ev
from ecc_lib.protocol.comparisons import routing_records


def _arms(fixed, router, oracle):
    def metrics(u):
        u = np.asarray(u, float)
        return {"score": u, "utility": u}

    return {
        ("Oracle", "reference"): [metrics(oracle)],
        ("Best fixed model", "reference"): [metrics(fixed)],
        ("kNN", "DARS"): [metrics(router)],
    }


@pytest.mark.parametrize("seed", [0, 3])
def test_the_routing_dataset_headline_is_the_one_interval_of_the_records(seed):
    """With one split the routing dataset's best router minus the best fixed model is exactly the
    comparison records' interval (the protocol's "routing pays"): one definition, not two."""
    rng = np.random.default_rng(seed)
    fixed = rng.uniform(0.3, 0.8, 57)
    router = np.clip(fixed + rng.normal(0.02, 0.1, 57), 0, 1)
    oracle = np.maximum(fixed, router) + 0.05
    _, versus = ev.paired_differences(_arms(fixed, router, oracle), [], n_boot=300)
    (record,) = routing_records(
        [{"split": {"global": fixed, "kNN": router}}], n_boot=300, random_state=0
    )
    row = versus.iloc[0]
    assert record.a == "kNN" and record.n_seeds == 1
    assert row["utility_minus_fixed"] == pytest.approx(record.estimate, abs=1e-12)
    assert row["utility_minus_fixed_ci_low"] == pytest.approx(record.ci[0], abs=1e-12)
    assert row["utility_minus_fixed_ci_high"] == pytest.approx(record.ci[1], abs=1e-12)
    assert record.ci[0] < record.ci[1]  # not a degenerate case


def test_the_report_header_says_the_routing_dataset_uses_the_same_interval(tmp_path):
    from ecc_lib import report
    from ecc_lib.runs import folder as run_folder
    from ecc_lib.runs import metrics as run_metrics

    run = run_folder.run_context(tmp_path / "r")
    run_metrics.record_metrics(run, "ecc", {"dataset": "d", "seeds": [0]}, parameters={})
    intro = report.build_report(run).intro
    assert "routing dataset (one split) get the same interval" in intro
    assert "bootstrap over test queries" in intro and "spread over seeds, not a verdict" in intro
