"""Thin notebooks (issue 33): one run object per notebook, whose recorded parameters come from the
notebook's parameters cell, never from a dict typed by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from ecc_lib import paths
from ecc_lib.runs import folder as run_folder
from ecc_lib.runs.config import notebook_parameters
from ecc_lib.runs.notebook import NotebookRun, open_run

NOTEBOOKS = sorted(paths.notebooks_dir().glob("0*.ipynb"))


def _code(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join(
        "".join(c["source"])
        for c in cells
        if c["cell_type"] == "code" and "parameters" not in c.get("metadata", {}).get("tags", [])
    )


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_that_records_opens_its_run_and_types_no_parameters(notebook):
    code = _code(notebook)
    if "record(" not in code and "record_metrics(" not in code:
        pytest.skip("records no section")
    assert f'open_run(run_dir, "{notebook.stem}", globals())' in code
    assert 'parameters={"' not in code and "record_metrics(" not in code  # no dict typed by hand


def test_open_run_records_the_declared_parameters(tmp_path):
    declared = notebook_parameters(paths.notebooks_dir() / "04_routing.ipynb")
    namespace = {name: spec["default"] for name, spec in declared.items()}
    run = open_run(tmp_path / "run", "04_routing", namespace)
    assert isinstance(run, run_folder.RunContext) and run.figures_dir.is_dir()
    expected = {k: v for k, v in namespace.items() if k not in ("run_dir", "embedder")}
    assert {k: v for k, v in run.parameters.items() if k != "embedding_model"} == expected
    from ecc_lib.embed.models import canonical_model_name

    assert run.parameters["embedding_model"] == canonical_model_name(namespace["embedder"])
    run.save_table(pd.DataFrame({"a": [1]}), "04_x")
    assert (run.tables_dir / "04_x.csv").is_file()
    run.record("routing", {"dataset": "d"}, drop=("cost_routers",), n_runs=5)
    recorded = json.loads((run.metrics_dir / "routing.json").read_text())
    params = recorded.get("parameters", recorded)
    assert params["n_runs"] == 5 and "cost_routers" not in params and "run_dir" not in params


def test_open_run_names_a_parameter_the_namespace_lacks(tmp_path):
    with pytest.raises(KeyError, match="'seed'"):
        open_run(tmp_path / "run", "00_tour", {"n_queries": 10})


def test_a_notebook_run_is_a_run_folder_for_every_library_call(tmp_path):
    run = NotebookRun(tmp_path / "r", notebook="x").create()
    assert run_folder.run_context(run) is run


def test_the_notebook_logic_lives_in_the_library():
    """What notebook 03 computed itself (a second protocol run for the leak-free probes, renamed
    gain columns) are calls of the result."""
    from ecc_lib.ecc.estimator import ECC
    from ecc_lib.protocol.results import run_ecc
    from ecc_lib.protocol.settings import Protocol
    from ecc_lib.synthetic.capability import make_capability_data

    data = make_capability_data(n_queries=200, n_models=5, random_state=2)
    args = (data.queries, data.outcomes, data.embeddings)
    result = run_ecc(
        *args,
        protocol=Protocol(n_boot=50),
        estimator=ECC(n_clusters=3, max_iter=20),
        methods=("global", "ecc", "emb_only"),
    )
    coverage = result.leak_free_coverage(*args)
    direct = run_ecc(
        *args,
        protocol=Protocol(n_boot=50, leak_free=True),
        estimator=ECC(n_clusters=3, max_iter=20),
        methods=("global", "ecc", "emb_only"),
    ).first.probe_coverage
    assert json.dumps(coverage, sort_keys=True) == json.dumps(direct, sort_keys=True)
    assert coverage["n_with_probe"] + coverage["n_without_probe"] == result.first.n_test
    table = result.first.table()
    disjoint = result.first.gains("disjoint")
    assert list(disjoint.columns) == ["method", "gain_pct", "gain_low", "gain_high"]
    assert disjoint["gain_pct"].tolist() == table["gain_disjoint_pct"].tolist()
    with pytest.raises(ValueError, match="reading"):
        result.first.gains("probe")
