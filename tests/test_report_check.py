"""scripts/report_check.py: the checks of a rendered report that need no browser."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "report_check.py"


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("report_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GOOD = (
    "<!DOCTYPE html><html><head><title>ecc_lib report: d, run r</title></head><body>"
    '<section class="report-section" id="summary"><h2>Summary</h2></section>'
    '<section class="report-section" id="section-01"></section></body></html>'
)


def _page(tmp_path, text):
    path = tmp_path / "report.html"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_self_contained_report_passes(check, tmp_path):
    assert check.check_text(_page(tmp_path, GOOD)) == []
    assert check.check_height(8 * check.SCREEN) == []
    assert check.check_height(8 * check.SCREEN + 1)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            ("</title>", '</title><script src="https://cdn.example/require.js"></script>'),
            "another host",
        ),
        (
            ("</title>", '</title><link rel="stylesheet" href="//cdn.example/a.css">'),
            "another host",
        ),
        (("</title>", "</title><script>MathJax</script>"), "script"),
        (('id="summary"', 'id="overview"'), "summary section"),
        (("<h2>Summary</h2>", "<h2>Summary</h2>gain NaN"), "'NaN'"),
        (("<h2>Summary</h2>", "<h2>Summary</h2>beats it by -3.0"), "'by -'"),
        (
            (
                '<section class="report-section" id="summary">',
                '<section class="report-section" id="x"></section><section class="report-section" id="summary">',
            ),
            "not the first",
        ),
    ],
)
def test_each_contract_breach_is_reported(check, tmp_path, change, problem):
    problems = check.check_text(_page(tmp_path, GOOD.replace(*change)))
    assert any(problem in p for p in problems), problems


def test_embedded_images_are_not_read_as_text(check, tmp_path):
    page = GOOD.replace(
        "</section>", '<img src="data:image/png;base64,NaNby-http://x"></section>', 1
    )
    assert check.check_text(_page(tmp_path, page)) == []
