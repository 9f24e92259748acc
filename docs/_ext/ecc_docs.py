"""Pages of the user guide generated from the code, never written by hand.

* the parameter table of every notebook, read from its cell tagged ``parameters``
  (:func:`ecc_lib.runs.config.notebook_parameters`: name, default, comment);
* the figure list, read from every ``run.save_figure(fig, NAME, caption=...)`` call in the
  notebooks (the notebooks are the figure registry: a figure exists exactly where a notebook saves
  it, with the caption the report shows);
* the picture of the probe's leak used by the ECC protocol page.

:func:`write_generated` writes them under ``docs/guide/_generated/``; Sphinx calls it at
``builder-inited``, and ``tests/test_docs.py`` checks that every parameter and figure of the
notebooks is in the generated tables.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
GENERATED = ROOT / "docs" / "guide" / "_generated"

# How a placeholder of an f-string figure name reads in the table (``f"01_x_{label}"``).
PLACEHOLDER_NAMES = {"label": "DATASET", "dataset": "DATASET", "name": "DATASET"}


def notebook_paths(folder: Path = NOTEBOOKS) -> list[Path]:
    """The project's notebooks in run order."""
    return sorted(folder.glob("[0-9][0-9]_*.ipynb"))


def _code_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def _literal_text(node: ast.expr | None, unknown: str | None = None) -> str | None:
    """The text of a string literal or f-string, placeholders as ``DATASET``-style names (others
    as ``unknown``, or their expression in capitals)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                names = [n.id for n in ast.walk(value.value) if isinstance(n, ast.Name)]
                known = [PLACEHOLDER_NAMES[n] for n in names if n in PLACEHOLDER_NAMES]
                fallback = unknown if unknown is not None else ast.unparse(value.value).upper()
                parts.append(known[0] if known else fallback)
        return "".join(parts)
    if isinstance(node, ast.IfExp):  # a caption that depends on the data: both wordings
        body, orelse = _literal_text(node.body, unknown), _literal_text(node.orelse, unknown)
        if body is not None and orelse is not None:
            return f"{body} [or: {orelse}]"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal_text(node.left, unknown), _literal_text(node.right, unknown)
        if left is not None and right is not None:
            return left + right
    return None


def _is_run(node: ast.expr) -> bool:
    """Whether a call's receiver is the notebook's run object (``run``)."""
    return isinstance(node, ast.Name) and node.id == "run"


def notebook_figures(path: Path) -> list[dict[str, str]]:
    """Every ``save_figure`` call of a notebook: figure name and caption, in cell order."""
    figures = []
    for source in _code_cells(path):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            # run.save_figure(fig, NAME, ...) (a notebook's run) or save_figure(fig, run, NAME, ...)
            position = 1 if isinstance(func, ast.Attribute) and _is_run(func.value) else 2
            if name != "save_figure" or len(node.args) <= position:
                continue
            figure = _literal_text(node.args[position])
            if figure is None:
                raise ValueError(
                    f"{path.name}: save_figure name is not a literal: {ast.unparse(node)}"
                )
            caption = next(
                (_literal_text(k.value, "…") for k in node.keywords if k.arg == "caption"), None
            )
            figures.append({"figure": figure, "notebook": path.stem, "caption": caption or ""})
    seen, unique = set(), []
    for entry in figures:
        if entry["figure"] not in seen:
            seen.add(entry["figure"])
            unique.append(entry)
    return unique


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def parameters_markdown(folder: Path = NOTEBOOKS) -> str:
    """A MyST page: one table of parameters per notebook."""
    from ecc_lib.runs.config import notebook_parameters

    lines = [
        "# Notebook parameters",
        "",
        "Generated from each notebook's cell tagged `parameters` (name, default and the comment",
        "beside it). Set them in a configuration file (`ecc-lab run --config params.yaml`, keys by",
        "notebook number) or with papermill's `-p NAME VALUE`.",
        "",
    ]
    for path in notebook_paths(folder):
        lines += [f"## {path.stem}", "", "| parameter | default | meaning |", "|---|---|---|"]
        for name, info in notebook_parameters(path).items():
            default = _cell(repr(info["default"]))
            lines.append(f"| `{name}` | `{default}` | {_cell(info['help'])} |")
        lines.append("")
    return "\n".join(lines)


def figures_markdown(folder: Path = NOTEBOOKS) -> str:
    """A MyST page: every figure a notebook saves, with its caption."""
    lines = [
        "# Figures",
        "",
        "Generated from the `save_figure` calls of the notebooks. Every figure is written to",
        "`figures/NAME.png` (200 dpi) and `figures/NAME.pdf` of the run folder, with its caption in",
        "`figures/captions.json`; a figure whose content would be empty for the data is not written.",
        "`DATASET` stands for the dataset label.",
        "",
        "| figure | notebook | caption |",
        "|---|---|---|",
    ]
    for path in notebook_paths(folder):
        for entry in notebook_figures(path):
            lines.append(
                f"| `{entry['figure']}` | {entry['notebook']} | {_cell(entry['caption'])} |"
            )
    lines.append("")
    return "\n".join(lines)


def draw_probe_leak(path: Path) -> None:
    """The picture of the probe's leak: a probe "A beat B" with binary scores decides every
    scored pair that contains A or B; only the pairs disjoint from {A, B} are open."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scores = {"A": 1, "B": 0, "C": 1, "D": 0, "E": 1}
    fig, ax = plt.subplots(figsize=(7.0, 2.6), layout="constrained")
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 3.2)
    ax.axis("off")
    ax.text(
        0.1,
        2.85,
        "probe of a test query: A beat B  (binary scores: A = 1, B = 0)",
        fontsize=10,
        weight="bold",
    )
    pairs = [("A", "C"), ("A", "D"), ("B", "C"), ("B", "E"), ("C", "D"), ("D", "E")]
    for i, (a, b) in enumerate(pairs):
        x = 0.3 + i * 1.6
        touching = a in "AB" or b in "AB"
        color = "#d95f02" if touching else "#1b9e77"
        ax.add_patch(plt.Rectangle((x, 1.1), 1.35, 1.1, color=color, alpha=0.18))
        ax.text(x + 0.67, 1.85, f"{a} vs {b}", ha="center", fontsize=10)
        if touching:
            known = a if a in "AB" else b
            reading = f"{known} = {scores[known]}:\ndecided by\nthe probe"
        else:
            reading = "open:\nthe probe\nsays nothing"
        ax.text(x + 0.67, 1.2, reading, ha="center", fontsize=7.5, color=color)
    ax.text(
        0.1,
        0.55,
        "touching the probe's models (orange): a method that reads the probe "
        "scores them almost for free",
        fontsize=8.5,
        color="#d95f02",
    )
    ax.text(
        0.1,
        0.15,
        "disjoint from the probe's models (green): the honest reading of what "
        "the clustering learned",
        fontsize=8.5,
        color="#1b9e77",
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)


def write_generated(folder: Path = GENERATED) -> list[Path]:
    """Write the generated pages (and the picture) under ``folder``; return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (
        ("parameters.md", parameters_markdown()),
        ("figures.md", figures_markdown()),
    ):
        target = folder / name
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
        written.append(target)
    picture = folder / "probe_leak.png"
    if not picture.exists():
        draw_probe_leak(picture)
    written.append(picture)
    return written


def _on_builder_inited(app) -> None:
    write_generated()


def setup(app):
    """Sphinx entry point: generate the pages before reading the sources."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    app.connect("builder-inited", _on_builder_inited)
    return {"parallel_read_safe": True, "version": "1"}
