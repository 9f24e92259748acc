"""The report's summary: per dataset at most :data:`MAX_LINES` sentences a paper may quote.

Built from ``metrics.json`` only, leak-aware readings first: ECC's gain over one global BT on
scored pairs disjoint from the probe's models (mean +- sd over protocol seeds), its paired
differences to embedding-only clusters and to human labels, the same for the method with the
largest gain (any method the metrics hold), a sentence when no clustering beats the global model,
a warning when K is large for the number of training queries, the three flip readings beside
chance and whether routing pays (best router minus best fixed model, the probe's winner alone).
Every comparison goes through :mod:`ecc_lib.grammar`; every key is read through the schema
(:class:`~ecc_lib.report.reading.MetricsReader`). Keys are read defensively: a run without
repeated seeds, without the leak split or without routing gives fewer lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ecc_lib.grammar import (
    HIGHER_LOWER,
    Comparison,
    comparison_sentence,
    direction,
    finite,
    level_text,
    number,
    t_interval,
)
from ecc_lib.labels import PLURAL, method_name
from ecc_lib.report.reading import read_metrics

MAX_LINES = 8
"""Most summary lines per dataset."""
MIN_QUERIES_PER_CLUSTER = 50
"""Fewer training queries per cluster than this draws a warning that K is large."""


@dataclass
class SummaryLine:
    """One quotable sentence and the comparison it states.

    Parameters
    ----------
    topic : str
        ``ecc``, ``ecc_vs``, ``best_method``, ``no_clustering``, ``k_warning``, ``flips``,
        ``routing``, ``probe_winner``.
    text : str
    comparison : dict, optional
        ``a``, ``b``, ``estimate``, ``ci``, ``unit``, ``verdict``, ``interval_kind``.
    """

    topic: str
    text: str
    comparison: dict[str, Any] | None = field(default=None)


def _line(topic: str, text: str, c: Comparison | None = None) -> SummaryLine:
    from ecc_lib.grammar import verdict

    payload = None
    if c is not None:
        payload = {**asdict(c), "verdict": verdict(c), "direction": direction(c)}
        payload["ci"] = list(c.ci) if c.ci is not None else None
        payload.pop("words", None)
    return SummaryLine(topic, text, payload)


def _n_seeds(ecc: Mapping[str, Any], parameters: Mapping[str, Any]) -> int:
    seeds = ecc.get("seeds")
    if isinstance(seeds, list) and seeds:
        return len(seeds)
    n = (parameters.get("ecc") or {}).get("n_seeds")
    return int(n) if finite(n) else 1


def _gains(ecc: Mapping[str, Any], n_seeds: int) -> tuple[dict[str, dict], str]:
    """Per method ``{mean, sd, ci, kind}`` of the leak-aware gain, and which pairs it scores."""
    means, sds = ecc.get("gain_disjoint_mean") or {}, ecc.get("gain_disjoint_sd") or {}
    out: dict[str, dict] = {}
    if n_seeds > 1 and any(finite(v) for v in means.values()):
        for m, v in means.items():
            if finite(v):
                ci = t_interval(v, sds.get(m), n_seeds)
                out[m] = {
                    "mean": float(v),
                    "sd": sds.get(m),
                    "ci": ci,
                    "kind": f"95% t-interval over {n_seeds} seeds",
                }
        return out, "disjoint"
    for key, pairs in (
        ("ranking_quality_gain_disjoint", "disjoint"),
        ("ranking_quality_gain", "all"),
    ):
        values = ecc.get(key) or {}
        cis = ecc.get(key + "_ci95") or {}
        if any(finite(v) for v in values.values()):
            for m, v in values.items():
                if finite(v):
                    out[m] = {
                        "mean": float(v),
                        "sd": None,
                        "ci": cis.get(m),
                        "kind": "95% bootstrap CI over test queries",
                    }
            return out, pairs
    return {}, ""


def _paired(ecc: Mapping[str, Any], a: str, b: str, pairs: str, n_seeds: int) -> dict | None:
    """``a`` minus ``b`` of the gain with its paired interval.

    With several seeds, the mean over seeds of the per-seed paired differences with a 95%
    t-interval over seeds (it includes the pair draw, the split and the EM start, which a bootstrap
    over one seed's test queries ignores; quoting the first seed beside means over seeds would mix
    two readings of one quantity). With one seed, the recorded paired bootstrap CI over test queries.
    """
    suffix = "_disjoint" if pairs == "disjoint" else ""

    def over_seeds() -> dict | None:
        block = ecc.get(f"difference{suffix}_mean_sd") or {}
        for name, sign in ((f"{a} - {b}", 1), (f"{b} - {a}", -1)):
            d = block.get(name)
            if isinstance(d, list | tuple) and len(d) == 2 and finite(d[0]):
                mean = sign * float(d[0])
                return {
                    "mean": mean,
                    "sd": d[1],
                    "ci": t_interval(mean, d[1], n_seeds),
                    "kind": f"paired per seed, 95% t-interval over {n_seeds} seeds",
                }
        return None

    def bootstrap() -> dict | None:
        for key in (f"gain_differences{suffix}",):
            block = ecc.get(key) or {}
            for name, sign in (
                (f"{a}_minus_{b}", 1),
                (f"{a} - {b}", 1),
                (f"{b}_minus_{a}", -1),
                (f"{b} - {a}", -1),
            ):
                d = block.get(name)
                if isinstance(d, Mapping) and finite(d.get("estimate")):
                    ci = d.get("ci95")
                    ci = [sign * float(x) for x in ci][::sign] if ci and len(ci) == 2 else None
                    return {
                        "mean": sign * float(d["estimate"]),
                        "ci": ci,
                        "kind": "paired 95% bootstrap CI",
                        "sd": None,
                    }
        return None

    first, second = (over_seeds, bootstrap) if n_seeds > 1 else (bootstrap, over_seeds)
    return first() or second()


def _pairs_words(pairs: str) -> str:
    return (
        "on held-out pairs disjoint from the probe's models"
        if pairs == "disjoint"
        else "on all held-out pairs (the probe decides about half of them on binary scores)"
    )


def ecc_lines(metrics: Mapping[str, Any]) -> list[SummaryLine]:
    """Summary lines of the clustering section (``metrics.json["ecc"]``).

    Parameters
    ----------
    metrics : mapping
        The whole ``metrics.json``.

    Returns
    -------
    list of SummaryLine
    """
    metrics = read_metrics(metrics)
    ecc = metrics.get("ecc") or {}
    parameters = metrics.get("parameters") or {}
    if not isinstance(ecc, Mapping) or ecc.get("skipped"):
        return []
    n_seeds = _n_seeds(ecc, parameters)
    gains, pairs = _gains(ecc, n_seeds)
    if not gains:
        return []
    where = _pairs_words(pairs)
    lines: list[SummaryLine] = []

    def gain_line(method: str, topic: str) -> SummaryLine:
        g = gains[method]
        c = Comparison(
            method_name(method),
            "one global BT",
            g["mean"],
            tuple(g["ci"]) if g["ci"] else None,
            "pp",
            interval_kind=g["kind"],
        )
        level = level_text(g["mean"], "pct_nll", sd=g["sd"], n=n_seeds)
        text = comparison_sentence(
            c, context=where, verb="are" if method in PLURAL else "is"
        ).rstrip(".")
        text += f"; held-out NLL {level} lower."
        if not finite(g["sd"]) and n_seeds <= 1:
            text += " One protocol seed only: the interval ignores the pair draw, the split and the EM start."
        return _line(topic, text, c)

    if "ecc" in gains:
        first = gain_line("ecc", "ecc")
        leak_free = ecc.get("leak_free") if isinstance(ecc.get("leak_free"), Mapping) else {}
        share = leak_free.get("share_with_probe")
        if finite(share):  # recorded by the leak-free protocol (issue 23), when it ran
            first.text = first.text.rstrip(".") + (
                f"; under the leak-free protocol {number(share, 'share')} of test queries have a "
                "probe, the others are placed by their embedding alone."
            )
        lines.append(first)
        for other in ("emb_only", "human"):
            d = _paired(ecc, "ecc", other, pairs, n_seeds)
            if other in gains and d is not None:
                c = Comparison(
                    "ECC",
                    method_name(other),
                    d["mean"],
                    tuple(d["ci"]) if d["ci"] else None,
                    "pp",
                    interval_kind=d["kind"],
                )
                lines.append(_line("ecc_vs", comparison_sentence(c, context=where), c))
    # issue 34: ECC-CV and the tuned-prior baselines are read by ecc_cv_line, over tuned baselines
    clusterings = {m: g for m, g in gains.items() if m != "global" and m not in TUNED_OR_SEARCHED}
    best = max(clusterings, key=lambda m: clusterings[m]["mean"]) if clusterings else None
    if best and best != "ecc":
        d = _paired(ecc, best, "ecc", pairs, n_seeds) if "ecc" in gains else None
        if d is not None:
            c = Comparison(
                method_name(best),
                "ECC",
                d["mean"],
                tuple(d["ci"]) if d["ci"] else None,
                "pp",
                interval_kind=d["kind"],
            )
            verb = "are" if best in PLURAL else "is"
            text = comparison_sentence(c, context=where, verb=verb).rstrip(".")
            level = level_text(gains[best]["mean"], "pct_nll", sd=gains[best]["sd"], n=n_seeds)
            text += f"; the largest gain of the {len(gains)} methods, held-out NLL {level} below one global BT's."
            lines.append(_line("best_method", text, c))
        else:
            lines.append(gain_line(best, "best_method"))
    winners = [
        m
        for m, g in clusterings.items()
        if direction(Comparison("", "", g["mean"], tuple(g["ci"]) if g["ci"] else None)) > 0
    ]
    if clusterings and not winners:
        lines.append(
            _line(
                "no_clustering",
                f"No clustering is better than one global BT {where}: the largest gain, "
                f"{method_name(best)}'s, is {number(clusterings[best]['mean'], 'pct_nll')} and no "
                "interval lies above 0, so a single global ranking is the model to quote.",
            )
        )
    k = (parameters.get("ecc") or {}).get("n_clusters")
    n_train = ecc.get("n_train")
    if finite(k) and finite(n_train) and float(n_train) / float(k) < MIN_QUERIES_PER_CLUSTER:
        text = (
            f"Warning: K = {int(k)} clusters for {int(n_train):,} training queries "
            f"({float(n_train) / float(k):.0f} per cluster, fewer than {MIN_QUERIES_PER_CLUSTER}) is large; "
            "per-cluster BT profiles are fitted on few comparisons."
        )
        sweep = {
            int(key.split("@")[1]): v
            for key, v in (ecc.get("gain_vs_k") or {}).items()
            if key.startswith("ecc@") and finite(v)
        }
        if sweep:
            top = max(sweep, key=sweep.get)
            text += f" In the K sweep (all pairs, first seed) ECC's gain is largest at K = {top} ({number(sweep[top], 'pct_nll')})."
        lines.append(_line("k_warning", text))
    said = ecc_cv_line(ecc)
    if said is not None:
        lines.append(said)
    return lines


TUNED_OR_SEARCHED = frozenset(
    {"ecc_cv", "global_tuned", "human_tuned", "emb_only_tuned", "comp_only_tuned", "ecc_tuned"}
    | {"ecc_labels_tuned"}
)
"""Methods whose prior is tuned (issue 34): compared only with each other (:func:`ecc_cv_line`)."""


def ecc_cv_line(ecc: Mapping[str, Any]) -> SummaryLine | None:
    """ECC-CV's choice in words and its verdict against the tuned-prior baselines (issue 34).

    Reads ``ecc_cv_choice.verdict`` (:func:`ecc_lib.protocol.tuned.ecc_cv_verdict`): the gain
    over the tuned global BT on pairs disjoint from the probe beside the best tuned baseline's;
    when ECC-CV chose one global BT or one BT per human category it says that the gain is not a
    clustering gain.

    Parameters
    ----------
    ecc : mapping
        ``metrics.json["ecc"]``.

    Returns
    -------
    SummaryLine or None
        None when ECC-CV did not run or no tuned baseline ran.
    """
    choice = ecc.get("ecc_cv_choice")
    verdict = choice.get("verdict") if isinstance(choice, Mapping) else None
    return _line("ecc_cv", verdict) if verdict else None


def flip_lines(metrics: Mapping[str, Any]) -> list[SummaryLine]:
    """The flip readings beside chance (``metrics.json["dars"]``): strict and change first, the
    pairwise reading with its caveat.

    Parameters
    ----------
    metrics : mapping

    Returns
    -------
    list of SummaryLine
    """
    metrics = read_metrics(metrics)
    dars = metrics.get("dars") or {}
    if (
        not isinstance(dars, Mapping)
        or dars.get("skipped")
        or not finite(dars.get("winner_flip_rate"))
    ):
        return []
    chance = dars.get("flip_rate_chance") or {}
    r = dars.get("winner_change_rate_r")
    readings = (
        (
            "winner_flip_rate_strict",
            "strict",
            "strict flip rate",
            "the top sets of two single-shot draws are disjoint",
        ),
        (
            "winner_change_rate",
            "change",
            "change rate",
            f"the winner changes within {r or 'R'} draws",
        ),
    )
    parts, comparisons = [], []
    for key, reading, label, meaning in readings:
        value, ci = dars.get(key), dars.get(key + "_ci95")
        level = chance.get(reading)
        if not finite(value):
            continue
        text = f"{label} ({meaning}) {level_text(value, 'share', ci=ci)} of queries"
        if finite(level):
            c = Comparison(
                label,
                "chance",
                float(value) - float(level),
                tuple(float(b) - float(level) for b in ci) if ci else None,
                "pp_share",
                HIGHER_LOWER,
                interval_kind="95% bootstrap CI over queries",
            )
            comparisons.append(c)
            clause = comparison_sentence(c, subject="it").rstrip(".")
            text += f", chance {number(level, 'share')}; " + clause[0].lower() + clause[1:]
        parts.append(text)
    lines = (
        [
            _line(
                "flips",
                "; ".join(p[0].upper() + p[1:] for p in parts) + ".",
                comparisons[0] if comparisons else None,
            )
        ]
        if parts
        else []
    )
    value, ci = dars["winner_flip_rate"], dars.get("winner_flip_rate_ci95")
    text = f"The pairwise reading (two single-shot draws name different winners) is {level_text(value, 'share', ci=ci)}"
    c = None
    if finite(chance.get("pairwise")):
        level = float(chance["pairwise"])
        c = Comparison(
            "pairwise",
            "chance",
            float(value) - level,
            tuple(float(b) - level for b in ci) if ci else None,
            "pp_share",
            HIGHER_LOWER,
            interval_kind="95% bootstrap CI over queries",
        )
        clause = comparison_sentence(
            c, subject="which", obj=f"its chance level {number(level, 'share')}"
        )
        text += ", " + clause[0].lower() + clause[1:].rstrip(".")
    ties = [
        s.get("tied_top_share")
        for s in (dars.get("by_side") or {}).values()
        if isinstance(s, Mapping) and finite(s.get("tied_top_share"))
    ]
    text += "; it counts random tie-breaks among equally good models as flips"
    if ties:
        text += (
            f" (several models share the best drawn score in {number(ties[0], 'share')} of draws)"
        )
    lines.append(_line("flips", text + ", so quote the strict and change readings.", c))
    return lines


def routing_lines(metrics: Mapping[str, Any]) -> list[tuple[str, SummaryLine]]:
    """Whether routing pays, as ``(dataset, line)``: on the routing dataset the best router minus
    the best fixed model (utility, paired CI); on the clustering dataset the best cluster router
    against the global model's single choice and against the probe's winner alone.

    Parameters
    ----------
    metrics : mapping

    Returns
    -------
    list of (str, SummaryLine)
    """
    metrics = read_metrics(metrics)
    out: list[tuple[str, SummaryLine]] = []
    routing = metrics.get("routing") or {}
    headline = routing.get("headline") or {} if isinstance(routing, Mapping) else {}
    margin = headline.get("best_router_utility_minus_fixed")
    if finite(margin):
        info = routing.get("info") or {}
        best, fixed = (
            headline.get("best_router") or "the best router",
            headline.get("best_fixed_model"),
        )
        if info and not info.get("has_rewrites") and not info.get("has_decodes"):
            best = str(best).replace(" (DARS)", "")
        ci = headline.get("best_router_utility_minus_fixed_ci95")
        c = Comparison(
            "best router",
            "best fixed model",
            float(margin),
            tuple(ci) if ci and len(ci) == 2 else None,
            "score_diff",
            interval_kind="paired 95% bootstrap CI over test queries",
        )
        cost = (
            "at the same cost weight"
            if info.get("cost_available")
            else "(no cost recorded: utility is score minus the spread penalty)"
        )
        text = comparison_sentence(
            c,
            subject=f"On held-out utility {cost}, the best router ({best})",
            obj=f"the best fixed model ({fixed})",
        )
        out.append((str(headline.get("dataset", "")), _line("routing", text, c)))
    ecc = metrics.get("ecc") or {}
    modes = (ecc.get("routing") or {}) if isinstance(ecc, Mapping) else {}
    probe = modes.get("probe") or {}
    n_seeds = _n_seeds(ecc, metrics.get("parameters") or {})
    routers = {
        m: v
        for m, v in probe.items()
        if m not in ("oracle", "random", "probe_winner", "global")
        and isinstance(v, Mapping)
        and finite(v.get("score_mean", v.get("score")))
    }
    fixed = probe.get("global") or {}
    if (
        routers
        and isinstance(fixed, Mapping)
        and finite(fixed.get("score_mean", fixed.get("score")))
    ):
        key = (
            "score_mean" if all(finite(v.get("score_mean")) for v in routers.values()) else "score"
        )
        top = max(routers, key=lambda m: routers[m][key])

        def versus(a: Mapping, b: Mapping) -> tuple[float, tuple | None, str]:
            # unpaired: a routing cell records no paired interval against another method
            diff = float(a[key]) - float(b[key])
            sd = (float(a.get("score_sd") or 0) ** 2 + float(b.get("score_sd") or 0) ** 2) ** 0.5
            ci = t_interval(diff, sd, n_seeds) if key == "score_mean" else None
            return diff, tuple(ci) if ci else None, f"unpaired 95% t-interval over {n_seeds} seeds"

        diff, ci, kind = versus(routers[top], fixed)
        c = Comparison(
            "cluster routing",
            "global BT's model",
            diff,
            ci,
            "score_diff",
            interval_kind=kind,
        )
        text = comparison_sentence(
            c,
            subject=f"On mean held-out score, routing by {method_name(top)} with the probe",
            obj="the global BT's one model for every query",
        )
        text = text.rstrip(".") + (
            f" ({number(routers[top][key], 'score')} against {number(fixed[key], 'score')}, "
            f"oracle {number((probe.get('oracle') or {}).get(key), 'score')})."
        )
        dataset = str(ecc.get("dataset", ""))
        out.append((dataset, _line("routing", text, c)))
        winner = probe.get("probe_winner")
        if isinstance(winner, Mapping) and finite(winner.get(key)):
            diff, ci, kind = versus(winner, routers[top])
            c = Comparison(
                "probe winner",
                "best cluster router",
                diff,
                ci,
                "score_diff",
                interval_kind=kind,
            )
            text = comparison_sentence(
                c,
                subject="Sending each query to the model that won its probe comparison",
                obj=f"the best cluster router ({method_name(top)})",
            ).rstrip(".")
            text += (
                f" ({number(winner[key], 'score')}); this baseline reads the probe's outcome, so a "
                "cluster router pays only where it is better than this baseline."
            )
            out.append((dataset, _line("probe_winner", text, c)))
    return out


def build_summary(metrics: Mapping[str, Any]) -> dict[str, list[SummaryLine]]:
    """Per dataset at most :data:`MAX_LINES` quotable lines, clustering first.

    Parameters
    ----------
    metrics : mapping
        The whole ``metrics.json``.

    Returns
    -------
    dict
        Dataset name -> lines.
    """
    metrics = read_metrics(metrics)
    out: dict[str, list[SummaryLine]] = {}
    ecc = metrics.get("ecc") or {}
    if isinstance(ecc, Mapping):
        for line in ecc_lines(metrics):
            out.setdefault(str(ecc.get("dataset", "")), []).append(line)
    dars = metrics.get("dars") or {}
    if isinstance(dars, Mapping):
        for line in flip_lines(metrics):
            out.setdefault(str(dars.get("dataset", "")), []).append(line)
    for dataset, line in routing_lines(metrics):
        out.setdefault(dataset, []).append(line)
    return {name: _most_important(lines) for name, lines in out.items()}


PRIORITY = (
    "ecc",
    "ecc_cv",
    "no_clustering",
    "k_warning",
    "flips",
    "routing",
    "ecc_vs",
    "best_method",
    "probe_winner",
)
"""Which lines stay when a dataset has more than :data:`MAX_LINES` (the first topics first)."""


def _most_important(lines: list[SummaryLine]) -> list[SummaryLine]:
    """At most :data:`MAX_LINES` lines, chosen by :data:`PRIORITY`, in their original order."""
    if len(lines) <= MAX_LINES:
        return lines
    rank = sorted(
        range(len(lines)),
        key=lambda i: (
            PRIORITY.index(lines[i].topic) if lines[i].topic in PRIORITY else len(PRIORITY),
            i,
        ),
    )
    keep = set(rank[:MAX_LINES])
    return [line for i, line in enumerate(lines) if i in keep]


def summary_to_metrics(summary: Mapping[str, list[SummaryLine]]) -> dict[str, list[dict]]:
    """The summary as ``metrics.json["summary"]``: per dataset a list of ``{topic, text, comparison}``.

    Parameters
    ----------
    summary : mapping

    Returns
    -------
    dict
    """
    import json

    # as JSON holds it (tuples become lists), so that the recorded and the returned value agree
    return json.loads(
        json.dumps({name: [asdict(line) for line in lines] for name, lines in summary.items()})
    )


__all__ = [
    "MAX_LINES",
    "MIN_QUERIES_PER_CLUSTER",
    "PRIORITY",
    "SummaryLine",
    "build_summary",
    "ecc_cv_line",
    "ecc_lines",
    "flip_lines",
    "routing_lines",
    "summary_to_metrics",
]
