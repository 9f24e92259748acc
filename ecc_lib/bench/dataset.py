"""One dataset of the benchmark: load and prepare it as ``ecc-lab ecc`` does, run the checks, the
seeds (cached under ``DIR/work/<dataset>/``) and the flip readings (resumable)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from ecc_lib.bench.seed import bench_seed
from ecc_lib.bench.settings import BenchSettings, bench_methods
from ecc_lib.bench.summary import summarise_seeds
from ecc_lib.safe_output import write_text
from ecc_lib.serialization import to_jsonable
from ecc_lib.stats import DEFAULT_N_BOOT


def _write_json(path: Path, payload) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(to_jsonable(payload), indent=1, allow_nan=False))


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def dataset_label(name: str) -> str:
    """The label of a dataset: a bundled or public name as given, a folder by its name.

    Parameters
    ----------
    name : str

    Returns
    -------
    str
    """
    from ecc_lib.data.sources import dataset_files

    if dataset_files(name) is not None:
        return Path(name).expanduser().resolve().name
    return str(name)


def data_fingerprint(name: str) -> str | None:
    """sha256 over the queries and outcomes files of a folder or bundled dataset.

    A cached bench record is reused only for the same files: a folder edited in place, or another
    folder of the same name, is recomputed.

    Parameters
    ----------
    name : str
        Bundled name, public name or folder (as :func:`ecc_lib.data.sources.load_dataset` reads it).

    Returns
    -------
    str or None
        Hex digest; None for a public dataset (downloaded, not fingerprinted here).
    """
    from ecc_lib import paths
    from ecc_lib.data.sources import BUNDLED_DATASETS, dataset_files

    files = dataset_files(name)
    if files is None and name in BUNDLED_DATASETS:
        files = dataset_files(paths.data_dir() / name)
    if files is None:
        return None
    digest = hashlib.sha256()
    for kind in ("queries", "outcomes"):
        digest.update(f"{kind}:{files[kind].name}:".encode())
        with open(files[kind], "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def prepare_dataset(name: str, *, show_progress: bool = True):
    """Load, embed and apply the data policy as ``ecc-lab ecc`` does.

    Parameters
    ----------
    name : str
        Bundled name, public name or folder.
    show_progress : bool
        Progress bar while embedding texts the cache lacks.

    Returns
    -------
    queries, outcomes, embeddings, embedding_check, policy_report
    """
    from ecc_lib.data.policy import apply_data_policy
    from ecc_lib.data.sources import load_dataset
    from ecc_lib.embed.encode import embed_texts

    queries, outcomes = load_dataset(name)
    embeddings, check = embed_texts(
        queries["text"].astype(str).tolist(), show_progress=show_progress, return_check=True
    )
    kept, outcomes, report = apply_data_policy(queries, outcomes, dataset=dataset_label(name))
    embeddings = embeddings[queries["query_id"].isin(set(kept["query_id"])).to_numpy()]
    return kept, outcomes, embeddings, check, report


FLIP_KEYS = {
    "pairwise": "winner_flip_rate",
    "strict": "winner_flip_rate_strict",
    "change": "winner_change_rate",
}
"""The winner-flip readings of the bench and their keys in ``metrics.json["dars"]``."""


def flip_readings(outcomes: pd.DataFrame, *, n_boot: int = DEFAULT_N_BOOT) -> dict | None:
    """The three winner-flip readings with their chance level, on all observations (None without
    repeated observations).

    Parameters
    ----------
    outcomes : DataFrame
    n_boot : int

    Returns
    -------
    dict or None
        ``pairwise``, ``strict``, ``change``: ``{"estimate", "ci95", "chance"}``; ``change_draws``.
    """
    from ecc_lib.dars.label_instability import label_instability
    from ecc_lib.data.policy import has_repeated_observations

    if not has_repeated_observations(outcomes):
        return None
    both = label_instability(outcomes, n_boot=n_boot, random_state=0)["both"]
    if both is None:
        return None
    s = both.summary
    chance = s["flip_rate_chance"]
    out = {"change_draws": s["winner_change_rate_r"], "method": s["flip_rate_method"]}
    for reading, key in FLIP_KEYS.items():
        out[reading] = {"estimate": s[key], "ci95": s[f"{key}_ci95"], "chance": chance[reading]}
    return to_jsonable(out)


def bench_dataset(
    name: str,
    *,
    settings: BenchSettings,
    out_dir: str | os.PathLike,
    progress: Callable[[str], None] | None = None,
    show_progress: bool = True,
) -> dict:
    """Checks, protocol over seeds, flip readings and routing of one dataset (resumable).

    Parameters
    ----------
    name : str
        Bundled name, public name or folder.
    settings : BenchSettings
    out_dir : path
        The bench folder (``datasets/`` and ``work/`` are written under it).
    progress : callable, optional
        Called with one line per step (checks, each seed).
    show_progress : bool
        Progress bar while embedding.

    Returns
    -------
    dict
        ``dataset``, ``status`` (``"done"``, ``"failed_checks"`` or ``"not_applicable"``),
        ``checks``, ``failures`` / ``reason``, ``summary`` (:func:`summarise_seeds`), ``flips``,
        ``per_seed``, ``settings``, ``seconds``.
    """
    from ecc_lib.data import checks as checks_module
    from ecc_lib.data import text_checks
    from ecc_lib.data.protocol_policy import human_baseline_reason

    say = progress or (lambda line: None)
    label = dataset_label(name)
    out_dir = Path(out_dir)
    done_path = out_dir / "datasets" / f"{label}.json"
    done = _read_json(done_path)
    fingerprint = data_fingerprint(name)
    if _is_current(done, settings, fingerprint, seeds=settings.seeds):
        say(f"[{label}] already done in {done_path}: not recomputed")
        return done
    start = time.perf_counter()
    queries, outcomes, embeddings, _, policy = prepare_dataset(name, show_progress=show_progress)
    timing: dict = {"prepare_seconds": time.perf_counter() - start}
    tick = time.perf_counter()
    results = checks_module.run_checks(outcomes, queries, embeddings=embeddings)
    timing["checks_seconds"] = time.perf_counter() - tick
    timing["check_seconds"] = {k: r.seconds for k, r in results.items()}
    entry: dict = {
        "dataset": label,
        "source": str(name),
        "data_sha256": fingerprint,
        "settings": settings.key(),
        "seeds": settings.seeds,
        "n_queries": int(len(queries)),
        "n_models": int(outcomes["model"].nunique()),
        "data_policy": policy.to_dict(),
        "timing": timing,
    }
    failed = checks_module.failures(results)
    say(f"[{label}] checks: {checks_module.worst_status(results)}")

    def finish(status: str, **fields) -> dict:
        """The entry with its outcome ``fields`` and the checks, written to ``done_path``."""
        entry.update(status=status, **fields, checks=checks_module.checks_to_dict(results))
        return _finish(entry, done_path, seconds=time.perf_counter() - start)

    if failed:
        return finish("failed_checks", failures=failed)
    methods = bench_methods(human_baseline_reason(queries.get("category")) is None)
    entry["methods"] = list(methods)
    data = (queries, outcomes, embeddings)
    work = out_dir / "work" / label
    records, error = _seed_records(data, methods, settings, fingerprint, work, label, say)
    if error is not None:  # the protocol does not apply (too few decisive pairs ...)
        reason = f"the ECC protocol does not apply: {error}"
        say(f"[{label}] {reason}")
        return finish("not_applicable", reason=reason)
    # duplicates across the protocol's split (of the first seed)
    results["texts"] = text_checks.check_texts(
        queries, train_ids=records[0]["train_ids"], test_ids=records[0]["test_ids"]
    )
    tick = time.perf_counter()
    flips = flip_readings(outcomes, n_boot=settings.n_boot)
    timing["flips_seconds"] = time.perf_counter() - tick
    entry.update(status="done", checks=checks_module.checks_to_dict(results))
    return _finish(
        entry,
        done_path,
        summary=summarise_seeds(records),
        flips=flips,
        per_seed=[
            {k: v for k, v in r.items() if k not in ("train_ids", "test_ids", "settings")}
            for r in records
        ],
        seconds=time.perf_counter() - start,
        seed_seconds=[r["seconds"] for r in records],
        seed_cpu_seconds=[r.get("cpu_seconds") for r in records],
    )


def _is_current(record: dict | None, settings: BenchSettings, fingerprint: str, **more) -> bool:
    """True for a stored record of these settings and data (and the ``more`` fields)."""
    return bool(
        record
        and record.get("settings") == settings.key()
        and all(record.get(key) == value for key, value in more.items())
        and record.get("data_sha256") == fingerprint
    )


def _finish(entry: dict, done_path: Path, **fields) -> dict:
    """The dataset's entry with its outcome ``fields``, written to ``done_path``."""
    entry.update(fields)
    _write_json(done_path, entry)
    return to_jsonable(entry)


def _seed_records(
    data: tuple,
    methods: Sequence[str],
    settings: BenchSettings,
    fingerprint: str,
    work: Path,
    label: str,
    say: Callable[[str], None],
) -> tuple[list[dict], ValueError | None]:
    """The protocol's record of every seed (read from ``work`` where current, else run and
    written there), or the error of the first seed where the protocol does not apply."""
    queries, outcomes, embeddings = data
    records = []
    for i, seed in enumerate(settings.seeds):
        path = work / f"seed_{seed}.json"
        cached = _read_json(path)
        if _is_current(cached, settings, fingerprint, methods_run=list(methods)):
            records.append(cached)
            say(f"[{label}] seed {seed} ({i + 1}/{settings.n_seeds}): cached")
            continue
        say(f"[{label}] seed {seed} ({i + 1}/{settings.n_seeds}): running")
        try:
            record = bench_seed(
                queries, outcomes, embeddings, seed=seed, methods=methods, settings=settings
            )
        except ValueError as error:
            return records, error
        record["settings"] = settings.key()
        record["methods_run"] = list(methods)
        record["data_sha256"] = fingerprint
        _write_json(path, record)
        records.append(record)
        say(f"[{label}] seed {seed} ({i + 1}/{settings.n_seeds}): {record['seconds']:.1f} s")
    return records, None


__all__: list[str] = []
