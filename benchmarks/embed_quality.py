"""ECC and embedding-only gains with each embedder side by side (issue 28).

Usage::

    python benchmarks/embed_quality.py                  # dcrouter, few-shot, re2; 5 seeds
    python benchmarks/embed_quality.py --seeds 10 --static-weights other.npz

For each dataset and embedder (``minilm``: all-MiniLM-L6-v2 through the cache; ``static``: the
distilled static model) the paper protocol runs over protocol seeds 42, 43, ... (each redraws
pairs, split and EM start) and the table gives mean +- sd over seeds of the ranking quality gain
over global BT (percent) on all scored pairs and on the scored pairs disjoint from the probe's
models (re2 has 3 models, so every scored pair touches the probe: n/a), the paired difference
static - minilm (mean +- sd over seeds), and the share of distinct texts whose vector equals
another's (4 decimals). ``fewshot`` is dcrouter's few-shot categories (``mmlu`` and
``agentverse-logicgrid``, 750 queries, mostly over MiniLM's 256 word pieces) with K = 5 clusters
(K = 30 leaves about 20 training queries per cluster there).
"""

from __future__ import annotations

import argparse

import numpy as np

from ecc_lib.data.sources import load_bundled
from ecc_lib.ecc.estimator import ECC
from ecc_lib.embed.check import count_duplicate_vectors
from ecc_lib.embed.encode import embed_texts
from ecc_lib.protocol.seeds import run_seeds
from ecc_lib.protocol.settings import Protocol

FEWSHOT = ("mmlu", "agentverse-logicgrid")
METHODS = ("ecc", "emb_only")


def _datasets():
    queries, outcomes = load_bundled("dcrouter")
    yield "dcrouter", queries, outcomes, 30
    few = queries[queries["category"].isin(FEWSHOT)].reset_index(drop=True)
    yield "fewshot", few, outcomes[outcomes["query_id"].isin(few["query_id"])], 5
    queries, outcomes = load_bundled("re2")
    yield "re2", queries, outcomes, 30


def _fmt(values) -> str:
    values = np.asarray(values, dtype=float)
    if not np.isfinite(values).any():
        return "n/a"
    return f"{np.nanmean(values):+6.2f} +- {np.nanstd(values, ddof=1):4.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=42)
    parser.add_argument("--static-weights", help="weights file of the static embedder")
    args = parser.parse_args()
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    if args.static_weights:
        from ecc_lib.embed import static as static_embeddings

        static_embeddings._loaded[""] = static_embeddings.StaticEmbedder.load(args.static_weights)
    header = (
        f"{'dataset':<9} {'embedder':<8} {'method':<9} {'gain all pairs':>16} "
        f"{'gain disjoint':>16} {'static-minilm all':>18} {'static-minilm disj':>19} "
        f"{'dup vectors':>12}"
    )
    print(f"seeds {seeds[0]}..{seeds[-1]}; mean +- sd over seeds, percent\n{header}")
    print("-" * len(header))
    for name, queries, outcomes, k in _datasets():
        texts = queries["text"].astype(str).tolist()
        gains = {}
        for embedder in ("minilm", "static"):
            vectors = embed_texts(texts, model_name=embedder, show_progress=False)
            duplicates = count_duplicate_vectors(vectors, texts) / len(set(texts))
            result = run_seeds(
                queries,
                outcomes,
                vectors,
                protocol=Protocol(seeds=tuple(seeds), n_boot=20),
                estimator=ECC(n_clusters=k),
                methods=("global", *METHODS),
            )
            for method in METHODS:
                all_pairs = [r.gain[method] for r in result.results]
                disjoint = [r.gain_disjoint.get(method, np.nan) for r in result.results]
                gains[embedder, method] = (np.array(all_pairs), np.array(disjoint))
                diff_all = diff_disjoint = ""
                if embedder == "static":
                    base_all, base_disjoint = gains["minilm", method]
                    diff_all = _fmt(np.array(all_pairs) - base_all)
                    diff_disjoint = _fmt(np.array(disjoint) - base_disjoint)
                print(
                    f"{name:<9} {embedder:<8} {method:<9} {_fmt(all_pairs):>16} "
                    f"{_fmt(disjoint):>16} {diff_all:>18} {diff_disjoint:>19} "
                    f"{100 * duplicates:>11.2f}%",
                    flush=True,
                )


if __name__ == "__main__":
    main()
