"""The probe-strategy experiment: first, random and active probes on the same scored pairs, at
equal numbers of probes, with paired bootstrap intervals, on one protocol or over seeds."""

from __future__ import annotations

import functools

import numpy as np

from ecc_lib.data.splits import probe_models, split_probe
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.mixture import comparison_nll
from ecc_lib.protocol.active_probes import probes_from_scores
from ecc_lib.protocol.methods import fit_methods, methods_from_prototype
from ecc_lib.protocol.probes import PROBE_STRATEGIES
from ecc_lib.protocol.settings import Protocol
from ecc_lib.stats import (
    DEFAULT_N_BOOT,
    bootstrap_indices,
    gain_percent,
    paired_difference,
    ratio_gain,
)


def compare_probe_strategies(
    data,
    model,
    reference,
    *,
    protocol: Protocol | None = None,
    strategies: tuple[str, ...] = PROBE_STRATEGIES,
    probe_counts: tuple[int, ...] = (1, 2, 3),
    score_from: int | None = None,
    criterion: str = "entropy",
) -> list[dict]:
    """Gains of probe strategies on the same scored pairs, at equal numbers of probes.

    For each number of probes ``n``, the scored pairs are the test comparisons from position
    ``score_from`` on (default ``max(probe_counts)``) that share no model with the probes of *any*
    compared strategy at ``n`` probes; every strategy is scored on exactly those pairs.

    Parameters
    ----------
    data : ecc_lib.protocol.data.ProtocolData
    model : fitted ECC-like estimator
    reference : fitted estimator
        The gain reference (the global BT model).
    protocol : Protocol, optional
        The settings (default ``Protocol()``); read here: ``mode`` (inference mode of ``model``)
        and ``protocol.seed`` (seeds the random strategy).
    strategies : tuple of str
    probe_counts : tuple of int
        Numbers of probes.
    score_from : int, optional
    criterion : {"entropy", "predictive"}
        Criterion of the ``"active"`` strategy.

    Returns
    -------
    list of dict
        One row per (strategy, n_probes): ``strategy, n_probes, n_shared_pairs, nll,
        nll_reference, gain`` and the per-query loss sums ``loss_by_query`` / ``reference_by_query``
        (for paired bootstraps).
    """
    protocol = Protocol() if protocol is None else protocol
    mode, random_state, n_probes = protocol.mode, protocol.seed, probe_counts
    score_from = max(n_probes) if score_from is None else score_from
    test = data.test
    scores = data.scores[data.test_mask]
    scored = split_probe(test, n_probes=score_from)[1]
    labels = data.labels_test
    rows = []
    for n in n_probes:
        probes = {
            s: probes_from_scores(
                model,
                scores,
                test,
                n_probes=n,
                strategy=s,
                score_from=score_from,
                embeddings=data.x_test,
                labels=labels,
                random_state=random_state,
                criterion=criterion,
            )
            for s in strategies
        }
        touched = np.zeros((test.n_queries, test.n_models), dtype=bool)
        for probe in probes.values():
            touched |= probe_models(probe)
        keep = ~(touched[scored.query, scored.model_a] | touched[scored.query, scored.model_b])
        shared = scored.take(keep)
        p_ref = reference.predict_proba(shared, embeddings=data.x_test, mode=mode, labels=labels)
        ref = comparison_nll(p_ref, shared.y)
        ref_q = np.bincount(shared.query, weights=ref, minlength=test.n_queries)
        for s, probe in probes.items():
            p = model.predict_proba(
                shared, embeddings=data.x_test, probe=probe if n else None, mode=mode, labels=labels
            )
            loss = comparison_nll(p, shared.y)
            rows.append(
                {
                    "strategy": s,
                    "n_probes": int(n),
                    "n_shared_pairs": int(len(shared)),
                    "nll": float(loss.mean()) if len(loss) else float("nan"),
                    "nll_reference": float(ref.mean()) if len(ref) else float("nan"),
                    "gain": gain_percent(ref, loss),
                    "loss_by_query": np.bincount(
                        shared.query, weights=loss, minlength=test.n_queries
                    ),
                    "reference_by_query": ref_q,
                }
            )
    return rows


def probe_strategy_comparison(
    data,
    model,
    reference,
    *,
    protocol: Protocol | None = None,
    strategy: str = "active",
    curve: tuple[int, ...] = (1, 2, 3),
    criterion: str = "entropy",
) -> dict:
    """``strategy`` against ``"first"`` on the shared leak-free pairs, plus the strategy curve.

    Parameters
    ----------
    data : ecc_lib.protocol.data.ProtocolData
    model, reference : fitted estimators
        The method whose probes are chosen (e.g. ECC) and the gain reference (global BT).
    protocol : Protocol, optional
        The settings (default ``Protocol()``); read here: ``n_probes`` (probes of the headline
        comparison; its scored pairs are the test comparisons from position ``n_probes`` on that
        share no model with either strategy's probes), ``n_boot`` (bootstrap resamples of test
        queries) and ``protocol.seed`` (seeds the random strategy and the bootstrap). The
        strategies are compared with embedding and probe (``mode="both"``) whatever
        ``protocol.mode``.
    strategy : {"random", "active"}
    curve : tuple of int
        Numbers of probes of the curve of all strategies (scored from position ``max(curve)``,
        on pairs disjoint from every strategy's probes).
    criterion : {"entropy", "predictive"}

    Returns
    -------
    dict
        ``strategy, n_probes, n_shared_pairs, gain`` (by strategy), ``difference``
        (strategy minus first, pp) with a paired bootstrap ``difference_ci95`` over test queries,
        and ``curve`` (rows ``strategy, n_probes, n_shared_pairs, gain``).
    """
    if strategy not in PROBE_STRATEGIES or strategy == "first":
        raise ValueError(f"strategy must be 'random' or 'active', got {strategy!r}")
    protocol = Protocol() if protocol is None else protocol
    n_probes, n_boot, random_state = protocol.n_probes, protocol.n_boot, protocol.seed
    protocol = protocol.replace(mode="both")  # probes are read with the embedding
    compare = functools.partial(
        compare_probe_strategies, data, model, reference, protocol=protocol, criterion=criterion
    )
    rows = compare(strategies=("first", strategy), probe_counts=(n_probes,), score_from=n_probes)
    by = {r["strategy"]: r for r in rows}
    ref = by["first"]["reference_by_query"]
    index = bootstrap_indices(len(ref), n_boot=n_boot, random_state=random_state)
    gains = {s: ratio_gain(ref, r["loss_by_query"], index) for s, r in by.items()}
    paired = paired_difference(
        gains[strategy][0], gains[strategy][2], gains["first"][0], gains["first"][2]
    )
    out = {
        "strategy": strategy,
        "criterion": criterion,
        "n_probes": int(n_probes),
        "n_shared_pairs": by["first"]["n_shared_pairs"],
        "gain": {s: r["gain"] for s, r in by.items()},
        "gain_ci95": {s: g[1] for s, g in gains.items()},
        "difference": by[strategy]["gain"] - by["first"]["gain"],
        "difference_ci95": paired["ci95"],
    }
    curve_rows = []
    if curve:
        curve_rows = compare(
            strategies=tuple(PROBE_STRATEGIES), probe_counts=tuple(curve), score_from=max(curve)
        )
    keys = ("strategy", "n_probes", "n_shared_pairs", "gain")
    return out | {"curve": [{k: r[k] for k in keys} for r in curve_rows]}


def probe_strategy_over_seeds(
    queries,
    outcomes,
    embeddings,
    *,
    protocol: Protocol,
    estimator: ECC | None = None,
    method: str = "ecc",
    criterion: str = "entropy",
) -> dict:
    """:func:`probe_strategy_comparison` for each protocol seed, summarised over seeds.

    Each seed of ``protocol`` redraws pairs, split and EM start
    (:func:`ecc_lib.protocol.data.prepare_protocol` with the protocol's pairs, test size,
    evidence and tie tolerance), fits ``method`` and the global reference from the ``estimator`` prototype, and
    compares ``protocol.probe_strategy`` with ``"first"`` at ``protocol.n_probes`` probes.

    Parameters
    ----------
    queries, outcomes, embeddings
        As :func:`ecc_lib.protocol.data.prepare_protocol`.
    protocol : Protocol
        The settings; ``probe_strategy`` must be ``"random"`` or ``"active"``.
    estimator : ECC, optional
        The unfitted ECC prototype (default ``ECC()``).
    method : str
        The method whose probes are chosen (default ``"ecc"``).
    criterion : {"entropy", "predictive"}
        Criterion of the ``"active"`` strategy.

    Returns
    -------
    dict
        :func:`summarise_probe_strategy` of the per-seed results.
    """
    per_seed = []
    for seed in protocol.seeds:
        data = protocol.prepare(queries, outcomes, embeddings, seed=int(seed))
        estimators = methods_from_prototype(
            estimator, methods=("global", method), random_state=int(seed)
        )
        fitted, _ = fit_methods(data, estimators)
        per_seed.append(
            probe_strategy_comparison(
                data,
                fitted[method],
                fitted["global"],
                # this seed; the comparison's own bootstrap size (as before issue 33)
                protocol=protocol.replace(seeds=(int(seed),), n_boot=DEFAULT_N_BOOT),
                strategy=protocol.probe_strategy,
                curve=tuple(range(1, min(3, protocol.n_pairs - 1) + 1)),
                criterion=criterion,
            )
        )
    return summarise_probe_strategy(per_seed)


def summarise_probe_strategy(per_seed: list[dict]) -> dict:
    """Mean and sd over seeds of :func:`probe_strategy_comparison` results.

    Parameters
    ----------
    per_seed : list of dict

    Returns
    -------
    dict
        ``n_seeds``, ``n_shared_pairs`` (per seed and total), ``gain_mean`` / ``gain_sd`` by
        strategy, ``difference_mean`` / ``difference_sd``, the curve's means by
        (strategy, n_probes), and ``per_seed``.
    """
    if not per_seed:
        raise ValueError("summarise_probe_strategy needs at least one seed's result")

    def sd(values):
        # one seed has no spread to report: NaN (printed "n/a"), never 0.0 (issue 23)
        return float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")

    strategies = list(per_seed[0]["gain"])
    out = {
        "strategy": per_seed[0]["strategy"],
        "criterion": per_seed[0]["criterion"],
        "n_probes": per_seed[0]["n_probes"],
        "n_seeds": len(per_seed),
        "n_shared_pairs": [r["n_shared_pairs"] for r in per_seed],
        "n_shared_pairs_total": int(sum(r["n_shared_pairs"] for r in per_seed)),
        "gain_mean": {s: float(np.mean([r["gain"][s] for r in per_seed])) for s in strategies},
        "gain_sd": {s: sd([r["gain"][s] for r in per_seed]) for s in strategies},
        "difference_mean": float(np.mean([r["difference"] for r in per_seed])),
        "difference_sd": sd([r["difference"] for r in per_seed]),
        "curve": [],
        "per_seed": per_seed,
    }
    by_point: dict[tuple, list[dict]] = {}  # the curve's cells of every seed by (strategy, n)
    for r in per_seed:
        for c in r["curve"]:
            by_point.setdefault((c["strategy"], c["n_probes"]), []).append(c)
    for (strategy, n), cells in sorted(by_point.items()):
        gains = [c["gain"] for c in cells]
        out["curve"].append(
            {
                "strategy": strategy,
                "n_probes": n,
                "n_shared_pairs_mean": float(np.mean([c["n_shared_pairs"] for c in cells])),
                "gain_mean": float(np.mean(gains)),
                "gain_sd": sd(gains),
            }
        )
    return out


__all__ = [
    "compare_probe_strategies",
    "probe_strategy_comparison",
]
