"""One dataset's seeds summarised: mean +- sd of every reading and the typed comparison records of
:mod:`ecc_lib.protocol.comparisons` (the one interval, the report's producer) with their verdicts."""

from __future__ import annotations

import numpy as np

from ecc_lib.protocol.comparisons import find, records_to_metrics
from ecc_lib.serialization import to_jsonable
from ecc_lib.stats import mean_sd


def _num(value) -> float:
    """A stored number (None, as JSON writes NaN, becomes NaN)."""
    return float("nan") if value is None else float(value)


def _verdict_cell(r) -> dict:
    """A comparison record's ``{"estimate", "ci95", "verdict"}`` (NaN bounds without an interval)."""
    return {
        "estimate": r.estimate,
        "ci95": list(r.ci) if r.ci else [np.nan, np.nan],
        "verdict": r.verdict,
    }


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
        (:func:`ecc_lib.stats.mean_sd`, as ``ecc-lab ecc``); ``versus``: ``{reference:
        {method: {"estimate", "ci95", "verdict"}}}`` on disjoint pairs; ``differences``: ``{"ecc -
        X": [mean, sd]}`` (all and disjoint pairs); ``routing``; ``best_params``: ``{method:
        [the settings it chose on each seed]}`` for the methods that choose (``ecc_cv``);
        ``ecc_cv_choice`` (:func:`~ecc_lib.protocol.tuned.choice_summary`, with ``ecc_cv``) and
        ``gain_disjoint_over_tuned_global``: ``{method: [mean, sd]}`` over the tuned global BT
        (``{}`` without ``global_tuned``; issue 34); ``versus_tuned``: ECC-CV against the tuned
        baselines only (:func:`_versus_tuned`).
    """
    methods = list(records[0]["gain"])
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
    # issue 35: one producer of every comparison, with the one interval (as the report reads it)
    records_list = bench_records(records_=records)
    out["comparisons"] = records_to_metrics(records_list)
    versus: dict = {"global": {}, "human": {}}
    for m in methods:
        for reference in versus:
            if reference == m:
                continue
            question = "clustering_gain" if reference == "global" else "method_difference"
            r = find(records_list, question, m, reference, "disjoint")
            if r is None or (reference == "human" and "human" not in methods):
                continue
            versus[reference][m] = _verdict_cell(r)
    out["versus"] = versus
    out["versus_tuned"] = _versus_tuned(records_list, methods)
    differences: dict = {}
    if "ecc" in methods:
        for m in methods:
            if m == "ecc":
                continue
            differences[f"ecc - {m}"] = {
                name: list(mean_sd([_num(r[key]["ecc"]) - _num(r[key][m]) for r in records]))
                for name, key in (("all", "gain"), ("disjoint", "gain_disjoint"))
            }
    out["differences"] = differences
    out["probe_leak_share"] = list(mean_sd([_num(r["probe_leak_share"]) for r in records]))
    out["routing"] = _summarise_routing(records, records_list)
    return to_jsonable(out)


def _versus_tuned(records_list: list, methods: list[str]) -> dict:
    """ECC-CV against the tuned baselines only (issue 34: its search tunes the prior, so it is
    compared with baselines tuned the same way): the tuned global BT and the tuned baseline
    (``*_tuned``) with the largest gain, on pairs disjoint from the probe where any is scored, as
    the report's summary reads them (:func:`ecc_lib.report.summary.ecc_cv_line`).

    Returns
    -------
    dict
        ``{"reading", "reference", "best"}``, each of the last two ``{"method", "estimate",
        "ci95", "verdict"}`` or None; ``{}`` without ``ecc_cv`` or tuned baselines.
    """
    tuned = [m for m in methods if m.endswith("_tuned")]
    if "ecc_cv" not in methods or not tuned:
        return {}

    def gain(m: str, reading: str) -> float:
        r = find(records_list, "clustering_gain", m, "global", reading)
        return np.nan if r is None or r.estimate is None else float(r.estimate)

    reading = "disjoint" if np.isfinite(gain("ecc_cv", "disjoint")) else "all"
    others = [m for m in tuned if m != "global_tuned" and np.isfinite(gain(m, reading))]
    best = max(others, key=lambda m: gain(m, reading)) if others else None

    def cell(b: str | None) -> dict | None:
        r = None if b is None else find(records_list, "method_difference", "ecc_cv", b, reading)
        return None if r is None else {"method": b, **_verdict_cell(r)}

    reference = "global_tuned" if "global_tuned" in tuned else None
    return {"reading": reading, "reference": cell(reference), "best": cell(best)}


def bench_records(*, records_: list[dict]) -> list:
    """The comparison records of one dataset's seeds (:mod:`ecc_lib.protocol.comparisons`).

    Parameters
    ----------
    records_ : list of dict
        :func:`bench_seed` records, in seed order (with ``per_query`` and ``routing_per_query``).

    Returns
    -------
    list of ComparisonRecord
    """
    import pandas as pd

    from ecc_lib.protocol.comparisons import clustering_records, routing_records

    n_boot = int(records_[0].get("n_boot") or 1000)
    methods = [m for m in records_[0]["gain"] if m != "global"]
    frames = [pd.DataFrame(r["per_query"]) for r in records_]
    routed = [
        {
            s: {m: np.asarray(v, dtype=float) for m, v in arms.items()}
            for s, arms in r["routing_per_query"].items()
        }
        for r in records_
    ]
    return clustering_records(frames, methods=methods, n_boot=n_boot) + routing_records(
        routed, n_boot=n_boot
    )


def _summarise_routing(records: list[dict], comparisons: list) -> dict:
    """Best router minus its reference, in both settings, from the comparison records."""

    out = {}
    for setting, reference in (
        ("no_probe", "global"),
        ("probe_outside", "global"),
        ("probe", "probe_winner"),
    ):
        rec = [r for r in comparisons if r.question == "routing_pays" and r.reading == setting]
        if setting == "probe":  # the with-probe router only beside the probe's winner
            r = next((x.flipped() for x in rec if x.a == "probe_winner"), None)
        else:
            r = next((x for x in rec if x.b == "global"), None)
        if r is None:
            continue
        router = r.a
        costs = [
            (b["routing_paired"].get(setting) or {}).get("methods", {}).get(router, {}).get("cost")
            for b in records
        ]
        out[setting] = {
            "reference": reference,
            "best_router": router,
            "score": [r.levels["a"][0], None],
            "reference_score": [r.levels["b"][0], None],
            "difference": [r.estimate, None],
            "ci95": list(r.ci) if r.ci else [np.nan, np.nan],
            "verdict": r.verdict,
            "cost": float(np.mean(costs)) if costs and None not in costs else None,
            "reference_cost": None,
        }
    return out


__all__: list[str] = []
