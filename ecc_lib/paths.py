"""Every default location ecc_lib reads or writes, in one place.

ecc_lib runs two ways, and the defaults follow:

- **from a clone** (an editable install): the bundled data and notebooks are the repository's
  top-level ``data/`` and ``notebooks/``; run folders go to ``runs/`` and the embedding cache to
  ``.cache/embeddings`` at the repository root;
- **from a wheel** (``pip install ecc_lib``): the build copied ``data/`` and ``notebooks/`` into the
  package (``ecc_lib/_bundle/``, found through :mod:`importlib.resources`); run folders go to
  ``./runs`` of the current working directory and the embedding cache to the user's cache folder
  (``$XDG_CACHE_HOME/ecc_lib/embeddings``, default ``~/.cache/ecc_lib/embeddings``).

Each can be overridden with an environment variable, so that a user's clone, CI and notebooks all
agree on where things are without editing code.

``ECC_LIB_DATA_DIR``
    bundled datasets.
``ECC_LIB_NOTEBOOKS_DIR``
    the notebooks ``ecc-lab run`` executes (``ecc-lab run --notebooks DIR`` also sets it per run).
``ECC_LIB_CACHE_DIR``
    embedding cache written at run time.
``ECC_LIB_RUNS_DIR``
    pipeline run folders.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
BUNDLE = "_bundle"
"""Package folder that holds the copies of ``data/`` and ``notebooks/`` inside a wheel."""


def is_source_checkout() -> bool:
    """Whether ecc_lib is imported from a repository clone (top-level ``data/`` beside it).

    Returns
    -------
    bool
        True when the package directory sits in a clone with ``pyproject.toml``, ``data/`` and
        ``notebooks/`` next to it; False for an installed wheel.
    """
    return all((REPO_ROOT / name).exists() for name in ("pyproject.toml", "data", "notebooks"))


def _bundled(name: str, variable: str) -> Path:
    """``$variable``, else ``data/`` or ``notebooks/`` of this installation (clone or wheel)."""
    override = os.environ.get(variable)
    if override:
        return Path(override)
    if is_source_checkout():
        return REPO_ROOT / name
    return Path(str(resources.files("ecc_lib").joinpath(BUNDLE, name)))


def data_dir() -> Path:
    """Folder of the bundled datasets (one sub-folder per dataset).

    Returns
    -------
    Path
        ``$ECC_LIB_DATA_DIR``, else the clone's ``data/``, else the wheel's bundled copy.
    """
    return _bundled("data", "ECC_LIB_DATA_DIR")


def bundled_embeddings_dir() -> Path:
    """Read-only embedding caches shipped with the bundled datasets.

    Returns
    -------
    Path
        ``embeddings/`` inside :func:`data_dir`.
    """
    return data_dir() / "embeddings"


def cache_dir() -> Path:
    """Writable embedding cache for texts that are not in the shipped cache.

    Returns
    -------
    Path
        ``$ECC_LIB_CACHE_DIR``, else ``.cache/embeddings`` in a clone, else the user's cache folder.
    """
    override = os.environ.get("ECC_LIB_CACHE_DIR")
    if override:
        return Path(override)
    if is_source_checkout():
        return REPO_ROOT / ".cache" / "embeddings"
    user_cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(user_cache) / "ecc_lib" / "embeddings"


def runs_dir() -> Path:
    """Parent folder of pipeline runs.

    Returns
    -------
    Path
        ``$ECC_LIB_RUNS_DIR``, else ``runs/`` of the clone, else ``./runs`` of the working directory.
    """
    override = os.environ.get("ECC_LIB_RUNS_DIR")
    if override:
        return Path(override)
    return REPO_ROOT / "runs" if is_source_checkout() else Path.cwd() / "runs"


def notebooks_dir() -> Path:
    """The parameterised notebooks run by the pipeline.

    Returns
    -------
    Path
        ``$ECC_LIB_NOTEBOOKS_DIR``, else the clone's ``notebooks/``, else the wheel's bundled copy.
    """
    return _bundled("notebooks", "ECC_LIB_NOTEBOOKS_DIR")


__all__ = [
    "bundled_embeddings_dir",
]
