"""The report's summary: per dataset a compact table, then at most :data:`MAX_SENTENCES` sentences.

Built from ``metrics.json`` only, and only from the typed comparison records of
:mod:`ecc_lib.protocol.comparisons` (``metrics.json["ecc"]["comparisons"]``, made by the one
producer the bench also uses), so a number has one value and one interval wherever it appears:

- the table (:func:`summary_table`): per method its gain over one global BT on pairs disjoint from
  the probe's models with its interval, the gain on all pairs, the verdict against the reference
  (``reference``, default one global BT) and against the best baseline, and a note;
- the sentences (:func:`ecc_lines`, :func:`flip_lines`, :func:`routing_lines`): ECC's gain, the
  method with the largest gain, a sentence when no clustering beats the reference, a warning when K
  is large, the flip readings beside chance and whether routing pays, leak-aware first (no probe,
  or models outside the probe pair); the with-probe number only beside the probe's winner.

Every interval is the one of :func:`ecc_lib.stats.seed_query_interval`; a comparison without an
interval is shown without a verdict word. Metrics written before the records existed are read with
their own bootstrap intervals when they hold one seed, without intervals (so without verdicts) when
they hold several.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ecc_lib.grammar import finite, interval, number, verdict
from ecc_lib.labels import PLURAL
from ecc_lib.labels import method_name as _name
from ecc_lib.method_registry import METHOD_SPECS, method_keys
from ecc_lib.protocol.comparisons import (
    LEAK_FREE_SETTINGS,
    ComparisonRecord,
    find,
    flip_records,
    read_records,
)
from ecc_lib.report.reading import read_metrics, utility_meaning

MAX_SENTENCES = 5
"""Most summary sentences per dataset (the table comes first and is not counted)."""
MAX_WORDS = 35
"""Most words per summary sentence."""
MIN_QUERIES_PER_CLUSTER = 50
"""Fewer training queries per cluster than this draws a warning that K is large."""
SAME_EVERYWHERE = "the same to the printed digit"
"""What a table cell says where the difference and both bounds print as 0."""
NO_VERDICT = "no interval"
"""What a table cell says where a comparison has no interval (never a verdict word)."""


@dataclass
class SummaryLine:
    """One quotable sentence (or the summary table) and the record it states.

    Parameters
    ----------
    topic : str
        ``table``, ``ecc``, ``best_method``, ``no_clustering``, ``no_interval``, ``k_warning``,
        ``flips``, ``routing``, ``probe_winner``.
    text : str
    comparison : dict, optional
        The :class:`~ecc_lib.protocol.comparisons.ComparisonRecord` (``to_dict``) it states.
    rows : list of dict, optional
        The table's rows (topic ``table`` only).
    """

    topic: str
    text: str
    comparison: dict[str, Any] | None = field(default=None)
    rows: list[dict[str, Any]] | None = field(default=None)


def _line(topic: str, text: str, record: ComparisonRecord | None = None) -> SummaryLine:
    return SummaryLine(topic, text, record.to_dict() if record is not None else None)


def seed_count(ecc: Any, parameters: Mapping[str, Any] | None = None) -> int:
    """The protocol seeds of the clustering run: its ``seeds``, else the ``n_seeds`` parameter.

    Parameters
    ----------
    ecc : mapping or str
        ``metrics.json["ecc"]`` (a skipped section's sentence reads as no seeds).
    parameters : mapping, optional
        ``metrics.json["parameters"]``.

    Returns
    -------
    int
        1 where neither says.
    """
    seeds = ecc.get("seeds") if isinstance(ecc, Mapping) else None
    if isinstance(seeds, list) and seeds:
        return len(seeds)
    n = ((parameters or {}).get("ecc") or {}).get("n_seeds")
    return int(n) if finite(n) else 1


# --------------------------------------------------------------------------------------------------
# the records


def _legacy_records(ecc: Mapping[str, Any], n_seeds: int) -> list[ComparisonRecord]:
    """Records of metrics written before :mod:`ecc_lib.protocol.comparisons`: with one seed the
    recorded bootstrap intervals over test queries (the one interval of one seed), with several
    seeds the means over seeds without an interval (a first-seed interval beside a mean over seeds
    would mix two readings)."""
    out: list[ComparisonRecord] = []
    several = n_seeds > 1
    for reading, one_seed, means, diffs, mean_diffs in (
        (
            "disjoint",
            "ranking_quality_gain_disjoint",
            "gain_disjoint_mean",
            "gain_differences_disjoint",
            "difference_disjoint_mean_sd",
        ),
        ("all", "ranking_quality_gain", "gain_mean", "gain_differences", "difference_mean_sd"),
    ):
        values = ecc.get(means) if several else ecc.get(one_seed)
        cis = {} if several else ecc.get(one_seed + "_ci95") or {}
        for m, v in (values or {}).items():
            if m != "global" and finite(v):
                out.append(
                    ComparisonRecord(
                        "clustering_gain", m, "global", v, cis.get(m), "pp", reading, n_seeds
                    )
                )
        differences = []  # (a, b, estimate, interval)
        if several:
            for name, d in (ecc.get(mean_diffs) or {}).items():
                if isinstance(d, list | tuple) and " - " in name and finite(d[0]):
                    differences.append((*name.split(" - ", 1), d[0], None))
        else:
            for name, d in (ecc.get(diffs) or {}).items():
                if isinstance(d, Mapping) and "_minus_" in name and finite(d.get("estimate")):
                    differences.append((*name.split("_minus_", 1), d["estimate"], d.get("ci95")))
        n = n_seeds if several else 1
        out += [
            ComparisonRecord("method_difference", a, b, d, ci, "pp", reading, n)
            for a, b, d, ci in differences
        ]
    return out


def ecc_records(metrics: Mapping[str, Any]) -> list[ComparisonRecord]:
    """The comparison records of ``metrics.json["ecc"]`` (stored, or read from older keys).

    Parameters
    ----------
    metrics : mapping
        The whole ``metrics.json``.

    Returns
    -------
    list of ComparisonRecord
    """
    metrics = read_metrics(metrics)
    ecc = metrics.get("ecc") or {}
    if not isinstance(ecc, Mapping) or ecc.get("skipped"):
        return []
    stored = ecc.get("comparisons")
    if isinstance(stored, list) and stored:
        return read_records(stored)
    return _legacy_records(ecc, seed_count(ecc, metrics.get("parameters") or {}))


def _gain(
    records: Sequence[ComparisonRecord], method: str, reading: str
) -> ComparisonRecord | None:
    return find(records, "clustering_gain", method, "global", reading)


def _gains(
    records: Sequence[ComparisonRecord], methods: Iterable[str], reading: str
) -> dict[str, float]:
    """Method -> its finite gain estimate on ``reading`` (methods without one left out)."""
    gains = {m: _gain(records, m, reading) for m in methods}
    return {m: g.estimate for m, g in gains.items() if g is not None and finite(g.estimate)}


def _largest(scores: Mapping[str, float]) -> str | None:
    """The key of the largest value (the first of ties), None when empty."""
    return max(scores, key=scores.get) if scores else None


def _versus(
    records: Sequence[ComparisonRecord], method: str, other: str, reading: str
) -> ComparisonRecord | None:
    """``method`` minus ``other`` on ``reading``: its gain when ``other`` is the global model."""
    if other == "global":
        return _gain(records, method, reading)
    return find(records, "method_difference", method, other, reading)


def _reading(records: Sequence[ComparisonRecord]) -> str:
    """``disjoint`` where any gain on disjoint pairs is finite, else ``all``."""
    disjoint = [r for r in records if r.question == "clustering_gain" and r.reading == "disjoint"]
    return "disjoint" if any(finite(r.estimate) for r in disjoint) else "all"


def _where(reading: str) -> str:
    return (
        "on pairs disjoint from the probe's models"
        if reading == "disjoint"
        else "on all held-out pairs"
    )


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _difference(record: ComparisonRecord, a: str, b: str) -> str:
    """``A minus B = +1.2 pp [+0.3, +2.1]`` (the interval kind is the report header's)."""
    ci = interval(record.ci, record.unit)
    return f"{a} minus {b} = {number(record.estimate, record.unit)}" + (f" {ci}" if ci else "")


def _sentence(
    record: ComparisonRecord,
    subject: str,
    obj: str,
    *,
    a: str = "",
    b: str = "",
    context: str = "",
    plural: bool = False,
    tail: str = "",
) -> str:
    """``Subject is better than obj context: a minus b = d [lo, hi]; tail.`` (a verdict word only
    with an interval)."""
    c = record.comparison(a or subject, b or obj)
    where = f" {context}" if context else ""
    if record.has_interval:
        head = f"{subject} {'are' if plural else 'is'} {verdict(c)} {obj}{where}"
    else:  # no interval, no verdict word
        head = f"{subject} against {obj}{where} (no interval)"
    text = _capital(head) + ": " + _difference(record, c.a, c.b)
    return text + (f"; {tail}" if tail else "") + "."


def _nll_words(gain: float) -> str:
    """``held-out NLL 10.7% lower`` / ``34.1% higher`` (never a negative percentage lower)."""
    if not finite(gain):
        return ""
    size = number(abs(float(gain)), "pct_nll")
    if size in ("0.0%",):
        return "held-out NLL unchanged"
    return f"held-out NLL {size} {'lower' if gain > 0 else 'higher'}"


# --------------------------------------------------------------------------------------------------
# the table


def summary_table(
    records: Sequence[ComparisonRecord],
    *,
    methods: Sequence[str] | None = None,
    reference: str | None = None,
    baselines: Sequence[str] | None = None,
    notes: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Per method: gain on disjoint pairs with its interval, gain on all pairs, the verdict against
    the reference and against the best baseline, a note.

    Parameters
    ----------
    records : sequence of ComparisonRecord
    methods : sequence of str, optional
        Rows, in order (default: every method with a gain record, in their order).
    reference : str, optional
        The reference of the first verdict column: by default the tuned global BT
        (``global_tuned``, issue 34) where it ran, else one global BT at the default prior.
    baselines : sequence of str, optional
        The methods a clustering method is compared with in the second verdict column; the best is
        the one with the largest gain on ``reading``. Default: the tuned-prior baselines
        (``*_tuned``) where they ran, so that ECC-CV, whose search tunes the prior, is compared
        only with baselines tuned the same way; else the rows whose key does not start with
        ``"ecc"``; the reference is left out.
    notes : mapping, optional
        Method -> a note (e.g. the settings ECC-CV chose, in words).

    Returns
    -------
    list of dict
        ``method``, ``name``, ``gain`` (record on the summary's reading), ``gain_all``,
        ``versus_reference`` and ``versus_best_baseline`` (records as dicts, None where not
        applicable), ``best_baseline``, ``verdict_reference``, ``verdict_best_baseline``, ``note``.
    """
    order = list(dict.fromkeys(r.a for r in records if r.question == "clustering_gain"))
    reference = default_reference(order) if reference is None else reference
    methods = [m for m in (order if methods is None else methods) if m != "global"]
    reading = _reading(records)
    if baselines is None:
        tuned = [m for m in methods if _is_tuned(m) and m != reference]
        baselines = tuned or [m for m in methods if _is_baseline(m) and m != reference]
    best = _largest(_gains(records, baselines, reading))
    rows = []
    for m in methods:
        gain = _gain(records, m, reading)
        if gain is None:
            continue
        versus_ref = _versus(records, m, reference, reading) if m != reference else None
        versus_best = _versus(records, m, best, reading) if best and m != best else None
        rows.append(
            {
                "method": m,
                "name": _name(m),
                "gain": gain.to_dict(),
                "gain_all": (_gain(records, m, "all") or gain).to_dict()
                if reading == "disjoint"
                else None,
                "versus_reference": versus_ref.to_dict() if versus_ref else None,
                "versus_best_baseline": versus_best.to_dict() if versus_best else None,
                "reference": reference,
                "best_baseline": best,
                "verdict_reference": _cell_verdict(versus_ref),
                "verdict_best_baseline": _cell_verdict(versus_best),
                "note": (notes or {}).get(m, ""),
            }
        )
    return rows


def _is_tuned(method: str) -> bool:
    """A method whose BT prior is tuned (its registry entry; an unregistered ``*_tuned`` key too)."""
    spec = METHOD_SPECS.get(method)
    return spec.tuned is not None if spec is not None else method.endswith("_tuned")


def _is_baseline(method: str) -> bool:
    """A baseline of ECC (its registry entry, or the tuned form of one; an unregistered key that
    does not start with ``ecc``)."""
    spec = METHOD_SPECS.get(method)
    if spec is None:
        return not method.startswith("ecc")
    return spec.baseline or (spec.tuned is not None and METHOD_SPECS[spec.tuned].baseline)


def default_reference(methods: Sequence[str]) -> str:
    """The reference of the gains and verdicts: the tuned global BT where it ran (issue 34: a prior
    chosen by the same inner CV as ECC-CV's), else one global BT at the default prior.

    Parameters
    ----------
    methods : sequence of str
        The methods with a gain record.

    Returns
    -------
    str
    """
    return "global_tuned" if "global_tuned" in methods else "global"


def _cell_verdict(record: ComparisonRecord | None) -> str:
    if record is None:
        return ""
    if record.zero_as_printed:
        return SAME_EVERYWHERE  # a degenerate result in plain words, not a template verdict
    return record.verdict or NO_VERDICT


def record_text(record: ComparisonRecord | Mapping[str, Any] | None, unit: str = "pct_nll") -> str:
    """``+10.7% [+8.1, +13.2]``: a record's estimate with its interval, as every table writes it
    (the estimate alone without an interval, a dash without an estimate).

    Parameters
    ----------
    record : ComparisonRecord or its dict, optional
    unit : str, default "pct_nll"
        ``pct_nll`` for a gain (signed, in percent), else the record's difference unit.

    Returns
    -------
    str
    """
    if record is None:
        return "\u2013"
    payload = record.to_dict() if isinstance(record, ComparisonRecord) else record
    estimate = payload.get("estimate")
    value = number(estimate, unit)
    if unit == "pct_nll" and finite(estimate) and float(estimate) > 0:
        value = "+" + value
    ci = interval(payload.get("ci"), "pp" if unit == "pct_nll" else unit)
    return value + (f" {ci}" if ci else "")


def table_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """The table as plain text, one method per line (the CLI's and ``metrics.json``'s text).

    Parameters
    ----------
    rows : sequence of dict
        :func:`summary_table`.

    Returns
    -------
    str
    """
    if not rows:
        return ""
    reference = _name(rows[0]["reference"])
    best = rows[0]["best_baseline"]
    lines = []
    for row in rows:
        cells = [f"{row['name']}: gain {record_text(row['gain'])}"]
        if row.get("gain_all"):
            cells.append(f"all pairs {record_text(row['gain_all'])}")
        for verdict_, other in (
            (row["verdict_reference"], reference),
            (row["verdict_best_baseline"], _name(best) if best else ""),
        ):
            if not verdict_ or not other:
                continue
            if verdict_ == SAME_EVERYWHERE:
                cells.append(f"the same as {other} to the printed digit")
            elif verdict_ == NO_VERDICT:
                cells.append(f"no interval against {other}")
            else:
                cells.append(f"{verdict_} {other}")
        if row.get("note"):
            cells.append(row["note"])
        lines.append("; ".join(cells))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# the sentences


def ecc_lines(
    metrics: Mapping[str, Any],
    *,
    methods: Sequence[str] | None = None,
    reference: str | None = None,
    baselines: Sequence[str] | None = None,
    notes: Mapping[str, str] | None = None,
) -> list[SummaryLine]:
    """The table and the sentences of the clustering section (``metrics.json["ecc"]``).

    Parameters
    ----------
    metrics : mapping
        The whole ``metrics.json``.
    methods, reference, baselines, notes
        As :func:`summary_table`.

    Returns
    -------
    list of SummaryLine
        The ``table`` line first.
    """
    metrics = read_metrics(metrics)
    ecc = metrics.get("ecc") or {}
    parameters = metrics.get("parameters") or {}
    records = ecc_records(metrics)
    if reference is None:
        reference = default_reference([r.a for r in records if r.question == "clustering_gain"])
    choice = ecc.get("ecc_cv_choice") if isinstance(ecc, Mapping) else None
    chose = choice["words"] if isinstance(choice, Mapping) and choice.get("words") else ""
    if chose:  # issue 34: say what it chose
        notes = {"ecc_cv": f"chose {chose}", **(notes or {})}
    rows = summary_table(
        records, methods=methods, reference=reference, baselines=baselines, notes=notes
    )
    if not rows:
        return []
    reading = _reading(records)
    where = _where(reading)
    n_seeds = seed_count(ecc, parameters)
    ref_name = _name(reference)
    caption = (
        f"Gain over {ref_name} in % of its held-out NLL {where}, over {n_seeds} protocol seed"
        f"{'s' if n_seeds != 1 else ''}; verdicts against {ref_name} and the best baseline."
    )
    table = SummaryLine("table", caption + "\n" + table_text(rows), rows=rows)
    by_method = {row["method"]: row for row in rows}
    shown = [m for m in by_method if m != reference]
    # ECC-CV and the tuned baselines are read by ecc_cv_line (issue 34)
    scored = _gains(records, [m for m in shown if m not in TUNED_OR_SEARCHED], reading)
    best = _largest(scored)
    lines: list[SummaryLine] = [table]
    lines += _best_method_lines(by_method, scored, best, records, reading, reference)
    lines += _interval_lines(by_method, shown, best, reference, where, n_seeds)
    lines += _k_lines(ecc, parameters)
    said = ecc_cv_line(ecc, records)
    if said is None and "ecc_cv" in by_method and by_method["ecc_cv"]["gain"]:
        said = _ecc_cv_alone(by_method["ecc_cv"], chose, ref_name)
    if said is not None:
        lines.append(said)
    return lines


def _ecc_cv_alone(row: Mapping[str, Any], chose: str, ref_name: str) -> SummaryLine:
    """ECC-CV's gain without a verdict where no tuned baseline ran beside it (a verdict against a
    baseline at its default prior would credit ECC-CV with the prior, issue 34); ``chose``: its
    choice in words (``""`` where not recorded)."""
    text = (
        f"ECC-CV's gain over {ref_name} is {record_text(row['gain'])}; no tuned baseline ran "
        f"beside it, so it gets no verdict." + (f" It chose {chose}." if chose else "")
    )
    return _line("ecc_cv", text)


def _interval_lines(
    by_method: Mapping[str, Mapping[str, Any]],
    shown: Sequence[str],
    best: str | None,
    reference: str,
    where: str,
    n_seeds: int,
) -> list[SummaryLine]:
    """A note when no comparison has an interval, or when no clustering beats the reference."""
    with_interval = [
        m
        for m in shown
        if by_method[m]["versus_reference"] and by_method[m]["versus_reference"]["ci"]
    ]
    if shown and not with_interval:
        text = (
            f"These metrics hold no interval for the {n_seeds} seeds, so no comparison gets a "
            "verdict; rerun the notebook to record them."
        )
        return [_line("no_interval", text)]
    if best is not None and not any(
        (by_method[m]["versus_reference"] or {}).get("direction", 0) > 0 for m in shown
    ):
        text = (
            f"No clustering is better than {_name(reference)} {where}: no interval lies above 0 "
            f"(largest gain {record_text(by_method[best]['gain'])}, {_name(best)})."
        )
        return [_line("no_clustering", text)]
    return []


def _gain_line(
    row: Mapping[str, Any], method: str, topic: str, reference: str, where: str
) -> list[SummaryLine]:
    """``method``'s gain over the reference in words (no line without a record)."""
    payload = row["versus_reference"]
    if not payload:
        return []
    r = ComparisonRecord.from_dict(payload)
    tail = _nll_words(r.estimate) if reference == "global" else ""
    text = _sentence(
        r, _name(method), _name(reference), context=where, plural=method in PLURAL, tail=tail
    )
    return [_line(topic, text, r)]


def _best_method_lines(
    by_method: Mapping[str, Mapping[str, Any]],
    scored: Mapping[str, float],
    best: str | None,
    records: Sequence[ComparisonRecord],
    reading: str,
    reference: str,
) -> list[SummaryLine]:
    """ECC's gain over the reference, and the best method against ECC (or over the reference)."""
    where = _where(reading)
    lines = []
    if "ecc" in by_method:
        lines += _gain_line(by_method["ecc"], "ecc", "ecc", reference, where)
    if best and best != "ecc" and "ecc" in by_method:
        r = _versus(records, best, "ecc", reading)
        if r is not None and not r.zero_as_printed:  # a tie with ECC is in the table
            text = _sentence(
                r,
                _name(best),
                "ECC",
                context=where,
                plural=best in PLURAL,
                tail=f"the largest gain of the {len(scored)} methods at the default prior",
            )
            lines.append(_line("best_method", text, r))
    elif best and "ecc" not in by_method:
        lines += _gain_line(by_method[best], best, "best_method", reference, where)
    return lines


def _k_lines(ecc: Mapping[str, Any], parameters: Mapping[str, Any]) -> list[SummaryLine]:
    """A warning when K leaves few training queries per cluster, with the K sweep's best K."""
    k = (parameters.get("ecc") or {}).get("n_clusters")
    n_train = ecc.get("n_train")
    if not (finite(k) and finite(n_train) and float(n_train) / float(k) < MIN_QUERIES_PER_CLUSTER):
        return []
    text = (
        f"Warning: K = {int(k)} clusters for {int(n_train):,} training queries "
        f"({float(n_train) / float(k):.0f} per cluster) is large; each cluster's BT profile "
        "rests on few comparisons."
    )
    sweep = {
        int(key.split("@")[1]): v
        for key, v in (ecc.get("gain_vs_k") or {}).items()
        if key.startswith("ecc@") and finite(v)
    }
    lines = [_line("k_warning", text)]
    if sweep:
        top = max(sweep, key=sweep.get)
        text = (
            f"In the K sweep (all pairs, first seed, no interval) ECC's gain is largest at "
            f"K = {top} ({number(sweep[top], 'pct_nll')})."
        )
        lines.append(_line("k_sweep", text))
    return lines


TUNED_OR_SEARCHED = frozenset(method_keys(lambda s: s.tuned is not None or s.searched))
"""Methods whose prior is tuned (issue 34): compared only with each other (:func:`ecc_cv_line`);
from the method registry."""


def ecc_cv_line(
    ecc: Mapping[str, Any], records: Sequence[ComparisonRecord] | None = None
) -> SummaryLine | None:
    """ECC-CV's choice in words and its verdict against the best tuned-prior baseline (issue 34).

    The verdict reads the comparison records (the one interval of :mod:`ecc_lib.stats`) of ECC-CV
    minus the tuned baseline (``*_tuned``) with the largest gain, on pairs disjoint from the probe
    where they exist. When ECC-CV chose one global BT or one BT per human category on every seed,
    the sentence says that this is no clustering gain.

    Parameters
    ----------
    ecc : mapping
        ``metrics.json["ecc"]`` (its ``ecc_cv_choice``).
    records : sequence of ComparisonRecord, optional
        Default: the records of ``ecc``.

    Returns
    -------
    SummaryLine or None
        None when ECC-CV did not run, or no tuned baseline ran.
    """
    choice = ecc.get("ecc_cv_choice")
    if not isinstance(choice, Mapping) or not choice.get("words"):
        return None
    records = ecc_records({"ecc": ecc}) if records is None else records
    reading = _reading(records)
    best = _largest(_gains(records, TUNED_OR_SEARCHED - {"ecc_cv", "global_tuned"}, reading))
    r = _versus(records, "ecc_cv", best, reading) if best else None
    if r is None:
        return None
    if r.zero_as_printed:
        text = f"ECC-CV gives the numbers of {_name(best)} to the printed digit"
    else:
        text = _sentence(
            r, "ECC-CV", f"the best tuned baseline, {_name(best)}", a="ECC-CV", b=_name(best)
        ).rstrip(".")
    text += f". It chose {choice['words']}."
    if not choice.get("clustering"):
        text += " It deployed no clustering, so this is no clustering gain."
    return _line("ecc_cv", text, r)


def flip_lines(metrics: Mapping[str, Any]) -> list[SummaryLine]:
    """The strict and change flip readings beside chance (``metrics.json["dars"]``).

    The pairwise reading counts random tie-breaks as flips; it stays in the report's body.

    Parameters
    ----------
    metrics : mapping

    Returns
    -------
    list of SummaryLine
    """
    metrics = read_metrics(metrics)
    dars = metrics.get("dars") or {}
    if not isinstance(dars, Mapping) or dars.get("skipped"):
        return []
    meaning = {
        "strict": "the strict flip rate (two draws' top sets disjoint)",
        "change": f"the change rate (winner changes within {dars.get('winner_change_rate_r') or 'R'} draws)",
    }
    lines = []
    for r in flip_records(dars):
        if r.reading not in meaning:
            continue
        rate, ci = r.levels["a"], interval(r.levels["a"][1:], "share")
        level = number(rate[0], "share") + (f" {ci}" if ci else "")
        subject = f"{_capital(meaning[r.reading])}, {level} of queries,"
        chance = f"chance ({number(r.levels['b'][0], 'share')})"
        text = _sentence(r, subject, chance, a=r.reading, b="chance")
        lines.append(_line("flips", text, r))
    return lines


def routing_lines(
    metrics: Mapping[str, Any], options: SummaryOptions | None = None
) -> list[tuple[str, SummaryLine]]:
    """Whether routing pays, as ``(dataset, line)``, leak-aware first (also the routing
    section's summary hook).

    On the clustering dataset: the best cluster router without the probe (or on the models
    outside the probe pair) minus the global BT's one model; the with-probe router only beside
    the probe's winner. On the routing dataset: the best router minus the best fixed model.
    A zero-width interval (every router sends each query to the same model as the reference)
    is one plain sentence.

    Parameters
    ----------
    metrics : mapping
    options : SummaryOptions, optional
        Unused (a summary hook's second argument).

    Returns
    -------
    list of (str, SummaryLine)
    """
    metrics = read_metrics(metrics)
    out: list[tuple[str, SummaryLine]] = []
    ecc = metrics.get("ecc") or {}
    records = read_records(ecc.get("comparisons")) if isinstance(ecc, Mapping) else []
    routing = [r for r in records if r.question == "routing_pays"]
    dataset = str(ecc.get("dataset", "")) if isinstance(ecc, Mapping) else ""
    # the first leak-free setting with a router against the global BT's one model
    free = (x for s in LEAK_FREE_SETTINGS for x in routing if x.reading == s and x.b == "global")
    r = next(free, None)
    if r is not None:
        context = (
            "without the probe"
            if r.reading == "no_probe"
            else "on the models outside the probe pair"
        )
        if r.zero_width and r.estimate == 0:
            text = (
                f"{_capital(context)}, every cluster router scores exactly as the global BT's one "
                "model on every test query: routing changes nothing."
            )
        else:
            levels = (
                f"mean held-out score {number(r.levels['a'][0], 'score')} against "
                f"{number(r.levels['b'][0], 'score')}"
            )
            text = _sentence(
                r,
                f"{_capital(context)}, routing by {_name(r.a)}",
                "the global BT's one model",
                a=_name(r.a),
                b="global BT",
                tail=levels,
            )
        out.append((dataset, _line("routing", text, r)))
    winner = next((x for x in routing if x.reading == "probe" and x.a == "probe_winner"), None)
    if winner is not None:
        text = _sentence(
            winner,
            "With the probe, its winner alone",
            f"the best cluster router ({_name(winner.b)})",
            a="probe winner",
            b=_name(winner.b),
            tail="routers that read the probe pay only above it",
        )
        out.append((dataset, _line("probe_winner", text, winner)))
    block = metrics.get("routing") or {}
    headline = block.get("headline") or {} if isinstance(block, Mapping) else {}
    margin = headline.get("best_router_utility_minus_fixed")
    if finite(margin):
        ci = headline.get("best_router_utility_minus_fixed_ci95")
        best = str(headline.get("best_router") or "the best router")
        info = block.get("info") or {}
        if info and not info.get("has_rewrites") and not info.get("has_decodes"):
            best = best.replace(" (DARS)", "")
        fixed = str(headline.get("best_fixed_model") or "the best fixed model")
        r = ComparisonRecord(
            "routing_pays",
            best,
            fixed,
            float(margin),
            tuple(ci) if ci and len(ci) == 2 else None,
            "score_diff",
            "utility",
            1,
            interval="95% bootstrap over test queries",
        )
        if r.zero_width and r.estimate == 0:
            text = (
                f"Routing changes nothing here: the best router, {best}, has the held-out utility "
                f"of the best fixed model ({fixed}) on every test query."
            )
        else:
            cost = "" if info.get("cost_available") else f" ({utility_meaning(info)})"
            text = _sentence(
                r,
                f"On held-out utility{cost}, the best router ({best})",
                f"the best fixed model ({fixed})",
                a="best router",
                b="best fixed model",
            )
        out.append((str(headline.get("dataset", "")), _line("routing", text, r)))
    return out


PRIORITY = (
    "ecc",
    "ecc_cv",
    "no_interval",
    "no_clustering",
    "routing",
    "best_method",
    "k_warning",
    "flips",
    "probe_winner",
    "k_sweep",
)
"""Which sentences stay when a dataset has more than :data:`MAX_SENTENCES` (first topics first)."""


@dataclass(frozen=True)
class SummaryOptions:
    """What the caller wires into the summary (as :func:`summary_table`; ``None`` takes the
    recorded defaults).

    Parameters
    ----------
    methods : sequence of str, optional
        The methods shown.
    reference : str, optional
        The gain reference of the first verdict.
    baselines : sequence of str, optional
        The baselines of the second verdict.
    notes : mapping, optional
        A note per method (the lead wires tuned baselines and ECC-CV's choice in here).
    """

    methods: Sequence[str] | None = None
    reference: str | None = None
    baselines: Sequence[str] | None = None
    notes: Mapping[str, str] | None = None


SummaryHook = Callable[[Mapping[str, Any], SummaryOptions], list[tuple[str, SummaryLine]]]
"""A report section's summary hook (``Section.summary``): ``(metrics, options) -> [(dataset,
line), ...]``, the section's candidate summary lines, most important first within a topic."""


def ecc_summary(
    metrics: Mapping[str, Any], options: SummaryOptions
) -> list[tuple[str, SummaryLine]]:
    """The clustering section's summary hook: :func:`ecc_lines` on its dataset.

    Parameters
    ----------
    metrics : mapping
    options : SummaryOptions

    Returns
    -------
    list of (str, SummaryLine)
    """
    ecc = metrics.get("ecc") or {}
    if not isinstance(ecc, Mapping):
        return []
    return [(str(ecc.get("dataset", "")), line) for line in ecc_lines(metrics, **vars(options))]


def flip_summary(
    metrics: Mapping[str, Any], options: SummaryOptions
) -> list[tuple[str, SummaryLine]]:
    """The label-instability section's summary hook: :func:`flip_lines` on its dataset.

    Parameters
    ----------
    metrics : mapping
    options : SummaryOptions
        Unused (the flip readings take no options).

    Returns
    -------
    list of (str, SummaryLine)
    """
    dars = metrics.get("dars") or {}
    if not isinstance(dars, Mapping):
        return []
    return [(str(dars.get("dataset", "")), line) for line in flip_lines(metrics)]


def assemble_summary(
    metrics: Mapping[str, Any],
    hooks: Sequence[SummaryHook],
    options: SummaryOptions | None = None,
) -> dict[str, list[SummaryLine]]:
    """Per dataset its table (clustering datasets) and at most :data:`MAX_SENTENCES` sentences,
    from the sections' summary hooks in the report's order
    (:func:`ecc_lib.report.registry.build_summary` passes the registered ones).

    Parameters
    ----------
    metrics : mapping
        The whole ``metrics.json``.
    hooks : sequence of SummaryHook
    options : SummaryOptions, optional

    Returns
    -------
    dict
        Dataset name -> lines (the ``table`` line first where there is one).
    """
    metrics = read_metrics(metrics)
    options = options or SummaryOptions()
    out: dict[str, list[SummaryLine]] = {}
    for hook in hooks:
        for dataset, line in hook(metrics, options):
            out.setdefault(dataset, []).append(line)
    return {name: _most_important(lines) for name, lines in out.items()}


def _most_important(lines: list[SummaryLine]) -> list[SummaryLine]:
    """The table and at most :data:`MAX_SENTENCES` sentences, by :data:`PRIORITY`, in order."""
    sentences = [i for i, line in enumerate(lines) if line.topic != "table"]
    rank = sorted(
        sentences,
        key=lambda i: (
            PRIORITY.index(lines[i].topic) if lines[i].topic in PRIORITY else len(PRIORITY),
            i,
        ),
    )
    keep = set(rank[:MAX_SENTENCES])
    return [line for i, line in enumerate(lines) if line.topic == "table" or i in keep]


def summary_to_metrics(summary: Mapping[str, list[SummaryLine]]) -> dict[str, list[dict]]:
    """The summary as ``metrics.json["summary"]``: per dataset a list of ``{topic, text,
    comparison, rows}`` (the table first).

    Parameters
    ----------
    summary : mapping

    Returns
    -------
    dict
    """
    import json

    from ecc_lib.serialization import to_jsonable

    # as JSON holds it (tuples become lists), so that the recorded and the returned value agree
    return json.loads(
        json.dumps(
            to_jsonable({name: [asdict(line) for line in lines] for name, lines in summary.items()})
        )
    )


def summary_text(summary: Mapping[str, list[SummaryLine]]) -> str:
    """The summary as plain text (what the CLI prints): per dataset its table, then its sentences.

    Parameters
    ----------
    summary : mapping

    Returns
    -------
    str
    """
    parts = []
    for dataset, lines in summary.items():
        parts.append(f"{dataset}:")
        parts += ["  " + row for line in lines for row in line.text.splitlines()]
    return "\n".join(parts)


__all__: list[str] = []
