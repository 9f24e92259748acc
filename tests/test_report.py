"""The report: formatted intervals, findings built from the numbers, headline tables, LaTeX, HTML."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402

from ecc_lib import report
from ecc_lib import stats as metrics
from ecc_lib.runs import artifacts as run_artifacts
from ecc_lib.runs import execute as notebook_execution
from ecc_lib.runs import folder as run_folder
from ecc_lib.runs import metrics as run_metrics  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from latex_check import assert_latex_tables_compile  # noqa: E402

from ecc_lib.grammar import DASH
from ecc_lib.report.formatting import format_interval, format_mean_sd, format_number
from ecc_lib.report.latex import latex_table
from ecc_lib.report.reading import flatten, generic_rows, skip_reasons

# ------------------------------------------------------------------------------ formatting


def test_format_interval_percent_and_plain():
    assert format_interval(0.282, [0.251, 0.314], "share") == "28.2% [25.1, 31.4]"
    assert format_interval(28.24, [25.05, 31.36], "pct_nll") == "28.2% [25.1, 31.4]"
    assert format_interval(0.8705, [0.8434, 0.8972]) == "0.871 [0.843, 0.897]"
    # no interval, or a missing bound: the value alone; a missing value: a dash, never NaN
    assert format_interval(0.5, None) == "0.500"
    assert format_interval(0.5, [None, 0.6]) == "0.500"
    assert format_interval(float("nan"), [0.1, 0.2]) == DASH
    assert format_number(None) == DASH
    assert format_number(5989, "count") == "5,989"


def test_format_mean_sd_over_seeds():
    assert format_mean_sd(0.282, 0.013, "share", n=5) == "28.2% \u00b1 1.3 (5 seeds)"
    assert format_mean_sd(0.5, None) == "0.500"


@given(
    st.floats(-1e6, 1e6),
    st.floats(0, 1e3),
    st.sampled_from(["share", "pct_nll", "plain", "signed"]),
)
@settings(max_examples=60, deadline=None)
def test_formatted_numbers_never_say_nan(value, width, unit):
    text = format_interval(value, [value - width, value + width], unit)
    assert "nan" not in text.lower() and text.count("[") == 1


def test_generic_rows_pair_intervals_and_seed_spreads():
    values = flatten(
        {
            "gain": {"ecc": 28.0},
            "gain_ci95": {"ecc": [25.0, 31.0]},
            "flip_rate_mean": 0.3,
            "flip_rate_sd": 0.02,
            "flip_rate_n_seeds": 4,
            "no_interval": 1.0,
            "shown": 0.4,
            "shown_ci95": [0.3, 0.5],
        }
    )
    rows = generic_rows(values, used={"shown"}, dataset="d")
    estimates = {r["measure"]: r["estimate"] for r in rows}
    assert estimates["gain: ECC"] == "28.0% [25.0, 31.0]"
    assert estimates["flip rate (mean over seeds)"] == "30.0% \u00b1 2.0 (4 seeds)"
    assert len(rows) == 2 and all(r["dataset"] == "d" for r in rows)


def test_skip_reasons_found_at_any_depth():
    reasons = skip_reasons({"a": 1, "curves_skipped": "no prices", "b": {"skipped": "why"}})
    assert reasons == {"curves_skipped": "no prices", "b.skipped": "why"}
    assert skip_reasons("one category") == {"": "one category"}


# ------------------------------------------------------------------------------ LaTeX


def test_latex_table_is_booktabs_and_escaped():
    frame = pd.DataFrame(
        {"method": ["ECC_1 & co"], "gain": ["28.2% [25.1, 31.4]"], "sd": ["0.1 \u00b1 0.2"]}
    )
    text = latex_table(frame, caption="Gain (%)", label="tab:x")
    lines = text.splitlines()
    assert r"\toprule" in lines and r"\midrule" in lines and r"\bottomrule" in lines
    assert r"\begin{tabular}{lll}" in lines
    assert r"ECC\_1 \& co & 28.2\% [25.1, 31.4] & 0.1 $\pm$ 0.2 \\" in lines
    assert r"\caption{Gain (\%)}" in lines and r"\label{tab:x}" in lines
    assert_latex_tables_compile([text])


# ------------------------------------------------------------------------------ ARI


@given(st.lists(st.integers(0, 3), min_size=3, max_size=40), st.integers(0, 10_000))
@settings(max_examples=50, deadline=None)
def test_adjusted_rand_index_matches_sklearn(truth, seed):
    truth = np.array(truth)
    labels = np.random.default_rng(seed).integers(0, 4, len(truth))
    assert metrics.adjusted_rand_index(truth, labels)[0] == pytest.approx(
        adjusted_rand_score(truth, labels), abs=1e-12
    )


def test_adjusted_rand_ci_paired_difference():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, 300)
    good = np.where(rng.random(300) < 0.9, truth, rng.integers(0, 3, 300))
    bad = rng.integers(0, 3, 300)
    est, low, high = metrics.adjusted_rand_ci(truth, good, reference=bad, n_boot=200)
    assert low > 0 and low <= est <= high
    alone, _, _ = metrics.adjusted_rand_ci(truth, good, n_boot=10)
    assert alone == pytest.approx(adjusted_rand_score(truth, good))


# ------------------------------------------------------------------------------ the report of a run


@pytest.fixture
def fake_run(tmp_path):
    """A run folder with hand-made metrics (one section skipped, one with a negative result)."""
    run = run_folder.run_context(tmp_path / "run-x")
    run_metrics.record_metrics(
        run,
        "data",
        {
            "datasets": {
                "alpha": {
                    "n_queries": 10,
                    "n_models": 2,
                    "n_categories": 1,
                    "n_variants": 1,
                    "n_decodes": 1,
                }
            }
        },
    )
    run_metrics.record_metrics(
        run,
        "ecc",
        {
            "dataset": "alpha",
            "ranking_quality_gain": {"ecc": 5.0, "emb_only": 9.0, "human": None},
            "ranking_quality_gain_ci95": {"ecc": [1.0, 9.0], "emb_only": [6.0, 12.0]},
            "gain_differences": {"ecc_minus_emb_only": {"estimate": -4.0, "ci95": [-6.0, -2.0]}},
            "nll": {"global": 0.5, "ecc": 0.47, "emb_only": 0.45},
            "new_metric": 0.25,
            "new_metric_ci95": [0.2, 0.3],
            "seed_gain_mean": 4.0,
            "seed_gain_sd": 0.5,
        },
    )
    run_metrics.record_metrics(run, "dars", {"skipped": "alpha has no repeated observations."})
    fig, ax = plt.subplots(layout="constrained")
    ax.plot([0, 1])
    run_artifacts.save_figure(fig, run, "03_line", caption='A line "quoted" & plain')
    plt.close(fig)
    (run.run_dir / "run.json").write_text(json.dumps({"notebooks": ["01_data", "03_clustering"]}))
    return run


def test_report_sections_findings_and_skips(fake_run):
    document = report.build_report(fake_run)
    assert document.title == "ecc_lib report: alpha, run run-x"
    by_number = {s.number: s for s in document.sections}
    # a skipped section says why, in one sentence; a section that did not run says so
    assert by_number["02"].skipped.endswith("alpha has no repeated observations.")
    assert "not run" in by_number["04"].skipped and "not run" in by_number["00"].skipped
    ecc = by_number["03"]
    # the negative result is said plainly
    assert "ECC is worse than embedding-only clusters on all held-out pairs" in ecc.findings
    assert "Embedding-only clusters are better than ECC" in ecc.findings
    assert "ECC minus one global BT = +5.0 pp [+1.0, +9.0]" in ecc.findings
    assert "by -" not in ecc.findings and "beats" not in ecc.findings
    # new keys with intervals or seed spreads appear without code changes (in the appendix)
    more = [
        s for s in document.sections if s.appendix and s.title.startswith("More on: Capability")
    ]
    assert len(ecc.tables) == 1 and len(ecc.figures) <= 1 and len(more) == 1
    text = "\n".join(t.frame.to_string() for t in ecc.tables + more[0].tables)
    assert "new metric" in text and "0.250 [0.200, 0.300]" in text
    assert "seed gain (mean over seeds)" in text and "\u00b1" in text
    assert not any(t.frame.isna().any().any() for t in ecc.tables + more[0].tables)
    html = "\n".join(document.section_html())
    # the summary's table first (issue 35), then in each section its findings before its tables
    body = html[html.index("</section>") :]
    assert body.index('class="findings"') < body.index("<table")
    assert 'alt="A line &quot;quoted&quot; &amp; plain"' in html


def test_headline_tables_are_written_as_latex(fake_run):
    document = report.build_report(fake_run)
    written = report.save_headline_tables(document, fake_run)
    names = {p.stem for p in written}
    assert {"05_data_headline", "05_ecc_headline"} <= names
    for path in written:
        assert path.suffix == ".tex" and r"\toprule" in path.read_text()
        assert path.with_suffix(".csv").exists()
    assert_latex_tables_compile(written)


def test_export_sets_title_and_alt_text(tmp_path, fake_run):
    document = report.build_report(fake_run)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data", data={"text/html": document.header_html(), "text/plain": ""}
        ),
        nbformat.v4.new_output(
            "display_data", data={"text/html": "\n".join(document.section_html())}
        ),
        nbformat.v4.new_output("stream", name="stdout", text="cost $5 vs $10 <b>\n"),
        nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="}),
    ]
    nb.cells = [cell]
    path = tmp_path / "05_report.ipynb"
    nbformat.write(nb, path)
    html = notebook_execution.export_report(path, tmp_path / "report.html").read_text()
    assert "<title>ecc_lib report: alpha, run run-x</title>" in html
    assert "No description has been provided" not in html
    assert "report-table" in html and "NaN" not in html
    # self-contained: no script (nbconvert's page loaded require.js, MathJax and mermaid from a
    # CDN), no URL of another host, and user text such as "$x$" is never typeset
    assert "<script" not in html and "://" not in html.replace("http-equiv", "")
    assert "Content-Security-Policy" in html and 'id="summary"' in html
    assert "cost $5 vs $10 &lt;b&gt;" in html


def test_generic_rows_read_nested_seed_summaries_and_estimates():
    values = flatten(
        {
            "gain_seeds": {"ecc": {"mean": 28.0, "sd": 1.5, "n": 5}},
            "leak_free": {"estimate": 0.1, "ci95": [0.05, 0.15]},
        }
    )
    rows = {r["measure"]: r["estimate"] for r in generic_rows(values, used=set(), dataset="d")}
    assert rows["gain seeds: ECC (mean over seeds)"] == "28.0% \u00b1 1.5 (5 seeds)"
    assert rows["leak free"] == "0.100 [0.050, 0.150]"
    assert len(rows) == 2


def test_unknown_sections_and_data_notes_are_reported(fake_run):
    run_metrics.record_metrics(
        fake_run, "active_probes", {"dataset": "alpha", "gain": 3.0, "gain_ci95": [1.0, 5.0]}
    )
    run_metrics.record_metrics(fake_run, "data_policy", {"alpha": {"notes": ["no cost column"]}})
    document = report.build_report(fake_run)
    other = document.sections[-1]
    assert other.title == "Active probes" and other.findings.startswith("This run recorded 1 ")
    assert other.tables[0].frame["estimate"].tolist() == ["3.0% [1.0, 5.0]"]
    data = next(s for s in document.sections if s.number == "01")
    assert "alpha: No cost column." in data.notes


def test_wide_latex_tables_span_the_page():
    wide = latex_table(pd.DataFrame({c: ["1"] for c in "abcde"}))
    narrow = latex_table(pd.DataFrame({c: ["1"] for c in "ab"}))
    assert wide.startswith(r"\begin{table*}") and wide.rstrip().endswith(r"\end{table*}")
    assert narrow.startswith(r"\begin{table}") and narrow.rstrip().endswith(r"\end{table}")


def test_no_negative_zero():
    assert format_interval(-1e-6, [-2e-6, 0.0], "share") == "0.0% [0.0, 0.0]"
    assert format_number(-0.05) == "-0.050"


def test_the_report_package_lists_the_names_users_import_from_it():
    """ecc_lib.report lists what notebook 05 and the guide import from it (docs/CONTRIBUTING.md),
    each the object its module lists."""
    import importlib

    homes = {
        "build_report": "build",
        "record_summary": "build",
        "build_summary": "registry",
        "save_headline_tables": "latex",
    }
    assert sorted(report.__all__) == sorted(homes)
    for name, home in homes.items():
        module = importlib.import_module(f"ecc_lib.report.{home}")
        assert name in module.__all__ and getattr(report, name) is getattr(module, name)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(st.none(), st.just(float("nan")), st.floats(-1e6, 1e6)),
    st.floats(-1e6, 1e6),
    st.floats(-1e6, 1e6),
    st.sampled_from(["plain", "share", "pct_nll", "pp", "pp_share", "signed", "count"]),
)
def test_an_interval_shows_its_bounds_in_the_units_of_its_value(value, low, high, unit):
    import re

    text = format_interval(value, [low, high], unit)
    number = format_number(value, unit)
    assert text.startswith(number)
    if number == DASH:
        assert text == DASH
        return
    inner = text[len(number) :]
    assert inner.startswith(" [") and inner.endswith("]")
    bounds = [float(b.replace(",", "")) for b in inner[2:-1].split(", ")]
    scale = 100 if unit in ("share", "pp_share") else 1
    step = {"count": 1.0, "share": 0.1, "pct_nll": 0.1, "pp": 0.1, "pp_share": 0.1}.get(unit, 0.001)
    assert bounds == pytest.approx([scale * low, scale * high], abs=step / 2 + 1e-9, rel=1e-12)
    # a bound that rounds to zero reads as 0, never as a negative zero
    assert not re.search(r"(?<![\d.])-0(?:\.0+)?(?![\d.])", text)


def test_observations_per_pair_show_their_range_when_pairs_differ():
    """An incomplete collection (some pairs with fewer rewrites) is not reported as complete."""
    import pandas as pd

    from ecc_lib.data.schema import summarise
    from ecc_lib.report.sections.data import _observations_text

    outcomes = pd.DataFrame(
        {
            "query_id": ["a"] * 12 + ["b"] * 3,
            "model": ["m"] * 15,
            "score": [1.0] * 15,
            "variant_id": [v for v in range(4) for _ in range(3)] + [0, 0, 0],
            "decode_id": [d for _ in range(4) for d in range(3)] + [0, 1, 2],
        }
    )
    queries = pd.DataFrame({"query_id": ["a", "b"], "text": ["x", "y"]})
    summary = summarise(queries, outcomes)
    assert (summary["min_observations_per_pair"], summary["max_observations_per_pair"]) == (3, 12)
    assert _observations_text(summary) == "3 to 12 (4 rewrites x 3 decodes at most)"
    assert _observations_text({**summary, "min_observations_per_pair": 12}) == (
        "12 (4 rewrites x 3 decodes)"
    )
    assert _observations_text({"n_variants": 1, "n_decodes": 1}) == "1 (no repeats)"


def test_the_no_repeats_sentence_names_only_datasets_without_repeats(tmp_path):
    """The data findings say "one observation per pair ... not the label-instability
    measurements" of the datasets that have one, never of a dataset with repeats."""
    from ecc_lib.report.sections.data import data_section

    run = run_folder.run_context(tmp_path / "run")
    repeated = {"n_queries": 20, "n_models": 2, "n_variants": 4, "n_decodes": 3}
    single = {"n_queries": 50, "n_models": 9, "n_variants": 1, "n_decodes": 1}
    section = data_section(run, {"data": {"datasets": {"export": repeated}}})
    assert "one observation per pair" not in section.findings
    section = data_section(run, {"data": {"datasets": {"export": repeated, "dcrouter": single}}})
    assert "With one observation per pair, dcrouter supports clustering and routing" in (
        section.findings
    )
    assert "export support" not in section.findings


def test_degenerate_figures_are_left_out_with_a_sentence(fake_run):
    """One observation per pair everywhere: the observations-per-pair figure is one bar."""
    run_metrics.record_metrics(
        fake_run,
        "data",
        {"datasets": {"alpha": {"n_queries": 10, "max_observations_per_pair": 1}}},
    )
    fig, ax = plt.subplots(layout="constrained")
    ax.bar([1], [10])
    run_artifacts.save_figure(fig, fake_run, "01_observations_per_pair", caption="one bar")
    plt.close(fig)
    document = report.build_report(fake_run)
    data = next(s for s in document.sections if s.number == "01")
    assert not any(
        f.name == "01_observations_per_pair" for s in document.sections for f in s.figures
    )
    assert any("one observation" in n and "left out" in n for n in data.notes)
