"""The README and the user guide: short, generated where they could go stale, and building cleanly.

The parameter and figure tables are checked against the notebooks with a second, independent
reading (regular expressions over the raw cells, where the generator parses them with ``ast`` and
papermill), so a parameter or a figure that the notebooks have and the tables lack fails here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(ROOT / "scripts"))

import ecc_docs  # noqa: E402
import update_readme  # noqa: E402


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _declared_parameters(path: Path) -> list[str]:
    for cell in _cells(path):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            return re.findall(r"^(\w+)\s*(?::[^=]+)?=", "".join(cell["source"]), re.MULTILINE)
    raise AssertionError(f"{path.name} has no parameters cell")


def _saved_figures(path: Path) -> list[str]:
    names = []
    for cell in _cells(path):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        # run.save_figure(fig, NAME, ...): the notebook's run object
        for match in re.finditer(r"run\.save_figure\(\s*\w+,\s*(f?)\"([^\"]+)\"", source):
            names.append(re.sub(r"\{[^}]*\}", "DATASET", match.group(2)))
    return names


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the rest belongs in docs/guide/"


def test_readme_has_no_placeholders():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "<repository URL>" not in text
    assert not re.search(r"<[A-Z][A-Za-z ]+>", text), "a placeholder such as <URL> is left"


def test_readme_generated_blocks_are_current():
    current = (ROOT / "README.md").read_text(encoding="utf-8")
    assert update_readme.render(current) == current, "run python scripts/update_readme.py"


def test_readme_links_point_at_files():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        if "://" in target:
            continue
        assert (ROOT / target).exists(), f"README links to a missing file: {target}"


def test_generated_parameter_table_lists_every_notebook_parameter():
    page = ecc_docs.parameters_markdown()
    notebooks = ecc_docs.notebook_paths()
    assert len(notebooks) >= 6
    for path in notebooks:
        section = page.split(f"## {path.stem}\n", 1)[1].split("\n## ", 1)[0]
        for name in _declared_parameters(path):
            assert f"| `{name}` |" in section, f"{path.stem}: parameter {name} missing"


def test_generated_figure_table_lists_every_saved_figure():
    page = ecc_docs.figures_markdown()
    found = [name for path in ecc_docs.notebook_paths() for name in _saved_figures(path)]
    assert len(found) >= 20
    for name in found:
        assert f"| `{name}` |" in page, f"figure {name} missing from the generated list"


def test_committed_generated_pages_are_current():
    folder = DOCS / "guide" / "_generated"
    assert (folder / "parameters.md").read_text(encoding="utf-8") == ecc_docs.parameters_markdown()
    assert (folder / "figures.md").read_text(encoding="utf-8") == ecc_docs.figures_markdown()


def test_a_new_parameter_or_figure_shows_up(tmp_path):
    source = ROOT / "notebooks" / "00_tour.ipynb"
    notebook = json.loads(source.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            cell["source"] = "".join(cell["source"]) + "\nbrand_new: int = 3  # a new knob\n"
    notebook["cells"].append(
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": 'run_artifacts.save_figure(fig, run, "00_brand_new", caption="New.")',
        }
    )
    (tmp_path / "00_tour.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    assert "| `brand_new` | `3` | a new knob |" in ecc_docs.parameters_markdown(tmp_path)
    assert "| `00_brand_new` | 00_tour | New. |" in ecc_docs.figures_markdown(tmp_path)


def test_tour_in_the_guide_is_the_executed_notebook():
    def code(path):
        return ["".join(c["source"]) for c in _cells(path) if c["cell_type"] == "code"]

    guide = DOCS / "guide" / "tour.ipynb"
    assert code(guide) == code(ROOT / "notebooks" / "00_tour.ipynb"), (
        "docs/guide/tour.ipynb is stale: run python scripts/build_docs_tour.py"
    )
    outputs = [o for c in _cells(guide) if c["cell_type"] == "code" for o in c["outputs"]]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 3


def test_docs_build_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_nb")
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
        + [str(DOCS), str(tmp_path / "html")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    html = tmp_path / "html"
    assert "SoftmaxRankingRouter" in (html / "api" / "routing.html").read_text()
    tour = (html / "guide" / "tour.html").read_text()
    assert tour.count("<img") >= 3, "the tour renders without its figures"
    parameters = (html / "guide" / "_generated" / "parameters.html").read_text()
    assert "probe_evidence" in parameters and "scheduler" in parameters
    for page in html.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        external = re.findall(r"<script[^>]+src=\"(https?://[^\"]+)\"", text)
        assert not external, f"{page.name} loads {external}"
