"""Issue 35 follow-up (i35c): the routing dataset's headline and the Pareto-front area read the one
interval of :mod:`ecc_lib.stats`; the figures of gains draw it."""

from __future__ import annotations

import numpy as np
import pytest

from ecc_lib import routing_evaluation as ev
from ecc_lib.protocol.comparisons import routing_records
from ecc_lib.routing_evaluation.curves import pareto_area, pareto_area_ci
from ecc_lib.routing_evaluation.paired import paired_differences


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
    _, versus = paired_differences(_arms(fixed, router, oracle), [], n_boot=300)
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


def _whiskers(ax) -> list[tuple[float, float, float]]:
    """``(y, low, high)`` of every horizontal error bar drawn on ``ax``."""
    out = []
    for container in ax.containers:
        bars = getattr(container, "errorbar", None)
        if bars is None:
            continue
        for segment in bars.lines[2][0].get_segments():
            (x0, y0), (x1, _) = segment
            out.append((round(float(y0), 6), float(min(x0, x1)), float(max(x0, x1))))
    return sorted(out)


def test_the_leak_gain_figure_draws_the_one_interval_of_the_records_not_the_sd():
    """``03_leak_gains``: bars and whiskers are the comparison records' estimate and interval
    (``summary_table``'s ``estimate/low/high``), the seeds' dots stay."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from test_issue35_one_answer import _frames

    from ecc_lib import plotting
    from ecc_lib.protocol.comparisons import clustering_records, find

    frames = _frames({"ecc": -12.0, "emb_only": 4.0}, n_seeds=3)
    records = clustering_records(frames, n_boot=200, readings=("all", "disjoint"))
    rows = []
    for m in ("ecc", "emb_only"):
        for reading in ("all", "disjoint"):
            r = find(records, "clustering_gain", m, "global", reading)
            per_seed = [(s, r.estimate + d, 0.0, 0.0) for s, d in enumerate((-1.0, 0.0, 1.0))]
            rows.append(
                {"method": m, "reading": reading, "mean": r.estimate, "sd": 0.01,
                 "per_seed": per_seed, "estimate": r.estimate, "low": r.ci[0], "high": r.ci[1]}
            )  # fmt: skip
    import pandas as pd

    table = pd.DataFrame(rows)
    fig = plotting.plot_leak_gains(table)
    ax = fig.axes[0]
    drawn = _whiskers(ax)
    assert len(drawn) == 4
    spans = sorted((round(lo, 6), round(hi, 6)) for _, lo, hi in drawn)
    assert spans == sorted((round(lo, 6), round(hi, 6)) for lo, hi in zip(table.low, table.high))
    assert all(hi - lo > 0.05 for _, lo, hi in drawn)  # not the 0.01 sd
    assert sum(len(line.get_xdata()) for line in ax.lines if line.get_marker() == "o") == 12
    assert "95% interval" in ax.get_xlabel()
    plt.close(fig)


def test_the_seed_summary_table_carries_the_records_interval():
    """``MultiSeedEvaluation.summary_table`` (what notebook 03 draws) holds the record's gain and
    interval for every reading, touching included."""
    from ecc_lib.ecc.estimator import ECC
    from ecc_lib.protocol.comparisons import clustering_records, find
    from ecc_lib.protocol.results import run_ecc
    from ecc_lib.protocol.settings import Protocol
    from ecc_lib.synthetic.capability import make_capability_data

    d = make_capability_data(n_queries=120, random_state=3)
    found = run_ecc(
        d.queries, d.outcomes, d.embeddings, protocol=Protocol.from_seed(42, n_seeds=2),
        estimator=ECC(n_clusters=3), methods=("global", "ecc", "emb_only"),
    )  # fmt: skip
    table = found.multi.summary_table()
    records = found.multi.comparisons()
    touching = clustering_records(
        [r.per_query for r in found.multi.results],
        methods=["ecc", "emb_only"],
        n_boot=int(found.first.params.get("n_boot", 1000)),
        readings=("touching",),
    )
    for row in table[table["method"] != "global"].itertuples():
        r = find(records + touching, "clustering_gain", row.method, "global", row.reading)
        assert row.estimate == pytest.approx(r.estimate, abs=1e-12)
        assert (row.low, row.high) == pytest.approx(r.ci, abs=1e-12)
        assert row.estimate == pytest.approx(row.mean, abs=1e-9)  # the mean of the seeds


def test_the_pareto_area_interval_resamples_the_per_query_rows():
    """The area of the means, with a bootstrap over test queries that recomputes the front and
    its area per replicate (checked against a plain loop over replicates)."""
    from ecc_lib.stats import bootstrap_indices, percentile_interval

    rng = np.random.default_rng(4)
    n_points, n_queries = 5, 60
    cost = rng.uniform(0.0, 1.0, (n_points, n_queries)) * np.linspace(0.2, 1.0, n_points)[:, None]
    quality = rng.uniform(0.0, 1.0, (n_points, n_queries))
    area, ci = pareto_area_ci(cost, quality, n_boot=200, random_state=1)
    assert area == pytest.approx(pareto_area(cost.mean(axis=1), quality.mean(axis=1)))
    index = bootstrap_indices(n_queries, n_boot=200, random_state=1)
    loop = [pareto_area(cost[:, i].mean(axis=1), quality[:, i].mean(axis=1)) for i in index]
    assert ci == pytest.approx(percentile_interval(np.array(loop)), abs=1e-12)
    assert ci[0] < area < ci[1]
    # every query alike: no sampling noise, an interval of width 0
    flat_area, flat_ci = pareto_area_ci(np.full((3, 20), 0.5), np.full((3, 20), 0.7))
    assert flat_ci == pytest.approx([flat_area, flat_area]) and flat_area == pytest.approx(0.35)
    with pytest.raises(ValueError, match="one shape"):
        pareto_area_ci(cost, quality[:, :3])


def test_the_routing_table_gives_each_pareto_area_its_interval():
    """``routing_table`` keeps each curve's per-query values and gives every Pareto-front area a
    bootstrap interval over test queries (single-shot runs averaged on shared resamples)."""
    from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes

    data = make_repeated_outcomes(
        n_queries=150, n_models=4, n_rewrites=2, n_decodes=2, n_clusters=3, embedding_dim=8,
        random_state=2,
    )  # fmt: skip
    result = ev.routing_table(
        data.outcomes,
        data.embeddings,
        embedding_ids=data.queries["query_id"],
        routers=["kNN"],
        n_runs=2,
        n_boot=200,
    )
    table = result.table.set_index(["router", "supervision"])
    for key in [("kNN", "DARS"), ("kNN", "single-shot"), ("Oracle", "reference")]:
        row = table.loc[key]
        assert row["pareto_area_ci_low"] <= row["pareto_area"] <= row["pareto_area_ci_high"], key
        assert row["pareto_area_ci_high"] > row["pareto_area_ci_low"], key
    assert not result.curves.attrs  # the saved curves hold no arrays


def test_the_report_states_the_pareto_area_with_its_interval(tmp_path):
    from ecc_lib.report.sections.routing import routing_section
    from ecc_lib.runs import folder as run_folder

    headline = {
        "dataset": "foreign",
        "pareto_area": {"kNN (DARS)": 0.61, "Best fixed model (reference)": 0.58},
        "pareto_area_ci95": {
            "kNN (DARS)": [0.59, 0.63],
            "Best fixed model (reference)": [0.55, 0.6],
        },
    }
    routing = {"headline": headline, "cost_info": {}, "cost_dataset": "dcrouter"}
    run = run_folder.run_context(tmp_path / "run")
    text = routing_section(run, {"routing": routing}).findings
    assert "kNN's 0.610 [0.590, 0.630]" in text and "0.580 [0.550, 0.600]" in text
    assert "95% bootstrap interval over test queries" in text and "no interval" not in text
    del headline["pareto_area_ci95"]  # an older run: said plainly
    assert "one split, no interval" in routing_section(run, {"routing": routing}).findings
