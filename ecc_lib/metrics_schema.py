"""The written contract of ``metrics.json``: a versioned JSON Schema shipped in the package.

``metrics_schema.json`` (next to this module) gives every key of ``metrics.json`` its type, its
unit (the non-standard keyword ``unit``: a code of :data:`ecc_lib.grammar.UNITS`, the one unit
vocabulary, which gives the code its words: ``"pct_nll"``, ``"pp"``, ``"share"``, ``"score"``,
``"nats"``, ``"count"`` ..., ``"plain"`` for words and flags, ``"inherit"`` for the unit of the
nearest enclosing key) and its meaning (``description``). Sections keyed by dataset, method, router or setting names hold those names
under ``additionalProperties``.

:func:`validate_metrics` checks a whole ``metrics.json``, :func:`validate_section` one section;
:func:`ecc_lib.runs.metrics.record_metrics` and :func:`ecc_lib.runs.provenance.write_metrics` call them on
every write, so a wrong type of a described key is refused with a message naming the key; a key
the schema does not describe is recorded with a log warning naming it. ``strict=True`` (what the
tests use on the producers' output and on a pipeline run) also refuses undescribed keys and missing
required ones, as JSON Schema itself does. The validator is a small
one for the subset of JSON Schema the file uses (``type``, ``properties``,
``additionalProperties``, ``items``, ``minItems``, ``maxItems``, ``enum``, ``required``,
``anyOf``, local ``$ref``), so the core install needs no ``jsonschema`` package; the tests check the
file against the full Draft 2020-12 meta-schema with ``jsonschema``.

:func:`metric_unit` reads a key's unit, for prose: ``metric_unit("ecc.ranking_quality_gain.ecc")``
is ``"pct_nll"``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

logger = logging.getLogger(__name__)
SCHEMA_FILE = "metrics_schema.json"
_INHERIT = "inherit"
"""The unit code of a key whose unit is its nearest enclosing key's."""

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list, tuple),
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
}


class MetricsSchemaError(ValueError):
    """A metrics value does not follow the schema (the message names the key)."""


@lru_cache(maxsize=1)
def metrics_schema() -> dict:
    """The JSON Schema of ``metrics.json`` (read once from the package).

    Returns
    -------
    dict
    """
    text = resources.files("ecc_lib").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def schema_version() -> str:
    """The schema's version (``"MAJOR.MINOR.PATCH"``; a major step breaks readers).

    Returns
    -------
    str
    """
    return str(metrics_schema()["version"])


def _resolve(node: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """``node`` with a local ``$ref`` replaced by its target (sibling keywords kept on top)."""
    while "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise ValueError(f"only local $ref are supported, got {ref!r}")
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _type_ok(value: Any, types: Any) -> bool:
    names = [types] if isinstance(types, str) else list(types)
    for name in names:
        if name in ("number", "integer") and isinstance(value, bool):
            continue
        if name == "integer" and isinstance(value, float) and value.is_integer():
            return True
        if isinstance(value, _TYPES[name]):
            return True
    return False


def _kind(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _type_ok(value, name):
            return name
    return type(value).__name__


def schema_errors(
    value: Any,
    node: Mapping[str, Any],
    path: str,
    root: Mapping[str, Any],
    *,
    strict: bool = True,
    unknown: list | None = None,
) -> list:
    """Every place where ``value`` breaks ``node``, as ``"path: message"`` lines.

    Parameters
    ----------
    value : JSON value
    node : mapping
        A (sub)schema.
    path : str
        Dotted key of ``value`` (``""`` at the top).
    root : mapping
        The whole schema (for ``$ref``).
    strict : bool, default True
        Also refuse keys the schema does not describe (``additionalProperties: false``) and
        missing ``required`` keys, as JSON Schema does. With ``strict=False`` only the keys the
        schema describes are checked; the others are appended to ``unknown``.
    unknown : list, optional
        Collects the dotted keys the schema does not describe (``strict=False``).

    Returns
    -------
    list of str
    """
    node = _resolve(node, root)
    where = path or "metrics.json"
    if "anyOf" in node:
        branches = [
            schema_errors(value, sub, path, root, strict=strict, unknown=unknown)
            for sub in node["anyOf"]
        ]
        if all(branches):
            return min(branches, key=len)
    if "type" in node and not _type_ok(value, node["type"]):
        want = node["type"] if isinstance(node["type"], str) else " or ".join(node["type"])
        return [f"{where}: expected {want}, got {_kind(value)} {value!r:.60}"]
    if "enum" in node and value not in node["enum"]:
        return [f"{where}: {value!r} is not one of {node['enum']}"]
    errors: list[str] = []
    if isinstance(value, dict):
        properties = node.get("properties", {})
        for key in node.get("required", ()) if strict else ():
            if key not in value:
                errors.append(f"{where}: the required key {key!r} is missing")
        extra = node.get("additionalProperties", True)
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if key in properties:
                errors += schema_errors(
                    item, properties[key], sub, root, strict=strict, unknown=unknown
                )
            elif extra is False and strict:
                errors.append(f"{sub}: unknown key (not in the metrics schema {schema_version()})")
            elif extra is False and unknown is not None:
                unknown.append(sub)
            elif isinstance(extra, Mapping):
                errors += schema_errors(item, extra, sub, root, strict=strict, unknown=unknown)
    elif isinstance(value, (list, tuple)):
        if "minItems" in node and len(value) < node["minItems"]:
            errors.append(f"{where}: expected at least {node['minItems']} items, got {len(value)}")
        if "maxItems" in node and len(value) > node["maxItems"]:
            errors.append(f"{where}: expected at most {node['maxItems']} items, got {len(value)}")
        if "items" in node:
            for i, item in enumerate(value):
                errors += schema_errors(
                    item, node["items"], f"{where}[{i}]", root, strict=strict, unknown=unknown
                )
    return errors


def _warn(unknown: list[str]) -> None:
    if unknown:
        shown = ", ".join(unknown[:5]) + (
            f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        )
        logger.warning(
            "metrics keys not in the metrics schema %s (recorded unchecked): %s",
            schema_version(),
            shown,
        )


def _raise(errors: list[str]) -> None:
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise MetricsSchemaError(f"metrics schema {schema_version()}: {errors[0]}{more}")


def validate_metrics(metrics: Mapping[str, Any], *, strict: bool = False) -> None:
    """Check a whole ``metrics.json`` against the schema.

    Parameters
    ----------
    metrics : mapping
        JSON-ready (NaN already null).
    strict : bool, default False
        Also refuse keys the schema does not describe (as JSON Schema does; the tests validate
        the producers' output strictly). Without it such keys are recorded unchecked, with a
        log warning naming them.

    Raises
    ------
    MetricsSchemaError
        Naming the first key that breaks the schema.
    """
    root = metrics_schema()
    unknown: list[str] = []
    _raise(schema_errors(dict(metrics), root, "", root, strict=strict, unknown=unknown))
    _warn(unknown)


def validate_section(section: str, values: Mapping[str, Any], *, strict: bool = False) -> None:
    """Check one section (``metrics.json[section]``) against the schema.

    Parameters
    ----------
    section : str
        Top-level key (``"ecc"``, ``"dars"``, ``"routing"`` ...).
    values : mapping
        JSON-ready values of the section.
    strict : bool, default False
        As in :func:`validate_metrics`.

    Raises
    ------
    MetricsSchemaError
        Naming the first key that breaks the schema.
    """
    root = metrics_schema()
    node = root["properties"].get(section, root.get("additionalProperties", {}))
    if node is True:
        node = {}
    unknown: list[str] = []
    _raise(schema_errors(values, node, section, root, strict=strict, unknown=unknown))
    _warn(unknown)


def metric_node(key: str) -> dict:
    """The schema node of a dotted key (``"ecc.ranking_quality_gain.ecc"``).

    Names under ``additionalProperties`` (datasets, methods ...) match any key.

    Parameters
    ----------
    key : str

    Returns
    -------
    dict

    Raises
    ------
    KeyError
        When the schema does not describe the key.
    """
    root = metrics_schema()
    node: Mapping[str, Any] = root
    for part in key.split("."):
        node = _resolve(node, root)
        if "anyOf" in node:
            node = next((_resolve(s, root) for s in node["anyOf"] if s.get("type") != "null"), node)
        properties = node.get("properties", {})
        if part in properties:
            node = properties[part]
        elif isinstance(node.get("additionalProperties"), Mapping):
            node = node["additionalProperties"]
        else:
            raise KeyError(f"the metrics schema {schema_version()} does not describe {key!r}")
    return dict(_resolve(node, root))


def metric_unit(key: str) -> str:
    """The unit code of a dotted ``metrics.json`` key (a key of :data:`ecc_lib.grammar.UNITS`).

    Parameters
    ----------
    key : str
        Such as ``"ecc.ranking_quality_gain.ecc"`` (``"pct_nll"``) or ``"dars.winner_flip_rate"``
        (``"share"``). A unit written ``"inherit"`` (the estimate of a paired difference, the ends
        of an interval, a mean and sd over seeds) is the nearest enclosing key's.

    Returns
    -------
    str
        ``"plain"`` for words and flags (and where no enclosing key has a unit).
    """
    parts = key.split(".")
    for end in range(len(parts), 0, -1):  # "inherit": the nearest ancestor's unit
        unit = str(metric_node(".".join(parts[:end])).get("unit", "plain"))
        if unit != _INHERIT:
            return unit
    return "plain"


def metric_description(key: str) -> str:
    """The meaning of a dotted ``metrics.json`` key.

    Parameters
    ----------
    key : str

    Returns
    -------
    str
    """
    return str(metric_node(key).get("description", ""))


__all__: list[str] = []
