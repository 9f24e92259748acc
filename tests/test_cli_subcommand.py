"""The one place where every ``ecc-lab`` subcommand is declared and its errors become messages."""

from __future__ import annotations

import argparse
import importlib
import json
import signal
import sys
import types

import pytest

from ecc_lib.cli import SUBCOMMAND_MODULES, build_parser, main
from ecc_lib.cli.subcommand import (
    INTERRUPTED,
    USER_ERRORS,
    Subcommand,
    UsageError,
    is_user_error,
    run_handler,
    write_json,
)
from ecc_lib.collect.errors import CollectionInterrupted, EndpointAuthError, StoreError
from ecc_lib.data.schema import DataValidationError
from ecc_lib.runs.execute import NotebookExecutionError


def _args(handler, command="demo", **extra) -> argparse.Namespace:
    return argparse.Namespace(command=command, handler=handler, **extra)


def _raising(error: BaseException):
    def handler(args):
        raise error

    return handler


@pytest.mark.parametrize(
    "error",
    [
        DataValidationError("outcomes.csv: column 'score' is missing"),
        FileNotFoundError("no such file: q.csv"),
        FileExistsError("runs/x already has 01_data.ipynb"),
        ValueError("--k must be >= 1, got 0"),
        StoreError("runs/c1 is in use by another collection process"),
        EndpointAuthError("401 from http://h/v1", status=401, url="http://h/v1", model="m"),
        NotebookExecutionError("02_x.ipynb", 3, 2, "ValueError", "planted", "02_x.ipynb"),
    ],
)
def test_a_user_error_is_one_line_on_stderr_and_exit_status_1(error, capsys):
    assert run_handler(_args(_raising(error))) == 1
    err = capsys.readouterr().err
    assert err == f"ecc-lab demo: error: {error}\n"


def test_a_usage_error_exits_2_like_argparse(capsys):
    assert run_handler(_args(_raising(UsageError("--timeout must be > 0, got 0")))) == 2
    assert capsys.readouterr().err == "ecc-lab demo: error: --timeout must be > 0, got 0\n"


def test_a_run_stopped_by_a_signal_exits_128_plus_the_signal_without_error_label(capsys):
    error = CollectionInterrupted("collection interrupted by SIGTERM", signal_number=signal.SIGTERM)
    assert error.exit_status == 128 + signal.SIGTERM
    assert run_handler(_args(_raising(error), command="collect")) == 128 + signal.SIGTERM
    assert capsys.readouterr().err == "ecc-lab collect: collection interrupted by SIGTERM\n"


def test_ctrl_c_exits_130_with_the_subcommand_s_own_note(capsys):
    assert run_handler(_args(_raising(KeyboardInterrupt()))) == 130
    assert capsys.readouterr().err == f"ecc-lab demo: {INTERRUPTED}\n"
    args = _args(_raising(KeyboardInterrupt()), interrupted="interrupted; resume with --resume")
    assert run_handler(args) == 130
    assert capsys.readouterr().err == "ecc-lab demo: interrupted; resume with --resume\n"


def test_a_bug_is_not_hidden_behind_a_message(capsys):
    with pytest.raises(ZeroDivisionError):
        run_handler(_args(_raising(ZeroDivisionError("division by zero"))))
    with pytest.raises(RuntimeError):  # a RuntimeError that is not a collection error
        run_handler(_args(_raising(RuntimeError("unexpected"))))
    assert capsys.readouterr().err == ""


def test_the_handler_s_status_is_returned_and_none_means_success():
    assert run_handler(_args(lambda args: None)) == 0
    assert run_handler(_args(lambda args: 3)) == 3


def test_an_error_class_counts_only_once_its_module_is_imported(monkeypatch):
    class Planted(Exception):
        pass

    module = types.ModuleType("ecc_lib_planted_errors")
    module.Planted = Planted
    rules = (*USER_ERRORS, (module.__name__, "Planted"))
    monkeypatch.setattr("ecc_lib.cli.subcommand.USER_ERRORS", rules)
    assert not is_user_error(Planted())  # its module is not in sys.modules
    monkeypatch.setitem(sys.modules, module.__name__, module)
    assert is_user_error(Planted())


def test_every_module_declares_its_subcommands_once_and_the_parser_has_them_all():
    declared = []
    for name in SUBCOMMAND_MODULES:
        module = importlib.import_module(f"ecc_lib.cli.{name}")
        assert module.SUBCOMMANDS and all(isinstance(s, Subcommand) for s in module.SUBCOMMANDS)
        declared += list(module.SUBCOMMANDS)
    names = [s.name for s in declared]
    assert len(names) == len(set(names))
    choices = build_parser()._subparsers._group_actions[0].choices
    assert set(choices) == set(names)
    for subcommand in declared:
        defaults = choices[subcommand.name]._defaults
        assert defaults["handler"] is subcommand.handler
        assert defaults["interrupted"] == subcommand.interrupted


@pytest.mark.parametrize(
    ("flag", "value", "low"),
    [("--timeout", "0", "0"), ("--max-retries", "-1", "-1"), ("--max-tokens", "0", "0")],
)
def test_collect_refuses_a_flag_out_of_range_with_exit_2_before_any_call(
    tmp_path, capsys, flag, value, low
):
    argv = ["collect", "--queries", str(tmp_path / "q.csv"), "--models", "m",
            "--base-url", "http://127.0.0.1:9/v1", "--store", str(tmp_path / "s"), flag, value]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ecc-lab collect: error: {flag} must be > {low}, got ")
    assert len(err.splitlines()) == 1 and not (tmp_path / "s").exists()


def test_ctrl_c_during_ecc_lab_run_says_what_was_kept(tmp_path, capsys, monkeypatch):
    from ecc_lib.runs import pipeline

    def interrupted_run(**kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "run_pipeline", interrupted_run)
    assert main(["run", "--out", str(tmp_path / "run"), "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert err.startswith("ecc-lab run: interrupted; ") and "run.json says 'interrupted'" in err


def test_write_json_is_indented_utf8_and_sorts_keys_on_request(tmp_path):
    payload = {"b": 1, "a": "é"}
    write_json(str(tmp_path / "x.json"), payload)
    write_json(str(tmp_path / "y.json"), payload, sort_keys=True)
    x = (tmp_path / "x.json").read_text(encoding="utf-8")
    y = (tmp_path / "y.json").read_text(encoding="utf-8")
    assert json.loads(x) == payload and x.startswith('{\n  "b": 1')
    assert y.startswith('{\n  "a": ')
