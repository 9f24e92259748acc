"""What the report reads from a run: ``metrics.json`` through the schema (:class:`MetricsReader`),
flattened to dotted keys, the unit of a key (:func:`unit_code`, from the schema), the ``*_ci95``
interval of a key, the ``skipped`` sentences of a section, table rows for metrics no section
builder knows, and the CSV tables under ``tables/``."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import suppress
from functools import lru_cache
from typing import Any

import pandas as pd

from ecc_lib.grammar import finite, unit
from ecc_lib.metrics_schema import metric_node, metric_unit, metrics_schema
from ecc_lib.report.document import HeadlineTable, report_table_name
from ecc_lib.report.formatting import format_interval, format_mean_sd, humanise
from ecc_lib.runs import folder as run_folder
from ecc_lib.runs.execute import notebook_of

# ------------------------------------------------------------------------------- typed reading


def _described(key: str) -> bool:
    """Whether the schema describes a dotted key, or the key lies inside a free-form object of it
    (an ``object`` without ``properties`` whose other keys the schema allows)."""
    parts = key.split(".")
    with suppress(KeyError):
        metric_node(key)
        return True
    for end in range(len(parts) - 1, 0, -1):
        try:
            node = metric_node(".".join(parts[:end]))
        except KeyError:
            continue
        return "properties" not in node and node.get("additionalProperties", True) is True
    return False


class MetricsReader(Mapping):
    """Typed reads of ``metrics.json`` (or of one section of it): every key read is checked against
    the written contract (:mod:`ecc_lib.metrics_schema`).

    Reading a key the schema does not describe raises a :class:`KeyError` naming it (a misspelt
    key in the report's code fails in the tests instead of reading as missing); a described key
    the run did not record reads as missing (``get`` gives the default). Mappings read from it are
    readers of their own dotted key, so nested reads are checked too.

    Parameters
    ----------
    values : mapping
        ``metrics.json`` or the value at ``key``.
    key : str, default ""
        Dotted key of ``values`` in ``metrics.json`` (``""``: the whole file; ``"routing.headline"``).
    """

    def __init__(self, values: Mapping[str, Any], key: str = "") -> None:
        self._values = values
        self.key = key

    def _key(self, name: str) -> str:
        full = f"{self.key}.{name}" if self.key else str(name)
        if not _described(full):
            raise KeyError(f"the report reads {full!r}, which the metrics schema does not describe")
        return full

    def __getitem__(self, name: str) -> Any:
        full = self._key(name)
        value = self._values[name]
        return MetricsReader(value, full) if isinstance(value, Mapping) else value

    def _child(self, name: str, value: Any) -> Any:
        """A value met by iterating (its key comes from the run, not from the report's code): a
        reader where the schema describes it, else the raw value."""
        full = f"{self.key}.{name}" if self.key else str(name)
        if isinstance(value, Mapping) and _described(full):
            return MetricsReader(value, full)
        return value

    def items(self):
        """The recorded keys and values (not checked: the keys come from the run, not from the
        report's code); a value the schema describes is a reader of its own.

        Returns
        -------
        list of (str, object)
        """
        return [(name, self._child(name, value)) for name, value in self._values.items()]

    def values(self):
        """The recorded values, as :meth:`items` gives them.

        Returns
        -------
        list of object
        """
        return [self._child(name, value) for name, value in self._values.items()]

    def get(self, name: str, default: Any = None) -> Any:
        """The value of a key (checked against the schema), ``default`` when not recorded.

        Parameters
        ----------
        name : str
            Key within this reader's part of ``metrics.json``.
        default : object, optional

        Returns
        -------
        object
        """
        self._key(name)
        return self[name] if name in self._values else default

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def read_metrics(metrics: Mapping[str, Any]) -> MetricsReader:
    """``metrics.json`` as a :class:`MetricsReader` (one that is already a reader is returned).

    Parameters
    ----------
    metrics : mapping

    Returns
    -------
    MetricsReader
    """
    return metrics if isinstance(metrics, MetricsReader) else MetricsReader(metrics)


@lru_cache(maxsize=1)
def _conventions() -> tuple[tuple[re.Pattern, str], ...]:
    return tuple(
        (re.compile(pattern), code) for pattern, code in metrics_schema()["x-unit-conventions"]
    )


def unit_code(key: str, *, section: str = "") -> str:
    """The unit code of a metric (a key of :data:`ecc_lib.grammar.UNITS`), read from the metrics
    schema.

    A key the schema describes has its own unit (:func:`ecc_lib.metrics_schema.metric_unit`); a
    key of a section the schema does not describe yet gets the unit of the schema's naming
    conventions (``x-unit-conventions``: the first pattern that matches the key within its
    section).

    Parameters
    ----------
    key : str
        Dotted key within ``section``.
    section : str, default ""
        Dotted key of the section in ``metrics.json`` (``"ecc"``, ``"routing.headline"``).

    Returns
    -------
    str
    """
    full = f"{section}.{key}" if section else str(key)
    try:
        # a key the schema describes with a unit; not one it only allows (a new section)
        code = metric_unit(full) if "unit" in metric_node(full) else None
    except KeyError:
        code = None
    if code is None:
        name = str(key).lower()
        code = next((u for pattern, u in _conventions() if pattern.search(name)), "plain")
    return code


def flatten(node: Any, *, prefix: str = "") -> dict[str, Any]:
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
        for key, value in node.items():
            out.update(flatten(value, prefix=f"{prefix}.{key}" if prefix else str(key)))
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


def generic_rows(
    values: Mapping[str, Any], *, used: set[str], dataset: str, section: str = ""
) -> list[dict[str, str]]:
    """Rows for metrics with an interval or a mean/sd pair that no curated row has shown.

    Parameters
    ----------
    values : mapping
        Flattened section (:func:`flatten`).
    used : set of str
        Dotted keys (and prefixes) already shown.
    dataset : str
    section : str, default ""
        Dotted key of ``values`` in ``metrics.json`` (``"ecc"``): the units come from the schema
        (:func:`unit_code`).

    Returns
    -------
    list of dict
        ``dataset``, ``measure``, ``estimate``, ``unit`` rows.
    """

    def is_used(key: str) -> bool:
        return any(key == u or key.startswith(u + ".") for u in used)

    def row(base: str, estimate: str, code: str, suffix: str = "") -> dict[str, str]:
        return measure_row(dataset, humanise(base) + suffix, estimate, unit(code).column)

    rows = []
    for key, value in values.items():
        if is_used(key) or not finite(value):
            continue
        code = unit_code(key, section=section)
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
                        if finite(values.get(base + sep + k))
                    ),
                    None,
                )
                rows.append(
                    row(base, format_mean_sd(value, sd, code, n=n), code, " (mean over seeds)")
                )
            continue
        # {"estimate": x, "ci95": [low, high]}
        if key.endswith(".estimate"):
            base = key[: -len(".estimate")]
            rows.append(row(base, format_interval(value, values.get(base + ".ci95"), code), code))
            continue
        ci = ci_of(values, key)
        if ci is not None:
            rows.append(row(key, format_interval(value, ci, code), code))
    return rows


def utility_meaning(info: Mapping[str, Any]) -> str:
    """What the routing utility ``U = mu_q - lambda mu_c - beta sigma_q`` is on this data.

    One wording for the summary, the routing section and the figure notes: the spread term is 0
    with one observation per pair, and the cost term without recorded costs.

    Parameters
    ----------
    info : mapping
        ``metrics.json["routing"]["info"]`` (``cost_available``, ``has_rewrites``,
        ``has_decodes``).

    Returns
    -------
    str
    """
    cost = bool(info.get("cost_available"))
    repeats = bool(info.get("has_rewrites") or info.get("has_decodes"))
    if cost and repeats:
        return "utility is the score minus the cost and spread penalties"
    if cost:
        return "one observation per pair: utility is the score minus the cost penalty"
    if repeats:
        return "no cost recorded: utility is the score minus the spread penalty"
    return "no cost recorded and one observation per pair: utility equals the score"


def measure_row(dataset: str, measure: str, estimate: str, unit: str = "") -> dict[str, str]:
    """One row of a measurements table.

    Parameters
    ----------
    dataset, measure, estimate, unit : str

    Returns
    -------
    dict
    """
    return {"dataset": dataset, "measure": measure, "estimate": estimate, "unit": unit}


def measure_table(name: str, caption: str, rows: list[dict[str, str]]) -> HeadlineTable:
    """Rows of :func:`measure_row` (or :func:`generic_rows`) as a headline table with its four
    columns.

    Parameters
    ----------
    name : str
        The table's name after the report notebook's number (:func:`report_table_name`).
    caption : str
    rows : list of dict

    Returns
    -------
    HeadlineTable
    """
    frame = pd.DataFrame(rows, columns=["dataset", "measure", "estimate", "unit"])
    return HeadlineTable(report_table_name(name), caption, frame)


def read_table(run: run_folder.RunContext, section: str, name: str) -> pd.DataFrame | None:
    """A CSV table that the notebook of a section wrote under ``tables/``.

    Parameters
    ----------
    run : RunContext
    section : str
        The ``metrics.json`` section of the notebook (``"ecc"``: notebook 03).
    name : str
        The table's name after the notebook number (``"cluster_summary"``).

    Returns
    -------
    DataFrame or None
        None when the run has no such table.
    """
    path = run.tables_dir / f"{notebook_of(section)}_{name}.csv"
    if not path.exists():
        return None
    from ecc_lib.data.tables import read_csv_keeping_text
    from ecc_lib.safe_output import csv_restore_frame

    # model and dataset names stay text: a model named NA, a dataset named 2024; a name quoted
    # against spreadsheet formulas (=1+2 written '=1+2) is shown as it is
    return csv_restore_frame(read_csv_keeping_text(path))


__all__ = [
    "MetricsReader",
]
