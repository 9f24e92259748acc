"""Cost of a call: the API's reported cost when present, else tokens x a user price table.

Price table files (one row per model, prices in USD per one million tokens):

- CSV: columns ``model, input_per_1m, output_per_1m``;
- JSON or YAML: ``{model: {"input_per_1m": x, "output_per_1m": y}}``, ``{model: [x, y]}``, or a
  list of ``{"model": ..., "input_per_1m": ..., "output_per_1m": ...}`` records.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecc_lib._optional import require
from ecc_lib.data.schema import DataValidationError

logger = logging.getLogger(__name__)

PRICE_COLUMNS: tuple[str, ...] = ("model", "input_per_1m", "output_per_1m")
REPORTED_COST_FIELDS: tuple[str, ...] = ("cost", "total_cost", "cost_usd")
"""Fields of ``usage`` (then of the body) read as an API-reported cost in USD, first found wins."""


@dataclass(frozen=True)
class Price:
    """USD per one million input (prompt) and output (completion) tokens.

    Parameters
    ----------
    input_per_1m : float
        USD per million prompt tokens.
    output_per_1m : float
        USD per million completion tokens.
    """

    input_per_1m: float
    output_per_1m: float


def _number(value: Any, where: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise DataValidationError(f"{where}: price {value!r} is not a number") from None
    if not math.isfinite(number) or number < 0:
        raise DataValidationError(f"{where}: price {value!r} must be a finite number >= 0")
    return number


def _price(entry: Any, where: str) -> Price:
    if isinstance(entry, Mapping):
        missing = [c for c in PRICE_COLUMNS[1:] if c not in entry]
        if missing:
            raise DataValidationError(f"{where}: missing {missing}")
        return Price(
            _number(entry["input_per_1m"], f"{where} input_per_1m"),
            _number(entry["output_per_1m"], f"{where} output_per_1m"),
        )
    if isinstance(entry, (list, tuple)) and len(entry) == 2:
        return Price(_number(entry[0], f"{where} input"), _number(entry[1], f"{where} output"))
    raise DataValidationError(
        f"{where}: expected {{'input_per_1m': x, 'output_per_1m': y}} or [x, y], got {entry!r}"
    )


def _from_records(records: list, source: str) -> dict[str, Price]:
    table: dict[str, Price] = {}
    for row, record in enumerate(records):
        if not isinstance(record, Mapping) or "model" not in record:
            raise DataValidationError(f"{source}: row {row} has no 'model': {record!r}")
        model = str(record["model"])
        if model in table:
            raise DataValidationError(f"{source}: model '{model}' appears twice (row {row})")
        table[model] = _price(record, f"{source}: model '{model}' (row {row})")
    return table


def price_table(
    prices: Mapping | str | Path | None, *, source: str | None = None
) -> dict[str, Price]:
    """Normalise a price table given as a mapping, a list of records, or a file path.

    Parameters
    ----------
    prices : mapping, list of records, path or None
        ``{model: {"input_per_1m", "output_per_1m"}}``, records with a ``model`` column, or a
        CSV / JSON / YAML file.
    source : str, optional
        Named in error messages.

    Returns
    -------
    dict of str to Price
        Empty when ``prices`` is ``None``.

    Raises
    ------
    DataValidationError
        Unreadable format, missing columns, non-numeric or negative prices (naming the file and
        model).
    """
    if prices is None:
        return {}
    if isinstance(prices, (str, Path)):
        return read_price_table(prices)
    source = source or "prices"
    if isinstance(prices, list):
        return _from_records(prices, source)
    if isinstance(prices, Mapping):
        return {
            str(model): entry if isinstance(entry, Price) else _price(entry, f"{source}: '{model}'")
            for model, entry in prices.items()
        }
    raise DataValidationError(f"{source}: unsupported price table type {type(prices).__name__}")


def read_price_table(path: str | Path) -> dict[str, Price]:
    """Read a price table from CSV, JSON or YAML (chosen by extension).

    Parameters
    ----------
    path : str or Path
        A ``.csv``, ``.json``, ``.yaml`` or ``.yml`` file.

    Returns
    -------
    dict of str to Price
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"price table {path} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        import pandas as pd

        frame = pd.read_csv(path, dtype={"model": str})
        missing = [c for c in PRICE_COLUMNS if c not in frame.columns]
        if missing:
            raise DataValidationError(
                f"{path}: price table is missing column(s) {missing}; found {list(frame.columns)}"
            )
        return _from_records(frame[list(PRICE_COLUMNS)].to_dict("records"), str(path))
    if suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
    elif suffix in (".yaml", ".yml"):
        yaml = require("yaml", extra="collect", purpose="reading a YAML price table")
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    else:
        raise DataValidationError(f"{path}: price table must be .csv, .json, .yaml or .yml")
    if isinstance(data, (list, Mapping)):
        return price_table(data, source=str(path))
    raise DataValidationError(f"{path}: expected a mapping or a list of records")


MAX_REPORTED_COST_USD = 1000.0
"""Largest cost of one call taken from a reply (``usage.cost``); beyond it the figure is not a
price (``1e300``, issue 36) and the call is costed from the price table instead, with a warning."""


def reported_cost(body: Mapping) -> float | None:
    """The cost in USD an API reports in a response (``usage.cost`` as OpenRouter does), or None.

    A figure that is not a finite number in ``[0, MAX_REPORTED_COST_USD]`` is not taken (a warning
    names it above the cap).

    Parameters
    ----------
    body : mapping
        A chat-completions response body.

    Returns
    -------
    float or None
    """
    usage = body.get("usage")
    for container in (usage if isinstance(usage, Mapping) else {}, body):
        for name in REPORTED_COST_FIELDS:
            value = container.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                try:
                    number = float(value)
                except OverflowError:  # a many-digit integer
                    number = math.inf
                if number > MAX_REPORTED_COST_USD:
                    logger.warning(
                        "a reply reports %s = %.3g USD for one call, over %g: not taken as its "
                        "cost (costed from the price table instead)",
                        name,
                        number,
                        MAX_REPORTED_COST_USD,
                    )
                    continue
                if math.isfinite(number) and number >= 0:
                    return number
    return None


def call_cost(
    model: str,
    prompt_tokens: int | None,
    completion_tokens: int | None,
    reported: float | None,
    prices: Mapping[str, Price],
) -> tuple[float | None, str | None]:
    """Cost of one call and where it came from.

    Parameters
    ----------
    model : str
        Model called.
    prompt_tokens, completion_tokens : int or None
        Token counts of the call.
    reported : float or None
        Cost the API reported (:func:`reported_cost`).
    prices : mapping of str to Price
        Price table.

    Returns
    -------
    cost : float or None
        ``reported`` when not None; else ``prompt_tokens * input_per_1m / 1e6 + completion_tokens
        * output_per_1m / 1e6`` when the model is priced and both token counts are known; else None.
    source : {"api", "price_table", None}
    """
    if reported is not None:
        return float(reported), "api"
    price = prices.get(model)
    if price is None or prompt_tokens is None or completion_tokens is None:
        return None, None
    cost = (prompt_tokens * price.input_per_1m + completion_tokens * price.output_per_1m) / 1e6
    return cost, "price_table"


__all__: list[str] = []
