"""``ecc-lab bench``: the checks, the ECC protocol over seeds, the flip readings and routing on
several datasets, in one table (:mod:`ecc_lib.bench`, :mod:`ecc_lib.report.bench`).

Writes ``bench.json``, ``bench.csv``, ``bench.tex``, ``bench_gains.png|pdf`` and ``bench.html``
into ``--out``; a dataset already done there (same settings and seeds) is not recomputed, nor is a
seed already done. ``--out`` must be new, empty or an earlier bench folder (marked by ecc_lib, as run
folders are): a user's folder is never written into.
"""

from __future__ import annotations

import argparse
import sys

from ecc_lib import defaults as D
from ecc_lib.cli.subcommand import Subcommand, add_protocol_flags


def _arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``ecc-lab bench``."""
    parser.add_argument(
        "datasets",
        nargs="+",
        metavar="DATASET",
        help="bundled dataset names (dcrouter, re2, mmlu2), public names or folders holding "
        "queries.* and outcomes.* tables",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=3,
        help="number of protocol seeds --seed, --seed+1, ... (default 3)",
    )
    parser.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="folder of the outputs: new, empty or an earlier bench folder (a non-empty folder "
        "ecc_lib did not write is refused)",
    )
    parser.add_argument(
        "--seed", type=int, default=D.SEED, help=f"first protocol seed (default {D.SEED})"
    )
    add_protocol_flags(parser, "k", "pairs", "probes", "test-size")


def _run(args: argparse.Namespace) -> int:
    """Handler of ``ecc-lab bench``."""
    from ecc_lib.bench import BenchSettings, run_bench
    from ecc_lib.report.bench import format_bench, write_bench_outputs

    settings = BenchSettings(
        n_clusters=args.k,
        n_pairs=args.pairs,
        n_probes=args.probes,
        test_size=args.test_size,
        seed=args.seed,
        n_seeds=args.seeds,
    )

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    result = run_bench(args.datasets, settings=settings, out_dir=args.out, progress=progress)
    paths = write_bench_outputs(result, args.out)
    print(format_bench(result))
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


SUBCOMMANDS = (
    Subcommand(
        "bench",
        help="checks, ECC over seeds, flip readings and routing across datasets in one table",
        description="For each dataset: the checks (a dataset that fails one is listed and left "
        "out), the ECC protocol over seeds with every method (gain on all and on disjoint pairs, "
        "mean +- sd), the winner flip readings where repeats exist, and routing (best router "
        "minus the best fixed model, and minus the probe's winner). Writes bench.json, bench.csv, "
        "bench.tex, bench_gains.png and bench.html; resumable.",
        add_arguments=_arguments,
        handler=_run,
    ),
)


__all__: list[str] = []
