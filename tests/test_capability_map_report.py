"""The report's section "Which model for which queries" (issue 37): right after the summary, the
group table (CSV and LaTeX), the figure unless no group needs another model, the held-out sentence."""

from __future__ import annotations

import numpy as np
import pytest

from ecc_lib import report
from ecc_lib.protocol.capability_map import capability_map
from ecc_lib.protocol.data import prepare_protocol
from ecc_lib.runs import artifacts as run_artifacts
from ecc_lib.runs import folder as run_folder
from ecc_lib.runs import metrics as run_metrics
from ecc_lib.synthetic.capability import assemble_capability_data

plt = pytest.importorskip("matplotlib.pyplot")


def _map(theta, seed=0):
    rng = np.random.default_rng(seed)
    k, m = theta.shape
    n = 600
    capability = rng.integers(0, k, n)
    emb = rng.standard_normal((n, 16)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    planted = assemble_capability_data(
        embeddings=emb,
        theta=theta,
        capability=capability,
        topic=capability,
        models=tuple(f"model_{j}" for j in range(m)),
        texts=[f"query {i} on subject{c} words" for i, c in enumerate(capability)],
        categories=[f"bench_{c}" for c in capability],
        n_pairs=7,
        rng=rng,
    )
    data = prepare_protocol(planted.queries, planted.outcomes, planted.embeddings)
    return capability_map(data, method="categories", n_boot=100, random_state=seed)


def _run_with(tmp_path, cmap):
    run = run_folder.run_context(tmp_path / "run")
    run_metrics.record_metrics(run, "capability_map", cmap.to_metrics(dataset="planted"))
    fig, ax = plt.subplots()
    ax.set_title("map")
    run_artifacts.save_figure(fig, run, "03_capability_map", caption="the map")
    plt.close(fig)
    return run


def test_the_section_follows_the_summary_with_its_table_figure_and_held_out_value(tmp_path):
    theta = np.stack([np.roll(np.linspace(-3, 3, 5), c) for c in range(3)])
    cmap = _map(theta)
    run = _run_with(tmp_path, cmap)
    run_metrics.record_metrics(run, "ecc", {"dataset": "planted", "skipped": "not measured"})
    document = report.build_report(run)
    ecc = next(s for s in document.sections if s.number == "03")
    assert "03_capability_map" not in [f.name for f in ecc.figures]  # shown once, in its section
    main = [s for s in document.sections if not s.appendix]
    section = main[0]
    assert section.title == "Which model for which queries" and section.number == ""
    low, high = cmap.held_out["ci95"]
    assert f"{cmap.held_out['estimate']:+.3f} [{low:+.3f}, {high:+.3f}]" in section.findings
    assert "95% paired bootstrap CI" in section.findings
    assert [f.name for f in section.figures] == ["03_capability_map"]
    table = section.tables[0]
    assert table.name == "capability_map"
    assert list(table.frame["best model"]) == list(cmap.groups["best_model"])
    assert len(table.frame.columns) == 6
    html = "\n".join(document.section_html())
    assert html.index('id="summary"') < html.index("Which model for which queries")
    report.save_headline_tables(document, run)
    assert (run.tables_dir / "capability_map.csv").exists()
    assert "\\begin{table" in (run.tables_dir / "capability_map.tex").read_text()


def test_no_group_needing_another_model_is_one_sentence_without_the_figure(tmp_path):
    rng = np.random.default_rng(1)
    theta = rng.normal(scale=0.2, size=(3, 4))
    theta[:, 1] = 4.0
    cmap = _map(theta, seed=1)
    assert cmap.share_groups_other_best == 0.0
    run = _run_with(tmp_path, cmap)
    document = report.build_report(run)
    section = next(s for s in document.sections if s.title == "Which model for which queries")
    assert section.figures == [] and section.notes == []
    assert "no group needs another model" in section.findings
    assert ". " not in section.findings.rstrip(".")  # one sentence
