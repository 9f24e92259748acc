"""Input checks and small helpers shared by the ECC-family estimators.

:func:`check_comparisons`, :func:`check_embeddings` and :func:`check_mode` turn bad input into a
one-line error; :func:`labels_to_str` and :func:`log_missing_labels` read human labels (a missing
label becomes the category ``"<missing>"``); :func:`with_defaults` gives a subclass other
defaults without repeating its parent's parameter list.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import logging

import numpy as np
import pandas as pd

from ecc_lib.data.comparisons import Comparisons

logger = logging.getLogger(__name__)

MODES = ("both", "embedding", "probe")
"""How queries are assigned at prediction: embedding and probe, embedding only, probe only."""

MISSING_LABEL = "<missing>"
"""The category of a query without a human label."""


def check_comparisons(comparisons: Comparisons, what: str) -> None:
    """Raise unless ``comparisons`` is a :class:`Comparisons` of at least 2 models and 1 comparison.

    Parameters
    ----------
    comparisons : Comparisons
        The comparisons to check.
    what : str
        Names them in the message.

    Raises
    ------
    TypeError
        Not a :class:`Comparisons`.
    ValueError
        Fewer than 2 models or no comparison.
    """
    if not isinstance(comparisons, Comparisons):
        raise TypeError(f"{what} must be a Comparisons object, got {type(comparisons).__name__}")
    if comparisons.n_models < 2:
        raise ValueError(
            f"{what} hold {comparisons.n_models} model(s) {list(comparisons.models)}; at least 2 "
            "models are needed to compare models"
        )
    if len(comparisons) == 0:
        raise ValueError(f"{what} hold no comparisons: nothing to fit (were all pairs ties?)")


def check_mode(mode: str) -> None:
    """Raise unless ``mode`` is one of :data:`MODES`.

    Parameters
    ----------
    mode : str
        The mode to check.

    Raises
    ------
    ValueError
        An unknown mode.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")


_CHECKED: contextvars.ContextVar = contextvars.ContextVar("checked_embeddings", default=False)


@contextlib.contextmanager
def checked_embeddings():
    """Within the block, :func:`check_embeddings` checks shapes and dtype only: for a search whose
    arrays are all rows of embeddings it checked once (:class:`ecc_lib.ecc.cv.ECCCV`). Rows of
    finite unit rows are finite unit rows, so the results are the same arrays.

    Yields
    ------
    None
    """
    token = _CHECKED.set(True)
    try:
        yield
    finally:
        _CHECKED.reset(token)


def check_embeddings(embeddings, n_rows: int | None, dtype, *, what: str = "embeddings"):
    """``embeddings`` as a C-contiguous 2-D array of ``dtype`` with unit rows.

    Parameters
    ----------
    embeddings : array-like (n, d)
        The embeddings.
    n_rows : int or None
        The number of rows they must have (None: any).
    dtype : dtype
        The dtype of the result.
    what : str, default "embeddings"
        Names them in messages.

    Returns
    -------
    ndarray (n, d)
        Rows scaled to unit norm where a norm is off by more than 1e-3.

    Raises
    ------
    ValueError
        Not 2-D, another number of rows, a NaN or infinite value, or an all-zero row.
    """
    x = np.asarray(embeddings)
    if x.ndim != 2:
        raise ValueError(f"{what} must be a 2-D array (n_queries, dim), got shape {x.shape}")
    if n_rows is not None and x.shape[0] != n_rows:
        raise ValueError(
            f"{what} have {x.shape[0]} row(s) but the comparisons refer to {n_rows} queries; pass "
            "one embedding row per query, in the order of comparisons.query_ids"
        )
    x = np.ascontiguousarray(x, dtype=dtype)
    if _CHECKED.get():
        return x
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what} hold NaN or infinite values")
    norms = np.sqrt(np.einsum("ij,ij->i", x, x, dtype=np.float64))  # no (n, d) temporary
    if np.any(norms == 0):
        bad = int(np.flatnonzero(norms == 0)[0])
        raise ValueError(f"{what} row {bad} is all zeros; embeddings must have non-zero norm")
    if np.abs(norms - 1.0).max() > 1e-3:
        x = x / norms[:, None].astype(dtype)
    return x


def labels_to_str(labels, n: int) -> np.ndarray:
    """Labels as an object array of str; missing values (None, NaN, NA) become ``"<missing>"``.

    Parameters
    ----------
    labels : array-like
        One label per query.
    n : int
        The number of queries.

    Returns
    -------
    ndarray of object, shape (n,)

    Raises
    ------
    ValueError
        ``labels`` is not of shape ``(n,)``.
    """
    arr = np.asarray(labels, dtype=object)
    if arr.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), got {arr.shape}")
    if isinstance(labels, np.ndarray) and labels.dtype.kind == "U":  # str already, none missing
        return arr
    series = pd.Series(arr, dtype=object)
    missing = series.isna().to_numpy()
    out = series.astype(str).to_numpy(dtype=object)
    out[missing] = MISSING_LABEL
    return out


def log_missing_labels(labels: np.ndarray, who: str) -> None:
    """Log how many queries have no label (:func:`labels_to_str` made them ``"<missing>"``).

    Parameters
    ----------
    labels : ndarray of object
        Labels from :func:`labels_to_str`.
    who : str
        Names the estimator in the log.
    """
    n_missing = int((labels == MISSING_LABEL).sum())
    if n_missing:
        logger.info(
            "%s: %d queries without a label form the category %r", who, n_missing, MISSING_LABEL
        )


def with_defaults(init, **defaults):
    """``init`` (an estimator's ``__init__``) with other defaults for some of its parameters.

    scikit-learn reads an estimator's parameters from the signature of its ``__init__``
    (``get_params``, ``clone``); the returned function carries ``init``'s signature with the new
    defaults, so a subclass that only changes defaults does not repeat the parameter list.

    Parameters
    ----------
    init : callable
        The ``__init__`` to wrap (it takes ``self`` first).
    **defaults
        New default value by parameter name.

    Returns
    -------
    callable
        An ``__init__`` with the new defaults.
    """
    signature = inspect.signature(init)
    unknown = sorted(set(defaults) - set(signature.parameters))
    if unknown:
        raise TypeError(f"{init.__qualname__} has no parameter(s) {unknown}")
    signature = signature.replace(
        parameters=[
            p.replace(default=defaults[p.name]) if p.name in defaults else p
            for p in signature.parameters.values()
        ]
    )

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        init(*bound.args, **bound.kwargs)

    __init__.__signature__ = signature
    return __init__


__all__ = [
    "check_embeddings",
]
