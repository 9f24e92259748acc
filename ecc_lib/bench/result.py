"""The benchmark over datasets: :func:`run_bench` and its :class:`BenchResult` (the table with the
mean row, the per-method sentences, the JSON)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from ecc_lib.bench.dataset import bench_dataset, dataset_label
from ecc_lib.bench.settings import BenchSettings
from ecc_lib.grammar import BETTER_WORSE
from ecc_lib.safe_output import claim_output_folder
from ecc_lib.serialization import to_jsonable


def _cell(mean_sd_pair) -> str:
    """``+m.mm +- s.ss`` as ``ecc-lab ecc --seeds`` prints it (``n/a`` when missing)."""
    mean, sd = mean_sd_pair if mean_sd_pair is not None else (None, None)
    if mean is None or mean != mean:
        return "n/a"
    return f"{mean:+.2f} +- {sd:.2f}" if sd is not None and sd == sd else f"{mean:+.2f}"


def _tally(cells: list, words: str, without: str) -> tuple[str, int, int]:
    """``better than WORDS on 2, worse on 0, not distinguishable on 1 (1 without WITHOUT)`` over
    the datasets' verdict cells (None: not compared), with the counts compared and without a
    verdict."""
    cells = [c for c in cells if c is not None]
    counts = dict.fromkeys(BETTER_WORSE, 0)
    for cell in cells:
        if cell["verdict"] is not None:
            counts[cell["verdict"]] += 1
    undefined = sum(cell["verdict"] is None for cell in cells)
    text = (
        f"better than {words} on {counts['better than']}, worse on "
        f"{counts['worse than']}, not distinguishable on "
        f"{counts['not distinguishable from']}"
        + (f" ({undefined} without {without})" if undefined else "")
    )
    return text, len(cells) - undefined, undefined


_NO_ROUTING = {"best_router": None, "difference": [np.nan, np.nan], "ci95": [np.nan, np.nan]}
"""The routing cells of a setting the dataset did not run."""


@dataclass
class BenchResult:
    """The benchmark over datasets.

    Attributes
    ----------
    datasets : dict
        ``{label: bench_dataset entry}`` in the order given.
    settings : BenchSettings
    seconds : float
    """

    datasets: dict
    settings: BenchSettings
    seconds: float = float("nan")
    methods: list = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.methods:  # every included dataset's methods, first seen first
            included = self.included.values()
            self.methods = list(dict.fromkeys(m for e in included for m in e["summary"]["methods"]))

    @property
    def included(self) -> dict:
        """The datasets in the table (checks passed, protocol applied)."""
        return {k: v for k, v in self.datasets.items() if v.get("status") == "done"}

    @property
    def left_out(self) -> dict:
        """``{label: reason}`` of the datasets left out of the table."""
        out = {}
        for label, entry in self.datasets.items():
            if entry.get("status") == "failed_checks":
                out[label] = "failed checks: " + "; ".join(
                    f"{k}: {v}" for k, v in entry["failures"].items()
                )
            elif entry.get("status") == "not_applicable":
                out[label] = entry["reason"]
        return out

    def table(self, reading: str = "gain_disjoint") -> pd.DataFrame:
        """One row per included dataset and the mean row: ``mean +- sd`` over seeds per method
        (gain in % of the global BT's NLL on ``reading``), routing and flip columns.

        Parameters
        ----------
        reading : {"gain_disjoint", "gain", "gain_touching"}

        Returns
        -------
        DataFrame of str
        """
        numeric = self.numeric_table()
        records = numeric.to_dict("records")
        n = len(records) - 1  # datasets (the last row is the mean)
        rows = []
        for i, row in enumerate(records):
            cells = {"dataset": row["dataset"]}
            for m in self.methods:
                key = f"{m}_{reading}"
                cells[m] = _cell((row.get(f"{key}_mean"), row.get(f"{key}_sd")))
                if i == n and cells[m] != "n/a":
                    seen = int(numeric[f"{key}_mean"].iloc[:n].notna().sum())
                    if seen < n:
                        cells[m] += f" ({seen} of {n})"
            rows.append(cells)
        return pd.DataFrame(rows, columns=["dataset", *self.methods])

    def numeric_table(self) -> pd.DataFrame:
        """The numbers of :meth:`table` for every reading, one row per included dataset plus the
        ``mean`` row (the average over the datasets where the method ran).

        Returns
        -------
        DataFrame
        """
        rows = []
        for label, entry in self.included.items():
            s = entry["summary"]
            row: dict = {
                "dataset": label,
                "n_queries": entry["n_queries"],
                "n_models": entry["n_models"],
                "n_seeds": len(s["seeds"]),
            }
            for m in self.methods:
                for reading in ("gain", "gain_disjoint"):
                    mean, sd = s[reading].get(m, (np.nan, np.nan))
                    row[f"{m}_{reading}_mean"], row[f"{m}_{reading}_sd"] = mean, sd
            for setting, column in (
                ("no_probe", "router_minus_fixed"),
                ("probe", "router_minus_probe_winner"),
            ):
                r = s["routing"].get(setting) or _NO_ROUTING
                row[f"{column}_router"] = r["best_router"]
                row[f"{column}_mean"], row[f"{column}_sd"] = r["difference"][:2]
                row[f"{column}_low"], row[f"{column}_high"] = r["ci95"][:2]
            flips = entry.get("flips") or {}
            for reading in ("pairwise", "strict", "change"):
                f = flips.get(reading) or {}
                row[f"flip_{reading}"] = f.get("estimate", np.nan)
                row[f"flip_{reading}_chance"] = f.get("chance", np.nan)
            rows.append(row)
        frame = pd.DataFrame(rows)
        if len(frame):
            mean = {"dataset": "mean", "n_queries": np.nan, "n_models": np.nan, "n_seeds": np.nan}
            for column in frame.columns:
                if column in mean or not pd.api.types.is_numeric_dtype(frame[column]):
                    continue
                # an sd over seeds (or an interval's bound) does not average into anything
                spread = column.endswith(("_sd", "_low", "_high"))
                mean[column] = np.nan if spread else frame[column].mean(skipna=True)
            frame = pd.concat([frame, pd.DataFrame([mean])], ignore_index=True)
            for column in ("n_queries", "n_models", "n_seeds"):
                frame[column] = frame[column].astype("Int64")  # counts; empty on the mean row
        return frame

    def sentences(self) -> list[str]:
        """One sentence per method: on how many datasets it is better than, worse than or not
        distinguishable from the global BT and from human labels on disjoint pairs.

        Returns
        -------
        list of str
        """
        out = []
        n = len(self.included)
        for m in self.methods:
            if m == "ecc_cv" and self._has_tuned():
                out.append(self._ecc_cv_sentence(n))
                continue
            parts = []
            for reference, words in (("global", "the global BT"), ("human", "human labels")):
                if m == reference:
                    continue
                # a cell without a verdict: no scored pair is disjoint from the probe
                cells = [
                    e["summary"]["versus"].get(reference, {}).get(m) for e in self.included.values()
                ]
                text, seen, undefined = _tally(cells, words, "disjoint pairs")
                if seen == 0:
                    parts.append(
                        f"no dataset has {words} to compare with on disjoint pairs"
                        if not undefined
                        else f"no disjoint pair to compare with {words} on {undefined} dataset(s)"
                    )
                    continue
                parts.append(text)
            out.append(
                f"{m} on disjoint pairs, over the {n} dataset(s) in the table: "
                + "; ".join(parts)
                + "."
                + (self._ecc_cv_choice_text() if m == "ecc_cv" else "")
            )
        return out

    def _has_tuned(self) -> bool:
        return any(
            (entry["summary"].get("versus_tuned") or {}).get(key) is not None
            for entry in self.included.values()
            for key in ("reference", "best")
        )

    def _ecc_cv_sentence(self, n: int) -> str:
        """ECC-CV against the tuned baselines only (issue 34): the tuned global BT and, per
        dataset, the tuned baseline with the largest gain; then what it chose."""
        parts = []
        for key, words in (
            ("reference", "the tuned global BT"),
            ("best", "the best tuned baseline"),
        ):
            cells = [
                (e["summary"].get("versus_tuned") or {}).get(key) for e in self.included.values()
            ]
            if key == "best":
                names = [c["method"] for c in cells if c is not None and c["verdict"] is not None]
                words += f" ({', '.join(dict.fromkeys(names))})" if names else ""
            text, seen, _ = _tally(cells, words, "a verdict")
            parts.append(text if seen else f"no dataset has {words} to compare with")
        return (
            f"ecc_cv over the {n} dataset(s) in the table, against the tuned baselines only: "
            + "; ".join(parts)
            + "."
            + self._ecc_cv_choice_text()
        )

    def _ecc_cv_choice_text(self) -> str:
        """`` It chose ...`` per dataset: ECC-CV's choice in words (issue 34)."""
        said = []
        for name, entry in self.included.items():
            choice = entry["summary"].get("ecc_cv_choice") or {}
            if choice.get("words"):
                tail = "" if choice.get("clustering") else " (no clustering: not a clustering gain)"
                said.append(f"on {name} {choice['words']}{tail}")
        return f" It chose {'; '.join(said)}." if said else ""

    def to_metrics(self) -> dict:
        """JSON-ready: ``settings``, ``seeds``, ``datasets`` (every entry), ``included``,
        ``left_out``, ``methods``, ``table`` (numeric), ``sentences``, ``seconds``.

        Returns
        -------
        dict
        """
        return to_jsonable(
            {
                "settings": asdict(self.settings),
                "seeds": self.settings.seeds,
                "methods": self.methods,
                "included": list(self.included),
                "left_out": self.left_out,
                "table": self.numeric_table().to_dict("records"),
                "sentences": self.sentences(),
                "datasets": self.datasets,
                "seconds": self.seconds,
            }
        )


def run_bench(
    datasets: Sequence[str],
    *,
    settings: BenchSettings,
    out_dir: str | os.PathLike,
    progress: Callable[[str], None] | None = None,
    show_progress: bool = True,
) -> BenchResult:
    """:func:`bench_dataset` on every dataset, gathered in a :class:`BenchResult`.

    Parameters
    ----------
    datasets : sequence of str
        Bundled names, public names or folders (distinct labels).
    settings : BenchSettings
    out_dir : path
        The output folder: new, empty or one ecc_lib marked
        (:func:`ecc_lib.safe_output.claim_output_folder`); a user's non-empty folder is refused
        before anything is computed.
    progress : callable, optional
        One line per step.
    show_progress : bool
        Progress bars while embedding.

    Returns
    -------
    BenchResult

    Raises
    ------
    ecc_lib.safe_output.OutputFolderError
        ``out_dir`` is a file or a non-empty folder without ecc_lib's marker.
    """
    if not datasets:
        raise ValueError("the bench needs at least one dataset")
    labels = [dataset_label(d) for d in datasets]
    if len(set(labels)) != len(labels):
        raise ValueError(f"dataset labels must be distinct, got {labels}")
    claim_output_folder(out_dir)
    start = time.perf_counter()
    entries = {}
    for name, label in zip(datasets, labels, strict=True):
        entries[label] = bench_dataset(
            name, settings=settings, out_dir=out_dir, progress=progress, show_progress=show_progress
        )
    return BenchResult(entries, settings, seconds=time.perf_counter() - start)


__all__ = [
    "BenchResult",
    "run_bench",
]
