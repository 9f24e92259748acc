"""Issue 35, item 8: model names, figure labels, captions and words of the report and the CLI."""

from __future__ import annotations

import re

import pytest

from ecc_lib.labels import short_model_names, shorten_name
from ecc_lib.runs import folder as run_folder

FUSECHAT = "FuseChat-Qwen-2.5-7B-Instruct"
ORPHAN = re.compile(r"\u2026-\d+(?:\.\d+)*(?:-|$)")  # a version number whose word was dropped


@pytest.mark.parametrize("width", range(8, 40))
def test_a_version_number_is_never_cut_from_its_word(width):
    for common in (None, {"Qwen-2.5": 4, "Instruct": 4}, {"Qwen": 4, "Instruct": 4}):
        text = shorten_name(FUSECHAT, width=width, common=common)
        assert not ORPHAN.search(text), (width, common, text)
    names = [FUSECHAT, "Qwen-2.5-72B-Instruct", "Qwen-2.5-Coder-32B-Instruct", "gemma-2-9b-it"]
    for short in short_model_names(names, width=width).values():
        assert not ORPHAN.search(short), (width, short)


def test_prose_names_models_in_full(tmp_path):
    """The data findings name the best model in full; the table may shorten it (with a legend)."""
    from ecc_lib.report.sections.data import data_section

    run = run_folder.run_context(tmp_path / "run")
    summary = {
        "n_queries": 20,
        "n_models": 2,
        "n_variants": 1,
        "n_decodes": 1,
        "mean_score": {FUSECHAT: 0.7, "FuseChat-Llama-3.1-8B-Instruct": 0.6},
    }
    section = data_section(run, {"data": {"datasets": {"foreign": summary}}})
    assert f"its best model on average is {FUSECHAT}: 0.7" in section.findings
    assert "\u2026" not in section.findings


def test_routing_prose_names_the_best_fixed_model_in_full(tmp_path):
    from ecc_lib.report.sections.routing import routing_section

    run = run_folder.run_context(tmp_path / "run")
    headline = {
        "dataset": "foreign",
        "best_fixed_model": FUSECHAT,
        "score": {"Best fixed model (reference)": 0.6, "kNN (DARS)": 0.62},
        "score_ci95": {"Best fixed model (reference)": [0.55, 0.65]},
    }
    section = routing_section(run, {"routing": {"headline": headline}})
    assert f"the best fixed model ({FUSECHAT})" in section.findings


def test_pareto_area_sentence_names_routers_alone_with_its_unit(tmp_path):
    from ecc_lib.report.sections.routing import routing_section

    run = run_folder.run_context(tmp_path / "run")
    routing = {
        "headline": {
            "dataset": "foreign",
            "pareto_area": {
                "kNN (DARS)": 0.61,
                "Best fixed model (reference)": 0.58,
                "Oracle (reference)": 0.8,
            },
        },
        "cost_info": {"has_rewrites": False, "has_decodes": False},
        "cost_dataset": "dcrouter",
    }
    section = routing_section(run, {"routing": routing})
    assert "(DARS)" not in section.findings
    assert "Pareto front is kNN's 0.610" in section.findings
    assert "score x normalised price" in section.findings
    rows = [t for t in section.tables if "Pareto" in t.frame.to_string()]
    assert rows and "(DARS)" not in rows[0].frame.to_string()


@pytest.mark.parametrize("repeats", [False, True])
def test_the_summary_says_what_the_utility_is_as_the_figure_notes_do(repeats):
    """Without cost and repeats the utility equals the score (the note on the left-out utility
    figure says so too); with repeats it is the score minus the spread penalty."""
    from ecc_lib.report.build import degenerate_figures
    from ecc_lib.report.summary import routing_lines

    info = {"cost_available": False, "has_rewrites": repeats, "has_decodes": False}
    headline = {
        "dataset": "foreign",
        "best_router": "kNN (DARS)",
        "best_fixed_model": "m1",
        "best_router_utility_minus_fixed": 0.02,
        "best_router_utility_minus_fixed_ci95": [0.01, 0.03],
    }
    metrics = {"routing": {"headline": headline, "info": info}}
    text = " ".join(line.text for _, line in routing_lines(metrics))
    notes = " ".join(degenerate_figures(metrics).values())
    if repeats:
        assert "score minus the spread penalty" in text and "equals the score" not in text
        assert not notes
    else:
        assert "utility equals the score" in text and "spread penalty" not in text
        assert "utility equals the score" in notes
