"""Project wiring: environment.yml agrees with pyproject.toml, the CLI entry points work."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

from ecc_lib.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _split(requirement: str) -> tuple[str, str]:
    # Extras ("dask[array,dataframe]") are pip's business: conda's dask package includes them.
    match = re.match(r"\s*([A-Za-z0-9_.\-]+)\s*(?:\[[^\]]*\])?\s*(.*)", requirement)
    return match.group(1).lower().replace("_", "-"), match.group(2).replace(" ", "")


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    # the environment is what `make test` installs: core + every extra but [local] + dev
    requirements = project["dependencies"] + [
        r for name, group in extras.items() if name != "local" for r in group
    ]
    wanted = dict(_split(r) for r in requirements if not r.startswith("ecc_lib["))
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    listed: dict[str, str] = {}
    for entry in env["dependencies"]:
        if isinstance(entry, dict):
            for pip_entry in entry["pip"]:
                if not pip_entry.startswith("-e"):
                    listed.update([_split(pip_entry)])
        else:
            name, spec = _split(
                entry.replace("=", "==", 1) if re.match(r"^[\w-]+=[^=]", entry) else entry
            )
            listed[name] = spec
    listed.pop("python"), listed.pop("pip")
    assert listed == wanted, {
        "only in environment.yml": sorted(set(listed) - set(wanted)),
        "only in pyproject.toml": sorted(set(wanted) - set(listed)),
        "different versions": sorted(
            k for k in set(listed) & set(wanted) if listed[k] != wanted[k]
        ),
    }
    assert any(isinstance(e, dict) and "-e ." in e["pip"] for e in env["dependencies"])


def test_datasets_command_reports_dcrouter_counts(tmp_path, capsys):
    out = tmp_path / "datasets.json"
    assert main(["datasets", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    line = next(line for line in printed.splitlines() if line.startswith("dcrouter"))
    assert line.split()[1:5] == ["5,989", "9", "53,901", "14"]
    summary = json.loads(out.read_text())["dcrouter"]
    assert (summary["n_queries"], summary["n_models"], summary["n_categories"]) == (5989, 9, 14)


def test_python_dash_m_runs_the_cli():
    result = subprocess.run(
        [sys.executable, "-m", "ecc_lib", "--help"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and "datasets" in result.stdout


def test_cli_errors_are_messages_not_tracebacks(tmp_path, capsys):
    (tmp_path / "o.csv").write_text("query_id,model,score\nq1,a,2\n")
    # any subcommand that reads outcomes reports a validation error with exit status 1
    from ecc_lib.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    if "dars" not in commands:
        return
    assert main(["dars", "--outcomes", str(tmp_path / "o.csv")]) == 1
    assert "'score'" in capsys.readouterr().err


def test_package_level_names_resolve():
    import ecc_lib

    for name in ecc_lib.__all__:
        assert getattr(ecc_lib, name) is not None


def test_the_public_surface_stays_learnable():
    """At most 300 __all__ entries over all modules (issue 33; docs/CONTRIBUTING.md)."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "count_public_names.py"), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(result.stdout)["public"] <= 300
