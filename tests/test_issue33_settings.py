"""Issue 33, "settings travel whole": after the entry point the protocol's settings are one
:class:`~ecc_lib.protocol.settings.Protocol` (and one ECC prototype), never loose keyword copies
of its fields."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from ecc_lib.protocol.data import prepare_protocol
from ecc_lib.protocol.methods import fit_methods, make_methods
from ecc_lib.protocol.routing import routing_experiment
from ecc_lib.protocol.scoring import score_methods
from ecc_lib.protocol.settings import Protocol
from ecc_lib.synthetic.capability import make_capability_data

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

PROTOCOL = Path(__file__).parents[1] / "ecc_lib" / "protocol"
PROTOCOL_FIELDS = frozenset(f.name for f in dataclasses.fields(Protocol))
ECC_FIELDS = frozenset({"n_clusters", "lam", "temperature", "max_iter"})

# The modules above ``settings`` in the protocol's import layers (pyproject.toml, docs/design.md
# section 8). ``probes``, ``active_probes``, ``leak_free`` and ``data`` lie below it (Protocol is
# built of their constants, so they cannot take one): their primitives (probe strategies,
# ``prepare_protocol``, ``make_leak_free``) keep their own arguments; ``methods`` is the
# estimator factory beside it (``make_methods(n_clusters, lam, temperature)``, the prototype's
# front door being ``methods_from_prototype``).
ABOVE_SETTINGS = (
    "scoring.py",
    "routing.py",
    "dars.py",
    "ecc_protocol.py",
    "comparisons.py",
    "seeds.py",
    "capability_map.py",
    "results.py",
    "experiments/*.py",
)

# Parameters named like a field that are not that setting (each with its reason).
NOT_PROTOCOL_SETTINGS = {
    # the capability map's own bootstrap over each group's training queries (default 200, not
    # the protocol's 1000 over test queries: that one is ``held_out_boot``)
    "capability_map.capability_map": {"n_boot"},
    # overrides the tie tolerance a map's data were prepared with, for display
    "capability_map.show_group": {"tie_tolerance"},
    # records of stored per-query tables (the CLI's tables, the bench summary of stored JSON):
    # the bootstrap size is read back from the stored result
    "comparisons.clustering_records": {"n_boot"},
    "comparisons.routing_levels": {"n_boot"},
    "comparisons.routing_difference_records": {"n_boot"},
    "comparisons.routing_records": {"n_boot"},
    "seeds.MultiSeedEvaluation.comparisons": {"n_boot"},
    # labels of stored per-seed results
    "seeds.clustering_routing_table": {"seeds"},
    # the DARS protocol (its own settings, not the ECC protocol's)
    "dars.run_dars": {"n_boot"},
    # a leak-free run's result to record, not the setting
    "results.ECCResult.to_metrics": {"leak_free"},
    # the synthetic tour (no ProtocolData, no Protocol): planted clusters and labels
    "experiments.tour.fit_clusterings": {"n_clusters"},
    "experiments.tour.recovery_table": {"n_boot"},
    "experiments.tour.label_truth_table": {"n_boot"},
}

# The functions that take protocol settings (issue 33's list): each takes ``protocol``.
TAKE_PROTOCOL = (
    "scoring.score_methods",
    "routing.route_choices",
    "routing.routing_experiment",
    "experiments.sweeps.evaluate_modes",
    "experiments.sweeps.sweep_probes",
    "experiments.sweeps.sweep_clusters",
    "experiments.sweeps.score_label_informed",
    "experiments.soft_evidence.soft_evidence_comparison",
    "experiments.probe_strategies.compare_probe_strategies",
    "experiments.probe_strategies.probe_strategy_comparison",
    "experiments.probe_strategies.probe_strategy_over_seeds",
    "experiments.new_model.new_model_experiment",
    "ecc_protocol.run_protocol",
    "ecc_protocol.run_seed",
    "seeds.run_seeds",
    "results.run_ecc",
)
# ... and those that build ECC-family models take the prototype too
TAKE_ESTIMATOR = (
    "experiments.sweeps.sweep_clusters",
    "experiments.sweeps.score_label_informed",
    "experiments.soft_evidence.soft_evidence_comparison",
    "experiments.new_model.new_model_experiment",
)


def _public_functions() -> dict[str, list[str]]:
    """``{module.function or module.Class.method: parameter names}`` of the public functions of
    the modules above ``settings``."""
    out = {}
    for pattern in ABOVE_SETTINGS:
        for path in sorted(PROTOCOL.glob(pattern)):
            module = ".".join(path.relative_to(PROTOCOL).with_suffix("").parts)
            tree = ast.parse(path.read_text())
            for node in tree.body:
                functions = []
                if isinstance(node, ast.FunctionDef):
                    functions = [(node.name, node)]
                elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    functions = [
                        (f"{node.name}.{f.name}", f)
                        for f in node.body
                        if isinstance(f, ast.FunctionDef)
                    ]
                for name, fn in functions:
                    if name.split(".")[-1].startswith("_"):
                        continue
                    a = fn.args
                    out[f"{module}.{name}"] = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    return out


def test_no_loose_copies_of_the_protocol_settings():
    found = _public_functions()
    assert "scoring.score_methods" in found and "experiments.sweeps.sweep_clusters" in found
    loose = {
        name: sorted(
            set(params) & (PROTOCOL_FIELDS | ECC_FIELDS) - NOT_PROTOCOL_SETTINGS.get(name, set())
        )
        for name, params in found.items()
    }
    assert {k: v for k, v in loose.items() if v} == {}
    for name in TAKE_PROTOCOL:
        assert "protocol" in found[name], name
    for name in TAKE_ESTIMATOR:
        assert "estimator" in found[name], name
    stale = [name for name in NOT_PROTOCOL_SETTINGS if name not in found]
    assert stale == []


# score_methods and routing_experiment on fix2 (before issue 33), with
# n_probes=2, probe_evidence="sum", probe_strategy="random", n_boot=40, random_state=3.
# Recorded on one CPU: numpy's vectorised exp and log differ in their last bits between CPUs
# (AVX2 or AVX-512 kernels), and the EM carries that to about 1e-8 of an NLL (a few 1e-6
# percentage points of a gain near 0), so they are compared to a relative 1e-6 or 1e-5 absolute;
# another setting (probes, evidence, strategy) moves them by more than 1e-3.
FIX2 = {
    "gain": {"ecc": 34.99139556511475, "emb_only": 0.1689079901613131},
    "ci95": {
        "ecc": [29.076910693053026, 43.66329206072532],
        "emb_only": [-0.6446716949794168, 1.2918987869713447],
    },
    "nll": {
        "global": 0.6912811397542736,
        "ecc": 0.44939222167582205,
        "emb_only": 0.6901135106747506,
    },
    "gain_disjoint": {"ecc": 29.817307726763964, "emb_only": -0.4062987995171413},
}


# routing_experiment on fix2, same settings: (setting, method) -> [score, low, high]
ROUTING_FIX2 = (
    (("no_probe", "global"), [0.561198914654003, 0.500341358111091, 0.6456803457169841]),
    (("no_probe", "ecc"), [0.5870730550375437, 0.5271709017533043, 0.6672611121193189]),
    (("no_probe", "emb_only"), [0.49939233375031955, 0.43457950724913064, 0.5674981589696895]),
    (("no_probe", "random"), [0.5429630919873941, 0.5313226143459632, 0.5560018512626201]),
    (("no_probe", "oracle"), [0.9877186148635502, 0.984682860366, 0.9901459664777066]),
    (("probe", "global"), [0.561198914654003, 0.500341358111091, 0.6456803457169841]),
    (("probe", "ecc"), [0.8524207786993047, 0.8039845896465377, 0.9053757233410777]),
    (("probe", "emb_only"), [0.6359323547269194, 0.5383625210862786, 0.6935374085468912]),
    (("probe", "probe_winner"), [0.7386996113192272, 0.6580958391580144, 0.8206113597832548]),
    (("probe", "random"), [0.5429630919873941, 0.5313226143459632, 0.5560018512626201]),
    (("probe", "oracle"), [0.9877186148635502, 0.984682860366, 0.9901459664777066]),
    (("probe_outside", "global"), [0.574256096673965, 0.4842524691536098, 0.6302597120547055]),
    (("probe_outside", "ecc"), [0.8193605072530386, 0.7799641775335948, 0.8673924650000394]),
    (("probe_outside", "emb_only"), [0.6351411073186394, 0.5382113132193298, 0.7000349055172825]),
    (("probe_outside", "random"), [0.5303165498291064, 0.48673284596954597, 0.5659705915613483]),
    (("probe_outside", "oracle"), [0.9438240840003255, 0.9153997414128834, 0.9660626803543587]),
    (("probe_cost", "global"), [0.561198914654003, 0.500341358111091, 0.6456803457169841]),
    (("probe_cost", "ecc"), [0.8524207786993047, 0.8039845896465377, 0.9053757233410777]),
    (("probe_cost", "emb_only"), [0.6359323547269194, 0.5383625210862786, 0.6935374085468912]),
    (("probe_cost", "probe_winner"), [0.7386996113192272, 0.6580958391580144, 0.8206113597832548]),
    (("probe_cost", "random"), [0.5429630919873941, 0.5313226143459632, 0.5560018512626201]),
)


@pytest.fixture(scope="module")
def small():
    planted = make_capability_data(n_queries=300, random_state=5)
    data = prepare_protocol(planted.queries, planted.outcomes, planted.embeddings, random_state=7)
    methods = make_methods(
        n_clusters=3, n_init=1, max_iter=30, random_state=7, methods=("global", "ecc", "emb_only")
    )
    fitted, _ = fit_methods(data, methods)
    return data, fitted


def test_the_protocol_gives_the_numbers_of_the_loose_settings(small):
    data, fitted = small
    protocol = Protocol(n_probes=2, probe_evidence="sum", probe_strategy="random", n_boot=40)
    score = score_methods(data, fitted, protocol=protocol, random_state=3)
    for key, expected in FIX2.items():
        got = getattr(score, key)
        assert sorted(got) == sorted(expected), key
        for name, value in expected.items():
            found = list(got[name]) if isinstance(got[name], tuple) else got[name]
            assert found == pytest.approx(value, rel=1e-6, abs=1e-5), (key, name)
    route = routing_experiment(data, fitted, protocol=protocol, random_state=3)
    table = route.table.set_index(["setting", "method"])
    expected = dict(ROUTING_FIX2)
    assert len(table) == len(expected)
    for (setting, method), values in expected.items():
        got = list(table.loc[(setting, method), ["score", "score_low", "score_high"]])
        assert got == pytest.approx(values, rel=1e-6, abs=1e-5), (setting, method)
    assert route.params["n_probes"] == 2 and route.params["probe_evidence"] == "sum"
