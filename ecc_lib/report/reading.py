"""What the report reads from a run: ``metrics.json`` flattened to dotted keys, the ``*_ci95``
interval of a key, the ``skipped`` sentences of a section, table rows for metrics no section builder
knows, and the CSV tables under ``tables/``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ecc_lib.report.formatting import (
    UNIT_TEXT,
    _finite,
    format_interval,
    format_mean_sd,
    guess_unit,
    humanise,
)
from ecc_lib.runs import folder as run_folder


def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as ``{dotted key: leaf}`` (lists stay leaves).

    Parameters
    ----------
    node : object
    prefix : str, default ""

    Returns
    -------
    dict
    """
    out: dict[str, Any] = {}
    if isinstance(node, Mapping):
        for key in node:
            out.update(flatten(node[key], f"{prefix}.{key}" if prefix else str(key)))
    else:
        out[prefix] = node
    return out


def ci_of(values: Mapping[str, Any], key: str) -> list[float] | None:
    """The ``*_ci95`` sibling of a dotted key, at any level (``a_ci95.b``, ``a.b_ci95``).

    Parameters
    ----------
    values : mapping
        Flattened metrics.
    key : str

    Returns
    -------
    list of float or None
    """
    parts = key.split(".")
    for i in range(len(parts) - 1, -1, -1):
        candidate = ".".join(parts[:i] + [parts[i] + "_ci95"] + parts[i + 1 :])
        found = values.get(candidate)
        if isinstance(found, list | tuple) and len(found) == 2:
            return list(found)
    if key + ".ci95" in values:
        return values[key + ".ci95"]
    return None


def skip_reasons(section: Any) -> dict[str, str]:
    """``{dotted key: sentence}`` of every ``skipped`` / ``*_skipped`` string in a section.

    Parameters
    ----------
    section : mapping or str

    Returns
    -------
    dict
    """
    if isinstance(section, str):
        return {"": section}
    reasons = {}
    for key, value in flatten(section).items():
        last = key.rsplit(".", 1)[-1]
        if isinstance(value, str) and value and (last == "skipped" or last.endswith("_skipped")):
            reasons[key] = value
    return reasons


def generic_rows(values: Mapping[str, Any], used: set[str], dataset: str) -> list[dict[str, str]]:
    """Rows for metrics with an interval or a mean/sd pair that no curated row has shown.

    Parameters
    ----------
    values : mapping
        Flattened section (:func:`flatten`).
    used : set of str
        Dotted keys (and prefixes) already shown.
    dataset : str

    Returns
    -------
    list of dict
        ``dataset``, ``measure``, ``estimate``, ``unit`` rows.
    """

    def is_used(key: str) -> bool:
        return any(key == u or key.startswith(u + ".") for u in used)

    def row(base: str, estimate: str, unit: str, suffix: str = "") -> dict[str, str]:
        return {
            "dataset": dataset,
            "measure": humanise(base) + suffix,
            "estimate": estimate,
            "unit": UNIT_TEXT.get(unit, ""),
        }

    rows = []
    for key, value in values.items():
        if is_used(key) or not _finite(value):
            continue
        unit = guess_unit(key)
        # mean and sd over seeds: x_mean / x_sd (x_n_seeds) or x.mean / x.sd (x.n)
        sep = "_" if key.endswith("_mean") else "." if key.endswith(".mean") else ""
        if sep:
            base = key[: -len(sep + "mean")]
            sd = values.get(base + sep + "sd")
            if sd is not None:
                n = next(
                    (
                        values[base + sep + k]
                        for k in ("n_seeds", "n")
                        if _finite(values.get(base + sep + k))
                    ),
                    None,
                )
                rows.append(
                    row(base, format_mean_sd(value, sd, unit, n), unit, " (mean over seeds)")
                )
            continue
        # {"estimate": x, "ci95": [low, high]}
        if key.endswith(".estimate"):
            base = key[: -len(".estimate")]
            rows.append(row(base, format_interval(value, values.get(base + ".ci95"), unit), unit))
            continue
        ci = ci_of(values, key)
        if ci is not None:
            rows.append(row(key, format_interval(value, ci, unit), unit))
    return rows


def _row(dataset: str, measure: str, estimate: str, unit: str = "") -> dict[str, str]:
    return {"dataset": dataset, "measure": measure, "estimate": estimate, "unit": unit}


def _frame(rows: list[dict[str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["dataset", "measure", "estimate", "unit"])


def _read_csv(run: run_folder.RunContext, name: str) -> pd.DataFrame | None:
    path = run.tables_dir / f"{name}.csv"
    if not path.exists():
        return None
    from ecc_lib.data.tables import read_csv_keeping_text

    # model and dataset names stay text: a model named NA, a dataset named 2024
    return read_csv_keeping_text(path)
