"""The extension recipes of docs/guide/extending.md work as written: a new router family, a new
clustering baseline, a new report section and a new input format each plug into one registry and
reach the outputs users see (issue 22)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ecc_lib.data import sources, tables
from ecc_lib.ecc.engine import fit_profiles, normalise_rows
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.mixture import ProfileMixture
from ecc_lib.ecc.validation import check_embeddings
from ecc_lib.method_registry import METHOD_SPECS, MethodSpec
from ecc_lib.protocol.results import run_ecc
from ecc_lib.protocol.settings import Protocol
from ecc_lib.routers import ROUTER_FAMILIES, Router
from ecc_lib.routers.base import router_parameters
from ecc_lib.routing_evaluation import routing_table
from ecc_lib.synthetic.capability import make_capability_data
from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes


@router_parameters
class NearestCentroidRouter(Router):
    """Each test query gets the mean target of the training query cluster nearest to it (a
    recipe example: two hooks, ``_fit`` and ``_predict``)."""

    n_centroids: int = 4

    def _fit(self, x, y, rng):
        start = rng.choice(len(x), size=min(int(self.n_centroids), len(x)), replace=False)
        self.centroids_ = x[start]
        nearest = np.argmin(((x[:, None, :] - self.centroids_[None]) ** 2).sum(-1), axis=1)
        self.targets_ = np.stack(
            [y[nearest == c].mean(axis=0) if (nearest == c).any() else y.mean(axis=0)
             for c in range(len(self.centroids_))]
        )  # fmt: skip

    def _predict(self, x):
        nearest = np.argmin(((x[:, None, :] - self.centroids_[None]) ** 2).sum(-1), axis=1)
        return self.targets_[nearest]


def test_a_new_router_family_is_one_registry_entry(monkeypatch):
    monkeypatch.setitem(ROUTER_FAMILIES, "Nearest-centroid", NearestCentroidRouter)
    data = make_repeated_outcomes(
        n_queries=120, n_models=3, n_rewrites=2, n_decodes=2, embedding_dim=8, random_state=0
    )
    result = routing_table(
        data.outcomes,
        data.embeddings,
        embedding_ids=data.queries["query_id"],
        routers=["Nearest-centroid"],
        n_runs=1,
        n_boot=50,
    )
    rows = result.table.set_index(["router", "supervision"])
    assert ("Nearest-centroid", "DARS") in rows.index
    assert ("Nearest-centroid", "single-shot") in rows.index
    oracle = rows.loc[("Oracle", "reference"), "score"]
    assert rows.loc[("Nearest-centroid", "DARS"), "score"] <= oracle + 1e-12


def _read_pipe_separated(path):
    return tables.read_csv_keeping_text(path, sep="|")


def test_a_new_input_format_is_one_reader_entry(monkeypatch, tmp_path):
    monkeypatch.setitem(tables.TABLE_READERS, ".psv", _read_pipe_separated)
    folder = tmp_path / "piped"
    folder.mkdir()
    (folder / "queries.psv").write_text("query_id|text\n001|What is 2+2?\n002|Name a colour\n")
    rows = [f"{q}|{m}|{s}" for q, m, s in [("001", "a", 1), ("001", "b", 0), ("002", "a", 0)]]
    (folder / "outcomes.psv").write_text("query_id|model|score\n" + "\n".join(rows) + "\n")
    queries, outcomes = sources.load_dataset(str(folder))
    assert queries["query_id"].tolist() == ["001", "002"]  # ids stay text
    assert len(outcomes) == 3
    assert set(outcomes["model"]) == {"a", "b"}


def test_an_unknown_input_format_names_the_readers(tmp_path):
    path = tmp_path / "outcomes.xlsx"
    path.write_bytes(b"not a table")
    with pytest.raises(Exception, match="unknown file type '.xlsx'"):
        tables.read_table(path)


def test_every_writer_is_read_back(tmp_path):
    frame = pd.DataFrame({"query_id": ["001", "1e1"], "text": ["a", "NA"], "score": [1.0, 0.5]})
    for suffix in tables.TABLE_WRITERS:
        path = tables.write_table(frame, tmp_path / f"t{suffix}")
        back = tables.read_table(path)
        assert back["query_id"].tolist() == ["001", "1e1"], suffix
        assert back["score"].tolist() == [1.0, 0.5], suffix


class KMeansClusters(ProfileMixture):
    """Hard k-means clusters of the embeddings, one BT profile each (the baseline recipe)."""

    def __init__(self, n_clusters=30, lam=3.0, temperature=0.1, alpha=1.0, random_state=None):
        self.n_clusters, self.lam, self.temperature = n_clusters, lam, temperature
        self.alpha, self.random_state = alpha, random_state

    def fit(self, embeddings, comparisons, labels=None):
        from sklearn.cluster import KMeans

        x = check_embeddings(embeddings, comparisons.n_queries, np.float32)
        km = KMeans(self.n_clusters, n_init=1, random_state=self.random_state).fit(x)
        resp = np.eye(self.n_clusters)[km.labels_]
        self.theta_ = fit_profiles(comparisons, resp, self.alpha)
        self.centroids_ = normalise_rows(km.cluster_centers_)
        self.responsibilities_, self.models_ = resp, tuple(comparisons.models)
        return self


def test_a_new_clustering_baseline_is_one_registry_entry(monkeypatch):
    def factory(n_clusters, lam, temperature, random_state, **_):
        return KMeansClusters(n_clusters, lam, temperature, random_state=random_state)

    spec = MethodSpec("kmeans", label="k-means clusters", colour="#123456", factory=factory)
    monkeypatch.setitem(METHOD_SPECS, "kmeans", spec)  # register_method(spec), undone after
    data = make_capability_data(n_queries=240, random_state=3)
    result = run_ecc(
        data.queries,
        data.outcomes,
        data.embeddings,
        protocol=Protocol(n_boot=100),
        estimator=ECC(n_clusters=4, max_iter=30),
        methods=("global", "ecc", "kmeans"),
    )
    metrics = result.to_metrics(dataset="planted")
    gain = metrics["ranking_quality_gain"]["kmeans"]
    assert np.isfinite(gain)
    assert "kmeans" in metrics["ranking_quality_gain_disjoint"]  # the leak-aware reading too
    low, high = metrics["ranking_quality_gain_ci95"]["kmeans"]
    assert low <= gain <= high


def test_a_new_report_section_is_one_registry_record(monkeypatch, tmp_path):
    from ecc_lib import report
    from ecc_lib.report import build, registry
    from ecc_lib.report.document import ReportSection
    from ecc_lib.report.summary import SummaryLine
    from ecc_lib.runs import folder as run_folder
    from ecc_lib.runs import metrics as run_metrics

    def planted_section(run, metrics):
        n = metrics["tour"]["n_queries"]
        return ReportSection(findings=f"The planted data hold {n} queries.")

    def planted_summary(metrics, options):  # the section's own lines of the summary
        n = metrics["tour"]["n_queries"]
        return [("planted", SummaryLine("tour", f"The summary counts {n} queries."))]

    sections = tuple(s for s in registry.SECTIONS if s.key != "tour")
    sections += (
        registry.Section("tour", planted_section, order=9, appendix=True, summary=planted_summary),
    )
    monkeypatch.setattr(build, "SECTIONS", sections)
    run = run_folder.run_context(tmp_path / "run")
    run_metrics.record_metrics(run, "tour", {"n_queries": 123})
    document = report.build_report(run)
    html = "\n".join(document.section_html() + document.appendix_sections_html())
    assert "The planted data hold 123 queries." in html
    assert "The summary counts 123 queries." in document.summary_html  # no other file edited
    assert "planted" in build.record_summary(run)  # and metrics.json["summary"]


def test_make_run_takes_every_registered_router_family():
    """Notebook 04 and the example configuration name no router family (an empty list runs
    every registered one), so a family added to ``ROUTER_FAMILIES`` reaches ``make run``."""
    from ecc_lib import paths
    from ecc_lib.runs import config as run_config

    notebook = paths.notebooks_dir() / "04_routing.ipynb"
    assert run_config.notebook_parameters(notebook)["routers"]["default"] == []
    example = run_config.load_config(paths.notebooks_dir() / "params.example.yaml")
    assert example.get("04_routing", {}).get("routers", []) == []
    source = notebook.read_text()
    assert "router_families()" in source  # [] resolved to the registry before anything runs
