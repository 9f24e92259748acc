"""The sections of the report, one module per notebook (as in :mod:`ecc_lib.plotting`): each builder
fills a :class:`~ecc_lib.report.document.ReportSection` with a findings paragraph generated from the
numbers (what was measured, the headline with its uncertainty, the comparison with the baselines,
and plainly when a result is negative), its headline tables and notes.
"""

from __future__ import annotations

from ecc_lib.report.sections.capability_map import CAPABILITY_MAP_FIGURE, capability_map_section
from ecc_lib.report.sections.clustering import (
    GAIN_METHODS,
    cluster_summary_html,
    ecc_cv_choice_text,
    ecc_section,
)
from ecc_lib.report.sections.data import data_section
from ecc_lib.report.sections.label_instability import dars_section
from ecc_lib.report.sections.other import SECTION_TITLES, data_notes, other_section
from ecc_lib.report.sections.routing import routing_section
from ecc_lib.report.sections.tour import tour_section

__all__ = [
    "CAPABILITY_MAP_FIGURE",
    "GAIN_METHODS",
    "SECTION_TITLES",
    "capability_map_section",
    "cluster_summary_html",
    "dars_section",
    "data_notes",
    "data_section",
    "ecc_cv_choice_text",
    "ecc_section",
    "other_section",
    "routing_section",
    "tour_section",
]
