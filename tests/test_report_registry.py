"""The report's section registry, its reads through the metrics schema and the units it takes from
the schema (issue 22, items 3 and 4 for the report)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from ecc_lib import grammar, report
from ecc_lib.report.document import ReportSection, report_table_name
from ecc_lib.report.reading import MetricsReader, flatten, generic_rows, read_metrics, unit_code
from ecc_lib.report.registry import SECTIONS, registered_section
from ecc_lib.runs import folder as run_folder
from ecc_lib.runs import metrics as run_metrics
from ecc_lib.runs.execute import NOTEBOOK_SECTIONS, NOTEBOOK_TITLES, notebook_of

ROOT = Path(__file__).resolve().parents[1]


def test_every_section_is_registered_once_with_the_one_build_signature():
    keys = [s.key for s in SECTIONS]
    assert len(set(keys)) == len(keys)
    # a section no notebook is named for (the capability map) names the notebook recording it
    named = [s.key for s in SECTIONS if not s.recorded_by]
    assert set(named) == set(NOTEBOOK_SECTIONS.values())
    for spec in SECTIONS:
        assert list(inspect.signature(spec.build).parameters) == ["run", "metrics"]
        if spec.recorded_by:
            assert spec.recorded_by in NOTEBOOK_TITLES and spec.heading and spec.number == ""
            continue
        assert spec.notebook == notebook_of(spec.key)
        assert spec.title == NOTEBOOK_TITLES[spec.notebook]
    assert registered_section("ecc").figure("gains") == f"{notebook_of('ecc')}_gains"
    with pytest.raises(KeyError, match="no report section"):
        registered_section("nothing")


def test_the_report_has_no_notebook_number_of_its_own():
    """The notebooks' numbers and titles have one home (ecc_lib.runs.execute): no string literal
    of the report's code starts with a notebook number (docstrings aside)."""
    literal = re.compile(r"""(?<!`)["']0[0-6]""")
    found = []
    for path in sorted((ROOT / "ecc_lib" / "report").rglob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if literal.search(line) and "``" not in line:
                found.append(f"{path.name}:{i}: {line.strip()}")
    assert not found, found


def test_sections_follow_the_registry_order(tmp_path):
    run = run_folder.run_context(tmp_path / "run")
    for key in ("tour", "data", "dars", "ecc", "routing"):
        run_metrics.record_metrics(run, key, {"dataset": "d", "skipped": "not measured here"})
    document = report.build_report(run)
    main = [s.number for s in document.sections if not s.appendix]
    expected = [s.number for s in sorted(SECTIONS, key=lambda s: s.order) if not s.appendix]
    assert main == expected
    tour = next(s for s in document.sections if s.number == notebook_of("tour"))
    assert tour.appendix and tour.skipped == "This section is left out: not measured here"


def test_a_builder_returns_its_section(tmp_path):
    run = run_folder.run_context(tmp_path / "run")
    section = registered_section("tour").build(
        run, {"tour": {"ari": {"ecc": 0.9}, "ari_ci95": {"ecc": [0.8, 1.0]}, "n_queries": 40}}
    )
    assert isinstance(section, ReportSection)
    assert section.tables[0].name == report_table_name("tour_headline")
    assert "0.900 [0.800, 1.000]" in section.findings


def test_the_reader_refuses_a_key_the_schema_does_not_describe():
    metrics = read_metrics({"ecc": {"n_test": 12, "typo_recorded": 1.0}})
    ecc = metrics["ecc"]
    assert isinstance(ecc, MetricsReader) and ecc.key == "ecc"
    assert ecc.get("n_test") == 12 and ecc.get("n_train") is None  # described, not recorded
    with pytest.raises(KeyError, match="'ecc.n_tests'.*does not describe"):
        ecc.get("n_tests")
    with pytest.raises(KeyError, match="does not describe"):
        ecc["typo_recorded"]  # recorded by the run, but the report may not name it
    # keys the run recorded are still met by iterating (nothing is dropped from the tables)
    assert dict(ecc.items()) == {"n_test": 12, "typo_recorded": 1.0}
    # nested reads are checked with their whole dotted key
    gains = read_metrics({"ecc": {"ranking_quality_gain": {"ecc": 3.0}}})["ecc"][
        "ranking_quality_gain"
    ]
    assert gains.key == "ecc.ranking_quality_gain" and gains["ecc"] == 3.0


def test_units_come_from_the_schema_not_from_key_names():
    assert not hasattr(grammar, "KEY_UNITS") and not hasattr(grammar, "unit_of_key")
    assert unit_code("ranking_quality_gain.ecc", section="ecc") == "pct_nll"
    assert unit_code("probe_leak_share", section="ecc") == "share"
    assert unit_code("n_test", section="ecc") == "count"
    assert unit_code("gain_differences_disjoint.ecc_minus_human.estimate", section="ecc") == "pp"
    # a paired routing difference is written as a signed difference (the schema says so)
    assert unit_code("routing_differences.probe.ecc_minus_global.estimate", section="ecc") == (
        "score_diff"
    )
    assert unit_code("nll.global", section="ecc") == "nats"
    # a section the schema does not describe yet: the schema's naming conventions
    assert unit_code("gain", section="active_probes") == "pct_nll"
    assert unit_code("flip_rate_mean") == "share"


def test_label_informed_differences_read_in_points_of_gain():
    """The appendix wrote the label-informed ECC's paired differences of the gain as plain signed
    numbers (``+21.709 [+17.197, +25.879]``, unit "difference"), beside the same numbers in
    percentage points in the clustering section: the key "differences_disjoint" has no "gain"
    in it. The schema now describes them in pp."""
    values = flatten(
        {
            "ecc_labels": {
                "differences_disjoint": {
                    "ecc_minus_human": {"estimate": 21.70884, "ci95": [17.19674, 25.87909]}
                }
            }
        }
    )
    (row,) = generic_rows(values, used=set(), dataset="d", section="ecc_beyond")
    assert row["estimate"] == "+21.7 pp [+17.2, +25.9]"
    assert row["unit"] == "percentage points of gain"
