"""One method registry (issue 33): every list, name, colour and flag of the clustering methods is
read from :data:`ecc_lib.method_registry.METHOD_SPECS`, so a method that was never there before
is one :class:`~ecc_lib.method_registry.MethodSpec` and reaches the protocol's results,
``metrics.json``, the report's summary table, the figures' colours and the bench."""

from __future__ import annotations

import numpy as np
import pytest

from ecc_lib import labels, report
from ecc_lib.bench.settings import bench_methods
from ecc_lib.ecc.estimator import ECC
from ecc_lib.method_registry import (
    METHOD_SPECS,
    MethodSpec,
    method_keys,
    method_spec,
    register_method,
    spec_view,
    unregister_method,
)
from ecc_lib.plotting.clustering import METHOD_COLORS
from ecc_lib.plotting.style import method_colour
from ecc_lib.protocol import methods as protocol_methods
from ecc_lib.protocol.results import run_ecc
from ecc_lib.protocol.settings import Protocol
from ecc_lib.synthetic.capability import make_capability_data
from tests.test_extension_recipes import KMeansClusters

NEW_KEY = "kmeans_recipe"
NEW_COLOUR = "#123456"


def _factory(n_clusters, lam, temperature, random_state, **_):
    return KMeansClusters(n_clusters, lam, temperature, random_state=random_state)


@pytest.fixture
def new_method():
    assert NEW_KEY not in METHOD_SPECS  # a key no part of ecc_lib knows
    spec = register_method(
        MethodSpec(
            NEW_KEY,
            label="k-means clusters",
            name="k-means clusters",
            plural=True,
            description="hard k-means clusters of the embeddings, one BT profile each",
            colour=NEW_COLOUR,
            runs_by_default=True,
            baseline=True,
            factory=_factory,
        )
    )
    yield spec
    unregister_method(NEW_KEY)


def test_a_new_method_is_one_registry_entry_end_to_end(new_method, tmp_path):
    from ecc_lib import plotting
    from ecc_lib.report import summary as report_summary
    from ecc_lib.runs import folder as run_folder
    from ecc_lib.runs import metrics as run_metrics

    # the defaults of ecc-lab ecc, run_ecc and the bench
    assert protocol_methods.default_methods(False)[-1] == NEW_KEY
    assert NEW_KEY in protocol_methods.default_methods(True)
    assert bench_methods(False)[-1] == NEW_KEY and NEW_KEY in bench_methods(True)
    # the protocol's results and metrics.json
    data = make_capability_data(n_queries=240, random_state=3)
    result = run_ecc(
        data.queries,
        data.outcomes,
        data.embeddings,
        protocol=Protocol(n_boot=100),
        estimator=ECC(n_clusters=4, max_iter=30),
        methods=("global", "ecc", NEW_KEY),
    )
    assert isinstance(result.first.fitted[NEW_KEY], KMeansClusters)
    metrics = result.to_metrics(dataset="planted")
    assert np.isfinite(metrics["ranking_quality_gain"][NEW_KEY])
    run = run_folder.run_context(tmp_path / "run")
    run_metrics.record_metrics(run, "ecc", metrics, parameters={"n_clusters": 4})
    recorded = run_metrics.collect_metrics(run)
    assert NEW_KEY in recorded["ecc"]["ranking_quality_gain"]
    # the report's summary table names it by its registry name
    (table,) = [line for line in report.build_summary(recorded)["planted"] if line.topic == "table"]
    row = next(r for r in table.rows if r["method"] == NEW_KEY)
    assert row["name"] == "k-means clusters"
    assert NEW_KEY in [r["method"] for r in report_summary.summary_table(
        report_summary.ecc_records(recorded)
    )]  # fmt: skip
    # the figures: its colour and label
    assert method_colour(NEW_KEY) == NEW_COLOUR
    assert METHOD_COLORS[NEW_KEY] == NEW_COLOUR
    assert labels.method_label(NEW_KEY) == "k-means clusters"
    fig = plotting.plot_gains(result.first.table())  # the gains figure of notebook 03
    colours = {tuple(np.round(p.get_facecolor(), 4)) for p in fig.axes[0].patches}
    from matplotlib.colors import to_rgba

    assert tuple(np.round(to_rgba(NEW_COLOUR), 4)) in colours


def test_unregistering_removes_every_trace(new_method):
    unregister_method(NEW_KEY)
    try:
        assert NEW_KEY not in protocol_methods.default_methods(True)
        assert NEW_KEY not in protocol_methods.METHOD_FACTORIES
        assert NEW_KEY not in labels.METHOD_LABELS
        with pytest.raises(ValueError, match="unknown method"):
            protocol_methods.make_methods(methods=(NEW_KEY,))
    finally:
        register_method(new_method)


def test_the_views_are_the_registry():
    specs = METHOD_SPECS.values()
    assert protocol_methods.METHODS == tuple(s.key for s in specs if s.paper)
    assert protocol_methods.METHODS == ("global", "ecc", "emb_only", "comp_only", "human")
    assert set(protocol_methods.LABEL_METHODS) == {s.key for s in specs if s.needs_labels}
    assert protocol_methods.TUNED_METHODS == {s.key: s.tuned for s in specs if s.tuned}
    assert list(protocol_methods.METHOD_FACTORIES) == list(METHOD_SPECS)  # every one has one
    assert dict(labels.METHOD_LABELS) == {s.key: s.label for s in specs}
    assert dict(labels.METHOD_NAMES) == {s.key: s.name for s in specs}
    assert set(labels.PLURAL) == {s.key for s in specs if s.plural}
    from ecc_lib.plotting.clustering import METHOD_COLORS
    from ecc_lib.plotting.style import METHOD_COLOURS

    assert dict(METHOD_COLORS) == {s.key: s.colour for s in specs}
    assert all(METHOD_COLOURS[s.key] == s.colour for s in specs)
    assert METHOD_COLOURS["knn"] == "tab:blue"  # the routers keep theirs


def test_the_defaults_are_what_they_were():
    """The registry order gives the defaults of before issue 33 (behaviour kept)."""
    assert protocol_methods.default_methods(True) == (
        "global", "ecc", "emb_only", "comp_only", "human", "ecc_labels",
        "global_tuned", "human_tuned", "emb_only_tuned", "ecc_cv",
    )  # fmt: skip
    assert protocol_methods.default_methods(False) == (
        "global", "ecc", "emb_only", "comp_only", "global_tuned", "emb_only_tuned", "ecc_cv",
    )  # fmt: skip
    assert protocol_methods.DEFAULT_TUNED == ("global_tuned", "human_tuned", "emb_only_tuned")
    from ecc_lib.protocol.tuned import TUNED_BASELINES

    assert TUNED_BASELINES == ("global_tuned", "human_tuned", "emb_only_tuned", "comp_only_tuned")


def test_setting_a_factory_through_the_old_mapping_registers_and_restores(monkeypatch):
    with monkeypatch.context() as m:
        m.setitem(protocol_methods.METHOD_FACTORIES, NEW_KEY, _factory)
        assert method_spec(NEW_KEY).factory is _factory
        assert method_spec(NEW_KEY).label == NEW_KEY  # no label given: the key
    assert NEW_KEY not in METHOD_SPECS


def test_bad_entries_fail_in_one_line():
    with pytest.raises(ValueError, match="registered already"):
        register_method(MethodSpec("ecc"))
    with pytest.raises(ValueError, match="tunes 'nothing'"):
        register_method(MethodSpec("x_tuned", tuned="nothing"))
    with pytest.raises(ValueError, match="non-empty string"):
        MethodSpec(" ")
    with pytest.raises(KeyError, match="unknown method 'nope'"):
        method_spec("nope")
    assert method_keys(paper=True, needs_labels=True) == ("human",)
    assert dict(spec_view("colour", lambda s: s.key == "ecc")) == {"ecc": "tab:red"}
