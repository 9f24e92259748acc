"""Issue 36, crashes and misleading errors (items 12, 13, 15): each becomes one line naming the
right cause, and what is left out is counted with its reason."""

from __future__ import annotations

import errno
import json
import os
import pathlib

import pandas as pd
import pytest

from ecc_lib.cli import main

MODELS = ("m-a", "m-b", "m-c")


def _outcomes(path, *, lacking):
    """Repeated outcomes of 3 models; ``lacking(q)`` names the model query ``q`` lacks (or None)."""
    rows = []
    for q in range(10):
        for m in MODELS:
            if m == lacking(q):
                continue
            for d in range(2):
                score = float((q + d + len(m)) % 2)
                rows.append(
                    {
                        "query_id": f"q{q}",
                        "model": m,
                        "score": score,
                        "decode_id": d,
                        "variant_id": 0,
                    }
                )
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if "error:" in line]
    assert len(lines) == 1, err
    return lines[0]


def test_dars_when_no_query_is_answered_by_every_model(tmp_path, capsys):
    path = _outcomes(tmp_path / "o.csv", lacking=lambda q: MODELS[q % 3])
    assert main(["dars", "--outcomes", str(path)]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "no query is answered by every model" in line and "'q0'" in line


def test_dars_counts_the_queries_it_leaves_out_with_their_reason(tmp_path, capsys):
    path = _outcomes(tmp_path / "o.csv", lacking=lambda q: "m-c" if q < 4 else None)
    out_json = tmp_path / "d.json"
    assert main(["dars", "--outcomes", str(path), "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    summary = json.loads(out_json.read_text())
    policy = summary["data_policy"]
    assert summary["n_dropped_queries"] == 4 == policy["n_left_out"]
    assert policy["n_input_queries"] - policy["n_queries"] == 4
    assert summary["n_queries"] == policy["n_queries"] == 6
    (reason,) = policy["left_out"]
    assert "not answered by every model" in reason
    assert policy["left_out_examples"][reason] == ["q0", "q1", "q2", "q3"]
    assert "4 of 10 queries were left out" in out


def test_run_out_on_a_read_only_file_system_is_one_line(tmp_path, monkeypatch, capsys):
    target = tmp_path / "ro"
    mkdir = pathlib.Path.mkdir

    def refuse(self, *args, **kwargs):
        if str(self).startswith(str(target)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
        return mkdir(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "mkdir", refuse)
    status = main(["run", "--out", str(target / "run1"), "--only", "05", "--no-progress"])
    assert status == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "cannot write" in line and "Read-only file system" in line and str(target) in line


@pytest.mark.parametrize("size", ["2", "0", "1", "nan"])
def test_bench_with_a_test_size_outside_the_unit_interval_writes_nothing(tmp_path, capsys, size):
    out = tmp_path / "bench"
    status = main(["bench", "re2", "--out", str(out), f"--test-size={size}"])
    assert status == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "test_size" in line and "(0, 1)" in line
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--temperature=inf", "--temperature must be a finite number > 0"),
        ("--temperature=nan", "--temperature must be a finite number > 0"),
        ("--lam=nan", "--lam must be a finite number >= 0"),
        ("--lam=-1", "--lam must be a finite number >= 0"),
    ],
)
def test_ecc_refuses_non_finite_settings_before_reading(tmp_path, capsys, flag, message):
    missing = str(tmp_path / "nothing.csv")  # never read: the flags are checked first
    status = main(["ecc", "--outcomes", missing, "--queries", missing, flag])
    assert status == 1
    assert message in _one_error_line(capsys.readouterr().err)
