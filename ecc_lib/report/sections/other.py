"""Parts of the report no notebook section owns: a section for metrics no builder knows, and
the data checks' notes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ecc_lib.report.document import HeadlineTable, ReportSection, report_table_name
from ecc_lib.report.reading import flatten, generic_rows, measure_table, skip_reasons


def data_notes(policy: Mapping[str, Any]) -> list[str]:
    """The data checks' notes per dataset (``metrics.json["data_policy"]``) as sentences.

    Parameters
    ----------
    policy : mapping

    Returns
    -------
    list of str
    """
    notes = []
    for name, entry in policy.items():
        if not isinstance(entry, Mapping):
            continue
        for note in entry.get("notes") or []:
            text = str(note).strip()
            notes.append(
                f"{name}: {text[0].upper() + text[1:] if text else text}".rstrip(".") + "."
            )
    return notes


SECTION_TITLES = {
    "ecc_beyond": "ECC beyond the papers: label-informed ECC, probe strategies, soft evidence",
    "embeddings": "Embeddings of each dataset",
}
"""Titles of the sections no notebook section owns (else the key with spaces)."""


def other_section(key: str, values: Any) -> ReportSection:
    """A section for metrics no builder knows: every value with an interval or a seed spread.

    Parameters
    ----------
    key : str
        Section name in ``metrics.json``.
    values : mapping

    Returns
    -------
    ReportSection
    """
    section = ReportSection("", SECTION_TITLES.get(key, key.replace("_", " ").capitalize()))
    reasons = skip_reasons(values)
    if "" in reasons or "skipped" in reasons:
        section.skipped = "This section is left out: " + (reasons.get("") or reasons["skipped"])
        return section
    # a generic section: "dataset" only where it has one ('in' reads no schema key)
    dataset = str(values["dataset"]) if isinstance(values, Mapping) and "dataset" in values else ""
    rows = generic_rows(flatten(values), used=set(), dataset=dataset, section=key)
    if rows:
        section.tables.append(
            measure_table(f"{key}_headline", f"{key}: values with 95% intervals", rows)
        )
        section.findings = (
            f"This run recorded {len(rows)} {key.replace('_', ' ')} value"
            f"{'s' if len(rows) != 1 else ''} with an interval or a spread over seeds"
            + (f" on {dataset}" if dataset else "")
            + "; the table lists them."
        )
    else:
        import pandas as pd

        from ecc_lib.report.formatting import format_number

        leaves = [
            {"measure": k.replace("_", " ").replace(".", ": ", 1).replace(".", ", "), "value": v}
            for k, v in flatten(values).items()
            if isinstance(v, str | int | float) and not isinstance(v, bool)
        ][:40]
        if leaves:
            frame = pd.DataFrame(leaves)
            frame["value"] = [
                format_number(v, "count")
                if isinstance(v, int)
                else format_number(v)
                if isinstance(v, float)
                else v
                for v in frame["value"]
            ]
            section.tables.append(
                HeadlineTable(
                    report_table_name(f"{key}_values"), f"{section.title}: recorded values", frame
                )
            )
        section.findings = f"This run recorded {len(leaves)} value{'s' if len(leaves) != 1 else ''} without intervals; the table lists them."
    return section


__all__: list[str] = []
