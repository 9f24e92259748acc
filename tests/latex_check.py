"""Compile LaTeX tables in the tests: with pdflatex when it is installed (``make test`` installs a
small TeX Live subset when it is missing), else with ecc_lib's pure-Python checker, which enforces
the same rules (:func:`ecc_lib.report.latex.latex_problems`)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

PDFLATEX = shutil.which("pdflatex")
# \tracinglostchars=3 makes a character missing from the font an error, not a log line
DOCUMENT = (
    "\\documentclass{article}\n\\usepackage{booktabs}\n\\tracinglostchars=3\n"
    "\\begin{document}\n%s\n\\end{document}\n"
)


def assert_latex_tables_compile(tables: Iterable[str | Path]) -> str:
    """Compile every table (a ``.tex`` path or LaTeX text) in one document; raise naming the error.

    Returns ``"pdflatex"`` or ``"python"``: which check ran.
    """
    texts = [Path(t).read_text(encoding="utf-8") if isinstance(t, Path) else t for t in tables]
    assert texts, "no LaTeX table to compile"
    from ecc_lib.report.latex import latex_problems

    for text in texts:
        problems = latex_problems(text)
        assert not problems, f"{problems} in\n{text}"
    if PDFLATEX is None:
        return "python"
    assert_pdflatex_compiles(texts)
    return "pdflatex"


def assert_pdflatex_compiles(texts: list[str]) -> None:
    """Compile LaTeX fragments (tables, table environments) with pdflatex in one document."""
    assert PDFLATEX is not None, "pdflatex is not installed"
    with tempfile.TemporaryDirectory() as folder:
        for i, text in enumerate(texts):
            Path(folder, f"table{i}.tex").write_bytes(text.encode("utf-8"))
        body = "\n".join(f"\\input{{table{i}.tex}}\\clearpage" for i in range(len(texts)))
        Path(folder, "doc.tex").write_text(DOCUMENT % body, encoding="utf-8")
        done = subprocess.run(
            [PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "doc.tex"],
            cwd=folder,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=120,
        )
        errors = [line for line in done.stdout.splitlines() if line.startswith("!")]
        assert done.returncode == 0 and not errors, (
            f"pdflatex failed: {errors or done.stdout[-2000:]}\n" + "\n----\n".join(texts)
        )
