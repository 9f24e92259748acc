"""The files of a benchmark (``ecc-lab bench``, notebook 06): ``bench.json``, ``bench.csv``,
``bench.tex`` (booktabs, one row per dataset plus the mean row), the figure
``bench_gains.png|pdf`` and ``bench.html`` (self-contained: the figure is embedded, no external
resource)."""

from __future__ import annotations

import base64
import html
import io
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ecc_lib.bench.dataset import FLIP_KEYS
from ecc_lib.bench.result import BenchResult
from ecc_lib.report.latex import latex_escape as _tex
from ecc_lib.safe_output import atomic_path, claim_output_folder, write_bytes, write_csv, write_text
from ecc_lib.stats import interval_description

PM = "\u00b1"
FIGURE_NAME = "bench_gains"


def _difference(mean, sd) -> str:
    if mean is None or not np.isfinite(mean):
        return "n/a"
    return f"{mean:+.3f} +- {sd:.3f}" if sd is not None and np.isfinite(sd) else f"{mean:+.3f}"


_ROUTING_COLUMNS = (
    ("router_minus_fixed", "best router - best fixed"),
    ("router_minus_probe_winner", "best router - probe winner"),
)
"""The routing differences of the bench tables: ``numeric_table`` column stem and header."""


def headline_table(result: BenchResult) -> pd.DataFrame:
    """The printed table: one row per dataset plus ``mean``; per method the gain on disjoint pairs
    (mean +- sd over seeds, % of the global BT's NLL), then the routing differences (score units).

    Parameters
    ----------
    result : BenchResult

    Returns
    -------
    DataFrame of str
    """
    table = result.table("gain_disjoint")
    if not len(table):
        return table
    routing = routing_table(result)
    for _, label in _ROUTING_COLUMNS:
        table[label] = routing[label].tolist()
    return table


def routing_table(result: BenchResult) -> pd.DataFrame:
    """Routing per dataset plus the mean row: the best router minus the global BT's one model (no
    probe) and minus the probe's winner (with the probe), mean over seeds (score units).

    Parameters
    ----------
    result : BenchResult

    Returns
    -------
    DataFrame of str
    """
    numeric = result.numeric_table()
    n = len(numeric) - 1  # datasets (the last row is the mean)

    def counted(text: str, i: int, column: str) -> str:
        """The mean row's cell says over how many datasets it is, where not all."""
        seen = int(numeric[column].iloc[:n].notna().sum())
        return text + f" ({seen} of {n})" if i == n and 0 < seen < n else text

    rows = []
    for i, row in enumerate(numeric.to_dict("records")):
        cells = {"dataset": row["dataset"]}
        for column, label in _ROUTING_COLUMNS:
            router = row.get(f"{column}_router")
            text = _difference(row.get(f"{column}_mean"), row.get(f"{column}_sd"))
            text = f"{text} ({router})" if isinstance(router, str) else text
            cells[label] = counted(text, i, f"{column}_mean")
        for reading in ("pairwise", "strict", "change"):
            value = row.get(f"flip_{reading}")
            chance = row.get(f"flip_{reading}_chance")
            text = (
                f"{value:.3f} (chance {chance:.3f})"
                if value is not None and np.isfinite(value)
                else "n/a"
            )
            cells[f"flip {reading}"] = counted(text, i, f"flip_{reading}")
        rows.append(cells)
    return pd.DataFrame(rows)


def _tabular(lines: list[str], header: list[str], rows: list[list[str]], spec: str) -> None:
    lines += [r"\begin{tabular}{" + spec + "}", r"\toprule", *header, r"\midrule"]
    for i, row in enumerate(rows):
        if row[0] == "mean" and i == len(rows) - 1:
            lines.append(r"\midrule")
        lines.append(" & ".join(_tex(v) for v in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]


def _table_head(caption: str, label: str) -> list[str]:
    """The opening lines of a page-wide ``table*`` with its caption and label."""
    return [
        r"\begin{table*}[t]",
        r"\centering",
        r"\scriptsize",
        r"\caption{" + _tex(caption) + "}",
        r"\label{" + label + "}",
    ]


def bench_tex(result: BenchResult) -> str:
    """``bench.tex``: two booktabs tables, one row per dataset, a rule, the mean row: the gains
    (all and disjoint pairs per method) and routing with the flip readings.

    Parameters
    ----------
    result : BenchResult

    Returns
    -------
    str
        Needs ``\\usepackage{booktabs}``.
    """
    every = result.table("gain")
    disjoint = result.table("gain_disjoint")
    methods = [c for c in every.columns if c != "dataset"]
    n_seeds = result.settings.n_seeds
    lines = _table_head(
        "Ranking quality gain over the global BT model (% of its held-out NLL, mean +- sd "
        f"over {n_seeds} protocol seeds) on all scored pairs and on the pairs disjoint from "
        "the probe's models. The mean row averages the datasets (n of N: over the datasets "
        "where the reading exists).",
        "tab:bench-gains",
    )
    header = [
        " & ".join(["dataset", *(r"\multicolumn{2}{c}{" + _tex(m) + "}" for m in methods)])
        + r" \\",
        " ".join(r"\cmidrule(lr){" + f"{2 + 2 * i}-{3 + 2 * i}" + "}" for i in range(len(methods))),
        " & ".join(["", *(["all", "disjoint"] * len(methods))]) + r" \\",
    ]
    rows = [
        [a["dataset"], *(x for m in methods for x in (a[m], d[m]))]
        for a, d in zip(every.to_dict("records"), disjoint.to_dict("records"), strict=True)
    ]
    _tabular(lines, header, rows, "l" + "r" * (2 * len(methods)))
    left = result.left_out
    if left:
        lines.append(
            r"\par\smallskip\footnotesize Left out: "
            + _tex("; ".join(f"{k} ({v})" for k, v in left.items()))
        )
    lines += [r"\end{table*}", ""]
    routing = routing_table(result)
    lines += _table_head(
        "Routing: mean score of the routed model, best router (by mean over seeds, named) "
        "minus the global BT's one model without a probe and minus the probe's winner "
        f"with the probe (both read the probe), mean over {n_seeds} seeds; winner flip readings on all observations with their chance level "
        "(datasets with repeated observations).",
        "tab:bench-routing",
    )
    if len(routing):
        header = [" & ".join(_tex(c) for c in routing.columns) + r" \\"]
        _tabular(
            lines,
            header,
            [list(r) for r in routing.itertuples(index=False)],
            "l" + "r" * (routing.shape[1] - 1),
        )
    lines.append(r"\end{table*}")
    return "\n".join(lines) + "\n"


def _html_table(frame: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = []
    for row in frame.itertuples(index=False):
        cells = "".join(f"<td>{html.escape(str(v).replace('+-', PM))}</td>" for v in row)
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _checks_frame(result: BenchResult) -> pd.DataFrame:
    rows = [
        (label, name, check["status"], check["detail"])
        for label, entry in result.datasets.items()
        for name, check in (entry.get("checks") or {}).items()
    ]
    return pd.DataFrame(rows, columns=["dataset", "check", "status", "detail"])


def _flips_frame(result: BenchResult) -> pd.DataFrame:
    rows = []
    for label, entry in result.included.items():
        flips = entry.get("flips")
        if not flips:
            rows.append({"dataset": label, "pairwise": "no repeats", "strict": "", "change": ""})
            continue
        row = {"dataset": label}
        for reading in ("pairwise", "strict", "change"):
            f = flips[reading]
            low, high = f["ci95"]
            row[reading] = f"{f['estimate']:.3f} [{low:.3f}, {high:.3f}] (chance {f['chance']:.3f})"
        row["change"] += f", R = {flips['change_draws']}"
        rows.append(row)
    return pd.DataFrame(rows, columns=["dataset", "pairwise", "strict", "change"])


def _routing_frame(result: BenchResult) -> pd.DataFrame:
    rows = []
    for label, entry in result.included.items():
        for setting, r in entry["summary"]["routing"].items():
            low, high = r["ci95"]
            rows.append(
                {
                    "dataset": label,
                    "setting": setting,
                    "best router": r["best_router"],
                    "its score": f"{r['score'][0]:.3f}",
                    "reference": "the probe's winner"
                    if setting == "probe"
                    else "the global BT's one model",
                    "reference score": f"{r['reference_score'][0]:.3f}",
                    "difference [95% CI]": f"{r['difference'][0]:+.3f} [{low:+.3f}, {high:+.3f}]",
                    "reading": f"{r['best_router']} is {r['verdict']} the reference",
                }
            )
    return pd.DataFrame(rows)


def bench_html(result: BenchResult, figure_png: bytes | None) -> str:
    """``bench.html``: the table, the sentences, the figure (embedded), the routing and flip
    readings, the checks and what was left out; no external resource.

    Parameters
    ----------
    result : BenchResult
    figure_png : bytes, optional

    Returns
    -------
    str
    """
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<title>ecc_lib bench</title><style>",
        "body{font-family:sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;line-height:1.4}",
        "table{border-collapse:collapse;margin:.8rem 0 1.4rem;font-size:.85em}",
        "th,td{border-bottom:1px solid #ccc;padding:.25rem .6rem;text-align:left;vertical-align:top}",
        "th{border-bottom:2px solid #333}img{max-width:100%}.fail{color:#b00}",
        "table.summary-table caption{text-align:left;font-size:.9em;padding-bottom:.3rem}",
        "td.number{white-space:nowrap}",
        "</style></head><body>",
        f"<h1>ecc_lib bench: {html.escape(', '.join(result.datasets))}</h1>",
        f"<p>{result.settings.n_seeds} protocol seed(s) {result.settings.seeds}; K = "
        f"{result.settings.n_clusters}, {result.settings.n_pairs} pairs and "
        f"{result.settings.n_probes} probe(s) per query, test share {result.settings.test_size}. "
        "Gains in % of the global BT's held-out NLL, mean "
        + PM
        + " sd over seeds. "
        + html.escape(interval_description(result.settings.n_seeds))
        + "</p>",
    ]
    left = result.left_out
    if left:
        parts.append("<h2>Left out of the table</h2><ul>")
        parts += [
            f"<li class='fail'><b>{html.escape(k)}</b>: {html.escape(v)}</li>"
            for k, v in left.items()
        ]
        parts.append("</ul>")
    from ecc_lib.report.build import summary_html

    parts.append(summary_html(bench_summary(result)))
    parts.append("<h2>Gain on disjoint pairs</h2>")
    table = headline_table(result)
    parts.append(_html_table(table) if len(table) else "<p>No dataset is in the table.</p>")
    parts.append(
        "<ul>" + "".join(f"<li>{html.escape(s)}</li>" for s in result.sentences()) + "</ul>"
    )
    if figure_png is not None:
        encoded = base64.b64encode(figure_png).decode("ascii")
        parts.append(
            f"<figure><img alt='gain on disjoint pairs per method and dataset' "
            f"src='data:image/png;base64,{encoded}'><figcaption>Gain on pairs disjoint from the "
            "probe per method and dataset; bars: the 95% interval of every comparison (bootstrap "
            "over test queries within each seed, seeds averaged); dots: seeds."
            "</figcaption></figure>"
        )
    parts.append("<h2>Gain on all scored pairs</h2>")
    parts.append(_html_table(result.table("gain")) if result.included else "")
    routing = _routing_frame(result)
    if len(routing):
        parts.append(
            "<h2>Routing</h2><p>Mean score of the routed model on test queries; the best "
            "router (highest mean over seeds) minus the global BT's one model without a probe "
            "and on the models outside the probe pair (no router reads an outcome it is "
            "judged on), and minus the probe's winner with the probe (both read the probe).</p>"
        )
        parts.append(_html_table(routing))
    flips = _flips_frame(result)
    if len(flips):
        parts += ["<h2>Winner flip readings</h2>", _html_table(flips)]
    parts += ["<h2>Checks</h2>", _html_table(_checks_frame(result))]
    times = [
        {"dataset": k, "seconds per seed": ", ".join(f"{s:.1f}" for s in v.get("seed_seconds", []))}
        for k, v in result.datasets.items()
    ]
    parts.append("<h2>Time</h2>" + _html_table(pd.DataFrame(times)))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_bench_outputs(result: BenchResult, out_dir: str | os.PathLike) -> dict[str, Path]:
    """Write ``bench.json``, ``bench.csv``, ``bench.tex``, ``bench_gains.png|pdf`` and
    ``bench.html`` into ``out_dir``.

    Parameters
    ----------
    result : BenchResult
    out_dir : path
        New, empty or marked by ecc_lib (:func:`ecc_lib.safe_output.claim_output_folder`): a
        user's ``bench.tex`` in a folder ecc_lib did not write is never overwritten. Every file is
        written atomically (a full disk keeps the earlier file whole) and never through a link;
        ``bench.csv`` is spreadsheet-safe (:func:`ecc_lib.safe_output.write_csv`).

    Returns
    -------
    dict
        ``{kind: path}``.

    Raises
    ------
    ecc_lib.safe_output.OutputFolderError
        ``out_dir`` is a file or a non-empty folder without ecc_lib's marker.
    ecc_lib.safe_output.OutputError
        A file cannot be written (disk full, read-only, a link): one line.
    """
    import matplotlib.pyplot as plt

    from ecc_lib.plotting.bench import plot_bench_gains

    out = claim_output_folder(out_dir)
    paths = {kind: out / f"bench.{kind}" for kind in ("json", "csv", "tex", "html")}
    write_text(paths["json"], json.dumps(result.to_metrics(), indent=1, allow_nan=False))
    write_csv(result.numeric_table(), paths["csv"])
    write_text(paths["tex"], bench_tex(result))
    png = None
    if result.included:
        fig = plot_bench_gains(result)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=150, bbox_inches="tight")
        png = buffer.getvalue()
        paths["png"] = out / f"{FIGURE_NAME}.png"
        write_bytes(paths["png"], png)
        paths["pdf"] = out / f"{FIGURE_NAME}.pdf"
        with atomic_path(paths["pdf"]) as temporary:
            fig.savefig(temporary, format="pdf", bbox_inches="tight")
        plt.close(fig)
    write_text(paths["html"], bench_html(result, png))
    return paths


def bench_metrics(label: str, entry: dict) -> dict:
    """One bench dataset as the ``metrics.json`` sections the report's summary reads.

    Parameters
    ----------
    label : str
    entry : dict
        An included dataset of :class:`~ecc_lib.bench.result.BenchResult`.

    Returns
    -------
    dict
        ``ecc`` (dataset, seeds, the comparison records, the first seed's training queries),
        ``parameters`` (K) and ``dars`` (the flip readings).
    """
    s = entry["summary"]
    first = (entry.get("per_seed") or [{}])[0]
    out: dict = {
        "ecc": {
            "dataset": label,
            "seeds": list(s["seeds"]),
            "comparisons": s.get("comparisons") or [],
            "n_train": first.get("n_train"),
            # issue 34: the summary names ECC-CV's choice and compares it with tuned baselines
            **({"ecc_cv_choice": s["ecc_cv_choice"]} if s.get("ecc_cv_choice") else {}),
        },
        "parameters": {"ecc": {"n_clusters": (entry.get("settings") or {}).get("n_clusters")}},
    }
    flips = entry.get("flips")
    if flips:
        dars: dict = {"dataset": label, "winner_change_rate_r": flips.get("change_draws")}
        for reading, key in FLIP_KEYS.items():
            dars[key] = flips[reading]["estimate"]
            dars[key + "_ci95"] = flips[reading]["ci95"]
        dars["flip_rate_chance"] = {r: flips[r]["chance"] for r in FLIP_KEYS}
        out["dars"] = dars
    return out


def bench_summary(result: BenchResult) -> dict:
    """Per included dataset the report's summary (:func:`ecc_lib.report.registry.build_summary`)
    of the same comparison records: the bench and the report say the same thing.

    Parameters
    ----------
    result : BenchResult

    Returns
    -------
    dict
        Dataset -> list of :class:`~ecc_lib.report.summary.SummaryLine`.
    """
    from ecc_lib.report.registry import build_summary

    out: dict = {}
    for label, entry in result.included.items():
        out.update(build_summary(bench_metrics(label, entry)))
    return out


def format_bench(result: BenchResult) -> str:
    """The printed summary: the table, the sentences, what was left out.

    Parameters
    ----------
    result : BenchResult

    Returns
    -------
    str
    """
    lines = [
        f"bench over {len(result.datasets)} dataset(s), {result.settings.n_seeds} seed(s) "
        f"{result.settings.seeds}: gain on disjoint pairs, mean +- sd over seeds, %"
    ]
    table = headline_table(result)
    if len(table):
        lines.append(table.to_string(index=False))
    lines += result.sentences()
    from ecc_lib.report.summary import summary_text

    text = summary_text(bench_summary(result))
    if text:
        lines.append(text)
    for label, reason in result.left_out.items():
        lines.append(f"left out: {label}: {reason}")
    return "\n".join(lines)


__all__ = [
    "format_bench",
    "headline_table",
    "write_bench_outputs",
]
