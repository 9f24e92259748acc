"""Build hook: copy the top-level ``data/`` and ``notebooks/`` into the package at build time.

The repository keeps ``data/`` and ``notebooks/`` at the top level (one copy, the one people edit);
a wheel must carry them inside the package, where :mod:`ecc_lib.paths` finds them through
:mod:`importlib.resources` as ``ecc_lib/_bundle/{data,notebooks}``. Everything else about the
package is declared in ``pyproject.toml``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
BUNDLED = {
    # folder: glob patterns copied (recursively) into ecc_lib/_bundle/<folder>
    "data": ("**/*.parquet", "**/*.npz", "**/LICENSE", "**/BUILD.json", "README.md"),
    "notebooks": ("[0-9][0-9]_*.ipynb", "params.example.yaml"),
}


class BuildWithBundle(build_py):
    """``build_py`` that also copies the bundled data and notebooks into the build tree."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return  # an editable install reads data/ and notebooks/ from the clone itself
        for folder, patterns in BUNDLED.items():
            source = ROOT / folder
            if not source.is_dir():
                raise FileNotFoundError(f"cannot build a complete package: {source} is missing")
            target = Path(self.build_lib) / "ecc_lib" / "_bundle" / folder
            for pattern in patterns:
                for path in sorted(source.glob(pattern)):
                    if path.is_file() and ".ipynb_checkpoints" not in path.parts:
                        destination = target / path.relative_to(source)
                        destination.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(path, destination)


setup(cmdclass={"build_py": BuildWithBundle})
