"""Embedding speed per embedder on short, medium and long texts, in one run (issue 28).

Usage::

    python benchmarks/embed_speed.py                    # 256 texts per size for MiniLM
    python benchmarks/embed_speed.py --n-minilm 512 --rounds 3 --n-static 100000

Texts come from the bundled data: short (40-80 characters), medium (250-350, MMLU questions) and
long (1,200-1,800, dcrouter's few-shot prompts). Embedders:

- ``minilm before``: ``SentenceTransformer.encode(batch_size=64)``, the path of ``embed_texts``
  before issue 28;
- ``minilm now``: :func:`ecc_lib.embed.minilm.encode_minilm` (one tokenization, batches of about
  8,192 padded word pieces sorted by length, torch threads = idle cores), with the largest
  difference from ``before``;
- ``minilm int8``: the ONNX/int8 family's representative that needs no new package, torch dynamic
  int8 quantization of MiniLM's linear layers (its vectors differ, so it cannot serve the cache);
- ``static``: :mod:`ecc_lib.embed.static`.

The machine may be shared, so the MiniLM variants alternate over ``--rounds`` rounds and the best
rate of each counts; ratios between rows of one run are the load-robust numbers. The last lines
time ``embed_texts(..., model_name="static")`` on ``--n-static`` distinct medium texts (pairs of
bundled questions), with the cache off and on.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np


def _texts(low: int, high: int, n: int, pool: list[str], rng) -> list[str]:
    chosen = sorted({t for t in pool if low <= len(t) <= high})
    if len(chosen) < n:
        raise SystemExit(f"only {len(chosen)} bundled texts of {low}-{high} characters")
    return [chosen[i] for i in rng.choice(len(chosen), size=n, replace=False)]


def _medium_corpus(pool: list[str], n: int, rng) -> list[str]:
    """``n`` distinct texts of about 300 characters: pairs of bundled 100-200 character texts."""
    parts = sorted({t for t in pool if 100 <= len(t) <= 200})
    texts: dict[str, None] = {}
    while len(texts) < n:
        for a, b in rng.integers(0, len(parts), size=(n, 2)):
            texts.setdefault(f"{parts[a]} {parts[b]}", None)
            if len(texts) == n:
                break
    return list(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-minilm", type=int, default=256, help="texts per size for MiniLM")
    parser.add_argument("--n-static", type=int, default=100_000, help="medium texts, static")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    from ecc_lib.data.sources import load_bundled
    from ecc_lib.embed.encode import embed_texts
    from ecc_lib.embed.minilm import encode_minilm, minilm_threads
    from ecc_lib.embed.models import load_model
    from ecc_lib.embed.static import load_static_embedder

    rng = np.random.default_rng(args.seed)
    pool = []
    for name in ("dcrouter", "re2", "mmlu2"):
        pool += load_bundled(name)[0]["text"].astype(str).tolist()
    sizes = {
        "short": _texts(40, 80, args.n_minilm, pool, rng),
        "medium": _texts(250, 350, args.n_minilm, pool, rng),
        "long": _texts(1200, 1800, args.n_minilm, pool, rng),
    }
    print(
        f"load average at start: {os.getloadavg()[0]:.1f} (cores: {os.cpu_count()}), torch "
        f"threads {torch.get_num_threads()} (minilm now picks {minilm_threads()} from the load); "
        f"{args.n_minilm} texts per size, {args.rounds} rounds"
    )
    model = load_model(None)
    quantized = torch.ao.quantization.quantize_dynamic(  # deprecated, still the no-install int8
        load_model(None), {torch.nn.Linear}, dtype=torch.qint8, inplace=False
    )
    static = load_static_embedder()
    methods = {
        "minilm before": lambda t: model.encode(t, batch_size=64, normalize_embeddings=True),
        "minilm now": lambda t: encode_minilm(t, model, show_progress=False, estimate=False),
        "minilm int8": lambda t: quantized.encode(t, batch_size=64, normalize_embeddings=True),
        "static": lambda t: static.encode(t),
    }
    methods["minilm before"](sizes["short"][:8])  # warm up
    quantized.encode(sizes["short"][:8])
    rates = {(m, s): 0.0 for m in methods for s in sizes}
    vectors = {}
    for _ in range(args.rounds):
        for size, texts in sizes.items():
            for method, encode in methods.items():
                start = time.perf_counter()
                vectors[method, size] = np.asarray(encode(texts))
                rate = len(texts) / (time.perf_counter() - start)
                rates[method, size] = max(rates[method, size], rate)
    header = f"{'embedder':<14}" + "".join(f"{s + ' texts/s':>16}" for s in sizes)
    header += f"{'vs minilm now (medium)':>24}{'max |diff| vs before':>22}"
    print(header + "\n" + "-" * len(header))
    for method in methods:
        row = f"{method:<14}" + "".join(f"{rates[method, s]:>16,.1f}" for s in sizes)
        row += f"{rates[method, 'medium'] / rates['minilm now', 'medium']:>23,.2f}x"
        if method.startswith("minilm"):
            diff = max(
                float(np.abs(vectors[method, s] - vectors["minilm before", s]).max()) for s in sizes
            )
            row += f"{diff:>22.1e}"
        print(row)
    for size in sizes:
        print(
            f"minilm now / before on {size}: "
            f"{rates['minilm now', size] / rates['minilm before', size]:.2f}x"
        )

    corpus = _medium_corpus(pool, args.n_static, rng)
    lengths = np.array([len(t) for t in corpus])
    print(
        f"\n{len(corpus):,} distinct medium texts (median {np.median(lengths):.0f} characters), "
        "static embedder through embed_texts:"
    )
    start = time.perf_counter()
    embed_texts(corpus, model_name="static", use_cache=False, show_progress=False)
    uncached = time.perf_counter() - start
    print(f"  cache off: {uncached:.1f} s ({len(corpus) / uncached:,.0f} texts/s), measured")
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        embed_texts(
            corpus, model_name="static", cache_dir=folder, read_dirs=[], show_progress=False
        )
        cached = time.perf_counter() - start
    print(f"  cache on (writes a shard): {cached:.1f} s, measured")
    minilm_rate = rates["minilm now", "medium"]
    print(
        f"  minilm now at its medium rate would take {len(corpus) / minilm_rate / 60:.0f} min "
        f"(extrapolated from {args.n_minilm} texts); static / minilm now: "
        f"{len(corpus) / uncached / minilm_rate:,.0f}x"
    )
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
