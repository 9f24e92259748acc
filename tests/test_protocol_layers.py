"""Issue 22, the protocol's layout: no circle between its files, and the experiments run_ecc adds
read every setting of the Protocol and of the estimator prototype."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from ecc_lib.ecc.estimator import ECC
from ecc_lib.protocol.data import prepare_protocol
from ecc_lib.protocol.experiments.probe_strategies import probe_strategy_comparison
from ecc_lib.protocol.methods import fit_methods, methods_from_prototype
from ecc_lib.protocol.results import run_ecc
from ecc_lib.protocol.routing import held_out_means, routed_scores
from ecc_lib.protocol.settings import Protocol
from ecc_lib.routing_evaluation.held_out import evaluate_choices
from ecc_lib.synthetic.capability import make_capability_data
from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

PROTOCOL_DIR = Path(__file__).parents[1] / "ecc_lib" / "protocol"


def _protocol_imports(path: Path) -> set[str]:
    """Modules of ecc_lib.protocol a file imports anywhere (``if TYPE_CHECKING:`` and function
    bodies included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n for n in names if n.startswith("ecc_lib.protocol.")}
    return found


def test_no_import_circle_between_the_protocol_files_counting_type_checking_imports():
    modules = {
        "ecc_lib.protocol." + ".".join(p.relative_to(PROTOCOL_DIR).with_suffix("").parts): p
        for p in PROTOCOL_DIR.rglob("*.py")
        if p.name != "__init__.py"
    }
    graph = {
        name: {m for m in _protocol_imports(path) if m in modules and m != name}
        for name, path in modules.items()
    }
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for other in sorted(graph[name]):
            if state.get(other) == 1:
                cycle = trail[trail.index(other) :] if other in trail else trail
                raise AssertionError(f"import circle: {' -> '.join([*cycle, other])}")
            if other not in state:
                visit(other, [*trail, other])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    # ProtocolData is defined below every module that uses it
    assert not _protocol_imports(modules["ecc_lib.protocol.data"])
    assert "ecc_lib.protocol.data" in graph["ecc_lib.protocol.probes"]
    assert "ecc_lib.protocol.data" in graph["ecc_lib.protocol.leak_free"]


def test_probe_strategy_comparison_reads_the_tie_tolerance_and_the_whole_prototype():
    """run_ecc(probe_strategy="random") compares the strategies on the protocol's own pairs (its
    tie tolerance) with the prototype's own fit (here max_iter=5), not on default settings."""
    planted = make_capability_data(n_queries=240, random_state=1)
    protocol = Protocol(probe_strategy="random", tie_tolerance=0.05, n_boot=20)
    estimator = ECC(n_clusters=3, max_iter=5)
    found = run_ecc(
        planted.queries,
        planted.outcomes,
        planted.embeddings,
        protocol=protocol,
        estimator=estimator,
        methods=("global", "ecc"),
    ).probe_strategy_comparison["per_seed"][0]

    def direct(tie_tolerance: float, prototype: ECC) -> dict:
        data = prepare_protocol(
            planted.queries,
            planted.outcomes,
            planted.embeddings,
            random_state=42,
            tie_tolerance=tie_tolerance,
        )
        fitted, _ = fit_methods(
            data, methods_from_prototype(prototype, methods=("global", "ecc"), random_state=42)
        )
        return probe_strategy_comparison(
            data,
            fitted["ecc"],
            fitted["global"],
            protocol=Protocol(seeds=(42,), n_boot=1000),
            strategy="random",
        )

    expected = direct(0.05, estimator)
    assert found["n_shared_pairs"] == expected["n_shared_pairs"]
    assert found["gain"] == expected["gain"]
    assert found["difference_ci95"] == expected["difference_ci95"]
    default = direct(1e-4, ECC(n_clusters=3))  # what the comparison read before
    assert (default["n_shared_pairs"], default["gain"]) != (found["n_shared_pairs"], found["gain"])


def test_soft_evidence_comparison_gets_every_parameter_of_the_prototype(monkeypatch):
    import ecc_lib.protocol.experiments.soft_evidence as soft

    seen = {}

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return {}

    monkeypatch.setattr(soft, "soft_evidence_comparison", spy)
    repeated = make_repeated_outcomes(n_queries=120, random_state=0)
    run_ecc(
        repeated.queries,
        repeated.outcomes,
        repeated.embeddings,
        protocol=Protocol(evidence="soft", n_boot=10, n_pairs=4),
        estimator=ECC(n_clusters=3, max_iter=7, n_init=2),
        methods=("global", "ecc"),
    )
    prototype = seen["estimator"]
    assert prototype.n_clusters == 3 and prototype.max_iter == 7 and prototype.n_init == 2
    assert seen["protocol"].n_pairs == 4 and seen["protocol"].seed == 42
    assert not seen["every_pair"]


def test_routing_is_scored_through_routing_evaluation():
    planted = make_capability_data(n_queries=200, random_state=2)
    data = prepare_protocol(planted.queries, planted.outcomes, planted.embeddings)
    scores = data.scores[data.test_mask]
    rng = np.random.default_rng(0)
    choice = rng.integers(0, scores.shape[1], size=len(scores))
    choice[:3] = -1  # no model allowed
    routed = routed_scores(data, choice)
    assert np.isnan(routed[:3]).all()
    np.testing.assert_array_equal(routed[3:], scores[np.arange(3, len(scores)), choice[3:]])
    truth = held_out_means(data)
    np.testing.assert_array_equal(
        routed[3:], evaluate_choices(np.maximum(choice, 0), truth)["score"][3:]
    )
