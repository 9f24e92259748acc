"""The analysis notebooks: committed clean and parameterised, and executed end to end on tiny data.

The execution tests run every notebook through papermill (``ecc_lib.runs.pipeline.run_pipeline``) on a
small synthetic dataset written here (queries with rewrites, decodes and costs), with an embedding
cache filled in advance so that no embedding model is loaded, and check what each notebook wrote.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from html import unescape
from pathlib import Path

import matplotlib.image as mpimg
import nbformat
import numpy as np
import pytest

from ecc_lib import paths
from ecc_lib.embed.cache import EmbeddingCache, text_digests
from ecc_lib.runs import config as run_config
from ecc_lib.runs import pipeline
from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes

sys.path.insert(0, str(Path(__file__).parent))
from latex_check import assert_latex_tables_compile  # noqa: E402

NOTEBOOKS = sorted(paths.notebooks_dir().glob("[0-9][0-9]_*.ipynb"))
EXPECTED = [
    "00_tour",
    "01_data",
    "02_label_instability",
    "03_clustering",
    "04_routing",
    "05_report",
]
STANDALONE = ["06_benchmark"]  # run only when named (``--only 06``)


def test_the_notebooks_are_there():
    assert [nb.stem for nb in NOTEBOOKS] == EXPECTED + STANDALONE


# --------------------------------------------------------------------------------------------
# committed notebooks: clean, thin, parameterised


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_has_no_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count"))
    ]
    assert not dirty, f"{path.name}: cells {dirty} hold outputs; clear them before committing"
    assert "papermill" not in nb.metadata, f"{path.name} is an executed copy"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_is_thin_and_parameterised(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    tagged = [cell for cell in code if "parameters" in cell.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name} needs exactly one cell tagged 'parameters'"
    assert code[0] is tagged[0], f"{path.name}: the parameters cell must be the first code cell"
    assert nb.metadata["kernelspec"]["name"] == "python3"
    for cell in code:
        tree = ast.parse(cell.source)
        defined = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda)
        ]
        assert not defined, f"{path.name}: move definitions into ecc_lib ({cell.source[:60]!r})"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_are_typed_commented_literals_papermill_can_read(path):
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    tree = ast.parse(cell.source)
    assigned = {}
    for node in tree.body:
        assert isinstance(node, ast.AnnAssign), (
            f"{path.name}: parameter line {ast.unparse(node)!r} needs a type annotation"
        )
        name = node.target.id
        value = ast.literal_eval(node.value)  # a literal, nothing derived
        annotation = ast.unparse(node.annotation)
        assert type(value).__name__ == annotation, f"{path.name}: {name} is not a {annotation}"
        assigned[name] = value
    for line in cell.source.splitlines():
        assert re.search(r"\s#\s\S", line), f"{path.name}: comment the parameter line {line!r}"
    declared = run_config.notebook_parameters(path)
    # papermill skips lines it cannot parse (e.g. a second '=' in the comment): names must agree
    assert set(declared) == set(assigned)
    assert {k: v["default"] for k, v in declared.items()} == assigned
    assert all(v["help"] for v in declared.values())
    assert "run_dir" in declared and declared["run_dir"]["default"] == ""


def test_a_notebook_with_outputs_or_without_parameters_fails_the_checks(tmp_path):
    """The two checks above catch what they are meant to catch."""
    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", text="leftover")]
    nb.cells[2].execution_count = 3
    dirty = tmp_path / "01_dirty.ipynb"
    nbformat.write(nb, dirty)
    with pytest.raises(AssertionError, match="hold outputs"):
        test_committed_notebook_has_no_outputs(dirty)
    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    nb.cells[1].metadata["tags"] = []
    untagged = tmp_path / "01_untagged.ipynb"
    nbformat.write(nb, untagged)
    with pytest.raises(AssertionError, match="tagged 'parameters'"):
        test_committed_notebook_is_thin_and_parameterised(untagged)


# --------------------------------------------------------------------------------------------
# execution on tiny data

TINY_CONFIG = {
    "seed": 1,
    "n_boot": 50,
    "00_tour": {"n_queries": 400},
    "01_data": {"datasets": []},
    "02_label_instability": {"n_draws": 100},
    "03_clustering": {"n_clusters": 3, "k_sweep": [2, 3], "probe_sweep": [0, 1, 2], "max_iter": 30},
    "04_routing": {
        "routers": ["kNN", "ECC", "Softmax-ranking", "GraphRouter"],
        "ecc_router_clusters": 3,
        "cost_routers": ["kNN"],
        "n_runs": 2,
        "lambdas": [0.0, 0.5, 2.0],
        "split_seed": 3,
    },
}
FIGURES = {
    "00_tour": ["00_profiles", "00_recovery", "00_label_truth"],
    "01_data": ["01_model_scores", "01_observations_per_pair", "01_scores_by_category_tiny"],
    "02_label_instability": ["02_flip_rates", "02_sigma_distribution", "02_label_disagreement"],
    "03_clustering": [
        "03_gains",
        "03_gain_vs_probes",
        "03_gain_vs_k",
        "03_cluster_profiles",
        "03_cluster_category",
        "03_query_map",
        "03_gains_labels",
        "03_gains_labels_disjoint",
        "03_probe_strategies",
        "03_leak_gains",
        "03_routing",
    ],
    "04_routing": ["04_routing_scores", "04_routing_utility", "04_cost_quality"],
}


def _write_tiny_dataset(root: Path) -> Path:
    """60 synthetic queries x 4 models x (2 rewrites x 2 decodes), with costs, texts and 384-d
    embedding vectors stored in an embedding cache under ``root / "cache"``."""
    data = make_repeated_outcomes(
        n_queries=60,
        n_models=4,
        n_rewrites=2,
        n_decodes=2,
        n_clusters=3,
        embedding_dim=384,
        random_state=5,
    )
    folder = root / "tiny"
    folder.mkdir(parents=True)
    data.queries.to_parquet(folder / "queries.parquet", index=False)
    data.outcomes.to_parquet(folder / "outcomes.parquet", index=False)
    cache = EmbeddingCache(None, write_dir=root / "cache", read_dirs=[])
    cache.add(text_digests(data.queries["text"].tolist()), data.embeddings)
    return folder


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("notebooks")
    folder = _write_tiny_dataset(root)
    with pytest.MonkeyPatch.context() as patch:
        # the kernels inherit the environment: embeddings come from the cache filled above
        patch.setenv("ECC_LIB_CACHE_DIR", str(root / "cache"))
        config = dict(TINY_CONFIG)
        config["04_routing"] = {**TINY_CONFIG["04_routing"], "cost_dataset": str(folder)}
        result = pipeline.run_pipeline(
            config=config, out=root / "run", dataset=str(folder), progress=False
        )
    return root, folder, config, result


def test_every_notebook_ran_without_errors(tiny_run):
    _, _, _, result = tiny_run
    assert [p.stem for p in result.executed] == EXPECTED
    for executed in result.executed:
        nb = nbformat.read(executed, as_version=4)
        errors = [
            o
            for c in nb.cells
            if c.cell_type == "code"
            for o in c.outputs
            if o.output_type == "error"
        ]
        assert not errors, f"{executed.name}: {errors[0].ename}"
        assert any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells)
    assert set(result.durations) == set(EXPECTED)


@pytest.mark.parametrize("notebook", list(FIGURES))
def test_notebook_wrote_its_figures(tiny_run, notebook):
    _, _, _, result = tiny_run
    figures = result.run_dir / "figures"
    captions = json.loads((figures / "captions.json").read_text())
    for name in FIGURES[notebook]:
        png, pdf = figures / f"{name}.png", figures / f"{name}.pdf"
        assert png.exists() and pdf.exists(), name
        image = mpimg.imread(png)
        assert image.shape[0] > 300 and image.shape[1] > 500, f"{name} is too small"
        assert image.std() > 0.01, f"{name} is blank"
        assert len(captions[name]["caption"]) > 20


def test_run_has_at_least_eight_figures(tiny_run):
    _, _, _, result = tiny_run
    assert len(list((result.run_dir / "figures").glob("*.png"))) >= 8


def test_notebooks_wrote_their_tables(tiny_run):
    _, _, _, result = tiny_run
    tables = {p.stem for p in (result.run_dir / "tables").glob("*.csv")}
    for name in (
        "01_summary",
        "01_model_scores",
        "02_flip_rates",
        "02_label_confusion",
        "03_gains",
        "03_gain_vs_probes",
        "03_gain_vs_k",
        "03_cluster_summary",
        "04_routing_table",
        "04_cost_quality_curves",
    ):
        assert name in tables, name


def test_metrics_hold_the_headline_numbers_with_their_parameters(tiny_run):
    _, folder, config, result = tiny_run
    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    assert {"data", "dars", "ecc", "routing", "parameters", "provenance"} <= set(metrics)
    gains = metrics["ecc"]["ranking_quality_gain"]
    assert set(gains) == {"ecc", "emb_only", "comp_only", "human", "ecc_cv"} | {
        "global_tuned",  # issue 34: the tuned-prior baselines
        "human_tuned",
        "emb_only_tuned",
    }
    assert all(np.isfinite(v) and -100 < v < 100 for v in gains.values())
    low, high = metrics["ecc"]["ranking_quality_gain_ci95"]["ecc"]
    assert low <= gains["ecc"] <= high
    assert set(metrics["ecc"]["gain_vs_k"]) == {"ecc@2", "ecc@3", "emb_only@2", "emb_only@3"}
    flip = metrics["dars"]["winner_flip_rate"]
    assert 0.0 < flip < 1.0  # rewrites and decodes of noisy binary scores: labels do flip
    assert metrics["dars"]["winner_flip_rate_side"] == "both"
    assert set(metrics["dars"]["by_side"]) == {"input", "output", "both"}
    assert metrics["dars"]["by_side"]["output"]["winner_flip_rate"] is not None
    assert metrics["data"]["datasets"]["tiny"]["n_queries"] == 60
    checks = metrics["checks"]["tiny"]  # issue 27: written by notebook 01
    assert {"item_alignment", "all_ties", "score_type", "texts", "text_length"} <= set(checks)
    assert all(set(c) == {"status", "detail", "numbers"} for c in checks.values())
    assert all(c["status"] in ("ok", "warn", "fail") for c in checks.values())
    assert "kNN (DARS)" in metrics["routing"]["headline"]["score"]
    assert "ECC (single-shot)" in metrics["routing"]["headline"]["score"]
    assert "Softmax-ranking (single-shot)" in metrics["routing"]["headline"]["score"]
    assert "GraphRouter (DARS)" in metrics["routing"]["headline"]["score"]
    assert metrics["parameters"]["ecc"]["n_clusters"] == 3
    assert metrics["parameters"]["ecc"]["seed"] == config["seed"]
    assert metrics["parameters"]["dars"]["dataset"] == str(folder)
    datasets = metrics["provenance"]["datasets"]
    assert set(datasets["tiny"]) == {"tiny/queries.parquet", "tiny/outcomes.parquet"}
    beyond = metrics["ecc_beyond"]
    assert set(beyond) == {"ecc_labels", "probe_strategies", "soft_evidence"}
    assert {"ecc", "human", "ecc_labels"} <= set(beyond["ecc_labels"]["gain_disjoint"])
    assert set(beyond["probe_strategies"]["gain"]) == {"first", "active"}
    soft = beyond["soft_evidence"]["logloss"]
    assert soft["target_entropy"] <= soft["soft"] and len(soft["sampled"]) == 5


def test_metrics_json_of_the_run_follows_the_schema(tiny_run):
    """Issue 22 item 3: the merged metrics.json of a tiny run follows the shipped schema (the
    package's own validator, and jsonschema's Draft 2020-12 validator where installed)."""
    from ecc_lib.metrics_schema import metrics_schema, validate_metrics

    _, _, _, result = tiny_run
    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    validate_metrics(metrics, strict=True)  # every key the notebooks record is described
    jsonschema = pytest.importorskip("jsonschema")
    errors = list(jsonschema.Draft202012Validator(metrics_schema()).iter_errors(metrics))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]
    assert {"ecc", "dars", "routing", "tour"} <= set(metrics)


def test_every_latex_table_of_the_run_compiles(tiny_run):
    _, _, _, result = tiny_run
    tables = sorted((result.run_dir / "tables").glob("*.tex"))
    assert len(tables) >= 2
    assert_latex_tables_compile(tables)


def test_report_gathers_figures_and_metrics_without_code(tiny_run):
    _, _, _, result = tiny_run
    html = result.report_path.read_text()
    assert result.report_path == result.run_dir / "report.html"
    n_figures = len(list((result.run_dir / "figures").glob("*.png")))
    assert html.count("data:image/png;base64") >= n_figures
    assert "run_metrics.collect_metrics" not in html  # input cells hidden


def test_report_reads_as_a_document(tiny_run):
    """Issue 11: a title naming the dataset and run, findings first, no NaN, alt text, LaTeX."""
    _, _, _, result = tiny_run
    html = result.report_path.read_text()
    title = re.search(r"<title>(.*?)</title>", html, re.S).group(1)
    assert title == f"ecc_lib report: tiny, run {result.run_dir.name}"
    text = re.sub(r'data:[^"\s)]+', "data:", html)  # base64 images may spell anything
    for bad in ("NaN", "Unnamed: 0", "No description has been provided", "<title>Notebook"):
        assert bad not in text, bad
    # the summary first, then every section opens with its findings paragraph in reading order
    # (data, clustering, label instability, routing); the tour in the collapsed appendix
    sections = re.findall(
        r'<section class="report-section" id="section-(\d+)">\s*<h2>[^<]*</h2>\s*<p class="(\w+)"',
        html,
    )
    assert [n for n, _ in sections] == ["01", "03", "02", "04", "00"]
    assert html.index('id="summary"') < html.index('id="section-01"')
    assert html.index('<details class="appendix"') < html.index('id="section-00"')
    assert all(kind == "findings" for _, kind in sections), sections
    # every image carries its caption as alt text
    captions = json.loads((result.run_dir / "figures" / "captions.json").read_text())
    images = re.findall(r"<img\b[^>]*>", html)
    alts = [re.search(r'alt="([^"]*)"', tag) for tag in images]
    assert len(images) == len(captions) and all(a and a.group(1) for a in alts)
    shown = {unescape(a.group(1))[:40] for a in alts}
    assert shown == {c["caption"][:40] for c in captions.values()}
    # headline tables as booktabs LaTeX; numbers with intervals, no index column
    tex = {p.stem for p in (result.run_dir / "tables").glob("05_*.tex")}
    assert {
        "05_tour_headline",
        "05_data_headline",
        "05_data_checks",
        "05_dars_headline",
        "05_ecc_headline",
        "05_routing_headline",
    } <= tex
    assert "\\toprule" in (result.run_dir / "tables" / "05_ecc_headline.tex").read_text()
    assert re.search(r"\d+\.\d% \[-?\d+\.\d, -?\d+\.\d\]", html)
    assert "<th></th>" not in html
    # issue 27: the checks come first in the data section (sentence), the full table of checks
    # in the appendix beside the section's further tables
    data = html.split('id="section-01"')[1].split('id="section-02"')[0]
    assert re.search(r'<p class="findings">Checks before numbers: tiny ', data)
    assert "<th>check</th>" not in data and "<th>check</th>" in html


def test_tour_recovers_planted_clusters_better_than_embeddings(tiny_run):
    _, _, _, result = tiny_run
    tour = json.loads(result.metrics_path.read_text())["tour"]
    low, high = tour["ari_difference_ci95"]
    assert 0 < low <= tour["ari_difference"] <= high
    assert (
        tour["ari"]["ecc"] > tour["ari"]["emb_only"] and tour["ari"]["ecc"] > tour["ari"]["labels"]
    )
    assert tour["distribution_accuracy"] > tour["single_shot_accuracy"]
    assert result.durations["00_tour"] < 60  # 30 s on an idle machine, slack for a busy one


@pytest.mark.slow  # heavy (a whole notebook run or a local cluster): make test-all
def test_same_seed_gives_the_same_metrics(tiny_run):
    """Rerun the notebooks with seeded EM starts, draws and router fits: identical metrics."""
    root, folder, config, result = tiny_run
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ECC_LIB_CACHE_DIR", str(root / "cache"))
        again = pipeline.run_pipeline(
            config=config, only="03,04", out=root / "again", dataset=str(folder), progress=False
        )
    first = json.loads(result.metrics_path.read_text())
    second = json.loads(again.metrics_path.read_text())
    for section in ("ecc", "routing"):
        assert first[section] == second[section], section
        assert first["parameters"][section] == second["parameters"][section]
    assert first["provenance"]["datasets"] == second["provenance"]["datasets"]


def test_data_notebook_collects_from_an_endpoint(tmp_path):
    """01 with ``endpoint`` set: collect from a local OpenAI-compatible server, then summarise."""
    sys.path.insert(0, str(Path(__file__).parent))
    from fake_openai_server import FakeOpenAIServer

    queries = tmp_path / "queries.csv"
    queries.write_text(
        "query_id,text,answer,category\n"
        "a,What is 2 + 3?,5,arithmetic\n"
        "b,What is 10 - 6?,4,arithmetic\n"
        "c,What is 3 * 3?,9,arithmetic\n"
    )
    with FakeOpenAIServer() as server:
        config = {
            "01_data": {
                "endpoint": server.base_url,
                "collect_queries": str(queries),
                "collect_models": ["model-a", "model-b"],
                "collect_rewrites": 1,
                "collect_decodes": 2,
                "n_boot": 20,
            }
        }
        result = pipeline.run_pipeline(
            config=config, only="01", out=tmp_path / "run", progress=False
        )
        n_calls = server.n_calls
    assert n_calls >= 3 * 2 * 2 * 2  # answers: queries x variants x decodes x models (+ rewrites)
    metrics = json.loads(result.metrics_path.read_text())
    summary = metrics["data"]["datasets"]["collected"]
    assert summary["n_queries"] == 3 and summary["n_models"] == 2
    assert summary["n_observations"] == 3 * 2 * 2 * 2
    assert metrics["parameters"]["data"]["endpoint"] == server.base_url
    assert metrics["provenance"]["datasets"]["collected"]
    assert (result.run_dir / "figures" / "01_scores_by_category_collected.png").exists()


@pytest.mark.slow
def test_main_job_on_the_bundled_data(tmp_path):
    """``make run``: default parameters on the bundled data (a few minutes on 2 cores)."""
    result = pipeline.run_pipeline(out=tmp_path / "main", progress=False)
    metrics = json.loads(result.metrics_path.read_text())
    assert set(metrics["ecc"]["ranking_quality_gain"]) == {"ecc", "emb_only", "comp_only", "human"}
    assert metrics["ecc"]["ranking_quality_gain"]["ecc"] > 0
    assert 0 < metrics["dars"]["winner_flip_rate"] < 1
    assert set(metrics["provenance"]["datasets"]) == {"dcrouter", "re2"}
    assert len(list((result.run_dir / "figures").glob("*.png"))) >= 8
    # GPQA questions are never quoted: not in the report, not in any table
    from ecc_lib.data.sources import load_bundled

    queries, _ = load_bundled("dcrouter")
    gpqa = queries.loc[queries["category"] == "gpqa", "text"].str.slice(0, 60)
    written = [result.report_path.read_text()] + [
        p.read_text() for p in (result.run_dir / "tables").glob("*.csv")
    ]
    leaked = [text for text in gpqa if any(text in page for page in written)]
    assert not leaked, f"{len(leaked)} GPQA question(s) quoted in the run's outputs"


def test_example_configuration_is_valid_for_the_notebooks():
    declared = {nb.stem: run_config.notebook_parameters(nb) for nb in NOTEBOOKS}
    config = run_config.load_config(paths.notebooks_dir() / "params.example.yaml")
    resolved = run_config.resolve_parameters(NOTEBOOKS, config, declared)
    assert resolved["03_clustering"]["n_clusters"] == 30
    assert resolved["03_clustering"]["seed"] == 42 and resolved["02_label_instability"]["seed"] == 0
    # the example repeats the defaults: running with it is the main job
    for stem, params in resolved.items():
        for name, value in params.items():
            assert value == declared[stem][name]["default"], (stem, name)


@pytest.mark.slow  # two notebooks again on a local Dask cluster; test_distributed checks the engine
def test_scheduler_parameter_runs_the_fits_on_dask_with_the_same_numbers(tiny_run):
    """02 and 03 with ``scheduler="local"``: the ECC fits run partitioned on a local Dask cluster
    and the DARS readings come from Dask group-bys, with the in-memory numbers."""
    root, folder, config, result = tiny_run
    on_dask = {
        **config,
        "02_label_instability": {**config["02_label_instability"], "scheduler": "local"},
        # one protocol seed and one K: the first seed's gains are the ones compared
        "03_clustering": {
            **config["03_clustering"],
            "scheduler": "local",
            "n_seeds": 1,
            "k_sweep": [3],
        },
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ECC_LIB_CACHE_DIR", str(root / "cache"))
        dask_run = pipeline.run_pipeline(
            config=on_dask, only="02,03", out=root / "dask", dataset=str(folder), progress=False
        )
    first = json.loads(result.metrics_path.read_text())
    second = json.loads(dask_run.metrics_path.read_text())
    assert second["parameters"]["ecc"]["scheduler"] == "local"
    for key in ("ranking_quality_gain", "ranking_quality_gain_disjoint"):
        for method, gain in first["ecc"][key].items():
            assert second["ecc"][key][method] == pytest.approx(gain, abs=0.01), (key, method)
    assert second["ecc"]["gain_vs_k"]
    for key, gain in second["ecc"]["gain_vs_k"].items():
        assert gain == pytest.approx(first["ecc"]["gain_vs_k"][key], abs=0.01), key
    dask = second["dars"]["dask"]
    assert dask["scheduler"] == "local"
    assert dask["max_abs_difference"] < 1e-9
    assert dask["flip_rates"]["pairwise"]["mean"] == pytest.approx(
        second["dars"]["winner_flip_rate"]
    )
    assert first["dars"]["dask"] is None
    assert (dask_run.run_dir / "tables" / "02_dask_agreement.csv").exists()
