"""Issue 36, silent wrong results (items 8-12): every method x probe strategy runs, the embedding
cache checks what it finds, model names are normalised, data digests per notebook, and the small
validations."""

from __future__ import annotations

import logging
import unicodedata
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

from ecc_lib.data import tables
from ecc_lib.data.schema import DataValidationError, id_strings, validate_outcomes
from ecc_lib.ecc.baselines import GlobalBT
from ecc_lib.ecc.estimator import ECC
from ecc_lib.protocol.active_probes import probe_temperature, probes_from_scores
from ecc_lib.protocol.data import prepare_protocol
from ecc_lib.protocol.ecc_protocol import run_protocol
from ecc_lib.protocol.methods import METHOD_FACTORIES
from ecc_lib.protocol.probes import select_probes
from ecc_lib.protocol.settings import Protocol
from ecc_lib.synthetic.capability import make_capability_data

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def tiny():
    return make_capability_data(n_queries=120, n_models=5, n_pairs=6, random_state=3)


class _ChoseGlobal(GlobalBT):
    """Stands in for an ECC-CV whose chosen candidate is the global model: ``temperature`` is an
    attribute that is ``None`` (``hasattr`` is True)."""

    @property
    def temperature(self):
        return None


# -- item 8: --probe-strategy active with a model without temperature ----------------------------


def test_probe_temperature_reads_none_and_bad_values():
    assert probe_temperature(None) is None
    assert probe_temperature(GlobalBT()) is None
    assert probe_temperature(_ChoseGlobal()) is None
    assert probe_temperature(ECC(temperature=0.1)) == pytest.approx(0.1)
    assert probe_temperature(ECC(temperature=float("nan"))) is None


def test_active_probes_of_a_model_whose_temperature_is_none(tiny):
    protocol = prepare_protocol(tiny.queries, tiny.outcomes, tiny.embeddings, n_pairs=6)
    model = _ChoseGlobal().fit(None, protocol.train)
    scores = protocol.scores[protocol.test_mask]
    probe = probes_from_scores(
        model, scores, protocol.test, n_probes=2, strategy="active", embeddings=protocol.x_test
    )
    assert len(probe) > 0
    assert np.bincount(probe.query, minlength=protocol.test.n_queries).max() <= 2
    # the same probes as the global model itself (nothing to choose: the first candidates)
    probe_m, scored, _, _ = select_probes(protocol, model, n_probes=1, probe_strategy="active")
    probe_g, scored_g, _, _ = select_probes(
        protocol, GlobalBT().fit(None, protocol.train), n_probes=1, probe_strategy="active"
    )
    np.testing.assert_array_equal(probe_m.model_a, probe_g.model_a)
    np.testing.assert_array_equal(probe_m.model_b, probe_g.model_b)
    np.testing.assert_array_equal(probe_m.query, probe_g.query)


@pytest.mark.parametrize("strategy", ["first", "random", "active"])
def test_every_method_runs_under_every_probe_strategy(tiny, strategy):
    methods = tuple(METHOD_FACTORIES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = run_protocol(
            tiny.queries,
            tiny.outcomes,
            tiny.embeddings,
            protocol=Protocol(n_pairs=6, n_boot=20, probe_strategy=strategy),
            estimator=ECC(n_clusters=3, max_iter=10),
            methods=methods,
        )
    assert set(result.nll) == set(methods)
    assert all(np.isfinite(v) for v in result.nll.values())


# -- item 10: model names that differ by Unicode form, case or whitespace --------------------------


def _long(models, n_queries=3):
    rows = [
        {"query_id": f"q{q}", "model": m, "score": float((q + i) % 2)}
        for q in range(n_queries)
        for i, m in enumerate(models)
    ]
    return pd.DataFrame(rows)


def test_model_names_are_nfc_and_stripped(caplog):
    nfd = unicodedata.normalize("NFD", "modèle")
    assert nfd != "modèle"
    frame = _long(["modèle", "gpt-4", "m3"])
    frame.loc[frame["query_id"] == "q1", "model"] = frame["model"].replace(
        {"modèle": nfd, "gpt-4": "gpt-4 \t"}
    )
    caplog.set_level(logging.INFO, logger="ecc_lib.data.schema")
    out = validate_outcomes(frame)
    assert sorted(out["model"].unique()) == ["gpt-4", "m3", "modèle"]
    assert "normalised" in caplog.text


def test_model_names_equal_up_to_case_are_warned_about(caplog):
    caplog.set_level(logging.WARNING, logger="ecc_lib.data.schema")
    out = validate_outcomes(_long(["GPT-4", "gpt-4", "m3"]))
    assert out["model"].nunique() == 3  # kept apart, but named
    assert "differ only by case" in caplog.text and "'GPT-4', 'gpt-4'" in caplog.text


def test_collect_model_specs_are_nfc():
    from ecc_lib.collect.models import parse_models

    specs = parse_models([unicodedata.normalize("NFD", "modèle "), "m2"])
    assert specs[0].label == "modèle" == specs[0].endpoint_model


# -- item 12: wide 0-100 columns, huge float ids, duplicated CSV columns ---------------------------


def test_a_wide_column_in_percent_is_a_warning_naming_it(tmp_path, caplog):
    frame = pd.DataFrame(
        {
            "query_id": ["a", "b", "c", "d"],
            "m1": [1.0, 0.0, 1.0, 0.0],
            "m2": [0.0, 1.0, 1.0, 1.0],
            "m3": [0.0, 50.0, 100.0, 75.0],
            "difficulty": [1, 3, 5, 2],
        }
    )
    caplog.set_level(logging.INFO, logger="ecc_lib.data.tables")
    _, outcomes = tables.from_wide(frame, source="wide.csv")
    assert sorted(outcomes["model"].unique()) == ["m1", "m2"]
    warnings_ = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings_) == 1
    assert "'m3'" in warnings_[0].getMessage() and "percent" in warnings_[0].getMessage()
    assert "difficulty" not in warnings_[0].getMessage()  # a small integer scale: metadata


def test_float_query_ids_beyond_int64_keep_their_value(caplog):
    ids = pd.Series([2.0**63, 2.0**64, 12.0, float(2**53 + 2)])
    out = id_strings(ids)
    assert out.tolist() == ["9223372036854775808", "18446744073709551616", "12", str(2**53 + 2)]
    assert "above 2^53" in caplog.text


def test_a_duplicated_csv_column_is_refused(tmp_path):
    path = tmp_path / "o.csv"
    path.write_text("query_id,model,score,score\nq1,m-a,1.0,0.0\nq1,m-b,0.0,1.0\n")
    with pytest.raises(DataValidationError, match=r"\['score'\] more than once"):
        tables.read_table(path)


# -- item 15: spaces after the separators ---------------------------------------------------------


def test_spaces_after_separators_are_skipped(tmp_path):
    queries = tmp_path / "q.csv"
    outcomes = tmp_path / "o.csv"
    queries.write_text("query_id, text\n" + "".join(f"q{i:04d}, question {i}\n" for i in range(20)))
    outcomes.write_text(
        "query_id, model, score\n"
        + "".join(f"q{i:04d}, {m}, {float((i + j) % 2)}\n" for i in range(20) for j, m in
                  enumerate(["m-a", "m-b"]))
    )  # fmt: skip
    frame = tables.read_queries(queries)
    assert frame["query_id"].tolist()[:2] == ["q0000", "q0001"]
    assert frame["text"].tolist()[0] == "question 0"
    long = tables.read_outcomes(outcomes, queries=frame)
    assert sorted(long["model"].unique()) == ["m-a", "m-b"]
    assert len(long) == 40


@pytest.mark.parametrize("bad", [[float("nan")], [-0.1], [1e308], [], ["x"], [True]])
def test_routing_curves_refuse_bad_lambdas(bad):
    from ecc_lib.routing_evaluation.curves import check_lambdas, curve_of_choices

    with pytest.raises(ValueError, match="lambdas"):
        check_lambdas(bad)
    with pytest.raises(ValueError, match="lambdas"):
        curve_of_choices([np.zeros(2, int)] * len(bad), None, lambdas=bad)
    assert check_lambdas([0, 0.5, 2]) == [0.0, 0.5, 2.0]
