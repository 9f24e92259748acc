"""Issue 22 items 1, 2, 3 and 6: typed settings (Protocol), typed results (run_ecc, run_dars), the
metrics.json schema and the declared public names."""

from __future__ import annotations

import dataclasses
import importlib
import json
import pkgutil

import pytest

import ecc_lib
from ecc_lib import ECC
from ecc_lib.cli.dars import dars_summary
from ecc_lib.metrics_schema import (
    MetricsSchemaError,
    metric_description,
    metric_unit,
    metrics_schema,
    schema_errors,
    schema_version,
    validate_metrics,
    validate_section,
)
from ecc_lib.protocol.methods import methods_from_prototype, prototype_parameters
from ecc_lib.protocol.results import ECCResult, run_dars, run_ecc
from ecc_lib.protocol.seeds import run_seeds
from ecc_lib.protocol.settings import Protocol
from ecc_lib.runs import folder as run_folder
from ecc_lib.runs import metrics as run_metrics
from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes

METHODS = ("global", "ecc", "emb_only", "comp_only")


@pytest.fixture(scope="module")
def tiny():
    return make_repeated_outcomes(
        n_queries=80, n_models=4, n_rewrites=2, n_decodes=2, n_clusters=3, random_state=3
    )


@pytest.fixture(scope="module")
def ecc_result(tiny) -> ECCResult:
    return run_ecc(
        tiny.queries,
        tiny.outcomes,
        tiny.embeddings,
        protocol=Protocol(seeds=(1, 2), n_boot=50),
        estimator=ECC(n_clusters=3, max_iter=20),
        methods=METHODS,
        routing=True,
    )


# --------------------------------------------------------------------------------------------------
# item 1: typed settings


def test_protocol_is_a_frozen_value_with_the_papers_defaults():
    protocol = Protocol()
    assert (protocol.n_pairs, protocol.test_size, protocol.n_probes) == (7, 0.2, 1)
    assert protocol.seeds == (42,) and protocol.seed == 42
    with pytest.raises(dataclasses.FrozenInstanceError):
        protocol.n_pairs = 3
    changed = protocol.replace(leak_free=True)
    assert changed.leak_free and not protocol.leak_free
    assert Protocol.from_seed(5, n_seeds=3).seeds == (5, 6, 7)
    assert Protocol(seeds=range(2)).seeds == (0, 1)  # normalised to a tuple of int
    assert protocol.to_dict()["seeds"] == [42]
    assert Protocol() == Protocol()  # a value: equal settings compare equal


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"seeds": ()}, "at least one seed"),
        ({"seeds": (1, 1)}, "distinct"),
        ({"n_pairs": 1}, "n_pairs must be >= 2"),
        ({"n_probes": 7}, r"n_probes must lie in \[0, n_pairs\)"),
        ({"probe_evidence": "median"}, "probe_evidence"),
        ({"evidence": "hard"}, "evidence must be"),
        ({"mode": "labels"}, "mode must be"),
    ],
)
def test_protocol_refuses_bad_settings_in_one_line(settings, message):
    with pytest.raises(ValueError, match=message):
        Protocol(**settings)


def test_new_entry_points_take_settings_keyword_only(tiny):
    with pytest.raises(TypeError):
        run_ecc(tiny.queries, tiny.outcomes, tiny.embeddings, Protocol())
    with pytest.raises(TypeError):
        run_dars(tiny.outcomes, 0.05)
    with pytest.raises(TypeError, match="Protocol"):
        run_ecc(tiny.queries, tiny.outcomes, tiny.embeddings, protocol={"n_pairs": 7})


def test_the_prototype_holds_eccs_parameters_and_the_baselines_follow_it():
    assert prototype_parameters() == {"n_clusters": 30, "lam": 3.0, "temperature": 0.1}
    # only parameters that differ from ECC's defaults travel as **ecc_params
    params = prototype_parameters(ECC(n_clusters=4, max_iter=20, random_state=9))
    assert params == {"n_clusters": 4, "lam": 3.0, "temperature": 0.1, "max_iter": 20}
    built = methods_from_prototype(
        ECC(n_clusters=4, lam=2.0, max_iter=20), methods=METHODS, random_state=7
    )
    assert (
        built["ecc"].get_params()
        == ECC(n_clusters=4, lam=2.0, max_iter=20, random_state=7).get_params()
    )
    for name in ("emb_only", "comp_only"):
        p = built[name].get_params()
        assert (p["n_clusters"], p["max_iter"], p["random_state"]) == (4, 20, 7)
    assert built["emb_only"].get_params()["lam"] == 2.0
    assert built["comp_only"].get_params()["lam"] == 0.0  # comparison-only ECC has no cosine term
    with pytest.raises(TypeError, match="unfitted ecc_lib.ECC"):
        prototype_parameters(built["emb_only"])


def test_the_cli_and_notebook_03_build_the_same_protocol():
    import nbformat

    from ecc_lib import paths
    from ecc_lib.cli import build_parser
    from ecc_lib.cli.ecc import protocol_from_args

    args = build_parser().parse_args(["ecc", "--outcomes", "o", "--queries", "q", "--seeds", "3"])
    protocol, estimator = protocol_from_args(args)
    # notebook 03's defaults (parameters cell) through the notebook's own construction
    notebook = nbformat.read(paths.notebooks_dir() / "03_clustering.ipynb", 4)
    parameters = next(
        c.source for c in notebook.cells if "parameters" in c.metadata.get("tags", [])
    )
    values: dict = {}
    exec(parameters, {}, values)  # typed literals only (tests/test_notebooks.py checks that)
    assert protocol == Protocol.from_seed(
        values["seed"],
        n_seeds=values["n_seeds"],
        n_pairs=values["n_pairs"],
        n_probes=values["n_probes"],
        n_boot=values["n_boot"],
        probe_evidence=values["probe_evidence"],
    )
    notebook_estimator = ECC(
        n_clusters=values["n_clusters"],
        lam=values["lam"],
        temperature=values["temperature"],
        max_iter=values["max_iter"],
    )
    assert prototype_parameters(estimator) == prototype_parameters(notebook_estimator)
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    assert "Protocol.from_seed(" in code and "results.run_ecc(" in code


def test_run_ecc_fits_a_clone_of_the_prototype_with_the_protocol_seed(ecc_result):
    fitted = ecc_result.first.fitted["ecc"]
    expected = ECC(n_clusters=3, max_iter=20, random_state=1).get_params()
    assert fitted.get_params() == expected and fitted is not ecc_result.estimator
    assert not hasattr(ecc_result.estimator, "theta_")  # the prototype itself stays unfitted


def test_tie_tolerance_of_the_protocol_reaches_the_pair_draw(tiny):
    found = run_ecc(
        tiny.queries,
        tiny.outcomes,
        tiny.embeddings,
        protocol=Protocol(seeds=(1,), n_boot=20, tie_tolerance=0.25),
        estimator=ECC(n_clusters=2, max_iter=5),
        methods=("global", "ecc"),
    )
    assert found.first.params["tie_tolerance"] == 0.25
    assert found.to_metrics(dataset="tiny")["tie_tolerance"] == 0.25


# --------------------------------------------------------------------------------------------------
# item 2: typed results, one producer


def test_run_ecc_is_run_seeds_with_the_same_settings(tiny, ecc_result):
    multi = run_seeds(
        tiny.queries,
        tiny.outcomes,
        tiny.embeddings,
        protocol=Protocol(seeds=(1, 2), n_boot=50),
        estimator=ECC(n_clusters=3, max_iter=20),
        methods=METHODS,
        routing=True,
    )
    for old, new in zip(multi.results, ecc_result.multi.results, strict=True):
        assert old.gain == new.gain and old.ci95 == new.ci95 and old.nll == new.nll
        assert old.gain_disjoint == new.gain_disjoint
    assert multi.routing == ecc_result.multi.routing
    summary = multi.summary()
    payload = ecc_result.to_dict()
    assert payload["gain_mean"] == summary["gain_mean"]
    assert payload["routing"]["per_seed"] == summary["routing_per_seed"]
    assert payload["routing"]["mean_sd_over_seeds"] == summary["routing_mean_sd"]
    assert payload["seeds"] == [1, 2]


def test_ecc_to_metrics_follows_the_schema(ecc_result):
    metrics = ecc_result.to_metrics(dataset="tiny")
    validate_section("ecc", metrics, strict=True)
    assert metrics["seeds"] == [1, 2]
    assert set(metrics["ranking_quality_gain"]) == {"ecc", "emb_only", "comp_only"}
    assert set(metrics["routing"]) >= {"no_probe", "probe"}
    assert metrics["gain_vs_probes"] == {} and metrics["leak_free"] is None
    assert metrics["n_scored_pairs"] == ecc_result.first.n_scored


def test_run_dars_metrics_follow_the_schema(tiny):
    found = run_dars(tiny.outcomes, n_draws=50, n_boot=50, seed=1)
    assert found.skipped is None and found.headline_side == "both"
    metrics = found.to_metrics(dataset="tiny")
    validate_section("dars", metrics, strict=True)
    headline = found.diagnostics["both"].summary["winner_flip_rate"]
    assert metrics["winner_flip_rate"] == pytest.approx(headline, rel=1e-9)  # JSON: 10 digits
    assert metrics["winner_flip_rate_side"] == "both"


def test_run_dars_with_the_cli_settings_equals_dars_summary(tiny):
    assert run_dars(tiny.outcomes, n_draws=50, seed=2).to_dict() == dars_summary(
        tiny.outcomes, draws=50, seed=2
    )


def test_dars_metrics_without_repeats_say_why_they_were_skipped(tiny):
    single = tiny.outcomes.drop_duplicates(["query_id", "model"])
    single = single[["query_id", "model", "score"]]
    found = run_dars(single, n_draws=20, n_boot=20)
    metrics = found.to_metrics(dataset="single")
    assert metrics["dataset"] == "single" and isinstance(metrics["skipped"], str)
    assert set(metrics) == {"dataset", "skipped"}
    validate_section("dars", metrics, strict=True)


# --------------------------------------------------------------------------------------------------
# item 3: the metrics contract


def test_the_schema_is_versioned_and_valid_json_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = metrics_schema()
    assert schema_version().count(".") == 2
    jsonschema.Draft202012Validator.check_schema(schema)


def _every_property(node, path=""):
    if isinstance(node, dict):
        for key, sub in node.get("properties", {}).items():
            yield f"{path}.{key}".lstrip("."), sub
            yield from _every_property(sub, f"{path}.{key}")
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            yield from _every_property(extra, f"{path}.*")


def test_every_key_of_the_schema_has_a_type_unit_and_meaning():
    schema = metrics_schema()
    missing = []
    for section in ("ecc", "dars", "routing", "tour"):
        for key, node in _every_property(schema["properties"][section], section):
            if "$ref" in node or "anyOf" in node:
                continue  # described where it is defined (and a description is still required)
            if not {"type", "unit", "description"} <= set(node):
                missing.append(key)
    assert not missing, missing


def test_record_metrics_refuses_a_wrong_type_naming_the_key(tmp_path, ecc_result, caplog):
    run = run_folder.run_context(tmp_path / "run")
    metrics = ecc_result.to_metrics(dataset="tiny")
    run_metrics.record_metrics(run, "ecc", metrics)  # the producer's output is accepted
    bad = {**metrics, "n_queries": "many"}
    with pytest.raises(MetricsSchemaError, match=r"ecc\.n_queries: expected integer, got string"):
        run_metrics.record_metrics(run, "ecc", bad)
    # nothing was written: the fragment still holds the good numbers
    stored = json.loads((run.metrics_dir / "ecc.json").read_text())["values"]
    assert stored["n_queries"] == metrics["n_queries"]
    gains = {**metrics, "ranking_quality_gain": {"ecc": "high"}}
    with pytest.raises(MetricsSchemaError, match=r"ecc\.ranking_quality_gain\.ecc"):
        run_metrics.record_metrics(run, "ecc", gains)
    # a key the schema does not describe is recorded with a warning naming it; strict
    # validation (the tests' reading of the producers' output) refuses it
    with caplog.at_level("WARNING", logger="ecc_lib.metrics_schema"):
        run_metrics.record_metrics(run, "ecc", {**metrics, "typo_gain": 1.0})
    assert "ecc.typo_gain" in caplog.text
    with pytest.raises(MetricsSchemaError, match=r"ecc\.typo_gain: unknown key"):
        validate_section("ecc", {**metrics, "typo_gain": 1.0}, strict=True)
    interval = {**metrics, "probe_leak_share_mean_sd": [0.5]}
    with pytest.raises(MetricsSchemaError, match="at least 2 items"):
        run_metrics.record_metrics(run, "ecc", interval)


def test_the_merge_into_metrics_json_is_validated(tmp_path):
    from ecc_lib.runs.provenance import write_metrics

    run = run_folder.run_context(tmp_path / "run")
    run_metrics.record_metrics(run, "dars", {"dataset": "x", "skipped": "no repeats"})
    path = write_metrics(run)
    validate_metrics(json.loads(path.read_text()))
    # a fragment written behind the recorder's back is caught at the merge
    (run.metrics_dir / "dars.json").write_text(
        json.dumps({"values": {"dataset": 3, "skipped": None}, "parameters": {}})
    )
    with pytest.raises(MetricsSchemaError, match=r"dars\.dataset: expected string"):
        write_metrics(run)


def test_units_come_from_the_schema():
    assert metric_unit("ecc.ranking_quality_gain.ecc") == "pct_nll"
    assert metric_unit("ecc.ranking_quality_gain_ci95.human") == "pct_nll"
    assert metric_unit("ecc.gain_differences.ecc_minus_human.estimate") == "pp"
    assert metric_unit("ecc.nll.global") == "nats"
    assert metric_unit("dars.winner_flip_rate") == "share"
    assert metric_unit("dars.by_side.both.mean_sigma") == "score"
    assert metric_unit("routing.headline.utility.kNN (DARS)") == "score"
    assert metric_unit("ecc.n_test") == "count"
    assert "disjoint" in metric_description("ecc.ranking_quality_gain_disjoint")
    with pytest.raises(KeyError, match="does not describe"):
        metric_unit("ecc.no_such_key")


def test_own_validator_agrees_with_jsonschema(ecc_result, tiny):
    jsonschema = pytest.importorskip("jsonschema")
    schema = metrics_schema()
    validator = jsonschema.Draft202012Validator(schema)
    good = {
        "ecc": ecc_result.to_metrics(dataset="tiny"),
        "dars": run_dars(tiny.outcomes, n_draws=20, n_boot=20).to_metrics(dataset="tiny"),
        "parameters": {"ecc": {"seed": 1}},
    }
    assert schema_errors(good, schema, "", schema) == []  # strict by default, as jsonschema
    assert not list(validator.iter_errors(good))
    for broken in (
        {**good, "ecc": {**good["ecc"], "seeds": ["one"]}},
        {**good, "dars": {**good["dars"], "winner_flip_rate_side": "sideways"}},
        {**good, "dars": {"dataset": "x"}},  # "skipped" is required
        {**good, "ecc": {**good["ecc"], "ecc_converged": 1}},
        {**good, "extra_section": [1, 2]},  # an unknown section must still be a mapping
    ):
        assert schema_errors(broken, schema, "", schema)
        assert list(validator.iter_errors(broken))


# --------------------------------------------------------------------------------------------------
# item 6: declared public names


def test_every_declared_public_name_exists():
    missing, without_all = [], []
    for info in pkgutil.walk_packages(ecc_lib.__path__, "ecc_lib."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # a module of a missing extra
            continue
        names = getattr(module, "__all__", None)
        if names is None:
            if info.ispkg:
                without_all.append(info.name)
            continue
        missing += [f"{info.name}.{n}" for n in names if not hasattr(module, n)]
        assert len(set(names)) == len(names), f"{info.name}.__all__ repeats a name"
    assert not missing, missing
    assert not without_all, f"subpackages without __all__: {without_all}"


def test_ecc_metrics_record_what_ecc_cv_chose_per_seed():
    from ecc_lib.metrics_schema import validate_section
    from ecc_lib.protocol.results import run_ecc
    from ecc_lib.protocol.settings import Protocol
    from ecc_lib.synthetic import make_capability_data

    data = make_capability_data(n_queries=240, random_state=1)
    found = run_ecc(
        data.queries,
        data.outcomes,
        data.embeddings,
        protocol=Protocol(seeds=(0, 1), n_boot=50),
        estimator=ECC(n_clusters=3, max_iter=20),
        methods=("global", "ecc", "ecc_cv"),
    )
    metrics = found.to_metrics(dataset="planted")
    chosen = metrics["ecc_cv_best_params"]
    assert len(chosen) == 2 and all(c["family"] for c in chosen)
    validate_section("ecc", metrics, strict=True)
