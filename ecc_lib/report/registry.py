"""The report's sections, registered in one place.

Each :class:`Section` names the ``metrics.json`` section it reports (its notebook and title come
from :mod:`ecc_lib.runs.execute`, the one home of the notebooks' numbers and titles), its place in
the report and its builder. Every builder has one signature, ``build(run, metrics) ->
ReportSection | None``: it reads the run folder and the whole ``metrics.json`` and returns the
section's findings, tables, notes and further HTML (``None``: nothing to show).
:func:`ecc_lib.report.build.build_report` runs the registered builders and adds what every section
shares (its number and title, its figures, why a part or all of it is left out).

A new section is one builder (a module of :mod:`ecc_lib.report.sections`) and one record in
:data:`SECTIONS`; the record's ``summary`` hook, where it has one, gives the section's lines of
the report's summary (:func:`build_summary` reads every registered hook, so no other file lists
the sections' summary lines).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ecc_lib.report.document import ReportSection
from ecc_lib.report.sections.capability_map import CAPABILITY_MAP_FIGURE, capability_map_section
from ecc_lib.report.sections.clustering import ecc_section
from ecc_lib.report.sections.data import data_section
from ecc_lib.report.sections.label_instability import dars_section
from ecc_lib.report.sections.routing import routing_section
from ecc_lib.report.sections.tour import tour_section
from ecc_lib.report.summary import (
    SummaryHook,
    SummaryLine,
    SummaryOptions,
    assemble_summary,
    ecc_summary,
    flip_summary,
    routing_lines,
)
from ecc_lib.runs.execute import NOTEBOOK_TITLES, notebook_of
from ecc_lib.runs.folder import RunContext

SectionBuilder = Callable[[RunContext, Mapping[str, Any]], ReportSection | None]
"""``build(run, metrics) -> ReportSection | None``: the one signature of a section builder."""


@dataclass(frozen=True)
class Section:
    """One section of the report.

    Parameters
    ----------
    key : str
        The ``metrics.json`` section it reports (``"ecc"``).
    build : callable
        :data:`SectionBuilder`.
    order : int
        Its place in the report (main body first, then the appendix sections).
    headline_figures : tuple of str, default ()
        Names of the figure shown in the main body (the first the run has, without the notebook
        number: ``"leak_gains"``); the others go to the appendix. Empty: the section's first.
    appendix : bool, default False
        The whole section goes to the appendix (the tour).
    recorded_by : str, default ""
        For a section no notebook is named for (the capability map): the number of the notebook
        that records it (``"03"``). Such a section has no number of its own and shows only its
        ``figure_names``.
    heading : str, default ""
        Its title, where the notebook's does not apply.
    figure_names : tuple of str, default ()
        The figures it shows (without the notebook number); the section of their notebook then
        leaves them out.
    summary : SummaryHook, optional
        Its lines of the report's summary (:data:`ecc_lib.report.summary.SummaryHook`); without
        one the section adds nothing to the summary.
    """

    key: str
    build: SectionBuilder
    order: int
    headline_figures: tuple[str, ...] = ()
    appendix: bool = False
    recorded_by: str = ""
    heading: str = ""
    figure_names: tuple[str, ...] = ()
    summary: SummaryHook | None = None

    @property
    def notebook(self) -> str:
        """The number of the notebook that records the section (``"03"``)."""
        return self.recorded_by or notebook_of(self.key)

    @property
    def number(self) -> str:
        """The section's number in the report: its notebook's, ``""`` for a section no notebook
        is named for."""
        return "" if self.recorded_by else self.notebook

    @property
    def title(self) -> str:
        """The section's title (the notebook's unless it has a heading)."""
        return self.heading or NOTEBOOK_TITLES.get(self.notebook, self.key)

    @property
    def owned_figures(self) -> tuple[str, ...]:
        """File names of the figures only this section shows (``"03_capability_map"``)."""
        return tuple(self.figure(n) for n in self.figure_names)

    def figure(self, name: str) -> str:
        """The file name of one of the notebook's figures (``"03_gains"`` for ``"gains"``).

        Parameters
        ----------
        name : str

        Returns
        -------
        str
        """
        return f"{self.notebook}_{name}"


SECTIONS: tuple[Section, ...] = (
    Section(
        "capability_map",
        capability_map_section,
        order=0,
        headline_figures=(CAPABILITY_MAP_FIGURE,),
        recorded_by=notebook_of("ecc"),  # notebook 03 records it
        heading="Which model for which queries",
        figure_names=(CAPABILITY_MAP_FIGURE,),
    ),
    Section("data", data_section, order=1, headline_figures=("model_scores",)),
    Section(
        "ecc", ecc_section, order=2, headline_figures=("leak_gains", "gains"), summary=ecc_summary
    ),
    Section("dars", dars_section, order=3, headline_figures=("flip_rates",), summary=flip_summary),
    Section(
        "routing",
        routing_section,
        order=4,
        headline_figures=("routing_scores",),
        summary=routing_lines,
    ),
    Section("tour", tour_section, order=5, appendix=True),
)
"""Every section of the report, in the order a reader needs: which model for which queries (right
after the summary), data, clustering, label instability,
routing; the synthetic tour in the appendix (the summary comes first)."""


def registered_section(key: str) -> Section:
    """The registered section of a ``metrics.json`` key.

    Parameters
    ----------
    key : str

    Returns
    -------
    Section

    Raises
    ------
    KeyError
        When no section reports the key.
    """
    for section in SECTIONS:
        if section.key == key:
            return section
    raise KeyError(f"no report section reports {key!r}")


def build_summary(
    metrics: Mapping[str, Any],
    *,
    methods: Sequence[str] | None = None,
    reference: str | None = None,
    baselines: Sequence[str] | None = None,
    notes: Mapping[str, str] | None = None,
    sections: Sequence[Section] | None = None,
) -> dict[str, list[SummaryLine]]:
    """The report's summary: per dataset its table and at most
    :data:`~ecc_lib.report.summary.MAX_SENTENCES` sentences, from the summary hook of every
    registered section, in the report's order.

    Parameters
    ----------
    metrics : mapping
        The whole ``metrics.json``.
    methods, reference, baselines, notes
        As :func:`~ecc_lib.report.summary.summary_table` (the lead wires tuned baselines and
        ECC-CV's choice in here).
    sections : sequence of Section, optional
        The report's sections (default :data:`SECTIONS`).

    Returns
    -------
    dict
        Dataset name -> lines (the ``table`` line first where there is one).
    """
    options = SummaryOptions(methods, reference, baselines, notes)
    ordered = sorted(SECTIONS if sections is None else sections, key=lambda s: s.order)
    hooks = [section.summary for section in ordered if section.summary is not None]
    return assemble_summary(metrics, hooks, options)


__all__ = [
    "SECTIONS",
    "Section",
    "build_summary",
]
