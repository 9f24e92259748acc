"""Print the DARS tables: the three readings of the winner flip rate (with chance levels) on the
bundled dataset and on synthetic many-decode data, exact against Monte Carlo, and the routing
table (every router family on single-shot versus DARS targets, beside the best fixed model, random
and the oracle) with DARS minus single-shot as paired differences.

    python scripts/dars_tables.py [--runs 10] [--dataset re2] [--synthetic-queries 1500]
                                  [--skip-routing]

Takes several minutes per routing table on 2 cores (MLP, MIRT and k-means fits dominate); the
notebook ``04_routing`` runs a shorter version.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ecc_lib.dars import distributions as dars
from ecc_lib.dars import label_instability as dars_diagnostics  # noqa: E402
from ecc_lib.data.sources import load_bundled  # noqa: E402
from ecc_lib.embed.encode import embed_texts  # noqa: E402
from ecc_lib.plotting import flip_rate_table  # noqa: E402
from ecc_lib.routing_evaluation import (  # noqa: E402
    format_paired_differences,
    format_routing_table,
    routing_headline,
    routing_table,
)
from ecc_lib.synthetic import make_repeated_outcomes  # noqa: E402

METRICS = ("score", "score_rewrite", "score_decode", "decode_instability", "cost", "utility")
READING_KEYS = {
    "pairwise": "winner_flip_rate",
    "strict": "winner_flip_rate_strict",
    "change": "winner_change_rate",
}


def readings(outcomes: pd.DataFrame, n_draws: int, seed: int) -> pd.DataFrame:
    """The three flip readings per side with 95% intervals and chance levels."""
    table = flip_rate_table(
        dars_diagnostics.label_instability(outcomes, n_draws=n_draws, random_state=seed)
    )
    table["ci95"] = [
        f"[{lo:.3f}, {hi:.3f}]" if pd.notna(lo) else "-"
        for lo, hi in zip(table["low"], table["high"], strict=True)
    ]
    return table[["side", "reading", "flip_rate", "ci95", "chance", "change_draws", "n_queries"]]


def exact_against_monte_carlo(outcomes: pd.DataFrame, n_draws: int, seed: int) -> pd.DataFrame:
    """Exact and Monte Carlo readings with their 95% intervals, per side."""
    observations = dars.repeated_observations(outcomes)
    rows = []
    for side, part in dars.observation_subsets(observations).items():
        if part is None:
            continue
        for method in ("exact", "monte_carlo"):
            summary = dars_diagnostics.subset_diagnostics(
                part, method=method, n_draws=n_draws, random_state=seed
            ).summary
            row = {"side": side, "method": method}
            for reading, key in READING_KEYS.items():
                low, high = summary[f"{key}_ci95"]
                row[reading] = f"{summary[key]:.4f} [{low:.4f}, {high:.4f}]"
            rows.append(row)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="single-shot repetitions R")
    parser.add_argument("--dataset", default="re2", help="bundled dataset ('' to skip)")
    parser.add_argument("--synthetic-queries", type=int, default=1500)
    parser.add_argument("--draws", type=int, default=1000, help="Monte Carlo draw pairs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--routers", nargs="*", default=None, help="router families (all)")
    parser.add_argument("--skip-routing", action="store_true", help="only the flip readings")
    args = parser.parse_args(argv)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    pd.set_option("display.max_colwidth", 40)

    many_decodes = make_repeated_outcomes(
        n_queries=args.synthetic_queries,
        n_models=7,
        n_rewrites=1,
        n_decodes=10,
        n_clusters=6,
        random_state=args.seed,
    )
    flip_sets = {"synthetic, 7 models x 10 decodes (binary)": many_decodes.outcomes}
    bundled = None
    if args.dataset:
        bundled = load_bundled(args.dataset)
        flip_sets[args.dataset] = bundled[1]
    for name, outcomes in flip_sets.items():
        print(f"\nThree readings of the winner flip rate on {name} (95% CI; chance: identical")
        print("models with every score tied)\n")
        print(readings(outcomes, args.draws, args.seed).to_string(index=False))

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
    print("\nSynthetic data (5 models x 5 rewrites x 5 decodes): exact versus Monte Carlo\n")
    print(exact_against_monte_carlo(synthetic.outcomes, args.draws, args.seed).to_string())
    if args.skip_routing:
        return 0

    tables = {
        "synthetic": (synthetic.outcomes, synthetic.embeddings, synthetic.queries["query_id"])
    }
    if bundled is not None:
        queries, outcomes = bundled
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
        print(f"\nRouting table on {name} (single-shot: mean +- std over {args.runs} runs)\n")
        print(format_routing_table(result, metrics=METRICS).to_string(index=False))
        print(
            f"\nDARS minus single-shot on {name}, paired on the same test queries (95% CI over "
            f"test queries and the {args.runs} single-shot runs jointly)\n"
        )
        print(format_paired_differences(result.paired).to_string(index=False))
        print("\n" + routing_headline(result)["sentence"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
