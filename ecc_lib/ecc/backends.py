"""Data backends of the EM engine: where else than in memory an ECC-family fit can run.

A backend's module registers itself (:func:`register_data_backend`; ``ecc_lib.distributed`` for
Dask) and is imported only when an array of its package is passed to a fit
(:func:`data_backend`); :func:`in_memory_fits` keeps the fits inside a block in memory."""

from __future__ import annotations

import contextlib
import contextvars
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class DataBackend:
    """Where else than in memory an ECC-family fit can run (registered by the backend's module).

    Attributes
    ----------
    name : str
        The backend (``"dask"``).
    claims : callable
        ``claims(embeddings) -> bool``: whether this fit runs on the backend (for Dask: inside
        ``ecc_lib.distributed.use_dask`` or on a dask array).
    fit : callable
        ``fit(estimator, embeddings, comparisons) -> estimator``: the fit on the backend.
    """

    name: str
    claims: Callable[[object], bool]
    fit: Callable


_DATA_BACKENDS: dict[str, DataBackend] = {}
_BACKEND_MODULES = {"dask": "ecc_lib.distributed"}
"""Module that registers the backend for arrays of a package (imported only when such an array
is passed, like a plug-in: this module never imports it otherwise)."""


def register_data_backend(name: str, claims: Callable[[object], bool], fit: Callable) -> None:
    """Register a data backend of the EM engine (see :class:`DataBackend`); a name registered
    again replaces the earlier one.

    Parameters
    ----------
    name : str
    claims : callable
        ``claims(embeddings) -> bool``.
    fit : callable
        ``fit(estimator, embeddings, comparisons) -> estimator``.
    """
    _DATA_BACKENDS[str(name)] = DataBackend(str(name), claims, fit)


_BACKENDS_OFF: contextvars.ContextVar[bool] = contextvars.ContextVar("_BACKENDS_OFF", default=False)


@contextlib.contextmanager
def in_memory_fits() -> Iterator[None]:
    """Run the ECC-family fits inside the block in memory, even where a data backend would claim
    them (inside ``ecc_lib.distributed.use_dask``).

    For estimators whose fit is not partitioned (``LabelInformedECC``): their fit is the in-memory
    one, while the rest of a ``--scheduler`` run stays on the backend.

    Yields
    ------
    None
    """
    token = _BACKENDS_OFF.set(True)
    try:
        yield
    finally:
        _BACKENDS_OFF.reset(token)


def is_backend_array(embeddings) -> bool:
    """Whether ``embeddings`` is an array of a package with a backend module (a dask array).

    Parameters
    ----------
    embeddings : object

    Returns
    -------
    bool
    """
    return type(embeddings).__module__.partition(".")[0] in _BACKEND_MODULES


def data_backend(embeddings) -> DataBackend | None:
    """The registered backend that claims this fit, or None (in memory).

    Nothing is imported for in-memory arrays; an array of a package with a backend module (a dask
    array) imports that module, which registers itself.

    Parameters
    ----------
    embeddings : object
        The fit's embeddings.

    Returns
    -------
    DataBackend or None
    """
    if _BACKENDS_OFF.get() and not is_backend_array(embeddings):
        return None
    package = type(embeddings).__module__.partition(".")[0]
    if package in _BACKEND_MODULES and package not in _DATA_BACKENDS:
        importlib.import_module(_BACKEND_MODULES[package])
    return next((b for b in _DATA_BACKENDS.values() if b.claims(embeddings)), None)


__all__: list[str] = []
