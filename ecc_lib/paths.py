"""Every default location ecc_lib reads or writes, in one place.

Each can be overridden with an environment variable, so that a user's clone, CI and notebooks all
agree on where things are without editing code.

``ECC_LIB_DATA_DIR``
    bundled datasets (default: ``data/`` at the repository root).
``ECC_LIB_CACHE_DIR``
    embedding cache written at run time (default: ``.cache/embeddings`` at the repository root).
``ECC_LIB_RUNS_DIR``
    pipeline run folders (default: ``runs/`` at the repository root).
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent


def data_dir() -> Path:
    """Folder of the bundled datasets (one sub-folder per dataset)."""
    return Path(os.environ.get("ECC_LIB_DATA_DIR", REPO_ROOT / "data"))


def bundled_embeddings_dir() -> Path:
    """Read-only embedding caches shipped with the bundled datasets."""
    return data_dir() / "embeddings"


def cache_dir() -> Path:
    """Writable embedding cache for texts that are not in the shipped cache."""
    return Path(os.environ.get("ECC_LIB_CACHE_DIR", REPO_ROOT / ".cache" / "embeddings"))


def runs_dir() -> Path:
    """Parent folder of pipeline runs."""
    return Path(os.environ.get("ECC_LIB_RUNS_DIR", REPO_ROOT / "runs"))


def notebooks_dir() -> Path:
    """The parameterised notebooks run by the pipeline."""
    return REPO_ROOT / "notebooks"
