"""Each default lives in one place, ``ecc_lib.defaults`` (issue 33): the estimators, the protocol
and the command line read it from there, and the notebooks' literal parameters (papermill needs
literals) are held to it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ecc_lib import ECC, Protocol, defaults
from ecc_lib.cli import build_parser
from ecc_lib.runs import config as run_config

ROOT = Path(__file__).resolve().parents[1]

# notebook parameter -> the default it repeats (names that mean the same thing in every notebook)
NOTEBOOK_DEFAULTS = {
    "n_clusters": defaults.N_CLUSTERS,
    "lam": defaults.LAM,
    "temperature": defaults.TEMPERATURE,
    "n_pairs": defaults.N_PAIRS,
    "n_probes": defaults.N_PROBES,
    "probe_evidence": defaults.PROBE_EVIDENCE,
    "test_size": defaults.TEST_SIZE,
    "n_boot": defaults.N_BOOT,
    "cost_weight": defaults.COST_WEIGHT,
    "beta": defaults.BETA,
    "n_draws": defaults.N_DRAWS,
    "split_seed": defaults.SEED,
}
PROTOCOL_SEED_NOTEBOOKS = ("03_clustering", "06_benchmark")  # their `seed` is the protocol's
OWN_CHOICE = {"00_tour": {"n_boot"}}  # the synthetic tour draws fewer resamples on purpose (speed)

# flag of a subcommand -> the default it must read
CLI_DEFAULTS = {
    "ecc": {
        "k": defaults.N_CLUSTERS,
        "lam": defaults.LAM,
        "temperature": defaults.TEMPERATURE,
        "pairs": defaults.N_PAIRS,
        "probes": defaults.N_PROBES,
        "test_size": defaults.TEST_SIZE,
        "seed": defaults.SEED,
        "probe_evidence": defaults.PROBE_EVIDENCE,
        "probe_strategy": defaults.PROBE_STRATEGY,
        "evidence": defaults.EVIDENCE,
    },
    "bench": {
        "k": defaults.N_CLUSTERS,
        "pairs": defaults.N_PAIRS,
        "probes": defaults.N_PROBES,
        "test_size": defaults.TEST_SIZE,
        "seed": defaults.SEED,
    },
    "dars": {"cost_weight": defaults.COST_WEIGHT, "beta": defaults.BETA, "draws": defaults.N_DRAWS},
}


def test_the_estimator_and_the_protocol_read_the_defaults():
    ecc = ECC()
    assert (ecc.n_clusters, ecc.lam, ecc.temperature) == (
        defaults.N_CLUSTERS,
        defaults.LAM,
        defaults.TEMPERATURE,
    )
    p = Protocol()
    assert p.n_pairs == defaults.N_PAIRS and p.test_size == defaults.TEST_SIZE
    assert p.seeds == (defaults.SEED,) and p.n_probes == defaults.N_PROBES
    assert p.n_boot == defaults.N_BOOT and p.tie_tolerance == defaults.TIE_TOLERANCE
    assert (p.probe_evidence, p.probe_strategy, p.evidence) == (
        defaults.PROBE_EVIDENCE,
        defaults.PROBE_STRATEGY,
        defaults.EVIDENCE,
    )


@pytest.mark.parametrize(
    "notebook", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem
)
def test_notebook_literals_repeat_the_defaults(notebook):
    declared = run_config.notebook_parameters(notebook)
    for name, value in NOTEBOOK_DEFAULTS.items():
        if name in declared and name not in OWN_CHOICE.get(notebook.stem, ()):
            assert declared[name]["default"] == value, (notebook.stem, name)
    if notebook.stem in PROTOCOL_SEED_NOTEBOOKS:
        assert declared["seed"]["default"] == defaults.SEED


@pytest.mark.parametrize("command", sorted(CLI_DEFAULTS))
def test_cli_flags_read_the_defaults(command):
    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices[command]  # argparse keeps them here
    by_dest = {action.dest: action for action in sub._actions}
    for dest, value in CLI_DEFAULTS[command].items():
        action = by_dest[dest]
        assert action.default == value, (command, dest)
        if action.help and "(default" in action.help and not isinstance(value, str):
            assert f"{value:g}" in action.help, (command, dest, action.help)


def _literal_defaults(path: Path, command: str) -> list[str]:
    """``add_argument`` calls of a subcommand's module whose ``default=`` is a literal for a flag
    of :data:`CLI_DEFAULTS` (a second home of a default)."""
    names = {d.replace("_", "-") for d in CLI_DEFAULTS[command]} | {"lambda"}
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"):
            continue
        flags = [a.value.lstrip("-") for a in node.args if isinstance(a, ast.Constant)]
        default = next((k.value for k in node.keywords if k.arg == "default"), None)
        if set(flags) & names and isinstance(default, ast.Constant) and default.value is not None:
            found.append(f"{path.name}: --{flags[0]} default={default.value!r}")
    return found


@pytest.mark.parametrize("command", sorted(CLI_DEFAULTS))
def test_no_cli_module_types_a_default_again(command):
    assert _literal_defaults(ROOT / "ecc_lib" / "cli" / f"{command}.py", command) == []


def test_no_signature_of_the_protocol_types_the_paper_defaults_again():
    """Keyword defaults of the protocol's functions that equal a paper default read it from
    ``ecc_lib.defaults`` (a number typed again would drift when the default changes)."""
    names = dict(NOTEBOOK_DEFAULTS, probe_strategy=defaults.PROBE_STRATEGY)
    found = []
    for path in sorted((ROOT / "ecc_lib" / "protocol").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            for arg, default in pairs:
                if (
                    arg.arg in names
                    and isinstance(default, ast.Constant)
                    and default.value == names[arg.arg]
                ):
                    found.append(
                        f"{path.relative_to(ROOT)}:{node.name}: {arg.arg}={default.value!r}"
                    )
    assert found == []
