"""Embed the texts of the bundled datasets and write the shipped cache in ``data/embeddings``.

Run from the repository root after ``scripts/build_bundled_data.py``::

    python scripts/build_embedding_cache.py [--model all-MiniLM-L6-v2]

One shard per dataset and model, ``data/embeddings/<model>/bundled-<dataset>.npz``, holding the sha256 digests of the
texts and their float32 unit vectors, read by :func:`ecc_lib.embed.encode.embed_texts`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ecc_lib import paths  # noqa: E402
from ecc_lib.data.sources import BUNDLED_DATASETS, load_bundled  # noqa: E402
from ecc_lib.embed.cache import text_digests  # noqa: E402
from ecc_lib.embed.encode import embed_texts  # noqa: E402
from ecc_lib.embed.models import model_slug  # noqa: E402
from ecc_lib.embed.views import text_views  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", default=None, help="sentence-transformers model (default: offline MiniLM)"
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--only", nargs="*", choices=BUNDLED_DATASETS, default=BUNDLED_DATASETS)
    args = parser.parse_args(argv)
    target = paths.bundled_embeddings_dir() / model_slug(args.model)
    target.mkdir(parents=True, exist_ok=True)
    for name in args.only:
        texts = sorted(set(load_bundled(name)[0]["text"]))
        # the cache key is the text the default view embeds (the tail of a too-long text)
        views = text_views(texts, model_name=args.model)[0]
        with tempfile.TemporaryDirectory() as scratch:
            vectors = embed_texts(
                texts,
                model_name=args.model,
                cache_dir=scratch,
                batch_size=args.batch_size,
                read_dirs=[],
            )
        file = target / f"bundled-{name}.npz"
        np.savez(file, digests=text_digests(views), vectors=vectors)
        print(f"{name}: wrote {len(texts)} vectors of dimension {vectors.shape[1]} to {file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
