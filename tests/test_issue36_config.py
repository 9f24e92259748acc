"""Issue 36, run configurations (items 12 and 14): YAML alias bombs and duplicate keys are refused,
list and real-valued parameters are validated before anything runs."""

from __future__ import annotations

import time

import pytest

from ecc_lib.runs import config as run_config

pytest.importorskip("yaml")
pytest.importorskip("papermill")

BOMB = "\n".join(
    [
        'a: &a ["x","x","x","x","x","x","x","x","x"]',
        "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]",
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]",
        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]",
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]",
        "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]",
        "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]",
        "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]",
        "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]",
        "",
    ]
)


@pytest.fixture(scope="module")
def declared():
    notebooks = run_config.discover_notebooks()
    return notebooks, {nb.stem: run_config.notebook_parameters(nb) for nb in notebooks}


def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB, encoding="utf-8")
    assert len(BOMB.encode()) < 400
    start = time.perf_counter()
    with pytest.raises(run_config.ConfigError, match=r"bomb\.yaml.*line 2.*aliases \(\*a\)"):
        run_config.load_config(path)
    assert time.perf_counter() - start < 1.0


def test_yaml_duplicate_keys_are_refused(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text("seed: 1\nn_boot: 10\nseed: 2\n", encoding="utf-8")
    with pytest.raises(run_config.ConfigError, match=r"dup\.yaml.*line 3.*duplicate key 'seed'"):
        run_config.load_config(path)
    path.write_text("03_clustering:\n  lam: 1.0\n  lam: 2.0\n", encoding="utf-8")
    with pytest.raises(run_config.ConfigError, match="duplicate key 'lam'"):
        run_config.load_config(path)


def test_a_huge_configuration_file_is_refused(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("# " + "x" * (run_config.MAX_CONFIG_BYTES + 10) + "\n", encoding="utf-8")
    with pytest.raises(run_config.ConfigError, match="too large"):
        run_config.load_config(path)


@pytest.mark.parametrize(
    ("config", "error", "message"),
    [
        ({"k_sweep": []}, run_config.ParameterValueError, "must not be an empty list"),
        ({"k_sweep": [[4]]}, run_config.ParameterTypeError, r"list of whole numbers.*\[4\]"),
        ({"k_sweep": ["a"]}, run_config.ParameterTypeError, "list of whole numbers.*'a'"),
        ({"k_sweep": [4.5]}, run_config.ParameterTypeError, "list of whole numbers"),
        ({"k_sweep": [0, 5]}, run_config.ParameterValueError, "k_sweep.*got 0"),
        ({"probe_sweep": [-1]}, run_config.ParameterValueError, "probe_sweep.*got -1"),
        ({"lambdas": [float("nan")]}, run_config.ParameterValueError, "lambdas.*got nan"),
        ({"lambdas": [0.1, -1.0]}, run_config.ParameterValueError, "lambdas.*got -1.0"),
        ({"lambdas": [1e308]}, run_config.ParameterValueError, "lambdas.*got 1e\\+308"),
        ({"lambdas": ["0.1"]}, run_config.ParameterTypeError, "lambdas.*list of numbers"),
        ({"routers": [3]}, run_config.ParameterTypeError, "routers.*list of strings"),
        ({"temperature": 0.0}, run_config.ParameterValueError, "temperature.*got 0.0"),
        ({"temperature": float("inf")}, run_config.ParameterValueError, "temperature.*got inf"),
        ({"lam": float("nan")}, run_config.ParameterValueError, "lam.*got nan"),
        ({"test_size": 1.0}, run_config.ParameterValueError, "test_size.*got 1.0"),
        ({"cost_weight": -0.5}, run_config.ParameterValueError, "cost_weight.*got -0.5"),
    ],
)
def test_bad_list_and_real_parameters_are_refused(declared, config, error, message):
    notebooks, params = declared
    with pytest.raises(error, match=message):
        run_config.resolve_parameters(notebooks, config, params)


def test_good_lists_still_pass(declared):
    notebooks, params = declared
    config = {"k_sweep": [2, 3], "lambdas": [0, 0.5, 2], "probe_sweep": [0, 1], "temperature": 0.2}
    resolved = run_config.resolve_parameters(notebooks, config, params)
    assert resolved["03_clustering"]["k_sweep"] == [2, 3]
    assert resolved["04_routing"]["lambdas"] == [0, 0.5, 2]


def test_an_empty_datasets_list_still_means_only_the_given_dataset(declared):
    notebooks, params = declared
    resolved = run_config.resolve_parameters(notebooks, {"01_data": {"datasets": []}}, params)
    assert resolved["01_data"]["datasets"] == []
