"""One dataset's seeds summarised: mean +- sd of every reading, the intervals over seeds with their
verdicts (:func:`ecc_lib.grammar.verdict`) and the best router's paired readings."""

from __future__ import annotations

import numpy as np

from ecc_lib.bench.settings import seed_interval
from ecc_lib.grammar import Comparison, verdict
from ecc_lib.serialization import to_jsonable


def _verdict(estimate: float, low: float, high: float, unit: str) -> str:
    """The grammar's verdict of "A minus B = estimate [low, high]" in ``unit``."""
    return verdict(Comparison("", "", estimate, (low, high), unit))


def _num(value) -> float:
    """A stored number (None, as JSON writes NaN, becomes NaN)."""
    return float("nan") if value is None else float(value)


def summarise_seeds(records: list[dict]) -> dict:
    """Mean +- sd over seeds of every reading, the intervals over seeds and the routing readings.

    Parameters
    ----------
    records : list of dict
        :func:`bench_seed` records, in seed order.

    Returns
    -------
    dict
        ``methods``; ``gain`` / ``gain_touching`` / ``gain_disjoint``: ``{method: [mean, sd]}``
        (:func:`ecc_lib.protocol.seeds.mean_sd`, as ``ecc-lab ecc``); ``versus``: ``{reference:
        {method: {"estimate", "ci95", "verdict"}}}`` on disjoint pairs; ``differences``: ``{"ecc -
        X": [mean, sd]}`` (all and disjoint pairs); ``routing``; ``best_params``: ``{method:
        [the settings it chose on each seed]}`` for the methods that choose (``ecc_cv``);
        ``ecc_cv_choice`` (:func:`~ecc_lib.protocol.tuned.choice_summary`, with ``ecc_cv``) and
        ``gain_disjoint_over_tuned_global``: ``{method: [mean, sd]}`` over the tuned global BT
        (``{}`` without ``global_tuned``; issue 34).
    """
    from ecc_lib.protocol.seeds import mean_sd

    first = records[0]
    methods = list(first["gain"])
    out: dict = {"methods": methods, "seeds": [r["seed"] for r in records]}
    chosen = sorted({m for r in records for m in r.get("best_params") or {}})
    out["best_params"] = {m: [(r.get("best_params") or {}).get(m) for r in records] for m in chosen}
    # issue 34: ECC-CV's choice in words, gains over the tuned global BT (the bench's reference)
    from ecc_lib.protocol.tuned import choice_summary, tuned_gains

    if "ecc_cv" in out["best_params"]:
        out["ecc_cv_choice"] = choice_summary(out["best_params"]["ecc_cv"])
    out["gain_disjoint_over_tuned_global"] = tuned_gains(
        [{m: _num(v) for m, v in r["gain_disjoint"].items()} for r in records]
    )
    for reading in ("gain", "gain_touching", "gain_disjoint"):
        out[reading] = {m: list(mean_sd([_num(r[reading][m]) for r in records])) for m in methods}
    versus: dict = {"global": {}, "human": {}}
    for m in methods:
        values = [_num(r["gain_disjoint"][m]) for r in records]
        mean = mean_sd(values)[0]
        low, high = seed_interval(values, first["ci95_disjoint"][m])
        versus["global"][m] = {
            "estimate": mean,
            "ci95": [low, high],
            "verdict": _verdict(mean, low, high, "pp") if np.isfinite(mean) else None,
        }
        if m in first.get("disjoint_minus_human", {}):
            values = [_num(r["disjoint_minus_human"][m]["estimate"]) for r in records]
            mean = mean_sd(values)[0]
            low, high = seed_interval(values, first["disjoint_minus_human"][m]["ci95"])
            versus["human"][m] = {
                "estimate": mean,
                "ci95": [low, high],
                "verdict": _verdict(mean, low, high, "pp") if np.isfinite(mean) else None,
            }
    out["versus"] = versus
    differences: dict = {}
    if "ecc" in methods:
        for m in methods:
            if m == "ecc":
                continue
            differences[f"ecc - {m}"] = {
                "all": list(
                    mean_sd([_num(r["gain"]["ecc"]) - _num(r["gain"][m]) for r in records])
                ),
                "disjoint": list(
                    mean_sd(
                        [
                            _num(r["gain_disjoint"]["ecc"]) - _num(r["gain_disjoint"][m])
                            for r in records
                        ]
                    )
                ),
            }
    out["differences"] = differences
    out["probe_leak_share"] = list(mean_sd([_num(r["probe_leak_share"]) for r in records]))
    out["routing"] = _summarise_routing(records)
    return to_jsonable(out)


def _summarise_routing(records: list[dict]) -> dict:
    """Best router (by mean routed score over seeds) minus its reference, in both settings."""
    from ecc_lib.protocol.seeds import mean_sd

    out = {}
    for setting in ("no_probe", "probe"):
        if any(setting not in r["routing_paired"] for r in records):
            continue  # not run (no probe on two-model data)
        blocks = [r["routing_paired"][setting] for r in records]
        methods = list(blocks[0]["methods"])
        if not methods:
            continue
        mean_score = {m: mean_sd([b["methods"][m]["score"] for b in blocks])[0] for m in methods}
        best = max(methods, key=lambda m: (mean_score[m], -methods.index(m)))
        values = [b["methods"][best]["estimate"] for b in blocks]
        mean, sd = mean_sd(values)
        low, high = seed_interval(values, blocks[0]["methods"][best]["ci95"])
        costs = [b["methods"][best]["cost"] for b in blocks]
        ref_costs = [b["methods"][best]["reference_cost"] for b in blocks]
        out[setting] = {
            "reference": blocks[0]["reference"],
            "best_router": best,
            "score": list(mean_sd([b["methods"][best]["score"] for b in blocks])),
            "reference_score": list(
                mean_sd([b["methods"][best]["reference_score"] for b in blocks])
            ),
            "difference": [mean, sd],
            "ci95": [low, high],
            "first_seed_ci95": blocks[0]["methods"][best]["ci95"],
            "verdict": _verdict(mean, low, high, "score_diff"),
            "cost": mean_sd(costs)[0] if None not in costs else None,
            "reference_cost": mean_sd(ref_costs)[0] if None not in ref_costs else None,
        }
    return out


__all__ = ["summarise_seeds"]
