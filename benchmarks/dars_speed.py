"""Speed of the DARS statistics and flip rate on about one million observation rows.

Run: ``python benchmarks/dars_speed.py [--queries 10000] [--models 10] [--rewrites 5] [--decodes 2]``
(the defaults give 10,000 x 10 x 5 x 2 = 1,000,000 rows). Prints one line per step with its wall
time; nothing is asserted (this is a measurement, not a test).
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from ecc_lib.dars import distributions as dars
from ecc_lib.dars import label_instability as dars_diagnostics
from ecc_lib.dars import winners as dars_winners
from ecc_lib.data.schema import validate_outcomes
from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes


def timed(label: str, fn, rows: list):
    start = time.perf_counter()
    value = fn()
    rows.append((label, time.perf_counter() - start))
    return value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--rewrites", type=int, default=5)
    parser.add_argument("--decodes", type=int, default=2)
    parser.add_argument("--draws", type=int, default=1000, help="Monte Carlo draw pairs per query")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rows: list[tuple[str, float]] = []
    common = dict(
        n_queries=args.queries,
        n_models=args.models,
        n_rewrites=args.rewrites,
        n_decodes=args.decodes,
        random_state=args.seed,
    )
    binary = timed(
        "generate synthetic outcomes (binary)", lambda: make_repeated_outcomes(**common), rows
    )
    frame = binary.outcomes
    n_rows = len(frame)
    timed("validate_outcomes (schema checks)", lambda: validate_outcomes(frame), rows)
    obs = timed(
        "group by (query, model) pair",
        lambda: dars.repeated_observations(frame, validate=False),
        rows,
    )
    dist = timed(
        "capability distributions (mu_q, sigma_q, mu_c)",
        lambda: dars.capability_distributions(obs),
        rows,
    )
    u = dist.utility()
    timed(
        "labels: utility, hard, soft",
        lambda: (dars.hard_labels(dist.utility()), dars.soft_labels(u)),
        rows,
    )
    timed(
        "single-shot draws, R = 100",
        lambda: dars.single_shot_draws(obs, n_draws=100, random_state=args.seed),
        rows,
    )
    exact = timed(
        "flip rate, exact (binary closed form)",
        lambda: dars_winners.single_shot_winners(obs, u, method="exact"),
        rows,
    )
    mc = timed(
        f"flip rate, Monte Carlo ({args.draws} draw pairs per query)",
        lambda: dars_winners.single_shot_winners(
            obs, u, method="monte_carlo", n_draws=args.draws, random_state=args.seed
        ),
        rows,
    )
    timed(
        "label_instability: 3 subsets, exact, bootstrap CIs",
        lambda: dars_diagnostics.label_instability(obs, random_state=args.seed),
        rows,
    )
    continuous = make_repeated_outcomes(score_type="continuous", **common).outcomes
    obs_c = dars.repeated_observations(continuous, validate=False)
    timed(
        "label_instability: 3 subsets, Monte Carlo, bootstrap CIs",
        lambda: dars_diagnostics.label_instability(
            obs_c, n_draws=args.draws, random_state=args.seed
        ),
        rows,
    )

    print(
        f"DARS speed: {n_rows:,} observation rows ({args.queries:,} queries x {args.models} models "
        f"x {args.rewrites} rewrites x {args.decodes} decodes); {platform.processor() or platform.machine()}, "
        f"numpy {np.__version__}"
    )
    width = max(len(label) for label, _ in rows)
    print(f"{'step':<{width}}  {'seconds':>8}")
    print("-" * (width + 10))
    for label, seconds in rows:
        print(f"{label:<{width}}  {seconds:>8.2f}")
    print(
        f"\nflip rate exact {exact.flip.mean():.4f}, Monte Carlo {mc.flip.mean():.4f} "
        f"(max per-query |difference| {np.abs(exact.flip - mc.flip).max():.3f})"
    )


if __name__ == "__main__":
    main()
