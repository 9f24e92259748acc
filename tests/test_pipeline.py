"""The pipeline runner: run folders, metrics, parameter validation, execution and failures.

Execution tests use small throw-away notebooks written here, so they exercise papermill, the kernel
and the error reporting without the cost of the analysis notebooks (see test_notebooks.py).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import matplotlib
import nbformat
import numpy as np
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from ecc_lib.cli import build_parser, main
from ecc_lib.runs import artifacts as run_artifacts
from ecc_lib.runs import config as run_config
from ecc_lib.runs import execute as notebook_execution
from ecc_lib.runs import folder as run_folder
from ecc_lib.runs import metrics as run_metrics
from ecc_lib.runs import pipeline, provenance

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def write_notebook(path: Path, parameters: str, *cells: str) -> Path:
    nb = new_notebook()
    nb.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    }
    nb.cells.append(new_markdown_cell("# test notebook"))
    params = new_code_cell(parameters)
    params.metadata["tags"] = ["parameters"]
    nb.cells.append(params)
    nb.cells.extend(new_code_cell(source) for source in cells)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


@pytest.fixture
def tiny_notebooks(tmp_path):
    """Three fast notebooks: one records metrics and a figure, one a table, 05 is a report."""
    return _make_tiny_notebooks(tmp_path / "notebooks")


def _make_tiny_notebooks(folder: Path) -> Path:
    write_notebook(
        folder / "01_first.ipynb",
        'run_dir: str = ""  # run folder\nseed: int = 0  # random seed\nsize: int = 5  # numbers',
        "import sys\nimport numpy as np\nimport pandas as pd\n"
        "from ecc_lib.runs import folder as run_folder\nfrom ecc_lib.runs import artifacts as run_artifacts\nfrom ecc_lib.runs import metrics as run_metrics\nrun = run_folder.run_context(run_dir)",
        "values = np.random.default_rng(seed).normal(size=size)\n"
        "run_artifacts.save_table(pd.DataFrame({'value': values}), run, '01_values')",
        "import os\nrun_metrics.record_metrics(run, 'first', {'mean': values.mean(), 'size': size, "
        "'executable': sys.executable, 'blas': os.environ.get('OPENBLAS_NUM_THREADS')}, "
        "parameters={'seed': seed, 'size': size})",
    )
    write_notebook(
        folder / "02_second.ipynb",
        'run_dir: str = ""  # run folder\nseed: int = 0  # random seed\nfail: bool = False  # raise',
        "import pandas as pd\nfrom ecc_lib.runs import folder as run_folder\nfrom ecc_lib.runs import artifacts as run_artifacts\nfrom ecc_lib.runs import metrics as run_metrics\nrun = run_folder.run_context(run_dir)",
        "if fail:\n    raise ValueError('planted failure')",
        "run_artifacts.save_table(pd.DataFrame({'seed': [seed]}), run, '02_seed')\n"
        "run_metrics.record_metrics(run, 'second', {'seed_twice': 2 * seed})",
    )
    write_notebook(
        folder / "05_report.ipynb",
        'run_dir: str = ""  # run folder\ntitle: str = "report"  # heading',
        "from IPython.display import Markdown, display\nfrom ecc_lib.runs import folder as run_folder\nfrom ecc_lib.runs import artifacts as run_artifacts\nfrom ecc_lib.runs import metrics as run_metrics\n"
        "metrics = run_metrics.collect_metrics(run_dir)\n"
        "display(Markdown(f'# {title}'))\nrun_metrics.flatten_metrics(metrics)",
    )
    return folder


# --------------------------------------------------------------------------------------------
# run folder helpers


def test_save_figure_writes_png_and_pdf_with_caption(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    ax.set_title("a line")
    written = run_artifacts.save_figure(fig, tmp_path, "01_line")
    run_artifacts.save_figure(fig, tmp_path, "01_other", caption="explicit caption")
    assert [p.name for p in written] == ["01_line.png", "01_line.pdf"]
    assert written[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert written[1].read_bytes()[:5] == b"%PDF-"
    run_artifacts.save_figure(fig, tmp_path, "00_first")
    run_artifacts.save_figure(fig, tmp_path, "01_line", caption="saved again")
    figures = run_artifacts.list_figures(tmp_path)
    # by notebook, then in the order first saved (not alphabetical)
    assert list(figures["name"]) == ["00_first", "01_line", "01_other"]
    assert list(figures["caption"]) == ["a line", "saved again", "explicit caption"]
    assert list(figures["notebook"]) == ["00", "01", "01"]
    plt.close(fig)


def test_pdf_figures_are_byte_identical_across_saves(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [2, 0, 1])
    first = run_artifacts.save_figure(fig, tmp_path / "a", "01_fig")[1].read_bytes()
    second = run_artifacts.save_figure(fig, tmp_path / "b", "01_fig")[1].read_bytes()
    plt.close(fig)
    assert first == second


@pytest.mark.parametrize("name", ["../escape", "sub/dir", "", "with space"])
def test_file_names_must_be_plain(tmp_path, name):
    with pytest.raises(ValueError, match="plain name"):
        run_artifacts.save_table(pd.DataFrame({"a": [1]}), tmp_path, name)


def test_save_table_round_trips(tmp_path):
    table = pd.DataFrame({"model": ["a", "b"], "score": [0.25, 1 / 3]})
    path = run_artifacts.save_table(table, tmp_path, "03_scores")
    assert path == tmp_path.resolve() / "tables" / "03_scores.csv"
    back = pd.read_csv(path)
    assert list(back.columns) == ["model", "score"]
    np.testing.assert_allclose(back["score"], table["score"], rtol=1e-9)


def test_record_metrics_merges_into_nested_sorted_json(tmp_path):
    run_metrics.record_metrics(
        tmp_path,
        "ecc",
        {
            "ranking_quality_gain": {"over_global": np.float64(12.5), "bad": np.nan},
            "k": np.int64(3),
        },
        parameters={"n_clusters": 3},
    )
    run_metrics.record_metrics(
        tmp_path, "dars", {"winner_flip_rate": 0.5, "ci": np.array([0.4, 0.6])}
    )
    path = provenance.write_metrics(tmp_path)
    text = path.read_text()
    metrics = json.loads(text)
    assert metrics["ecc"]["ranking_quality_gain"] == {"bad": None, "over_global": 12.5}
    assert metrics["ecc"]["k"] == 3
    assert metrics["dars"] == {"ci": [0.4, 0.6], "winner_flip_rate": 0.5}
    assert metrics["parameters"] == {"dars": {}, "ecc": {"n_clusters": 3}}
    assert set(metrics["provenance"]) == {"packages", "datasets", "git", "python"}
    assert metrics["provenance"]["packages"]["numpy"] == np.__version__
    assert list(metrics) == sorted(metrics)
    assert "NaN" not in text
    assert run_metrics.get_metric(metrics, "ecc.ranking_quality_gain.over_global") == 12.5
    with pytest.raises(KeyError, match="missing part 'nope'"):
        run_metrics.get_metric(metrics, "ecc.nope")


def test_record_metrics_replaces_a_section_and_rejects_reserved_names(tmp_path):
    run_metrics.record_metrics(tmp_path, "ecc", {"old": 1})
    run_metrics.record_metrics(tmp_path, "ecc", {"new": 2})
    assert run_metrics.collect_metrics(tmp_path)["ecc"] == {"new": 2}
    for reserved in ("parameters", "provenance"):
        with pytest.raises(ValueError, match="reserved"):
            run_metrics.record_metrics(tmp_path, reserved, {"x": 1})
    with pytest.raises(TypeError, match="cannot store"):
        run_metrics.record_metrics(tmp_path, "ecc", {"x": object()})


def test_flatten_and_headline_metrics():
    metrics = {
        "ecc": {
            "ranking_quality_gain": {"ecc": 10.0, "emb_only": 2.0},
            "ranking_quality_gain_ci95": {"ecc": [8.0, 12.0], "emb_only": [1.0, 3.0]},
            "other": 1,
        },
        "dars": {"winner_flip_rate": 0.3, "winner_flip_rate_ci95": [0.2, 0.4]},
        "parameters": {"ecc": {"n_clusters": 30}},
    }
    flat = run_metrics.flatten_metrics(metrics)
    assert "ecc.ranking_quality_gain.ecc" in set(flat["metric"])
    assert "parameters.ecc.n_clusters" in set(flat["metric"])
    headline = run_metrics.headline_metrics(metrics)
    assert list(headline["metric"]) == [
        "ecc.ranking_quality_gain.ecc",
        "ecc.ranking_quality_gain.emb_only",
        "dars.winner_flip_rate",
    ]
    assert list(headline["value"]) == [10.0, 2.0, 0.3]
    assert list(headline["ci95"]) == ["[8, 12]", "[1, 3]", "[0.2, 0.4]"]


# --------------------------------------------------------------------------------------------
# datasets and provenance


def _tiny_dataset(folder: Path) -> Path:
    folder.mkdir(parents=True)
    queries = pd.DataFrame(
        {"query_id": [f"q{i}" for i in range(10)], "text": [f"t{i}" for i in range(10)]}
    )
    outcomes = pd.DataFrame(
        {
            "query_id": np.repeat(queries["query_id"], 2),
            "model": ["a", "b"] * 10,
            "score": np.tile([0.0, 1.0], 10),
        }
    )
    queries.to_csv(folder / "queries.csv", index=False)
    outcomes.to_csv(folder / "outcomes.csv", index=False)
    return folder


def test_load_dataset_subsamples_with_seed_and_records_hashes(tmp_path):
    folder = _tiny_dataset(tmp_path / "tiny")
    q1, o1 = provenance.load_dataset(str(folder), run_dir=tmp_path / "run", max_queries=4)
    q2, _ = provenance.load_dataset(str(folder), max_queries=4)
    q3, _ = provenance.load_dataset(str(folder), max_queries=4, random_state=1)
    assert len(q1) == 4 and list(q1["query_id"]) == list(q2["query_id"])
    assert list(q3["query_id"]) != list(q1["query_id"])
    assert set(o1["query_id"]) == set(q1["query_id"]) and len(o1) == 8
    recorded = json.loads((tmp_path / "run" / "provenance" / "datasets.json").read_text())
    assert set(recorded["tiny"]) == {"tiny/outcomes.csv", "tiny/queries.csv"}
    assert recorded["tiny"]["tiny/queries.csv"] == provenance.sha256_file(folder / "queries.csv")
    everything, _ = provenance.load_dataset(str(folder), max_queries=0)
    assert len(everything) == 10


def test_bundled_dataset_fingerprint_covers_its_files():
    fingerprint = provenance.dataset_fingerprint("re2")
    assert set(fingerprint) == {"re2/queries.parquet", "re2/outcomes.parquet"}
    assert all(len(digest) == 64 for digest in fingerprint.values())


def test_git_state_reports_a_commit():
    state = provenance.git_state()
    assert set(state) == {"commit", "dirty"}
    assert state["commit"] is None or len(state["commit"]) == 40


# --------------------------------------------------------------------------------------------
# parameters and configuration


def test_notebook_parameters_reads_types_defaults_and_help(tiny_notebooks):
    declared = run_config.notebook_parameters(tiny_notebooks / "01_first.ipynb")
    assert set(declared) == {"run_dir", "seed", "size"}
    assert declared["size"] == {"default": 5, "type": "int", "help": "numbers"}


def test_select_notebooks(tiny_notebooks):
    found = run_config.discover_notebooks(tiny_notebooks)
    assert [nb.stem for nb in found] == ["01_first", "02_second", "05_report"]
    chosen = run_config.select_notebooks(found, "05, 01")
    assert [nb.stem for nb in chosen] == ["01_first", "05_report"]
    assert run_config.select_notebooks(found, ["02_second"]) == [found[1]]
    with pytest.raises(ValueError, match="no notebook matches '07'"):
        run_config.select_notebooks(found, "01,07")


def _declared(tiny_notebooks):
    found = run_config.discover_notebooks(tiny_notebooks)
    return found, {nb.stem: run_config.notebook_parameters(nb) for nb in found}


def test_resolve_parameters_applies_globals_sections_and_dataset(tiny_notebooks):
    found, declared = _declared(tiny_notebooks)
    config = {"seed": 7, "01": {"size": 3}, "05_report": {"title": "T"}}
    resolved = run_config.resolve_parameters(found, config, declared, dataset="ignored")
    assert resolved == {
        "01_first": {"seed": 7, "size": 3},
        "02_second": {"seed": 7},
        "05_report": {"title": "T"},
    }


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"n_clusterz": 3},
            r"unknown parameter 'n_clusterz'.*known parameters: \['fail', 'run_dir'",
        ),
        (
            {"02": {"size": 3}},
            r"unknown parameter 'size' for notebook 02_second.*\['fail', 'run_dir', 'seed'\]",
        ),
        ({"07_missing": {"seed": 1}}, r"section '07_missing' names no notebook"),
        ({"run_dir": "/tmp/x"}, r"'run_dir' is set by the runner"),
    ],
)
def test_unknown_parameters_are_errors(tiny_notebooks, config, message):
    found, declared = _declared(tiny_notebooks)
    with pytest.raises(run_config.UnknownParameterError, match=message):
        run_config.resolve_parameters(found, config, declared)


@pytest.mark.parametrize(
    ("config", "ok"),
    [({"seed": "7"}, False), ({"seed": True}, False), ({"seed": 7.0}, False), ({"seed": 7}, True)],
)
def test_parameter_types_are_checked(tiny_notebooks, config, ok):
    found, declared = _declared(tiny_notebooks)
    if ok:
        run_config.resolve_parameters(found, config, declared)
    else:
        with pytest.raises(run_config.ParameterTypeError, match="'seed' of 01_first must be int"):
            run_config.resolve_parameters(found, config, declared)


def test_load_config_reads_yaml(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("seed: 3\n03_clustering:\n  n_clusters: 10\n")
    assert run_config.load_config(path) == {"seed": 3, "03_clustering": {"n_clusters": 10}}
    (tmp_path / "empty.yaml").write_text("")
    assert run_config.load_config(tmp_path / "empty.yaml") == {}
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ValueError, match="must be a mapping"):
        run_config.load_config(tmp_path / "list.yaml")


# --------------------------------------------------------------------------------------------
# execution


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """All three tiny notebooks run once with seed 3 (shared by the tests below)."""
    root = tmp_path_factory.mktemp("pipeline")
    folder = _make_tiny_notebooks(root / "notebooks")
    result = pipeline.run_pipeline(
        config={"seed": 3}, out=root / "runs" / "first", notebooks_dir=folder, progress=False
    )
    return folder, result


def test_run_pipeline_executes_in_order_with_this_interpreter(full_run):
    folder, result = full_run
    out = result.run_dir
    assert out.name == "first" and out.is_absolute()
    assert [p.name for p in result.executed] == [
        "01_first.ipynb",
        "02_second.ipynb",
        "05_report.ipynb",
    ]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["first"]["size"] == 5
    assert metrics["first"]["executable"] == sys.executable
    assert metrics["first"]["blas"] == os.environ.get("OPENBLAS_NUM_THREADS", "1")
    assert metrics["second"] == {"seed_twice": 6}
    assert metrics["parameters"]["first"] == {"seed": 3, "size": 5}
    assert len(pd.read_csv(out / "tables" / "01_values.csv")) == 5
    assert (out / "tables" / "02_seed.csv").exists()
    html = (out / "report.html").read_text()
    assert "<html" in html and "seed_twice" in html
    assert "from ecc_lib.runs import folder as run_folder" not in html  # input cells are hidden
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "finished"
    assert run["parameters"]["02_second"] == {"seed": 3, "run_dir": str(out)}
    assert set(run["durations_s"]) == {"01_first", "02_second", "05_report"}
    # the source notebooks stay without outputs
    source = nbformat.read(folder / "01_first.ipynb", as_version=4)
    assert all(not cell.get("outputs") for cell in source.cells if cell.cell_type == "code")


def test_same_seed_gives_identical_metrics(full_run, tmp_path):
    folder, result = full_run
    first = json.loads(result.metrics_path.read_text())
    again = pipeline.run_pipeline(
        config={"seed": 3},
        only="01,02",
        out=tmp_path / "again",
        notebooks_dir=folder,
        progress=False,
    )
    second = json.loads(again.metrics_path.read_text())
    # everything but the git state (another commit may land between the two runs)
    first["provenance"].pop("git"), second["provenance"].pop("git")
    assert second == first
    other = pipeline.run_pipeline(
        config={"seed": 4}, only="01", out=tmp_path / "other", notebooks_dir=folder, progress=False
    )
    assert json.loads(other.metrics_path.read_text())["first"]["mean"] != first["first"]["mean"]


def test_only_05_rebuilds_the_report_of_an_existing_run(full_run, tmp_path):
    folder, result = full_run
    out = tmp_path / "copy"
    shutil.copytree(result.run_dir, out)
    (out / "report.html").unlink()
    rebuilt = pipeline.run_pipeline(only="05", out=out, notebooks_dir=folder, progress=False)
    assert rebuilt.report_path == out.resolve() / "report.html"
    assert [p.name for p in rebuilt.executed] == ["05_report.ipynb"]
    assert "first.size" in rebuilt.report_path.read_text()


def test_failing_notebook_names_notebook_cell_and_error(tiny_notebooks, tmp_path):
    out = tmp_path / "failed"
    with pytest.raises(notebook_execution.NotebookExecutionError) as caught:
        pipeline.run_pipeline(
            config={"02": {"fail": True}},
            only="02",
            out=out,
            notebooks_dir=tiny_notebooks,
            progress=False,
        )
    error = caught.value
    message = str(error)
    assert error.notebook == "02_second.ipynb"
    assert error.cell_index == 3  # markdown, parameters, imports, then the failing cell
    assert error.ename == "ValueError" and error.evalue == "planted failure"
    assert "02_second.ipynb" in message and "cell 3" in message
    assert "ValueError: planted failure" in message and "if fail:" in message
    assert (out / "02_second.ipynb").exists()  # executed copy with the traceback
    assert json.loads((out / "run.json").read_text())["status"].startswith("failed")
    assert "second" not in json.loads((out / "metrics.json").read_text())


def test_unknown_parameter_stops_before_anything_runs(tiny_notebooks, tmp_path):
    out = tmp_path / "never"
    with pytest.raises(run_config.UnknownParameterError, match="'sede'"):
        pipeline.run_pipeline(config={"sede": 1}, out=out, notebooks_dir=tiny_notebooks)
    assert not out.exists()


# --------------------------------------------------------------------------------------------
# command line


def test_cli_run_flags():
    args = build_parser().parse_args(
        ["run", "--config", "p.yaml", "--only", "02,03", "--out", "runs/x", "--dataset", "re2"]
    )
    assert (args.config, args.only, args.out, args.dataset) == ("p.yaml", "02,03", "runs/x", "re2")


def test_cli_reports_unknown_parameter(tmp_path, capsys):
    config = tmp_path / "bad.yaml"
    config.write_text("no_such_parameter: 1\n")
    status = main(["run", "--config", str(config), "--out", str(tmp_path / "run"), "--no-progress"])
    assert status == 1
    assert "unknown parameter 'no_such_parameter'" in capsys.readouterr().err


def test_cli_reports_failing_notebook(tmp_path, capsys, monkeypatch):
    """The handler turns the runner's error into exit status 1 and one readable line (the error
    itself is produced by a real failing kernel in test_failing_notebook_names_notebook_cell_and_error)."""

    def failing_run(**kwargs):
        raise notebook_execution.NotebookExecutionError(
            "02_second.ipynb", 3, 2, "ValueError", "planted failure", tmp_path / "02_second.ipynb"
        )

    monkeypatch.setattr(pipeline, "run_pipeline", failing_run)
    status = main(["run", "--only", "02", "--out", str(tmp_path / "run"), "--no-progress"])
    assert status == 1
    err = capsys.readouterr().err
    assert err.startswith("ecc-lab run: error: notebook 02_second.ipynb failed in cell 3 (In [2])")
    assert "ValueError: planted failure" in err


def test_reading_a_run_creates_no_folders(tmp_path):
    run_dir = tmp_path / "absent"
    context = run_folder.run_context(run_dir, create=False)
    assert context.run_dir == run_dir.resolve()
    assert context.figures_dir == run_dir.resolve() / "figures"
    assert context.metrics_path == run_dir.resolve() / "metrics.json"
    assert run_artifacts.list_figures(run_dir).empty
    assert run_artifacts.list_tables(run_dir).empty
    assert run_metrics.collect_metrics(run_dir) == {"parameters": {}}
    assert provenance.provenance(run_dir)["datasets"] == {}
    assert not run_dir.exists()
    created = run_folder.run_context(context)
    assert created is context
    for folder in ("figures", "tables", "metrics", "provenance"):
        assert (run_dir / folder).is_dir()


def test_metric_entries_per_dataset_keep_the_other_entries(tmp_path):
    from ecc_lib.data.policy import apply_data_policy
    from ecc_lib.embed.check import embedding_check
    from ecc_lib.runs.inputs import record_data_policy, record_embedding_check, recorded_policy
    from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes

    run_metrics.record_metric_entry(tmp_path, "data_policy", "a", {"n": 1})
    run_metrics.record_metric_entry(tmp_path, "data_policy", "b", {"n": np.int64(2)})
    run_metrics.record_metric_entry(tmp_path, "data_policy", "a", {"n": 3})
    assert run_metrics.collect_metrics(tmp_path)["data_policy"] == {"a": {"n": 3}, "b": {"n": 2}}

    data = make_repeated_outcomes(n_queries=8, n_models=3, n_rewrites=2, n_decodes=1)
    _, _, report = apply_data_policy(data.queries, data.outcomes, dataset="synth")
    record_data_policy(tmp_path, report)
    assert recorded_policy(tmp_path, "synth") == json.loads(json.dumps(report.to_dict()))
    assert set(run_metrics.collect_metrics(tmp_path)["data_policy"]) == {"a", "b", "synth"}

    vectors = np.eye(3, dtype=np.float32)
    check = embedding_check(
        vectors, ["x", "y", "z"], np.zeros(3, dtype=bool), text_view="auto", max_seq_length=256
    )
    record_embedding_check(tmp_path, "synth", check)
    recorded = run_metrics.collect_metrics(tmp_path)["embeddings"]["synth"]
    assert recorded["n_texts"] == 3 and recorded["n_duplicate_vectors"] == 0
