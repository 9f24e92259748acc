"""A foreign dataset folder through all five notebooks (issue 9, "Done when"): few-shot prompts,
its own costs, a few queries missing a model or seen for one model only, no repeats, given by a
relative ``--dataset`` path from another working directory."""

from __future__ import annotations

import json

import nbformat
import pytest

from ecc_lib.cli import main
from ecc_lib.embed.cache import EmbeddingCache, text_digests
from ecc_lib.embed.views import text_views
from ecc_lib.synthetic.messy import write_foreign_dataset

CONFIG = """\
seed: 1
n_boot: 50
01: {datasets: []}
03: {n_clusters: 3, k_sweep: [2, 3], probe_sweep: [0, 1], max_iter: 30}
04: {routers: [kNN], ecc_router_clusters: 3, cost_routers: [kNN], n_runs: 2, lambdas: [0.0, 0.5, 2.0]}
05: {title: foreign run}
"""


@pytest.fixture(scope="module")
def foreign_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("foreign")
    planted = write_foreign_dataset(root / "data" / "foreign", n_queries=150)
    # embeddings come from a cache filled in advance (no model is loaded); the keys are those of
    # the texts the default view embeds: the tails of the few-shot prompts
    views, too_long, _ = text_views(planted.queries["text"].tolist())
    assert too_long.all()
    EmbeddingCache(None, write_dir=root / "cache", read_dirs=[]).add(
        text_digests(views), planted.embeddings
    )
    (root / "params.yaml").write_text(CONFIG)
    (root / "elsewhere").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ECC_LIB_CACHE_DIR", str(root / "cache"))
        patch.chdir(root / "elsewhere")
        status = main(
            [
                "run",
                "--dataset",
                "../data/foreign",
                "--config",
                "../params.yaml",
                "--out",
                "../run",
                "--no-progress",
            ]
        )
    return root, planted, status


def test_all_five_notebooks_ran_on_the_foreign_folder(foreign_run):
    root, _, status = foreign_run
    assert status == 0
    run = root / "run"
    assert not (root / "elsewhere" / "run").exists()
    for name in ("01_data", "02_label_instability", "03_clustering", "04_routing", "05_report"):
        nb = nbformat.read(run / f"{name}.ipynb", as_version=4)
        errors = [
            o
            for c in nb.cells
            if c.cell_type == "code"
            for o in c.outputs
            if o.output_type == "error"
        ]
        assert not errors, name
    assert (run / "report.html").exists()


def test_metrics_say_what_was_left_out_skipped_and_used(foreign_run):
    root, planted, _ = foreign_run
    metrics = json.loads((root / "run" / "metrics.json").read_text())
    policy = metrics["data_policy"]["foreign"]
    assert policy["n_left_out"] == len(planted.single_model) == 3
    assert policy["n_queries"] == 150 - 3
    assert any("fewer than 2 models" in note for note in policy["notes"])
    # no repeats: the DARS diagnostics are skipped with one sentence, no flip numbers
    assert metrics["dars"]["dataset"] == "foreign"
    assert metrics["dars"]["skipped"].startswith("no repeated observations")
    assert "winner_flip_rate" not in metrics["dars"]
    assert not list((root / "run" / "figures").glob("02_*.png"))
    # its own costs are used
    assert metrics["routing"]["cost_dataset"] == "foreign"
    assert metrics["routing"]["cost_skipped"] is None
    assert metrics["routing"]["single_shot_skipped"].startswith("no repeated observations")
    assert metrics["parameters"]["routing"]["cost_dataset"] == ""
    assert metrics["routing"]["headline"]["pareto_area"]
    # the embedding check of the few-shot prompts
    check = metrics["embeddings"]["foreign"]
    assert check["text_view"] == "auto" and check["n_truncated"] == 147
    assert check["n_duplicate_vectors"] == 0
    assert metrics["ecc"]["dataset"] == "foreign" and metrics["ecc"]["embedding_check"] == check
    assert metrics["ecc"]["ranking_quality_gain"]["ecc"] is not None
    assert metrics["data"]["datasets"]["foreign"]["n_queries"] == 147
