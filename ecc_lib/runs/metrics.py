"""Metrics records of a run folder: :func:`record_metrics` validates one section against the
metrics schema and writes ``metrics/SECTION.json``; :func:`collect_metrics` merges the fragments;
:func:`flatten_metrics`, :func:`headline_metrics` and :func:`get_metric` read them back. The folder
itself is :mod:`ecc_lib.runs.folder`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ecc_lib.metrics_schema import validate_section
from ecc_lib.runs.folder import RunContext, check_name, read_json, run_context, write_json
from ecc_lib.serialization import to_jsonable

HEADLINE_METRICS = (
    "ecc.ranking_quality_gain",
    "dars.winner_flip_rate",
    "dars.single_vs_distribution_disagreement",
    "routing.headline.score",
    "routing.headline.gap_closed",
    "routing.headline.dars_minus_single_shot_utility",
    "routing.headline.pareto_area",
)
"""Metric key prefixes of the report's headline table (``*_ci95`` siblings give the intervals)."""


def record_metrics(
    run_dir: str | os.PathLike | RunContext,
    section: str,
    mapping: Mapping[str, Any],
    *,
    parameters: Mapping[str, Any] | None = None,
) -> Path:
    """Write the headline numbers of one section as ``metrics/SECTION.json``.

    Parameters
    ----------
    run_dir : path or RunContext
    section : str
        Top-level key in ``metrics.json`` (``"data"``, ``"dars"``, ``"ecc"``, ``"routing"``).
        Each call replaces the section's fragment: record a section once, with all its numbers.
    mapping : mapping
        Nested mapping of numbers (numpy scalars and arrays are converted; NaN becomes null).
    parameters : mapping, optional
        The parameters that produced these numbers; stored under ``metrics.json["parameters"]``.

    Returns
    -------
    Path of the fragment.

    Raises
    ------
    ecc_lib.metrics_schema.MetricsSchemaError
        When the values break the metrics schema (the message names the key); nothing is
        written then.
    """
    context = run_context(run_dir)
    check_name(section)
    if section in ("parameters", "provenance"):
        raise ValueError(f"section name {section!r} is reserved")
    if not isinstance(mapping, Mapping):
        raise TypeError(f"metrics of section {section!r} must be a mapping")
    values = to_jsonable(mapping)
    validate_section(section, values)  # the written contract (ecc_lib/metrics_schema.json)
    path = context.metrics_dir / f"{section}.json"
    write_json(path, {"values": values, "parameters": dict(parameters or {})})
    return path


def record_metric_entry(
    run_dir: str | os.PathLike | RunContext, section: str, key: str, value: Any
) -> Path:
    """Set ``metrics.json[section][key]`` to ``value``, keeping the section's other keys.

    For sections that collect one entry per dataset (``data_policy``, ``embeddings``), written by
    whichever notebook loads that dataset.

    Parameters
    ----------
    run_dir : path or RunContext
        The run folder.
    section : str
        Top-level key in ``metrics.json``.
    key : str
        Key inside the section (a dataset label).
    value : object
        JSON-able value (converted as by :func:`record_metrics`).

    Returns
    -------
    Path
        The section's fragment.
    """
    context = run_context(run_dir)
    path = context.metrics_dir / f"{section}.json"
    values = read_json(path).get("values", {}) if path.exists() else {}
    values[str(key)] = value
    return record_metrics(context, section, values)


def collect_metrics(run_dir: str | os.PathLike | RunContext) -> dict:
    """Merge the fragments under ``metrics/`` into ``{section: values, "parameters": {...}}``.

    Parameters
    ----------
    run_dir : path or RunContext
        The run folder.

    Returns
    -------
    dict
    """
    context = run_context(run_dir, create=False)
    merged: dict[str, Any] = {"parameters": {}}
    if not context.metrics_dir.is_dir():
        return merged
    for path in sorted(context.metrics_dir.glob("*.json")):
        fragment = read_json(path)
        merged[path.stem] = fragment.get("values", {})
        merged["parameters"][path.stem] = fragment.get("parameters", {})
    return merged


def flatten_metrics(metrics: Mapping[str, Any], *, prefix: str = "") -> pd.DataFrame:
    """Nested metrics as a two-column table ``metric`` (dotted key), ``value`` (scalars only).

    Parameters
    ----------
    metrics : mapping
        Nested metrics (:func:`collect_metrics`).
    prefix : str, default ""
        Prepended to every key.

    Returns
    -------
    DataFrame
    """
    rows: list[tuple[str, Any]] = []

    def walk(node: Any, key: str) -> None:
        if isinstance(node, Mapping):
            for child in sorted(node, key=str):
                walk(node[child], f"{key}.{child}" if key else str(child))
        elif isinstance(node, list):
            rows.append((key, json.dumps(node)))
        else:
            rows.append((key, node))

    walk(metrics, prefix)
    return pd.DataFrame(rows, columns=["metric", "value"])


def headline_metrics(
    metrics: Mapping[str, Any], *, prefixes: Sequence[str] = HEADLINE_METRICS
) -> pd.DataFrame:
    """The headline numbers: ``metric``, ``value`` and ``ci95`` (from a ``*_ci95`` sibling).

    A metric ``a.b.c`` takes its interval from the first of ``a_ci95.b.c``, ``a.b_ci95.c``,
    ``a.b.c_ci95`` that exists, so ``ecc.ranking_quality_gain.ecc`` is paired with
    ``ecc.ranking_quality_gain_ci95.ecc`` and ``dars.winner_flip_rate`` with
    ``dars.winner_flip_rate_ci95``.

    Parameters
    ----------
    metrics : mapping
        Nested metrics (:func:`collect_metrics`).
    prefixes : sequence of str
        Dotted prefixes of the headline metrics.

    Returns
    -------
    DataFrame
        ``metric, value, ci95``.
    """
    flat = flatten_metrics(
        {k: v for k, v in metrics.items() if k not in ("parameters", "provenance")}
    )
    values = dict(zip(flat["metric"], flat["value"], strict=True))
    rows = []
    for prefix in prefixes:
        for key, value in values.items():
            if not (key == prefix or key.startswith(prefix + ".")):
                continue
            parts = key.split(".")
            siblings = (
                ".".join(parts[:i] + [parts[i] + "_ci95"] + parts[i + 1 :])
                for i in range(len(parts))
            )
            ci = next((values[name] for name in siblings if name in values), None)
            if ci is not None:
                bounds = json.loads(ci) if isinstance(ci, str) else ci
                ci = (
                    "[" + ", ".join("nan" if b is None else f"{float(b):.4g}" for b in bounds) + "]"
                )
            rows.append({"metric": key, "value": value, "ci95": ci})
    frame = pd.DataFrame(rows, columns=["metric", "value", "ci95"])
    return frame.drop_duplicates("metric").reset_index(drop=True)


def get_metric(metrics: Mapping[str, Any], dotted_key: str) -> Any:
    """The value at ``"ecc.ranking_quality_gain.over_global"``-style keys (KeyError names the key).

    Parameters
    ----------
    metrics : mapping
        Nested metrics (:func:`collect_metrics`).
    dotted_key : str
        Keys joined by dots.

    Returns
    -------
    object
    """
    node: Any = metrics
    for part in dotted_key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(f"metric {dotted_key!r} not found (missing part {part!r})")
        node = node[part]
    return node


__all__ = [
    "flatten_metrics",
    "record_metric_entry",
]
