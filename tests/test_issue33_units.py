"""Issue 33, one fact in one place: the codes of ``ecc_lib.grammar.UNITS`` are the one unit
vocabulary. The metrics schema's ``unit`` keyword holds them, the report formats with them, and no
second table maps other unit spellings to them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ecc_lib import grammar
from ecc_lib.metrics_schema import metric_unit, metrics_schema
from ecc_lib.report.formatting import format_interval, format_number
from ecc_lib.report.reading import generic_rows, unit_code

PACKAGE = Path(grammar.__file__).resolve().parent
OLD_SPELLINGS = {
    "%",
    "pct",
    "",
    "share (0-1)",
    "score units",
    "score units (difference)",
    "difference of shares (0-1)",
    "nats per scored pair",
    "as the section",
}


def _schema_units(node, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        if isinstance(node.get("unit"), str):
            found.add(node["unit"])
        for key, value in node.items():
            if key != "x-unit-conventions":
                _schema_units(value, found)
    elif isinstance(node, list):
        for value in node:
            _schema_units(value, found)
    return found


def test_every_unit_of_the_schema_is_a_grammar_unit():
    schema = metrics_schema()
    units = _schema_units(schema, set())
    assert units and units <= set(grammar.UNITS), sorted(units - set(grammar.UNITS))
    conventions = {code for _, code in schema["x-unit-conventions"]}
    assert conventions <= set(grammar.UNITS), sorted(conventions - set(grammar.UNITS))
    # the schema's meaning of a unit lives in the unit's words
    assert all(u.words for u in grammar.UNITS.values())
    assert grammar.UNITS["nats"].words.startswith("nats per scored pair")


def test_references_to_another_keys_unit_are_one_rule():
    # "inherit": the nearest enclosing key's unit (an estimate, the ends of an interval)
    assert metric_unit("ecc.gain_differences.ecc_minus_human.estimate") == "pp"
    assert metric_unit("ecc.gain_differences.ecc_minus_human.ci95") == "pp"
    assert "inherit" in _schema_units(metrics_schema(), set())
    assert not any(u.startswith("as ") for u in _schema_units(metrics_schema(), set()))


def _module_level_dicts(tree: ast.Module):
    for node in tree.body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if isinstance(value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            name = ", ".join(ast.unparse(t) for t in targets)
            yield name, value


def test_there_is_no_second_unit_table():
    """No module but ``grammar`` keeps a dict keyed by unit codes or old unit spellings."""
    spellings = set(grammar.UNITS) | OLD_SPELLINGS
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "grammar.py" and path.parent == PACKAGE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, table in _module_level_dicts(tree):
            keys = {k.value for k in table.keys if isinstance(k, ast.Constant)}
            if len(keys & spellings) >= 2:
                offenders.append(f"{path.relative_to(PACKAGE)}: {name}")
    assert not offenders, f"unit tables outside ecc_lib/grammar.py: {offenders}"
    from ecc_lib import report
    from ecc_lib.report import formatting, reading

    for gone in ("SCHEMA_UNIT_CODES", "UNIT_TEXT"):
        assert not hasattr(report, gone) and not hasattr(reading, gone)
        assert not hasattr(formatting, gone)
    assert not hasattr(grammar, "_ALIASES")


def test_a_share_and_a_percent_of_nll_format_differently():
    # the old code "%" meant a share in one place and % of the global NLL in another
    assert grammar.number(0.282, "share") == "28.2%"
    assert grammar.number(0.282, "pct_nll") == "0.3%"
    assert format_number(0.282, "share") == "28.2%"
    assert format_number(28.2, "pct_nll") == "28.2%"
    assert format_interval(0.282, [0.25, 0.31], "share") != format_interval(
        0.282, [0.25, 0.31], "pct_nll"
    )
    assert grammar.UNITS["share"].column != grammar.UNITS["pct_nll"].column
    assert unit_code("probe_leak_share", section="ecc") == "share"
    assert unit_code("ranking_quality_gain.ecc", section="ecc") == "pct_nll"


@pytest.mark.parametrize("old", ["%", "pct", ""])
def test_old_unit_codes_are_refused(old):
    with pytest.raises(KeyError, match="unknown unit code"):
        grammar.unit(old)
    with pytest.raises(KeyError):
        format_number(1.0, old)


def test_a_table_row_names_its_unit_from_the_grammar():
    values = {"ecc_minus_global": {"estimate": 0.0123, "ci95": [-0.01, 0.03]}}
    from ecc_lib.report.reading import flatten

    (row,) = generic_rows(
        flatten({"routing_differences": {"probe": values}}),
        used=set(),
        dataset="d",
        section="ecc",
    )
    assert row["estimate"] == "+0.012 [-0.010, +0.030]"
    assert row["unit"] == grammar.UNITS["score_diff"].column == "difference"
