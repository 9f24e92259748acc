"""Issue 35, deliver 5: a glossary page in the guide defines every term the report uses, and the
report links to it (its own copy at the end of the appendix, linked from the header and from each
section's terms)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ecc_lib.report import glossary
from ecc_lib.report.document import HeadlineTable, ReportSection

ROOT = Path(__file__).resolve().parents[1]


def test_the_guide_page_is_current_and_in_the_toctree():
    page = ROOT / "docs" / "guide" / "glossary.md"
    assert page.read_text(encoding="utf-8") == glossary.glossary_markdown(), (
        "docs/guide/glossary.md is stale: run python scripts/build_glossary.py"
    )
    assert "guide/glossary" in (ROOT / "docs" / "index.md").read_text(encoding="utf-8")


def test_the_terms_the_issue_found_undefined_are_defined():
    terms = glossary.glossary_terms()
    tau = terms["within-cluster Kendall tau"]
    assert "Kendall's tau-b" in tau and "folds" in tau
    area = terms["area under the Pareto front"]
    assert "score x normalised price" in area and "interval" in area  # its unit, and none
    from ecc_lib.routers import router_families

    families = terms["router families"]
    missing = [name for name in router_families() if f"{name}:" not in families]
    assert missing in ([], ["ECC"]) and "ECC (router):" in families, missing


def test_every_report_section_links_the_terms_it_uses():
    section = ReportSection(
        number="03",
        title="Clustering",
        findings="ECC is better than one global BT on pairs disjoint from the probe.",
        tables=[
            HeadlineTable("t", "headline", pd.DataFrame({"within-cluster Kendall tau": ["0.4"]}))
        ],
    )
    text = section.to_html()
    links = re.findall(r'href="#(term-[^"]+)"', text)
    for term in ("within-cluster Kendall tau", "ECC", "global BT", "verdict"):
        assert glossary.term_anchor(term) in links, term
    defined = set(re.findall(r'id="(term-[^"]+)"', glossary.glossary_html()))
    assert set(links) <= defined
    assert len(defined) == len(glossary.glossary_terms())  # one anchor per term, none shared


def test_the_report_header_links_the_glossary_at_the_end_of_the_appendix(tmp_path):
    from ecc_lib.report.build import build_report
    from ecc_lib.runs import folder as run_folder

    report = build_report(run_folder.run_context(tmp_path / "run"))
    assert 'href="#glossary"' in report.header_html()
    assert "docs/guide/glossary.md" in report.header_html()
    appendix = report.appendix_html
    assert '<section class="report-section" id="glossary">' in appendix
    assert appendix.index('id="glossary"') < appendix.index("</details>")
