"""What a run records about its inputs: the data policy, the checks and the embedding check.

The domain modules (:mod:`ecc_lib.data.policy`, :mod:`ecc_lib.data.checks`,
:mod:`ecc_lib.embed.encode`) compute these reports; this module writes them into the run
folder's ``metrics.json`` and reads them back, so that no domain module imports a run folder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ecc_lib.data.checks import checks_to_dict
from ecc_lib.runs import folder as run_folder
from ecc_lib.runs.metrics import record_metric_entry

if TYPE_CHECKING:
    from ecc_lib.data.check_result import CheckResult
    from ecc_lib.data.policy import DataPolicyReport
    from ecc_lib.embed.check import EmbeddingCheck


def record_data_policy(run_dir, report: DataPolicyReport) -> None:
    """Add ``report`` under ``data_policy.<dataset>`` of the run's ``metrics.json``.

    Parameters
    ----------
    run_dir : path or RunContext
    report : DataPolicyReport
    """
    record_metric_entry(run_dir, "data_policy", report.dataset, report.to_dict())


def recorded_policy(run_dir, label: str) -> dict:
    """The policy report recorded for dataset ``label`` in a run folder (``{}`` when none).

    Parameters
    ----------
    run_dir : path or RunContext
    label : str

    Returns
    -------
    dict
        :meth:`DataPolicyReport.to_dict` as recorded by :func:`record_data_policy`.
    """
    path = run_folder.run_context(run_dir).metrics_dir / "data_policy.json"
    if not path.exists():
        return {}
    return run_folder.read_json(path).get("values", {}).get(str(label), {})


def record_checks(run_dir, label: str, results: dict[str, CheckResult]) -> None:
    """Set ``metrics.json["checks"][label]`` to :func:`checks_to_dict` of ``results``.

    Parameters
    ----------
    run_dir : path or RunContext
    label : str
        Dataset label.
    results : dict of CheckResult
    """
    record_metric_entry(run_dir, "checks", label, checks_to_dict(results))


def record_embedding_check(run_dir, label: str, check: EmbeddingCheck) -> None:
    """Add ``check`` under ``embeddings.<label>`` of the run's ``metrics.json``.

    Parameters
    ----------
    run_dir : path or RunContext
    label : str
        Dataset label.
    check : EmbeddingCheck
    """
    record_metric_entry(run_dir, "embeddings", label, check.to_dict())


__all__ = [
    "record_checks",
    "record_embedding_check",
    "recorded_policy",
]
