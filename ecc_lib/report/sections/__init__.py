"""The sections of the report, one module per notebook (as in :mod:`ecc_lib.plotting`): each builder
fills a :class:`~ecc_lib.report.document.ReportSection` with a findings paragraph generated from the
numbers (what was measured, the headline with its uncertainty, the comparison with the baselines,
and plainly when a result is negative), its headline tables and notes.
"""

__all__: list[str] = []
