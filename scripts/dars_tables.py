"""Print the DARS tables: exact versus Monte Carlo flip rates on synthetic data, and the routing
table (every router family on single-shot versus DARS targets, beside the best fixed model, random
and the oracle) on synthetic data and on a bundled dataset.

    python scripts/dars_tables.py [--runs 10] [--dataset re2] [--synthetic-queries 1500]
        [--routers kNN MLP ...] [--metrics score utility]

Takes several minutes per routing table on 2 cores (MLP, MIRT and k-means fits dominate); the
notebook ``04_routing`` runs a shorter version.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ecc_lib import dars, dars_diagnostics  # noqa: E402
from ecc_lib.embeddings import embed_texts  # noqa: E402
from ecc_lib.loaders import load_bundled  # noqa: E402
from ecc_lib.routing_evaluation import format_routing_table, routing_table  # noqa: E402
from ecc_lib.synthetic import make_repeated_outcomes  # noqa: E402

METRICS = ("score", "score_rewrite", "score_decode", "decode_instability", "cost", "utility")


def flip_rate_agreement(outcomes: pd.DataFrame, n_draws: int, seed: int) -> pd.DataFrame:
    """Exact and Monte Carlo flip rates with their 95% intervals, per side."""
    observations = dars.repeated_observations(outcomes)
    rows = []
    for side in ("input", "output", "both"):
        part = observations.subset_of(side)
        for method in ("exact", "monte_carlo"):
            summary = dars_diagnostics.subset_diagnostics(
                part, method=method, n_draws=n_draws, random_state=seed
            ).summary
            low, high = summary["winner_flip_rate_ci95"]
            rows.append(
                {
                    "side": side,
                    "method": method,
                    "winner_flip_rate": round(summary["winner_flip_rate"], 4),
                    "ci95": f"[{low:.4f}, {high:.4f}]",
                    "tied_top_share": round(summary["tied_top_share"], 4),
                    "disagreement": round(summary["single_vs_distribution_disagreement"], 4),
                }
            )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="single-shot repetitions R")
    parser.add_argument("--dataset", default="re2", help="bundled dataset ('' to skip)")
    parser.add_argument(
        "--synthetic-queries", type=int, default=1500, help="synthetic queries (0 skips them)"
    )
    parser.add_argument("--draws", type=int, default=1000, help="Monte Carlo draw pairs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--routers", nargs="*", default=None, help="router families (default: all of them)"
    )
    parser.add_argument(
        "--metrics", nargs="*", default=list(METRICS), help="metrics shown in the routing tables"
    )
    parser.add_argument(
        "--no-flip-rates", action="store_true", help="skip the flip-rate agreement table"
    )
    args = parser.parse_args(argv)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)

    tables = {}
    if args.synthetic_queries > 0:
        synthetic = make_repeated_outcomes(
            n_queries=args.synthetic_queries,
            n_models=5,
            n_rewrites=5,
            n_decodes=5,
            n_clusters=6,
            embedding_dim=32,
            embedding_noise=1.0,
            skill_gap=1.0,
            query_noise=0.7,
            rewrite_noise=0.7,
            random_state=args.seed,
        )
        if not args.no_flip_rates:
            print("Synthetic data: exact versus Monte Carlo winner flip rate\n")
            table = flip_rate_agreement(synthetic.outcomes, args.draws, args.seed)
            print(table.to_string(index=False))
        tables["synthetic"] = (
            synthetic.outcomes,
            synthetic.embeddings,
            synthetic.queries["query_id"],
        )
    if args.dataset:
        queries, outcomes = load_bundled(args.dataset)
        embeddings = embed_texts(queries["text"].tolist(), show_progress=True)
        tables[args.dataset] = (outcomes, embeddings, queries["query_id"])
    for name, (outcomes, embeddings, ids) in tables.items():
        result = routing_table(
            outcomes,
            embeddings,
            embedding_ids=ids,
            routers=args.routers,
            n_runs=args.runs,
            random_state=args.seed,
        )
        print(
            f"\nRouting table on {name} (single-shot: mean +- std over {args.runs} runs; "
            "[95% bootstrap interval over test queries])\n"
        )
        readable = format_routing_table(result, metrics=args.metrics, intervals=True)
        print(readable.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
