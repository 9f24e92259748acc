"""Execute ``notebooks/00_tour.ipynb`` into ``docs/guide/tour.ipynb`` for the user guide, and copy
its recovery figure to ``docs/img/recovery.png`` for the README.

The guide renders this executed copy as it is (``nb_execution_mode = "off"``): Sphinx executes
nothing. Rerun after changing the tour; ``tests/test_docs.py`` fails while the copy's code differs
from the notebook's. Run folder output goes to a temporary folder and is thrown away.

Usage: python scripts/build_docs_tour.py
"""

from __future__ import annotations

import base64
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "notebooks" / "00_tour.ipynb"
TARGET = ROOT / "docs" / "guide" / "tour.ipynb"
README_FIGURE = ROOT / "docs" / "img" / "recovery.png"  # the README's one figure


def _show_saved_figures(cell: dict, figures: Path) -> None:
    """Append the PNG of every figure a code cell saved and did not display inline."""
    if cell["cell_type"] != "code":
        return
    shown = any("image/png" in o.get("data", {}) for o in cell.get("outputs", []))
    names = re.findall(r'save_figure\([^,]+,\s*run,\s*"([^"]+)"', "".join(cell["source"]))
    if shown or not names:
        return
    for name in names:
        png = base64.b64encode((figures / f"{name}.png").read_bytes()).decode("ascii")
        cell["outputs"].insert(
            0, {"output_type": "display_data", "metadata": {}, "data": {"image/png": png}}
        )


def main() -> int:
    """Execute the tour with its default parameters and write the cleaned copy."""
    import papermill

    with tempfile.TemporaryDirectory() as tmp:
        executed = Path(tmp) / "00_tour.ipynb"
        papermill.execute_notebook(
            str(SOURCE),
            str(executed),
            parameters={"run_dir": tmp},
            kernel_name="python3",
            progress_bar=False,
        )
        notebook = json.loads(executed.read_text(encoding="utf-8"))
        README_FIGURE.parent.mkdir(parents=True, exist_ok=True)
        README_FIGURE.write_bytes((Path(tmp) / "figures" / "00_recovery.png").read_bytes())
        for cell in notebook["cells"]:
            _show_saved_figures(cell, Path(tmp) / "figures")
    cells = []
    for cell in notebook["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if "injected-parameters" in tags:
            continue  # the temporary run folder is no part of the guide
        cell["metadata"] = {"tags": tags} if tags else {}
        if cell["cell_type"] == "code":
            cell["execution_count"] = None
            for output in cell.get("outputs", []):
                output.pop("execution_count", None)
                if output.get("output_type") == "execute_result":
                    output["output_type"] = "display_data"
        cells.append(cell)
    notebook["cells"] = cells
    notebook["metadata"] = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
