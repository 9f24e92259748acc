"""The checks of :mod:`ecc_lib.data.checks` in the report: first in the data section (issue 27)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ecc_lib.report.document import HeadlineTable, ReportSection, report_table_name


def checks_sentence(values: Mapping[str, Any]) -> str:
    """One sentence on the checks of every dataset: the worst status and what failed or warned.

    Parameters
    ----------
    values : mapping
        ``metrics.json["checks"]``: ``{dataset: {check: {"status", "detail", "numbers"}}}``.

    Returns
    -------
    str
        Empty without checks.
    """
    parts = []
    for dataset, entry in values.items():
        entry = entry or {}

        def named(status: str, entry=entry) -> str:
            return "; ".join(
                f"{name.replace('_', ' ')}: {(c or {}).get('detail', '')}".rstrip(": ")
                for name, c in entry.items()
                if (c or {}).get("status") == status
            )

        failed, warned = named("fail"), named("warn")
        if failed:
            parts.append(f"{dataset} FAILS ({failed}): its numbers below are not to be trusted")
        elif warned:
            parts.append(f"{dataset} passes with warnings ({warned})")
        else:
            parts.append(f"{dataset} passes every check")
    return ("Checks before numbers: " + "; ".join(parts) + ".") if parts else ""


def add_checks(section: ReportSection, values: Mapping[str, Any] | None) -> None:
    """Put the checks first in the data section: a sentence before the findings that names every
    check that warns or fails with its detail, and the table of all checks (dataset, check,
    status, detail) after the section's headline table (so the main body keeps the datasets
    table and the full list goes to the appendix with the section's further tables).

    Parameters
    ----------
    section : ReportSection
        The data section, filled in place.
    values : mapping or None
        ``metrics.json["checks"]``.
    """
    if not values:
        return
    from ecc_lib.data.checks import CHECK_NAMES

    def order(name: str) -> int:
        return CHECK_NAMES.index(name) if name in CHECK_NAMES else len(CHECK_NAMES)

    rows = [
        {"dataset": dataset, "check": name, "status": (c or {}).get("status", ""),
         "detail": (c or {}).get("detail", "")}
        for dataset, entry in values.items()
        for name, c in sorted((entry or {}).items(), key=lambda kv: order(kv[0]))
    ]  # fmt: skip
    section.tables.insert(
        min(1, len(section.tables)),
        HeadlineTable(
            report_table_name("data_checks"),
            "Checks before numbers: item alignment, models, ties, score type and texts "
            "(ok / warn / fail)",
            pd.DataFrame(rows, columns=["dataset", "check", "status", "detail"]),
        ),
    )
    sentence = checks_sentence(values)
    section.findings = sentence + (" " + section.findings if section.findings else "")


__all__: list[str] = []
