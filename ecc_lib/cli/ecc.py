"""``ecc-lab ecc``: the ECC paper protocol on a queries + outcomes pair of files.

Fits the global BT model, ECC, the embedding-only, comparison-only and (when the queries have
categories) human-label baselines on 80% of the queries and reports each method's NLL on the
scored test pairs, its ranking quality gain over the global model with a bootstrap 95% interval
over test queries, and its pairwise accuracy.
"""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ecc",
        help="evidence-calibrated clustering: the paper protocol with every baseline",
        description="Run the ECC paper protocol (pairs per query, 80/20 split by query, probe "
        "comparisons on test queries) and compare ECC with the global, embedding-only, "
        "comparison-only and human-label baselines.",
    )
    parser.add_argument(
        "--outcomes", required=True, metavar="FILE", help="long outcomes (query_id,model,score)"
    )
    parser.add_argument(
        "--queries", required=True, metavar="FILE", help="queries (query_id,text[,category])"
    )
    parser.add_argument(
        "--embeddings",
        metavar="FILE.npy",
        help="one embedding row per query, in the order of the queries file (default: embed the "
        "texts with the default model, through the cache)",
    )
    parser.add_argument("--k", type=int, default=30, help="number of clusters (default 30)")
    parser.add_argument("--lam", type=float, default=3.0, help="cosine weight (default 3)")
    parser.add_argument(
        "--temperature", type=float, default=0.1, help="softmax temperature (default 0.1)"
    )
    parser.add_argument("--pairs", type=int, default=7, help="non-tie pairs per query (default 7)")
    parser.add_argument(
        "--probes", type=int, default=1, help="probe comparisons per test query (default 1)"
    )
    parser.add_argument(
        "--test-size", type=float, default=0.2, help="share of test queries (default 0.2)"
    )
    parser.add_argument(
        "--seed", type=int, default=42, help="seed of pairs, split and EM (default 42)"
    )
    parser.add_argument(
        "--probe-strategy",
        choices=("first", "random", "active"),
        default="first",
        help="how test queries choose their probe pairs; 'random' or 'active' adds a comparison "
        "with 'first' on the scored pairs disjoint from both strategies' probes (default first)",
    )
    parser.add_argument(
        "--evidence",
        choices=("sampled", "soft"),
        default="sampled",
        help="pair outcomes: the mean-score winner (sampled, the paper) or the win probability "
        "under the empirical score distributions (soft; needs repeated observations)",
    )
    parser.add_argument("--json", metavar="OUT.json", help="write the results as JSON")
    parser.set_defaults(handler=run)


def _read_inputs(args: argparse.Namespace):
    from ecc_lib.loaders import read_outcomes, read_queries

    queries = read_queries(args.queries)
    outcomes = read_outcomes(args.outcomes, queries=queries)
    return queries, outcomes


def _embeddings(args: argparse.Namespace, queries):
    import numpy as np

    if args.embeddings:
        try:
            emb = np.load(args.embeddings, allow_pickle=False)
        except (OSError, ValueError) as error:
            if isinstance(error, FileNotFoundError):
                raise
            raise ValueError(f"{args.embeddings}: not a readable .npy array ({error})") from error
        if emb.ndim != 2 or emb.shape[0] != len(queries):
            raise ValueError(
                f"{args.embeddings}: embeddings have shape {emb.shape}, but the queries file "
                f"{args.queries} has {len(queries)} rows; pass one row per query, in its order"
            )
        return emb
    from ecc_lib.embeddings import embed_texts

    return embed_texts(queries["text"].astype(str).tolist(), show_progress=True)


def format_result(result) -> str:
    """The printed table of an :class:`ecc_lib.ecc_protocol.ECCEvaluation`."""
    lines = [
        f"ECC protocol: {result.n_queries} of {result.n_input_queries} queries kept "
        f"({result.n_input_queries - result.n_queries} with fewer than "
        f"{result.params.get('min_pairs', 2)} non-tie pairs left out; "
        f"{result.n_train} train, {result.n_test} test), "
        f"{result.n_models} models, {result.n_scored} scored test pairs, mode={result.mode}, "
        f"probes={result.n_probes}",
        "",
        f"{'method':<10} {'NLL':>7} {'gain %':>8} {'95% CI':>18} {'accuracy':>9} {'fit s':>7} "
        f"{'iter':>5}",
    ]
    lines.append("-" * len(lines[-1]))
    for _, row in result.table().iterrows():
        if row["method"] == "global":
            ci = "(reference)"
        else:
            ci = f"[{row['gain_low']:+.2f}, {row['gain_high']:+.2f}]"
        lines.append(
            f"{row['method']:<10} {row['nll']:>7.4f} {row['gain_pct']:>+8.2f} {ci:>18} "
            f"{row['accuracy']:>9.3f} {row['fit_seconds']:>7.2f} {int(row['n_iter']):>5}"
        )
    for name, diff in result.differences.items():
        low, high = diff["ci95"]
        lines.append(
            f"{name.replace('_minus_', ' - ')}: {diff['estimate']:+.2f} pp [{low:+.2f}, {high:+.2f}]"
        )
    if not result.converged.get("ecc", True):
        lines.append("note: ECC did not converge within max_iter")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ecc_lib.ecc_protocol import default_methods, run_protocol

    if args.k < 1:
        raise ValueError(f"--k must be >= 1, got {args.k}")
    if args.pairs < 2:
        raise ValueError(f"--pairs must be >= 2 (one probe and one scored pair), got {args.pairs}")
    if args.probes < 0 or args.probes >= args.pairs:
        raise ValueError(f"--probes must lie in [0, --pairs), got {args.probes}")
    queries, outcomes = _read_inputs(args)
    embeddings = _embeddings(args, queries)
    has_labels = "category" in queries.columns and bool(queries["category"].notna().any())
    methods = default_methods(has_labels)
    if args.evidence == "soft":
        from ecc_lib.soft_evidence import has_repeats

        if not has_repeats(outcomes):
            raise ValueError(
                f"--evidence soft needs repeated observations of some (query, model) pair; "
                f"{args.outcomes} holds one observation per pair"
            )
    result = run_protocol(
        queries,
        outcomes,
        embeddings,
        n_clusters=args.k,
        lam=args.lam,
        temperature=args.temperature,
        n_pairs=args.pairs,
        n_probes=args.probes,
        test_size=args.test_size,
        random_state=args.seed,
        methods=methods,
        evidence=args.evidence,
    )
    print(format_result(result))
    extra = _beyond(args, queries, outcomes, embeddings, result)
    if args.json:
        payload = result.to_dict()
        payload["inputs"] = {
            "queries": str(args.queries),
            "outcomes": str(args.outcomes),
            "embeddings": str(args.embeddings) if args.embeddings else None,
            "n_input_queries": int(len(queries)),
        }
        payload.update(extra)
        with open(args.json, "w", encoding="utf-8") as stream:
            json.dump(payload, stream, indent=2)
    return 0


def _beyond(args, queries, outcomes, embeddings, result) -> dict:
    """Probe-strategy comparison and soft-evidence comparison (issue 17), printed and returned
    for the JSON output."""
    from ecc_lib.serialization import to_jsonable

    extra = {}
    if args.probe_strategy != "first":
        from ecc_lib.active_probes import probe_strategy_comparison
        from ecc_lib.ecc_protocol import prepare_protocol

        if args.probes < 1:
            raise ValueError("--probe-strategy needs --probes >= 1")
        data = prepare_protocol(
            queries,
            outcomes,
            embeddings,
            args.pairs,
            args.test_size,
            args.seed,
            evidence=args.evidence,
        )
        comparison = probe_strategy_comparison(
            data,
            result.fitted["ecc"],
            result.fitted["global"],
            args.probe_strategy,
            n_probes=args.probes,
            curve=tuple(range(1, min(3, args.pairs - 1) + 1)),
            random_state=args.seed,
        )
        low, high = comparison["difference_ci95"]
        print(
            f"probe strategy {args.probe_strategy} vs first ({args.probes} probe(s), "
            f"{comparison['n_shared_pairs']} shared leak-free pairs): "
            f"{comparison['gain'][args.probe_strategy]:+.2f} vs {comparison['gain']['first']:+.2f} "
            f"gain %, difference {comparison['difference']:+.2f} pp [{low:+.2f}, {high:+.2f}]"
        )
        extra["probe_strategy_comparison"] = comparison
    if args.evidence == "soft":
        from ecc_lib.soft_evidence import soft_evidence_comparison

        soft = soft_evidence_comparison(
            queries, outcomes, embeddings, n_clusters=args.k, random_state=args.seed
        )
        t = soft["logloss"]
        low, high = t["sampled_minus_soft_ci95"]
        print(
            f"soft evidence on {soft['n_test']} held-out queries: log-loss {t['soft']:.4f} (soft) "
            f"vs {t['sampled_mean']:.4f} +- {t['sampled_sd']:.4f} (sampled, {soft['n_draws']} "
            f"draws); sampled - soft {t['sampled_minus_soft']:+.4f} [{low:+.4f}, {high:+.4f}]"
        )
        extra["soft_evidence"] = soft
    return to_jsonable(extra)
