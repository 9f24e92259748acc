"""ecc_cv beside ECC and its baselines on disjoint pairs over protocol seeds, and its search cost.

Usage::

    python benchmarks/ecc_cv.py                                  # dcrouter, 5 seeds
    python benchmarks/ecc_cv.py --dataset re2 --seeds 5
    python benchmarks/ecc_cv.py --dataset synthetic:dominant     # a regime of ecc_lib.synthetic.regimes
    python benchmarks/ecc_cv.py --leak-free --json out.json

Per seed the protocol (:func:`ecc_lib.protocol.seeds.run_seeds`) redraws pairs, split and EM start and
fits the global BT model, ECC (K = 30, T = 0.1, lam = 3), embedding-only, human labels,
label-informed ECC and ``ecc_cv`` on the training queries. The table gives the gain over the
global model on the scored test pairs disjoint from the probe's models (mean +- sd over seeds),
the paired differences ``ecc_cv - X`` (mean +- sd over seeds of the per-seed difference), the
goal ``ecc_cv - max(0, emb_only_tuned, human_tuned, ecc, ecc_labels)`` (issue 26, with the
tuned-prior baselines of issue 34; per seed and on the means), the settings
chosen per seed and the search cost: the wall time of ``ecc_cv``'s fit (search + refit) over the
wall time of one ECC fit on the same seed.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from ecc_lib.protocol.methods import default_methods
from ecc_lib.protocol.seeds import run_seeds
from ecc_lib.protocol.settings import Protocol
from ecc_lib.stats import mean_sd

REFERENCES = ("emb_only_tuned", "human_tuned", "ecc", "ecc_labels")  # issue 34: tuned baselines


def _load(name: str):
    if name.startswith("synthetic:"):
        from ecc_lib.synthetic.regimes import make_regime

        planted = make_regime(name.split(":", 1)[1], random_state=0)
        return planted.queries, planted.outcomes, planted.embeddings
    from ecc_lib.embed.encode import embed_texts
    from ecc_lib.runs import provenance

    queries, outcomes = provenance.load_dataset(name)
    embeddings = embed_texts(queries["text"].astype(str).tolist(), show_progress=False)
    return queries, outcomes, embeddings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="dcrouter")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--leak-free", action="store_true")
    parser.add_argument(
        "--pairs",
        choices=("disjoint", "all"),
        default="disjoint",
        help="scored test pairs read: disjoint from the probe's models (default) or all",
    )
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    queries, outcomes, embeddings = _load(args.dataset)
    has_labels = "category" in queries.columns and queries["category"].nunique() > 1
    methods = default_methods(has_labels)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    multi = run_seeds(
        queries,
        outcomes,
        embeddings,
        protocol=Protocol(seeds=tuple(seeds), leak_free=args.leak_free),
        methods=methods,
    )
    names = [m for m in methods if m not in ("global", "comp_only")]
    attr = "gain_disjoint" if args.pairs == "disjoint" else "gain"
    gains = {m: np.array([getattr(r, attr).get(m, np.nan) for r in multi.results]) for m in names}
    reading = "leak-free probes" if args.leak_free else "paper probes"
    print(
        f"{args.dataset}: {len(queries)} queries, {outcomes['model'].nunique()} models, seeds "
        f"{seeds}; gain % over global BT on {'scored pairs disjoint from the probe' if args.pairs == 'disjoint' else 'all scored pairs'} "
        f"({reading}); "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    print(f"{'method':<12} {'mean':>7} {'sd':>6}  per seed")
    for m in names:
        mean, sd = mean_sd(gains[m])
        per = " ".join(f"{g:6.2f}" for g in gains[m])
        print(f"{m:<12} {mean:7.2f} {sd:6.2f}  {per}")
    print("paired ecc_cv - X (pp, mean +- sd over seeds):")
    diffs = {}
    for m in names:
        if m == "ecc_cv" or not np.isfinite(gains[m]).all():
            continue
        d = gains["ecc_cv"] - gains[m]
        diffs[m] = d
        mean, sd = mean_sd(d)
        print(f"  - {m:<11} {mean:+6.2f} +- {sd:4.2f}   " + " ".join(f"{x:+6.2f}" for x in d))
    refs = [m for m in REFERENCES if m in gains]
    best_ref = np.maximum(0.0, np.nanmax(np.vstack([gains[m] for m in refs]), axis=0))
    per_seed_gap = gains["ecc_cv"] - best_ref
    means = {m: float(np.mean(gains[m])) for m in refs}
    goal_ref = max(0.0, *means.values())
    print(
        f"goal: ecc_cv - max(0, {', '.join(refs)}) = {np.mean(gains['ecc_cv']) - goal_ref:+.2f} pp "
        f"on the means (max = {goal_ref:.2f}); per seed "
        + " ".join(f"{x:+.2f}" for x in per_seed_gap)
    )
    ratio = np.array(
        [r.fit_seconds["ecc_cv"] / r.fit_seconds["ecc"] for r in multi.results], dtype=float
    )
    secs = np.array([r.fit_seconds["ecc_cv"] for r in multi.results])
    print(
        f"search cost: ecc_cv fit {secs.mean():.2f} s = {ratio.mean():.1f} x one ECC fit "
        f"(per seed {' '.join(f'{x:.1f}' for x in ratio)})"
    )
    chosen = [r.params["best_params"]["ecc_cv"] for r in multi.results]
    from ecc_lib.ecc.cv_grid import describe_params

    for seed, params in zip(seeds, chosen, strict=True):
        print(f"  seed {seed}: {describe_params(params)}")
    from ecc_lib.ecc.cv_grid import describe_choices

    print(f"ecc_cv chose {describe_choices(chosen)}")
    if args.json:
        payload = {
            "dataset": args.dataset,
            "seeds": seeds,
            "leak_free": args.leak_free,
            "pairs": args.pairs,
            "gain": {m: gains[m].tolist() for m in names},
            "ecc_cv_minus": {m: d.tolist() for m, d in diffs.items()},
            "goal_gap_means": float(np.mean(gains["ecc_cv"]) - goal_ref),
            "cost_ratio": ratio.tolist(),
            "ecc_cv_seconds": secs.tolist(),
            "best_params": [
                {
                    k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                    for k, v in p.items()
                }
                for p in chosen
            ],
        }
        with open(args.json, "w") as fh:
            json.dump(payload, fh, indent=1)


if __name__ == "__main__":
    main()
