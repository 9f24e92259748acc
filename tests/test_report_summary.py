"""The report's summary: quotable lines whose words agree with their numbers, on the bundled
shape of metrics and on a foreign run where every clustering loses to one global BT."""

from __future__ import annotations

import json
import re

import pytest

from ecc_lib import report
from ecc_lib.report.registry import build_summary
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


def synthetic_frames(
    gains: dict, *, n_seeds: int = 3, n_test: int = 160, spread: float = 0.02, random_state: int = 0
) -> list:
    """Per-seed per-query NLL tables (``ECCEvaluation.per_query``'s columns) whose gain over the
    global model on every pair is about ``gains[method]`` percent."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(random_state)
    frames = []
    for _ in range(n_seeds):
        n_scored = rng.integers(3, 7, n_test)
        glob = n_scored * rng.uniform(0.5, 0.8, n_test)
        frame = {"n_scored": n_scored, "nll_global": glob, "nll_global_touching": 0.3 * glob}
        for m, g in gains.items():
            loss = glob * (1 - g / 100) * rng.normal(1, spread, n_test)
            frame[f"nll_{m}"], frame[f"nll_{m}_touching"] = loss, 0.3 * loss
        frames.append(pd.DataFrame(frame))
    return frames


def synthetic_records(gains: dict, **kwargs) -> list:
    """The comparison records notebook 03 would store for ``gains``."""
    from ecc_lib.protocol.comparisons import clustering_records, records_to_metrics

    return records_to_metrics(clustering_records(synthetic_frames(gains, **kwargs), n_boot=300))


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
            "comparisons": synthetic_records(
                {"ecc": -20.5, "emb_only": -20.0, "comp_only": -30.1, "human": -3.0}
            ),
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
    summary = build_summary(run_metrics.collect_metrics(foreign_run))
    lines = summary["outside"]
    sentences = [line for line in lines if line.topic != "table"]
    assert lines[0].topic == "table" and len(sentences) <= report.summary.MAX_SENTENCES
    texts = [line.text for line in sentences]
    assert assert_words_agree(sentences) >= 3
    # leak-aware first: ECC against the global model on disjoint pairs, worse, NLL higher
    assert texts[0].startswith("ECC is worse than one global BT on pairs disjoint")
    assert "-20." in texts[0] and "% higher" in texts[0] and "lower" not in texts[0]
    rows = {row["method"]: row for row in lines[0].rows}
    assert rows["ecc"]["verdict_reference"] == "worse than"
    assert rows["ecc"]["best_baseline"] == "human"
    assert rows["ecc"]["verdict_best_baseline"] == "worse than"
    no_clustering = [line for line in lines if line.topic == "no_clustering"]
    assert (
        len(no_clustering) == 1
        and "No clustering is better than one global BT" in no_clustering[0].text
    )
    warning = [line for line in lines if line.topic == "k_warning"]
    assert len(warning) == 1 and "K = 30 clusters for 644 training queries" in warning[0].text
    # the flip readings beside chance, in the words of the data
    flips = [t for t in texts if t.startswith("The strict flip rate")]
    assert flips and "higher than chance" in flips[0]


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
    }
    assert_words_agree(recorded["outside"])
    assert all(k not in page for k in ("emb_only", "comp_only", "gain_disjoint", "ecc_minus"))


def _routing_record(a, b, setting, estimate, ci, level_a, level_b):
    from ecc_lib.protocol.comparisons import ComparisonRecord

    return ComparisonRecord(
        "routing_pays", a, b, estimate, ci, "score_diff", setting, 3,
        levels={"a": [level_a, level_a - 0.01, level_a + 0.01], "b": [level_b] * 3},
    ).to_dict()  # fmt: skip


def test_bundled_shape_summary_quotes_leak_aware_readings(tmp_path):
    """The bundled run's shape (dcrouter seeds 42-44): embedding-only and human labels above
    ECC on disjoint pairs; routing read without the probe first, the probe's winner beside."""
    run = run_folder.run_context(tmp_path / "bundled")
    records = synthetic_records(
        {"comp_only": -7.42, "ecc": 10.72, "emb_only": 14.58, "human": 25.49}
    )
    records += [
        _routing_record("ecc", "global", "no_probe", 0.0, [-0.021, 0.020], 0.708, 0.708),
        _routing_record("probe_winner", "comp_only", "probe", 0.066, [0.05, 0.08], 0.985, 0.919),
    ]
    run_metrics.record_metrics(
        run,
        "ecc",
        {"dataset": "dcrouter", "seeds": [42, 43, 44], "n_train": 3736, "comparisons": records},
        parameters={"n_clusters": 30},
    )
    lines = build_summary(run_metrics.collect_metrics(run))["dcrouter"]
    sentences = [line for line in lines if line.topic != "table"]
    texts = [line.text for line in sentences]
    assert assert_words_agree(sentences) == len([t for t in texts if " minus " in t])
    assert texts[0].startswith("ECC is better than one global BT")
    assert any(t.startswith("Human labels are better than ECC") for t in texts)
    assert "the largest gain of the 4 methods at the default prior" in " ".join(texts)
    assert len(lines[0].rows) == 4
    routing = next(line for line in sentences if line.topic == "routing")
    assert routing.text.startswith("Without the probe, routing by ECC is not distinguishable")
    assert "with the probe" not in routing.text.lower()
    winner = next(line for line in sentences if line.topic == "probe_winner")
    assert "better than the best cluster router (comparison-only clusters)" in winner.text
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
            "comparisons": synthetic_records({"ecc": 5.0, "ecc_plus": 9.0}, n_seeds=2),
        },
    )
    lines = build_summary(run_metrics.collect_metrics(run))["d"]
    texts = [line.text for line in lines if line.topic != "table"]
    assert texts[0].startswith("ECC is better than one global BT")
    (best,) = [t for t in texts if t.lower().startswith("ecc plus")]
    assert "better than ECC" in best and "+4." in best
    assert "the largest gain of the 2 methods at the default prior" in best
    assert [row["method"] for row in lines[0].rows] == ["ecc", "ecc_plus"]


def test_the_leak_free_coverage_is_not_appended_to_a_standard_protocol_number(tmp_path):
    """Item 6: "13.9% of test queries have a probe" (leak-free protocol) was appended to ECC's
    gain under the standard protocol."""
    run = run_folder.run_context(tmp_path / "lf")
    values = {
        "dataset": "d",
        "seeds": [1, 2],
        "comparisons": synthetic_records({"ecc": 5.0}, n_seeds=2),
        "leak_free": {"share_with_probe": 0.139},
    }
    run_metrics.record_metrics(run, "ecc", values)
    lines = build_summary(run_metrics.collect_metrics(run))["d"]
    assert not any("13.9%" in line.text or "leak-free" in line.text for line in lines)


def test_metrics_of_several_seeds_without_records_get_no_verdict(tmp_path):
    """Older metrics hold means over seeds and first-seed bootstraps, never one interval for
    both: the summary quotes the means without a verdict word rather than mix the two."""
    run = run_folder.run_context(tmp_path)
    run_metrics.record_metrics(
        run,
        "ecc",
        {
            "dataset": "d",
            "seeds": [0, 1, 2],
            "gain_disjoint_mean": {"ecc": 13.0, "emb_only": 16.9, "human": 27.8},
            "gain_disjoint_sd": {"ecc": 1.0, "emb_only": 0.5, "human": 1.0},
            "gain_differences_disjoint": {
                "ecc_minus_emb_only": {"estimate": -2.3, "ci95": [-5.7, 0.7]},
            },
            "difference_disjoint_mean_sd": {"ecc - emb_only": [-3.9, 0.5]},
        },
        parameters={"n_clusters": 30, "n_seeds": 3},
    )
    lines = report.summary.ecc_lines(run_metrics.collect_metrics(run))
    text = " ".join(line.text for line in lines)
    assert "-2.3" not in text and "better than" not in text and "worse than" not in text
    assert "not distinguishable" not in text
    assert any(line.topic == "no_interval" for line in lines)
    assert {row["verdict_reference"] for row in lines[0].rows} == {"no interval"}


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
    assert lines[0]["topic"] == "table"
    assert lines[1]["text"].startswith("ECC is worse than one global BT") or lines[1][
        "text"
    ].startswith("ECC is not distinguishable from one global BT")
    page = (tmp_path / "run" / "report.html").read_text()
    assert 'id="summary"' in page and "by -" not in page and "<script" not in page
