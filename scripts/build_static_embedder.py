"""Distil the static embedder from the shipped all-MiniLM-L6-v2 into ``data/embedders/``.

Run from the repository root::

    python scripts/build_static_embedder.py [--n-components 128] [--alpha 0.01] [--out FILE]

Embeds every word piece of MiniLM's vocabulary with MiniLM, refits the table on the bundled mmlu2
questions (their MiniLM vectors ship in ``data/embeddings``), projects it onto its first principal
axes and stores int8 rows with one scale each (see :mod:`ecc_lib.embed.static`). A few minutes
on two cores. ``--token-vectors FILE.npz`` (arrays ``v`` and ``e``) reuses step 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ecc_lib.embed.encode import static_refit_corpus  # noqa: E402
from ecc_lib.embed.models import load_model  # noqa: E402
from ecc_lib.embed.static import (  # noqa: E402
    DEFAULT_ALPHA,
    DEFAULT_N_COMPONENTS,
    build_static_weights,
    shipped_weights_path,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-components", type=int, default=DEFAULT_N_COMPONENTS)
    parser.add_argument(
        "--alpha", type=float, default=DEFAULT_ALPHA, help="ridge weight; 0 skips the refit"
    )
    parser.add_argument("--out", type=Path, default=shipped_weights_path())
    parser.add_argument("--token-vectors", type=Path, help="reuse distilled token vectors (.npz)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    token_vectors = None
    if args.token_vectors is not None:
        with np.load(args.token_vectors) as saved:
            token_vectors = (saved["v"], saved["e"])
    path = build_static_weights(
        args.out,
        n_components=args.n_components,
        alpha=args.alpha if args.alpha > 0 else None,
        corpus=static_refit_corpus() if args.alpha > 0 else None,
        token_vectors=token_vectors,
        model=load_model(None) if token_vectors is None else None,
    )
    size = path.stat().st_size / 2**20
    print(f"wrote {path} ({size:.1f} MiB) in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
