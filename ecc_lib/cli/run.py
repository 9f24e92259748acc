"""``ecc-lab run``: execute the analysis notebooks with papermill into a run folder."""

from __future__ import annotations

import argparse
import errno
from pathlib import Path

from ecc_lib.cli.subcommand import Subcommand


def _arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``ecc-lab run``."""
    parser.add_argument(
        "--config",
        metavar="PARAMS.yaml",
        help="YAML parameters: top-level keys apply to every notebook that declares them, "
        "keys such as '03_clustering:' hold a mapping for one notebook",
    )
    parser.add_argument(
        "--only",
        metavar="02,03",
        help="comma-separated notebook numbers or names to run (default: all)",
    )
    parser.add_argument(
        "--out",
        metavar="runs/NAME",
        help="run folder (default: runs/<time stamp>); an earlier run folder (marked by "
        "ecc_lib) is reused for the same datasets, a non-empty folder that is not one (or "
        "notebooks/) is refused",
    )
    parser.add_argument(
        "--append",
        action="store_true",
        help="allow a dataset the --out run folder does not hold yet (by default a second dataset "
        "is refused, so that the report never mixes two runs); its other outputs are kept",
    )
    parser.add_argument(
        "--replace-damaged",
        action="store_true",
        help="start a new run.json when the --out folder's is damaged (not readable JSON); by "
        "default such a folder is refused, since run.json records which datasets it holds",
    )
    parser.add_argument(
        "--dataset",
        metavar="NAME",
        help="set the 'dataset' parameter of every notebook that declares it "
        "(a folder with queries.* and outcomes.* tables, relative to the current directory, or "
        "a bundled or public name; an existing folder wins)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="per-cell time limit; a cell that runs longer stops the run with a message",
    )
    parser.add_argument(
        "--notebooks",
        metavar="DIR",
        help="run the notebooks in DIR (e.g. a folder made by 'ecc-lab init') instead of the "
        "package's own",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


UNWRITABLE_ERRNOS: frozenset[int] = frozenset(
    code
    for code in (
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.ENOSPC,
        getattr(errno, "EDQUOT", None),
    )
    if code is not None
)
"""Errors of a run folder that cannot be written: one line, not a traceback (issue 36)."""


class RunFolderWriteError(ValueError):
    """The run folder cannot be written (read-only or full file system, no permission)."""


def _run(args: argparse.Namespace) -> int:
    """Run the pipeline; print the run folder and the main outputs."""
    from ecc_lib.runs.pipeline import run_pipeline

    if args.timeout is not None and not args.timeout > 0:
        raise ValueError(f"--timeout must be a positive number of seconds, got {args.timeout}")
    if args.dataset is not None:
        from ecc_lib.data.sources import dataset_files

        dataset_files(args.dataset)  # a folder that is no dataset yet: its one-line reason now
    try:
        result = run_pipeline(
            config=args.config,
            only=args.only,
            out=args.out,
            dataset=args.dataset,
            notebooks_dir=args.notebooks,
            progress=not args.no_progress,
            timeout=args.timeout,
            append=args.append,
            replace_damaged=args.replace_damaged,
        )
    except OSError as error:
        if error.errno not in UNWRITABLE_ERRNOS:
            raise
        where = f" {error.filename}" if error.filename else ""
        raise RunFolderWriteError(
            f"cannot write{where}: {error.strerror or error} (is the --out folder on a read-only "
            "or full file system, or not yours to write?)"
        ) from None
    print(f"run folder: {result.run_dir}")
    if result.metrics_path is not None:
        print(f"metrics:    {result.metrics_path}")
    if result.report_path is not None:
        print(f"report:     {result.report_path}")
    total = sum(result.durations.values())
    print(f"notebooks:  {len(result.executed)} in {total:.0f} s")
    summary = _recorded_summary(result.metrics_path)
    if summary:
        print("summary (the report's, from metrics.json):")
        print(summary)
    return 0


def _recorded_summary(path) -> str:
    """The summary recorded in ``metrics.json["summary"]``, as plain text ("" without one)."""
    import json

    if path is None or not Path(path).is_file():
        return ""
    recorded = json.loads(Path(path).read_text(encoding="utf-8")).get("summary") or {}
    parts = []
    for dataset, lines in recorded.items():
        if not isinstance(lines, list):
            continue
        parts.append(f"  {dataset}:")
        parts += ["    " + row for line in lines for row in str(line.get("text", "")).splitlines()]
    return "\n".join(parts)


SUBCOMMANDS = (
    Subcommand(
        "run",
        help="execute the notebooks (01 data ... 05 report) into runs/NAME/",
        description=(
            "Execute notebooks/NN_*.ipynb in order with papermill into a run folder: executed "
            "notebooks, figures/ (PNG and PDF), tables/ (CSV), metrics.json and report.html. "
            "A failing notebook stops the run; an unknown parameter is an error."
        ),
        add_arguments=_arguments,
        handler=_run,
        interrupted=(
            "interrupted; the executed copy of the running notebook is marked as incomplete and "
            "run.json says 'interrupted'"
        ),
    ),
)


__all__: list[str] = []
