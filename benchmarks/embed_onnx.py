"""MiniLM on CPU: today's path (sentence-transformers ``encode``) against the length-batched path
in PyTorch and in ONNX Runtime, in one run, on short, medium and long bundled texts.

Prints texts/s, the speed-up over ``encode`` and the largest difference of the unit vectors from
``encode``'s (the shipped embedding cache holds ``encode``'s vectors; 1e-6 keeps it valid).

Usage: python benchmarks/embed_onnx.py [--n 600] [--repeats 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ecc_lib.data.sources import load_bundled  # noqa: E402
from ecc_lib.embed import minilm, models  # noqa: E402


def texts_of_length(low: int, high: int, n: int) -> list[str]:
    """Distinct bundled query texts of ``low`` to ``high`` characters."""
    pool = []
    for name in ("mmlu2", "dcrouter", "re2"):
        queries, _ = load_bundled(name)
        pool += queries["text"].astype(str).drop_duplicates().tolist()
    chosen = [t for t in dict.fromkeys(pool) if low <= len(t) <= high]
    return chosen[:n]


def main() -> int:
    """Time the three paths and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=600, help="texts per length class")
    parser.add_argument("--repeats", type=int, default=2, help="best of this many runs")
    args = parser.parse_args()
    model = models.load_model(None)
    minilm.encode_minilm(["warm up"] * 4, model, show_progress=False, backend="onnx")
    rows = []
    for label, (low, high) in {
        "short (~60)": (40, 90),
        "medium (~300)": (220, 380),
        "long (~1,500)": (1200, 1800),
    }.items():
        texts = texts_of_length(low, high, args.n)
        best = {}
        for _ in range(args.repeats):
            for path, run in (
                ("encode", lambda t: model.encode(t, batch_size=64, normalize_embeddings=True)),
                (
                    "torch",
                    lambda t: minilm.encode_minilm(t, model, show_progress=False, backend="torch"),
                ),
                (
                    "onnx",
                    lambda t: minilm.encode_minilm(t, model, show_progress=False, backend="onnx"),
                ),
            ):
                start = time.perf_counter()
                vectors = run(texts)
                seconds = time.perf_counter() - start
                if path not in best or seconds < best[path][0]:
                    best[path] = (seconds, vectors)
        reference = best["encode"][1]
        for path, (seconds, vectors) in best.items():
            rows.append(
                (
                    label,
                    len(texts),
                    path,
                    len(texts) / seconds,
                    best["encode"][0] / seconds,
                    float(np.abs(vectors - reference).max()),
                )
            )
    print(
        f"{'texts':15s} {'n':>5s} {'path':7s} {'texts/s':>9s} {'vs encode':>10s} {'max |diff|':>11s}"
    )
    for label, n, path, rate, ratio, diff in rows:
        print(f"{label:15s} {n:5d} {path:7s} {rate:9.1f} {ratio:9.2f}x {diff:11.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
