"""Issue 35, item 8: the tie-tolerance warning names a flag that exists, and log warnings never
share a line with a result."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ecc_lib.cli import build_parser, main
from ecc_lib.data import checks

rng = np.random.default_rng(0)
BASE = rng.random(100)
# float noise between two models: near ties the protocol's default tolerance (1e-4) reads as ties
NOISY = np.column_stack([0.9 * BASE, 0.9 * BASE + 5e-5, rng.random(100)])


def _outcomes(scores: np.ndarray) -> pd.DataFrame:
    q, m = scores.shape
    return pd.DataFrame(
        {
            "query_id": np.repeat([f"q{i}" for i in range(q)], m),
            "model": np.tile([f"m{j}" for j in range(m)], q),
            "score": scores.ravel(),
        }
    )


def test_the_tie_tolerance_warning_names_the_flag_that_changes_it(tmp_path, capsys):
    found = checks.run_checks(_outcomes(NOISY))
    detail = found["score_type"].detail
    assert found["score_type"].status == "warn" and "--tie-tolerance" in detail
    # the named flag exists on both commands it names
    parser = build_parser()
    path = tmp_path / "outcomes.csv"
    _outcomes(NOISY).to_csv(path, index=False)
    assert parser.parse_args(["check", "--outcomes", str(path), "--tie-tolerance", "1e-6"])
    args = parser.parse_args(
        ["ecc", "--outcomes", "o", "--queries", "q", "--tie-tolerance", "1e-6"]
    )
    from ecc_lib.cli.ecc import protocol_from_args

    assert protocol_from_args(args)[0].tie_tolerance == 1e-6
    # and a smaller tolerance tells the noisy pairs apart: no warning
    assert main(["check", "--outcomes", str(path), "--tie-tolerance", "1e-6"]) == 0
    printed = capsys.readouterr().out
    assert "score_type" in printed and "reads them as ties" not in printed
    assert main(["check", "--outcomes", str(path)]) == 0
    assert "reads them as ties" in capsys.readouterr().out


def test_run_checks_passes_the_tolerance_and_refuses_a_negative_one():
    wide = checks.run_checks(_outcomes(NOISY), tie_tolerance=1e-3)
    assert wide["score_type"].numbers["tolerance"] == 1e-3
    assert wide["all_ties"].numbers["tolerance"] == 1e-3
    with pytest.raises(ValueError, match="tie_tolerance must be a finite number >= 0"):
        checks.run_checks(_outcomes(NOISY), tie_tolerance=-1.0)
    from ecc_lib.protocol.settings import Protocol

    with pytest.raises(ValueError, match="tie_tolerance must be a finite number >= 0"):
        Protocol(tie_tolerance=float("nan"))


LOGGING_SCRIPT = """
import logging
import ecc_lib.cli as cli

def handler(args):
    for i in range(3000):
        print(f"result line {i} " + "x" * 20)
        if i in (100, 1500, 2999):
            logging.getLogger("ecc_lib.test").warning("planted warning after line %d", i)
    return 0

cli.run_handler = handler
raise SystemExit(cli.main(["datasets"]))
"""


def test_a_log_warning_is_a_line_of_its_own_after_the_result_before_it(tmp_path):
    """stdout and stderr into one pipe (``2>&1``): each warning is a whole line, right after the
    result line printed before it (a block-buffered stdout put it before or inside them)."""
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", LOGGING_SCRIPT],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": ""},
        check=True,
    )
    lines = done.stdout.splitlines()
    warnings = [i for i, line in enumerate(lines) if "planted warning" in line]
    assert len(warnings) == 3
    for index, after in zip(warnings, (100, 1500, 2999), strict=True):
        assert lines[index] == f"WARNING ecc_lib.test: planted warning after line {after}"
        assert lines[index - 1].startswith(f"result line {after} ")
    assert all(line.startswith(("result line", "WARNING")) for line in lines)
