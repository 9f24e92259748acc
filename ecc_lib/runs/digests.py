"""Data digests per notebook of a run folder: a dataset edited between two ``--only`` runs into one
folder would leave one report mixing two versions of it (issue 36), so ``run.json`` records, per
notebook, the sha256 of every file of each dataset it read (``data_digests``), and a run whose
notebooks would read another version of a dataset than the folder's other notebooks did is refused
before anything runs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ecc_lib.runs.provenance import dataset_fingerprint

DATA_DIGESTS_KEY = "data_digests"
"""Key of ``run.json``: ``{notebook: {dataset: {file: sha256}}}``."""


class DatasetChangedError(ValueError):
    """A dataset changed since other notebooks of the run folder read it."""


def _difference(before: Mapping[str, str], now: Mapping[str, str]) -> str:
    """The first file that differs between two fingerprints, in words."""
    for name in sorted(set(before) | set(now)):
        old, new = before.get(name), now.get(name)
        if old != new:
            if old is None:
                return f"{name} is new"
            if new is None:
                return f"{name} is gone"
            return f"{name}: sha256 {old[:12]} then, {new[:12]} now"
    return "no file differs"


def check_data_digests(
    run_dir: Path,
    previous: Mapping[str, Any],
    planned: Mapping[str, Iterable[str]],
) -> dict[str, dict[str, dict[str, str]]]:
    """The ``data_digests`` of ``run.json`` after this run; refuse a dataset that changed.

    Parameters
    ----------
    run_dir : Path
        The run folder (for the message).
    previous : mapping
        The folder's earlier ``run.json`` (its ``data_digests``, absent in older folders, are the
        notebooks' earlier readings).
    planned : mapping
        ``{notebook: datasets}`` of the notebooks this run executes.

    Returns
    -------
    dict
        ``{notebook: {dataset: {file: sha256}}}``: the earlier readings of the notebooks that do
        not run, and this run's of those that do. Datasets without files (a public dataset
        downloaded on demand, a collection) have empty fingerprints and are not compared.

    Raises
    ------
    DatasetChangedError
        A notebook of this run would read a dataset whose files differ from those a notebook
        that does not run read into the same folder.
    """
    recorded = previous.get(DATA_DIGESTS_KEY) if isinstance(previous, Mapping) else None
    recorded = recorded if isinstance(recorded, Mapping) else {}
    fingerprints: dict[str, dict[str, str]] = {}
    for datasets in planned.values():
        for dataset in datasets:
            if dataset not in fingerprints:
                fingerprints[dataset] = dataset_fingerprint(str(dataset))
    kept = {
        stem: readings
        for stem, readings in recorded.items()
        if stem not in planned and isinstance(readings, Mapping)
    }
    for readings in (kept[stem] for stem in sorted(kept)):
        for dataset, before in readings.items():
            now = fingerprints.get(dataset)
            if not now or not isinstance(before, Mapping) or not before or dict(before) == now:
                continue
            readers = sorted(s for s, ds in planned.items() if dataset in ds)
            stale = sorted(s for s, r in kept.items() if dataset in r)
            raise DatasetChangedError(
                f"dataset {dataset!r} changed since notebook(s) {stale} read it into {run_dir} "
                f"({_difference(before, now)}); running {readers} alone would mix two versions of "
                f"it in one report: rerun every notebook that reads it (--only "
                f"{','.join(s.split('_', 1)[0] for s in sorted({*stale, *readers}))}) or choose "
                "another --out"
            )
    digests = {stem: {d: dict(f) for d, f in readings.items()} for stem, readings in kept.items()}
    for stem, datasets in planned.items():
        digests[stem] = {dataset: fingerprints[dataset] for dataset in datasets}
    return digests


__all__: list[str] = []
