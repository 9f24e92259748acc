"""The report's summary: quotable lines whose words agree with their numbers, on the bundled
shape of metrics and on a foreign run where every clustering loses to one global BT."""

from __future__ import annotations

import json
import re

import pytest

from ecc_lib import report
from ecc_lib.runs import folder as run_folder
from ecc_lib.runs import metrics as run_metrics

WORDS = {
    "better than": 1,
    "higher than": 1,
    "worse than": -1,
    "lower than": -1,
    "not distinguishable from": 0,
}
_NUMBER = r"([+-]?\d[\d,]*(?:\.\d+)?)"


def parse_sentence(text: str) -> tuple[int, float, tuple[float, float] | None]:
    """Direction word, estimate and interval of a summary sentence, read from its words only."""
    word = re.search(
        r"\b(better than|worse than|higher than|lower than|not distinguishable from)\b", text
    )
    assert word, text
    found = re.search(
        r"minus [^=]+= " + _NUMBER + r"(?:%| pp)?(?: \[" + _NUMBER + ", " + _NUMBER + r"\])?", text
    )
    assert found, text
    ci = (float(found.group(2)), float(found.group(3))) if found.group(2) else None
    return WORDS[word.group(1)], float(found.group(1)), ci


def assert_words_agree(lines) -> int:
    """Every comparison line's direction word agrees with its printed number and interval."""
    checked = 0
    for line in lines:
        text = (
            line if isinstance(line, str) else line["text"] if isinstance(line, dict) else line.text
        )
        assert "by -" not in text and "beats" not in text and "NaN" not in text, text
        if " minus " not in text:
            continue
        sign, estimate, ci = parse_sentence(text)
        if ci is None or ci[0] <= 0 <= ci[1]:
            assert sign == 0, text
        else:
            assert sign == (1 if estimate > 0 else -1), text
            assert (ci[0] > 0) == (estimate > 0), text
        checked += 1
    return checked


def _foreign_metrics(run) -> None:
    """What notebooks 03 and 02 record on a foreign leaderboard where every clustering is worse
    than one global BT (K = 30 on 644 training queries, three seeds)."""
    run_metrics.record_metrics(
        run,
        "data",
        {"datasets": {"outside": {"n_queries": 805, "n_models": 40, "n_categories": 6}}},
    )
    run_metrics.record_metrics(
        run,
        "ecc",
        {
            "dataset": "outside",
            "seeds": [42, 43, 44],
            "n_train": 644,
            "n_test": 161,
            "n_scored_pairs": 966,
            "ranking_quality_gain": {
                "ecc": -18.8,
                "emb_only": -21.1,
                "comp_only": -25.0,
                "human": -9.0,
            },
            "ranking_quality_gain_ci95": {
                "ecc": [-24.0, -13.5],
                "emb_only": [-26.0, -16.0],
                "comp_only": [-31.0, -19.0],
                "human": [-14.0, -4.0],
            },
            "gain_differences": {
                "ecc_minus_emb_only": {"estimate": 2.3, "ci95": [0.0001, 4.5]},
                "ecc_minus_human": {"estimate": -9.8, "ci95": [-14.0, -5.5]},
            },
            "gain_disjoint_mean": {
                "ecc": -20.5,
                "emb_only": -22.0,
                "comp_only": -30.1,
                "human": -3.0,
            },
            "gain_disjoint_sd": {"ecc": 2.0, "emb_only": 1.0, "comp_only": 3.0, "human": 2.5},
            "difference_disjoint_mean_sd": {
                "ecc - emb_only": [1.5, 2.5],
                "ecc - human": [-17.5, 1.2],
                "ecc - comp_only": [9.6, 1.0],
            },
            "gain_vs_k": {"ecc@5": -6.0, "ecc@10": -10.0, "ecc@30": -18.8},
        },
        parameters={"n_clusters": 30, "n_seeds": 3},
    )
    run_metrics.record_metrics(
        run,
        "dars",
        {
            "dataset": "outside",
            "winner_flip_rate": 0.30,
            "winner_flip_rate_ci95": [0.27, 0.33],
            "winner_flip_rate_strict": 0.12,
            "winner_flip_rate_strict_ci95": [0.10, 0.14],
            "winner_change_rate": 0.55,
            "winner_change_rate_ci95": [0.51, 0.59],
            "winner_change_rate_r": 4,
            "flip_rate_chance": {"pairwise": 0.975, "strict": 0.0, "change": 0.99},
            "by_side": {"both": {"n_models": 40, "tied_top_share": 0.004}},
        },
    )
    (run.run_dir / "run.json").write_text(
        json.dumps({"notebooks": ["01_data", "02_label_instability", "03_clustering"]})
    )


@pytest.fixture
def foreign_run(tmp_path):
    run = run_folder.run_context(tmp_path / "outside-run")
    _foreign_metrics(run)
    return run


def test_foreign_summary_says_no_clustering_beats_the_global_model(foreign_run):
    summary = report.build_summary(run_metrics.collect_metrics(foreign_run))
    lines = summary["outside"]
    assert len(lines) <= report.MAX_LINES
    texts = [line.text for line in lines]
    assert assert_words_agree(lines) >= 4
    # leak-aware first: ECC against the global model on disjoint pairs, worse
    assert texts[0].startswith("ECC is worse than one global BT on held-out pairs disjoint")
    assert "-20.5 pp" in texts[0] and "\u00b1 2.0 (mean \u00b1 sd over 3 seeds)" in texts[0]
    # the all-pairs difference that once read "beats comparison-only by +2.3 [+0.0, +4.5]" is not
    # quoted; on disjoint pairs ECC and embedding-only are not distinguishable
    assert any(
        t.startswith("ECC is not distinguishable from embedding-only clusters") for t in texts
    )
    no_clustering = [line for line in lines if line.topic == "no_clustering"]
    assert (
        len(no_clustering) == 1
        and "No clustering is better than one global BT" in no_clustering[0].text
    )
    warning = [line for line in lines if line.topic == "k_warning"]
    assert len(warning) == 1 and "K = 30 clusters for 644 training queries" in warning[0].text
    assert "K = 5" in warning[0].text
    # the tie caveat's number is the data's (0.4% of draws tie), the pairwise reading's word too
    pairwise = next(t for t in texts if t.startswith("The pairwise reading"))
    assert "lower than its chance level 97.5%" in pairwise and "0.4% of draws" in pairwise


def test_foreign_report_words_agree_everywhere(foreign_run):
    document = report.build_report(foreign_run)
    page = "\n".join(document.section_html()) + document.appendix_html
    assert (
        page.index('id="summary"') < page.index('id="section-01"') < page.index('id="section-03"')
    )
    assert "by -" not in page and "beats" not in page and "NaN" not in page
    ecc = next(s for s in document.sections if s.number == "03")
    sentences = re.split(r"(?<=\.)\s+(?=[A-Z])", ecc.findings)
    assert_words_agree([s for s in sentences if " is " in s or " are " in s])
    # the summary is recorded in metrics.json
    recorded = report.record_summary(foreign_run)
    stored = run_metrics.collect_metrics(foreign_run)["summary"]  # numbers rounded on writing
    assert [x["text"] for x in stored["outside"]] == [x["text"] for x in recorded["outside"]]
    assert {x["comparison"]["verdict"] for x in stored["outside"] if x["comparison"]} >= {
        "worse than",
        "not distinguishable from",
    }
    assert_words_agree(recorded["outside"])
    assert all(k not in page for k in ("emb_only", "comp_only", "gain_disjoint", "ecc_minus"))


def test_bundled_shape_summary_quotes_leak_aware_readings(tmp_path):
    """The bundled run's numbers (dcrouter seed 42-44, re2): ECC worse than embedding-only and
    human labels on disjoint pairs, the probe's winner above every cluster router."""
    run = run_folder.run_context(tmp_path / "bundled")
    run_metrics.record_metrics(
        run,
        "ecc",
        {
            "dataset": "dcrouter",
            "seeds": [42, 43, 44],
            "n_train": 3736,
            "gain_disjoint_mean": {
                "comp_only": -7.42,
                "ecc": 10.72,
                "emb_only": 14.58,
                "human": 25.49,
            },
            "gain_disjoint_sd": {"comp_only": 1.82, "ecc": 1.51, "emb_only": 0.49, "human": 1.06},
            "difference_disjoint_mean_sd": {
                "ecc - comp_only": [18.14, 3.09],
                "ecc - emb_only": [-3.85, 1.31],
                "ecc - human": [-14.77, 1.78],
            },
            "routing": {
                "probe": {
                    "global": {"score_mean": 0.758, "score_sd": 0.016},
                    "ecc": {"score_mean": 0.842, "score_sd": 0.013},
                    "comp_only": {"score_mean": 0.919, "score_sd": 0.007},
                    "probe_winner": {"score_mean": 0.985, "score_sd": 0.001},
                    "oracle": {"score_mean": 0.992, "score_sd": 0.002},
                }
            },
        },
        parameters={"n_clusters": 30},
    )
    lines = report.build_summary(run_metrics.collect_metrics(run))["dcrouter"]
    texts = [line.text for line in lines]
    assert assert_words_agree(lines) == len([t for t in texts if " minus " in t])
    assert "ECC minus embedding-only clusters = -3.9 pp [-7.1, -0.6]" in " ".join(texts)
    assert any(t.startswith("ECC is worse than human labels") for t in texts)
    assert any(t.startswith("Human labels are better than ECC") for t in texts)
    assert any(
        line.topic == "probe_winner" and "is better than the best cluster router" in line.text
        for line in lines
    )
    assert not any(line.topic in ("k_warning", "no_clustering") for line in lines)


def test_a_new_method_appears_without_code_changes(tmp_path):
    # (not ecc_cv: issue 34 reads ECC-CV against the tuned baselines only, in ecc_cv_line)
    run = run_folder.run_context(tmp_path / "cv")
    run_metrics.record_metrics(
        run,
        "ecc",
        {
            "dataset": "d",
            "seeds": [1, 2],
            "n_train": 5000,
            "gain_disjoint_mean": {"ecc": 5.0, "ecc_plus": 9.0},
            "gain_disjoint_sd": {"ecc": 0.5, "ecc_plus": 0.4},
            "difference_disjoint_mean_sd": {"ecc - ecc_plus": [-4.0, 0.1]},
        },
    )
    texts = [line.text for line in report.build_summary(run_metrics.collect_metrics(run))["d"]]
    assert texts[0].startswith("ECC is better than one global BT")
    (best,) = [t for t in texts if t.lower().startswith("ecc plus")]
    assert best.lower().startswith("ecc plus is better than ecc") and "+4.0 pp" in best
    assert "largest gain of the 2 methods, held-out NLL 9.0% \u00b1 0.4" in best


FOREIGN_CONFIG = """\
seed: 1
n_boot: 50
03: {n_clusters: 20, n_seeds: 2, k_sweep: [2, 20], probe_sweep: [0, 1], max_iter: 30}
05: {title: outside run}
"""


@pytest.mark.slow
def test_a_foreign_folder_without_cluster_structure_reads_as_negative(tmp_path):
    """End to end (notebooks 03 and 05): a leaderboard whose models have one skill each, the same
    on every query, so no clustering can beat one global BT; K = 20 on about 240 training queries.
    The summary's words must agree with its numbers, and say so plainly."""
    import numpy as np
    import pandas as pd

    from ecc_lib.cli import main
    from ecc_lib.embed.cache import EmbeddingCache, text_digests
    from ecc_lib.embed.views import text_views
    from ecc_lib.synthetic.messy import write_foreign_dataset

    folder = tmp_path / "data" / "outside"
    planted = write_foreign_dataset(folder, n_queries=300, n_models=6, random_state=3)
    outcomes = pd.read_json(folder / "outcomes.jsonl", lines=True, dtype={"query_id": str})
    skill = dict(zip(sorted(outcomes["model"].unique()), np.linspace(0.3, 0.7, 6), strict=True))
    rng = np.random.default_rng(0)
    outcomes["score"] = (rng.random(len(outcomes)) < outcomes["model"].map(skill)).astype(float)
    outcomes.to_json(folder / "outcomes.jsonl", orient="records", lines=True)
    views, _, _ = text_views(planted.queries["text"].tolist())
    EmbeddingCache(None, write_dir=tmp_path / "cache", read_dirs=[]).add(
        text_digests(views), planted.embeddings
    )
    (tmp_path / "params.yaml").write_text(FOREIGN_CONFIG)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ECC_LIB_CACHE_DIR", str(tmp_path / "cache"))
        status = main(
            [
                "run",
                "--dataset",
                str(folder),
                "--config",
                str(tmp_path / "params.yaml"),
                "--out",
                str(tmp_path / "run"),
                "--only",
                "03,05",
                "--no-progress",
            ]
        )
    assert status == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    ecc = metrics["ecc"]
    assert max(ecc["gain_disjoint_mean"].values()) < 0  # the data is what the test says it is
    lines = metrics["summary"]["outside"]
    assert assert_words_agree(lines) >= 2
    topics = [line["topic"] for line in lines]
    assert "no_clustering" in topics and "k_warning" in topics
    assert lines[0]["text"].startswith("ECC is worse than one global BT") or lines[0][
        "text"
    ].startswith("ECC is not distinguishable from one global BT")
    page = (tmp_path / "run" / "report.html").read_text()
    assert 'id="summary"' in page and "by -" not in page and "<script" not in page


def test_the_leak_free_share_with_a_probe_is_quoted_when_recorded(tmp_path):
    run = run_folder.run_context(tmp_path / "lf")
    values = {
        "dataset": "d",
        "seeds": [1, 2],
        "gain_disjoint_mean": {"ecc": 5.0},
        "gain_disjoint_sd": {"ecc": 0.5},
    }
    run_metrics.record_metrics(run, "ecc", values)
    (line,) = report.build_summary(run_metrics.collect_metrics(run))["d"]
    assert "leak-free" not in line.text
    run_metrics.record_metrics(run, "ecc", {**values, "leak_free": {"share_with_probe": 0.139}})
    (line,) = report.build_summary(run_metrics.collect_metrics(run))["d"]
    assert "13.9% of test queries have a probe" in line.text


def test_paired_differences_over_several_seeds_are_the_means_over_seeds(tmp_path):
    """With 3 seeds the summary quotes the mean of the per-seed paired differences with its
    t-interval over seeds, not the first seed's bootstrap beside means over seeds."""
    run = run_folder.run_context(tmp_path)
    run_metrics.record_metrics(
        run,
        "ecc",
        {
            "dataset": "d",
            "seeds": [0, 1, 2],
            "ranking_quality_gain": {"ecc": 20.0, "emb_only": 18.0, "human": 25.0},
            "gain_disjoint_mean": {"ecc": 13.0, "emb_only": 16.9, "human": 27.8},
            "gain_disjoint_sd": {"ecc": 1.0, "emb_only": 0.5, "human": 1.0},
            # first seed's paired bootstrap: -2.3 [-5.7, +0.7] would read "not distinguishable"
            "gain_differences_disjoint": {
                "ecc_minus_emb_only": {"estimate": -2.3, "ci95": [-5.7, 0.7]},
                "ecc_minus_human": {"estimate": -12.8, "ci95": [-16.6, -9.2]},
            },
            "difference_disjoint_mean_sd": {
                "ecc - emb_only": [-3.9, 0.5],
                "ecc - human": [-14.8, 1.0],
            },
        },
        parameters={"n_clusters": 30, "n_seeds": 3},
    )
    metrics = run_metrics.collect_metrics(run)
    lines = [line.text for line in report.summary.ecc_lines(metrics)]
    versus = next(t for t in lines if "minus embedding-only" in t)
    assert "-3.9 pp" in versus and "over 3 seeds" in versus and "worse than" in versus
    assert "-2.3" not in versus
    assert_words_agree(lines)
