"""``ecc-lab map``: which model for which queries, the capability map of a dataset folder (issue 37).

Runs the ECC protocol with the flags of ``ecc-lab ecc`` (the same option definitions, so the two
commands always agree) and writes, under ``--out``:

- ``capability_map.csv``: one row per group and model (BT score and interval, P(best),
  distinguishable from the group's best);
- ``capability_map_groups.csv``: one row per group (name, size, best model, P(best), runner-up);
- ``capability_map.json``: the map as ``metrics.json["capability_map"]`` records it (groups, the
  held-out value with its paired interval), with the inputs;
- ``capability_map.png`` and ``.pdf``: the figure (groups x models), when matplotlib is installed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ecc_lib.cli.subcommand import Subcommand, UsageError, write_json
from ecc_lib.safe_output import atomic_path, write_csv


def _arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``ecc-lab map``: a dataset folder, the map's own flags and every flag of
    ``ecc-lab ecc``."""
    from ecc_lib.cli import ecc

    parser.add_argument(
        "dataset",
        nargs="?",
        metavar="DATASET",
        help="a folder with queries.* and outcomes.* tables, or a bundled dataset name (or give "
        "--queries and --outcomes)",
    )
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="folder for the CSV, JSON and figure files"
    )
    parser.add_argument(
        "--method",
        default=None,
        metavar="NAME",
        help="the grouping: a method of the protocol (ecc, emb_only, comp_only, human, "
        "ecc_labels, ecc_cv) or 'categories' (the human categories); default ecc_cv, the method "
        "ECC-CV chose",
    )
    parser.add_argument(
        "--boot",
        type=int,
        default=200,
        help="bootstrap draws over each group's training queries (default 200)",
    )
    ecc._arguments(parser)  # the protocol options of `ecc-lab ecc`, defined once
    for action in parser._actions:  # a DATASET folder may stand in for the two files
        if action.dest in ("queries", "outcomes"):
            action.required = False


def _dataset_files(args: argparse.Namespace) -> None:
    """Set ``args.queries`` and ``args.outcomes`` from the DATASET folder (or bundled name)."""
    if args.dataset is None:
        if not (args.queries and args.outcomes):
            raise UsageError("give a DATASET folder, or both --queries and --outcomes")
        return
    if args.queries or args.outcomes:
        raise UsageError("give a DATASET folder or --queries/--outcomes, not both")
    from ecc_lib.data.sources import BUNDLED_DATASETS, bundled_files, dataset_files

    found = dataset_files(args.dataset)
    if found is None and args.dataset in BUNDLED_DATASETS:
        queries, outcomes = bundled_files(args.dataset)
        found = {"queries": queries, "outcomes": outcomes}
    if found is None:
        raise FileNotFoundError(
            f"{args.dataset}: not a folder with queries.* and outcomes.* tables, nor a bundled "
            f"dataset ({', '.join(BUNDLED_DATASETS)})"
        )
    args.queries, args.outcomes = str(found["queries"]), str(found["outcomes"])


def _run(args: argparse.Namespace) -> int:
    """Handler of ``ecc-lab map``."""
    from ecc_lib.cli.ecc import ecc_result_from_args
    from ecc_lib.protocol.capability_map import CATEGORIES
    from ecc_lib.protocol.methods import default_methods

    if args.boot < 2:
        raise ValueError(f"--boot must be >= 2, got {args.boot}")
    known = (*default_methods(True), CATEGORIES)
    if args.method is not None and args.method not in known:  # before minutes of fitting
        raise UsageError(f"--method {args.method!r} is not one of {', '.join(known)}")
    _dataset_files(args)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"--out {out} exists and is not a folder")
    found, report, _ = ecc_result_from_args(args)
    cmap = found.capability_map(args.method, n_boot=args.boot)
    out.mkdir(parents=True, exist_ok=True)
    label = Path(str(args.dataset)).name if args.dataset else Path(args.queries).parent.name
    # spreadsheet-safe (a model named "=1+2" is quoted), atomic and never through a link
    write_csv(cmap.to_frame(), out / "capability_map.csv", float_format="%.10g", root=out)
    write_csv(cmap.group_table(), out / "capability_map_groups.csv", float_format="%.10g", root=out)
    payload = cmap.to_metrics(dataset=label)
    payload["inputs"] = {
        "queries": str(args.queries),
        "outcomes": str(args.outcomes),
        "n_input_queries": int(report.n_input_queries),
    }
    write_json(str(out / "capability_map.json"), payload)
    if args.json:
        write_json(args.json, payload)
    written = ["capability_map.csv", "capability_map_groups.csv", "capability_map.json"]
    try:
        from ecc_lib import plotting
    except ImportError:  # the plot extra is not installed: the tables and JSON still stand
        print("the figure is left out: matplotlib is not installed (pip install 'ecc_lib[plot]')")
    else:
        fig = plotting.plot_capability_map(
            cmap.to_frame(), title=f"Which model for which queries ({label})"
        )
        for suffix in ("png", "pdf"):
            with atomic_path(out / f"capability_map.{suffix}", root=out) as temporary:
                fig.savefig(temporary, dpi=200)
            written.append(f"capability_map.{suffix}")
    held = cmap.held_out
    low, high = held["ci95"]
    print(
        f"capability map of {label} ({cmap.method_detail}): {len(cmap.groups)} "
        f"group{'' if len(cmap.groups) == 1 else 's'}, global best "
        f"{cmap.global_best}; another model is best in {int(payload['n_groups_other_best'])} of "
        "them, the global best is distinguishable from it in "
        f"{len(cmap.groups_needing_other_model)}"
    )
    print(
        f"held out ({held['n_test_scored']} test queries): each group's best minus the global best "
        f"{held['estimate']:+.4f} mean score [{low:+.4f}, {high:+.4f}] (95% paired bootstrap)"
    )
    with_name = cmap.group_table()[["name", "n_train", "n_test", "best_model", "p_best"]]
    print(with_name.to_string(index=False, na_rep="\u2013"))  # a group too small to tell
    print(f"wrote {', '.join(written)} to {out}")
    return 0


SUBCOMMANDS = (
    Subcommand(
        "map",
        help="which model for which queries: the capability map of a dataset folder",
        description="Run the ECC protocol (the flags of 'ecc-lab ecc') and write the capability "
        "map of a grouping: per group and model the BT score with a bootstrap interval, P(best) "
        "and whether it is distinguishable from the group's best, the group's name, and the "
        "held-out value of sending each group to its best model (CSV, JSON and the figure).",
        add_arguments=_arguments,
        handler=_run,
    ),
)


__all__: list[str] = []
