"""Each settings check lives once (issue 33): ECC's in ``check_cluster_settings``, the protocol's
cross-field rules in ``Protocol``; the bench and ``ecc-lab ecc`` call them (the command line says
the flags' names), so the three entry points cannot disagree."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from ecc_lib.bench.settings import BenchSettings
from ecc_lib.cli import main
from ecc_lib.ecc.estimator import ECC, check_cluster_settings
from ecc_lib.protocol.settings import Protocol
from ecc_lib.synthetic.capability import make_capability_data

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "settings",
    [{"test_size": 1.0}, {"test_size": 0}, {"leak_free": True, "n_probes": 0}],
    ids=["test_size=1", "test_size=0", "leak_free-without-probe"],
)
def test_the_protocol_holds_its_cross_field_rules(settings):
    with pytest.raises(ValueError, match="test_size|leak_free"):
        Protocol(**settings)


def test_another_probe_strategy_needs_a_probe():
    with pytest.raises(ValueError, match="probe_strategy other than 'first' needs n_probes >= 1"):
        Protocol(n_probes=0, probe_strategy="random")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"temperature": np.inf}, "temperature must be a finite number > 0"),
        ({"lam": np.nan}, "lam must be a finite number >= 0"),
        ({"n_clusters": 0}, "n_clusters must be >= 1"),
    ],
)
def test_ecc_refuses_what_the_command_line_refuses(params, message):
    """``ECC(temperature=inf)`` used to fit (uniform memberships) while ``ecc-lab ecc`` refused it."""
    data = make_capability_data(n_queries=60, n_pairs=3, random_state=0)
    comparisons, x = data.comparisons, data.embeddings
    with pytest.raises(ValueError, match=message):
        ECC(**params).fit(x, comparisons)
    with pytest.raises(ValueError, match=message):
        BenchSettings(**params)


def test_bench_and_protocol_give_one_message():
    with pytest.raises(ValueError) as from_protocol:
        Protocol(test_size=1.5)
    with pytest.raises(ValueError) as from_bench:
        BenchSettings(test_size=1.5)
    assert str(from_bench.value) == str(from_protocol.value)
    with pytest.raises(ValueError) as from_check:
        check_cluster_settings(3, 1.0, float("inf"))
    with pytest.raises(ValueError) as from_bench:
        BenchSettings(temperature=float("inf"))
    assert str(from_bench.value) == str(from_check.value)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--test-size", "1"], "--test-size must be a share in (0, 1)"),
        (["--probes", "0", "--leak-free"], "--leak-free needs --probes >= 1"),
        (["--probes", "0", "--probe-strategy", "active"], "--probe-strategy other than 'first'"),
        (["--probes", "0", "--routing"], "--routing needs --probes >= 1"),
        (["--k", "0"], "--k must be >= 1"),
        (["--seeds", "0"], "--seeds must be >= 1"),
    ],
)
def test_the_command_line_words_the_one_check_in_flags(tmp_path, capsys, flags, message):
    missing = str(tmp_path / "nothing.csv")  # never read: the settings are checked first
    assert main(["ecc", "--outcomes", missing, "--queries", missing, *flags]) == 1
    assert message in capsys.readouterr().err


def test_the_command_line_keeps_no_copy_of_a_settings_rule():
    """``ecc-lab ecc`` raises no error of its own about a setting Protocol or ECC checks."""
    tree = ast.parse((ROOT / "ecc_lib" / "cli" / "ecc.py").read_text())
    copies = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            text = ast.unparse(node.exc.args[0])
            for flag in (
                "--k ",
                "--lam ",
                "--temperature ",
                "--pairs ",
                "--probes ",
                "--test-size ",
                "--seed",
            ):
                if flag in text:
                    copies.append(text)
    assert copies == []
