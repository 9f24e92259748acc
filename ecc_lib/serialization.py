"""The package's one JSON converter: numpy/pandas values to JSON types, NaN to ``null``."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

SIGNIFICANT_DIGITS = 10
"""Floats are rounded to this many significant digits, so that reruns compare equal as text."""


def to_jsonable(value: Any) -> Any:
    """``value`` with numpy/pandas scalars and arrays turned into JSON types.

    Floats are rounded to 10 significant digits; NaN and infinities become ``None``.

    Parameters
    ----------
    value : object
        Nested mappings, sequences, numpy or pandas values, paths, plain scalars.

    Returns
    -------
    object
        The same structure built from dict, list, str, int, float, bool and None.
    """
    if isinstance(value, Mapping):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [to_jsonable(item) for item in items]
    if isinstance(value, np.ndarray):
        return [to_jsonable(item) for item in value.tolist()]
    if isinstance(value, pd.Series):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if not math.isfinite(number):
            return None
        return float(f"{number:.{SIGNIFICANT_DIGITS}g}")
    if value is None or value is pd.NA or isinstance(value, str):
        return None if value is pd.NA else value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"cannot store a {type(value).__name__} in metrics JSON: {value!r}")


__all__: list[str] = []
