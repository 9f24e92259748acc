"""Every code block of the README and the user guide, executed on the bundled data.

* ``python`` blocks run in a fresh interpreter;
* ``bash`` blocks run in bash, in order, with ``ecc-lab`` and ``papermill`` on the PATH (the
  interpreter running the tests), from a scratch folder that links ``data/`` and ``notebooks/``;
  an ``ecc-lab collect`` against the local model's address is sent to the fake OpenAI server;
* ``yaml`` blocks are read as ``ecc-lab run`` configuration files and validated against the
  notebooks' parameters.

Lines that cannot run inside a test are checked instead, each in its own way: ``make TARGET`` (the
target exists; ``make test`` is this suite and ``make run`` its notebooks), ``pip install`` (the
extras and the torch pin exist), long-running services (``dask scheduler``, ``dask worker``,
``jupyter lab``) and commands that need a service at a placeholder address (``tcp://HOST``).
Blocks marked ``text`` are listings (folder trees, synopses), not code.

Blocks of the guide that run notebooks or the ECC protocol are marked slow (``make test-all``);
the README's and the guide's quick ones run in every ``make test``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

from fake_openai_server import FakeOpenAIServer  # noqa: E402

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PAGES += sorted(p for p in (ROOT / "docs" / "guide").glob("*.md"))
FENCE = re.compile(r"^```(\{[^}\n]*\}|\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
LOCAL_MODEL_URL = "http://127.0.0.1:8089/v1"
SERVICES = ("dask scheduler", "dask worker", "jupyter lab", ".venv/bin/jupyter lab")
CHECKED_PREFIXES = ("make ", "pip install ", "python -m venv", ". env/bin/activate", "conda ")
SLOW_MARKERS = (
    "ecc-lab run",
    "ecc-lab ecc",
    "ecc-lab map",
    "ecc-lab bench",
    "ecc-lab collect",
    "papermill ",
    "--scheduler local",
    "run_seeds(",
    "run_ecc(",
    "ECCCV(",
    "ecc-lab train-router",
    "train_deployed(",
)


CONTINUES = "# continues the Python above"
"""First line of a Python block that continues the page's earlier Python blocks (one session, as
in a notebook): it runs after them."""


def code_blocks() -> list[tuple[Path, int, str, str]]:
    """(page, index, language, code) of every fenced block; a block that starts with
    :data:`CONTINUES` carries the page's earlier Python blocks before its own code."""
    blocks = []
    for page in PAGES:
        session = ""
        for i, match in enumerate(FENCE.finditer(page.read_text(encoding="utf-8"))):
            if match.group(1).startswith("{"):
                continue  # a MyST directive such as {toctree}, not code
            language, code = match.group(1) or "", match.group(2)
            if language == "python":
                if code.startswith(CONTINUES):
                    code = session + code
                session = code if code.startswith(session) else session + code
            blocks.append((page, i, language, code))
    return blocks


def _param(block):
    page, index, language, code = block
    slow = page.name != "README.md" and any(m in code for m in SLOW_MARKERS)
    marks = [pytest.mark.slow] if slow else []
    return pytest.param(block, id=f"{page.relative_to(ROOT)}#{index}-{language}", marks=marks)


BLOCKS = code_blocks()


def test_every_block_has_a_known_language():
    unknown = [
        (p.name, i, lang)
        for p, i, lang, _ in BLOCKS
        if lang not in ("python", "bash", "yaml", "text")
    ]
    assert not unknown, f"name the block's language (python, bash, yaml or text): {unknown}"


def logical_lines(code: str) -> list[str]:
    """Shell lines with continuations joined and comments dropped."""
    lines, current = [], ""
    for raw in code.splitlines():
        current += raw.rstrip("\\").rstrip() + " " if raw.rstrip().endswith("\\") else raw
        if not raw.rstrip().endswith("\\"):
            if current.strip():
                lines.append(current.strip())
            current = ""
    return lines


def _without_comment(line: str) -> str:
    return shlex.join(shlex.split(line, comments=True)) if line else line


def check_unrunnable(line: str) -> bool:
    """Check a line that cannot run inside a test; True when it was such a line."""
    command = _without_comment(line)
    if command.startswith("make "):
        target = command.split()[1]
        makefile = (ROOT / "Makefile").read_text()
        assert re.search(rf"^{re.escape(target)}:", makefile, re.MULTILINE), (
            f"no make target {target}"
        )
        return True
    if command.startswith("pip install "):
        pyproject = (ROOT / "pyproject.toml").read_text()
        for extras in re.findall(r"\[([a-z,\-]+)\]", command):
            for extra in extras.split(","):
                assert re.search(rf"^{extra} = \[", pyproject, re.MULTILINE), f"no extra [{extra}]"
        for pin in re.findall(r"torch==[\d.]+", command):
            assert pin in (ROOT / "Makefile").read_text(), f"{pin} is not the Makefile's torch"
        return True
    if command.startswith(CHECKED_PREFIXES) or command.startswith(SERVICES):
        return True
    return "tcp://HOST" in command


@pytest.fixture
def scratch(tmp_path):
    for name in ("data", "notebooks"):
        (tmp_path / name).symlink_to(ROOT / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, module in (("ecc-lab", "ecc_lib"), ("papermill", "papermill"), ("python", None)):
        shim = bin_dir / name
        target = f'-m {module} "$@"' if module else '"$@"'
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" {target}\n')
        shim.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["MPLBACKEND"] = "Agg"
    env["ECC_LIB_RUNS_DIR"] = str(tmp_path / "runs")  # run folders stay in the scratch folder
    return tmp_path, env


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_code_block_runs(block, scratch):
    page, index, language, code = block
    folder, env = scratch
    where = f"{page.relative_to(ROOT)} block {index}"
    if language == "text":
        return
    if language == "python":
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"{where}:\n{done.stderr[-3000:]}"
        return
    if language == "yaml":
        from ecc_lib.runs.config import (
            discover_notebooks,
            load_config,
            notebook_parameters,
            resolve_parameters,
        )

        config_file = folder / "config.yaml"
        config_file.write_text(code)
        notebooks = discover_notebooks(ROOT / "notebooks")
        declared = {path.stem: notebook_parameters(path) for path in notebooks}
        resolved = resolve_parameters(notebooks, load_config(config_file), declared)
        assert resolved, f"{where}: the configuration sets nothing"
        return
    runnable = [line for line in logical_lines(code) if not check_unrunnable(line)]
    if not runnable:
        return
    script = "set -euo pipefail\n" + "\n".join(runnable) + "\n"
    if LOCAL_MODEL_URL in script:
        with FakeOpenAIServer() as server:
            script = script.replace(LOCAL_MODEL_URL, server.base_url)
            done = subprocess.run(
                ["bash", "-c", script],
                cwd=folder,
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
            )
    else:
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    assert done.returncode == 0, f"{where}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
