"""What a collection run records about itself: its summary (counts, spend, how the rewrites were
read), the settings that shape the records, and the warnings at the end of a run.

Each run's settings and summary go into the store's ``manifest.json`` (see
:meth:`ecc_lib.collect.store.CollectionStore.update_manifest`).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field

from ecc_lib.collect.store import CollectionStore

logger = logging.getLogger(__name__)


@dataclass
class CollectionSummary:
    """What a collection run did.

    Attributes
    ----------
    store_dir : str
    n_planned : int
        ``queries x models x (1 + n_rewrites) x n_decodes``.
    n_done : int
        Planned records in the store at the end of the run.
    n_skipped : int
        Planned records already in the store when the run started.
    n_collected : int
        Records added by this run.
    n_failed : int
        Answer calls that failed for good in this run, empty replies included (rerun to try them
        again).
    n_empty_replies : int
        Answer calls whose reply was empty (``content`` null or blank), recorded as failures with
        their ``finish_reason``, never scored.
    n_missing_variants : int
        Rewrites still missing after this run (their decodes were not asked for).
    n_scoring_failures : int
        Records of this run stored with ``score = None``.
    n_without_final_answer : int
        Records of this run whose answer has no ``Final answer:`` line (nor ``\\boxed{}``): the
        scorer read them its fallback way (numeric: the last number; text: the last line;
        multiple choice: "the answer is X") or scored them 0.
    n_unpriced : int
        Calls of this run with unknown cost (no reported cost, model not in the price table).
    n_rewrite_calls : int
        Rewriting calls answered by the endpoint in this run.
    n_rewrite_structured : int
        Of those, calls whose rewrites were read as complete JSON.
    n_rewrite_fallback : int
        Calls whose rewrites were read by the tolerant parser (a numbered or one-per-line list, or
        the complete strings of a JSON answer cut short).
    n_rewrite_unusable : int
        Calls that gave no accepted rewrite (empty reply, nothing readable, every candidate
        refused) or failed for good; ``rewrite_problems`` counts the reasons.
    rewrite_problems : dict
        Reason -> number of rewriting calls.
    rewrite_format : str or None
        The ``response_format`` the run ended up using for rewrites, or ``"single"`` (one
        paraphrase per call).
    spend_usd : float
        Known cost of this run's calls (answers and rewrites).
    elapsed_s : float
    """

    store_dir: str
    n_queries: int = 0
    n_models: int = 0
    n_variants: int = 0
    n_decodes: int = 0
    n_planned: int = 0
    n_done: int = 0
    n_skipped: int = 0
    n_collected: int = 0
    n_failed: int = 0
    n_empty_replies: int = 0
    n_missing_variants: int = 0
    n_scoring_failures: int = 0
    n_without_final_answer: int = 0
    n_unpriced: int = 0
    n_rewrite_calls: int = 0
    n_rewrite_structured: int = 0
    n_rewrite_fallback: int = 0
    n_rewrite_unusable: int = 0
    rewrite_problems: dict = field(default_factory=dict)
    rewrite_format: str | None = None
    spend_usd: float = 0.0
    elapsed_s: float = 0.0

    @property
    def complete(self) -> bool:
        """Every planned record is in the store."""
        return self.n_done == self.n_planned

    def as_dict(self) -> dict:
        """The summary as a plain dict (with ``complete``), for JSON.

        Returns
        -------
        dict
        """
        return {**asdict(self), "complete": self.complete}

    def rewrite_report(self) -> str:
        """One sentence on the rewriting calls: structured, fallback, unusable, and why.

        Returns
        -------
        str
            ``"no rewrite calls"`` when there were none.
        """
        if not self.n_rewrite_calls and not self.n_rewrite_unusable:
            return "no rewrite calls"
        if self.rewrite_format == "single":
            text = (
                f"{self.n_rewrite_calls} rewrite call(s) asking for one paraphrase each: "
                f"{self.n_rewrite_unusable} gave no usable rewrite"
            )
        else:
            text = (
                f"{self.n_rewrite_calls} rewrite call(s): {self.n_rewrite_structured} read as "
                f"JSON, {self.n_rewrite_fallback} needed the list fallback, "
                f"{self.n_rewrite_unusable} gave no usable rewrite"
            )
        if self.rewrite_problems:
            reasons = "; ".join(
                f"{reason}: {count}"
                for reason, count in sorted(self.rewrite_problems.items(), key=lambda kv: -kv[1])
            )
            text += f" ({reasons})"
        if self.rewrite_format == "single":
            text += "; rewrite format single"
        elif self.rewrite_format:
            text += f"; response_format {self.rewrite_format}"
        return text


SETTINGS_THAT_SHAPE_RECORDS: tuple[str, ...] = (
    "temperature",
    "top_p",
    "max_tokens",
    "rewriter",
    "rewrite_temperature",
    "prompt_version",
    "extra_body",
)
"""Settings whose change between runs of one store mixes differently decoded records."""


def warn_on_changed_settings(store: CollectionStore, settings: dict) -> None:
    """Warn when this run decodes differently from the store's previous run (records would mix).

    Parameters
    ----------
    store : CollectionStore
        The store, read.
    settings : dict
        This run's settings (compared on :data:`SETTINGS_THAT_SHAPE_RECORDS`).
    """
    runs = store.manifest().get("runs", [])
    if not runs:
        return
    previous = runs[-1].get("settings", {})
    changed = {
        name: (previous.get(name), settings.get(name))
        for name in SETTINGS_THAT_SHAPE_RECORDS
        if name in previous and previous.get(name) != settings.get(name)
    }
    if changed:
        logger.warning(
            "%s was collected with other settings (previous, now): %s; new records will mix "
            "them (each record stores its own settings)",
            store.directory,
            changed,
        )


def log_summary(summary: CollectionSummary) -> None:
    """Warn about what a run left undone: calls of unknown cost, failed calls, missing rewrites,
    rewrites that needed the list fallback.

    Parameters
    ----------
    summary : CollectionSummary
        The finished run's summary.
    """
    if summary.n_unpriced:
        logger.warning(
            "%d call(s) have no cost: the API reported none and no price was given",
            summary.n_unpriced,
        )
    if summary.n_failed or summary.n_missing_variants:
        logger.warning(
            "%d answer call(s) failed (%d empty repl(ies)) and %d rewrite(s) are missing; run "
            "again to retry them",
            summary.n_failed,
            summary.n_empty_replies,
            summary.n_missing_variants,
        )
    if summary.n_without_final_answer:
        logger.warning(
            "%s", without_final_answer_sentence(summary.n_without_final_answer, summary.n_collected)
        )
    if summary.n_rewrite_fallback or summary.n_rewrite_unusable:
        logger.info("%s", summary.rewrite_report())


def without_final_answer_sentence(n_without: int, n_answers: int) -> str:
    """One sentence on answers that state no ``Final answer:`` line, for logs and reports.

    Parameters
    ----------
    n_without : int
        Answers without the line.
    n_answers : int
        Answers counted.

    Returns
    -------
    str
    """
    return (
        f"{n_without} of {n_answers} answer(s) have no 'Final answer:' line: the scorer read them "
        "its fallback way (the last number, the last line, or 'the answer is X' for options) "
        "or scored them wrong, so their scores measure the answer format as well as the answer"
    )


__all__: list[str] = []
