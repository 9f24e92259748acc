"""Validator errors, each from a real malformed file read through the loaders."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ecc_lib.dars.distributions import capability_distributions
from ecc_lib.data.comparisons import Comparisons
from ecc_lib.data.observations import repeated_observations
from ecc_lib.data.schema import (
    DataValidationError,
    QueryModelAxes,
    validate_outcomes,
    validate_queries,
)
from ecc_lib.data.tables import read_outcomes, read_queries
from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes

QUERIES_CSV = "query_id,text,category\nq1,What is 2+2?,math\nq2,Capital of France?,geo\n"
GOOD_OUTCOMES = "query_id,model,score\nq1,a,1\nq1,b,0\nq2,a,0.5\nq2,b,1\n"


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def queries(tmp_path):
    return read_queries(write(tmp_path, "queries.csv", QUERIES_CSV))


def test_good_files_round_trip(tmp_path, queries):
    outcomes = read_outcomes(write(tmp_path, "outcomes.csv", GOOD_OUTCOMES), queries)
    assert list(outcomes.columns[:7]) == [
        "query_id",
        "model",
        "score",
        "cost",
        "variant_id",
        "decode_id",
        "observation_type",
    ]
    assert outcomes["variant_id"].eq(0).all() and outcomes["decode_id"].eq(0).all()
    assert len(outcomes) == 4
    assert queries["source"].isna().all()


@pytest.mark.parametrize(
    ("body", "needles"),
    [
        ("query_id,model\nq1,a\n", ["outcomes.csv", "missing column", "score"]),
        (
            "query_id,model,score\nq1,a,1\nq1,b,1.5\n",
            ["outcomes.csv", "'score'", "row 1", "[0, 1]"],
        ),
        ("query_id,model,score\nq1,a,1\nq2,b,\n", ["outcomes.csv", "'score'", "NaN", "row 1"]),
        ("query_id,model,score\nq1,a,x\nq1,b,1\n", ["outcomes.csv", "'score'", "row 0"]),
        (
            "query_id,model,score\nq1,a,1\nq1,b,0\nq1,a,0\n",
            ["outcomes.csv", "duplicate", "row 2"],
        ),
        ("query_id,model,score\nq1,a,1\nq9,b,0\n", ["outcomes.csv", "not in the queries", "row 1"]),
        ("query_id,model,score\nq1,a,1\nq2,a,0\n", ["outcomes.csv", "1 model", "at least 2"]),
        (
            "query_id,model,score,cost\nq1,a,1,0.1\nq1,b,0,-2\n",
            ["outcomes.csv", "'cost'", "negative", "row 1"],
        ),
    ],
    ids=[
        "missing-column",
        "score-range",
        "score-nan",
        "score-text",
        "duplicate",
        "unknown-query",
        "one-model",
        "negative-cost",
    ],
)
def test_outcome_errors_name_file_column_row(tmp_path, queries, body, needles):
    path = write(tmp_path, "outcomes.csv", body)
    with pytest.raises(DataValidationError) as info:
        read_outcomes(path, queries)
    for needle in needles:
        assert needle in str(info.value)


def test_model_without_observations_is_an_error(tmp_path):
    # a wide table whose model column is entirely empty
    path = write(tmp_path, "wide.csv", "query_id,text,a,b,c\nq1,x,1,0,\nq2,y,0,1,\n")
    with pytest.raises(DataValidationError, match=r"wide.csv.*\['c'\].*no observations"):
        read_outcomes(path, model_columns=["a", "b", "c"])


def test_model_without_observations_categorical():
    frame = pd.DataFrame(
        {
            "query_id": ["q1", "q1"],
            "model": pd.Categorical(["a", "b"], categories=["a", "b", "c"]),
            "score": [1.0, 0.0],
        }
    )
    with pytest.raises(DataValidationError, match=r"\['c'\] have no observations"):
        validate_outcomes(frame)


def test_query_errors(tmp_path):
    path = write(tmp_path, "q.csv", "query_id,text\nq1,a\nq1,b\n")
    with pytest.raises(DataValidationError, match=r"q.csv.*duplicate.*row 1"):
        read_queries(path)
    path = write(tmp_path, "q2.csv", "query_id\nq1\n")
    with pytest.raises(DataValidationError, match=r"q2.csv.*missing column.*text"):
        read_queries(path)
    with pytest.raises(DataValidationError, match="DataFrame"):
        validate_queries([1, 2, 3])


def test_unknown_extension_and_missing_file(tmp_path):
    with pytest.raises(DataValidationError, match="unknown file type"):
        read_outcomes(write(tmp_path, "outcomes.xlsx", "x"))
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        read_outcomes(tmp_path / "nope.csv")


@pytest.mark.parametrize(
    ("table", "column"),
    [("queries", "query_id"), ("queries", "text"), ("outcomes", "query_id"), ("outcomes", "model")],
)
def test_missing_ids_name_table_column_count_and_row(table, column):
    queries = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "text": ["a", "b", "c"]})
    outcomes = pd.DataFrame(
        {"query_id": ["q1", "q1", "q2", "q2"], "model": ["a", "b", "a", "b"], "score": 1.0}
    )
    frame = (queries if table == "queries" else outcomes).astype(object)
    frame.loc[[1, 2], column] = None
    validate = validate_queries if table == "queries" else validate_outcomes
    with pytest.raises(DataValidationError) as info:
        validate(frame, source="t.csv")
    message = str(info.value)
    for needle in (f"t.csv: {table} column '{column}'", "has 2 missing", "first at row 1"):
        assert needle in message


def test_query_model_axes_count_and_check_masks():
    data = make_repeated_outcomes(n_queries=6, n_models=3, n_rewrites=2, n_decodes=1)
    obs = repeated_observations(data.outcomes)
    distributions = capability_distributions(obs)
    comparisons = Comparisons(
        query=np.array([0, 5]),
        model_a=np.array([0, 1]),
        model_b=np.array([2, 0]),
        y=np.array([1.0, 0.5]),
        query_ids=obs.query_ids,
        models=obs.models,
    )
    for container in (obs, distributions, comparisons):
        assert isinstance(container, QueryModelAxes)
        assert (container.n_queries, container.n_models) == (6, 3)
    mask = np.arange(6) % 3 != 1
    for container in (obs, distributions, comparisons):
        with pytest.raises(ValueError, match=r"query_mask must have shape \(6,\)"):
            container.select_queries(np.ones(5, dtype=bool))
        part = container.select_queries(mask)
        assert type(part) is type(container)
        assert part.query_ids.tolist() == obs.query_ids[mask].tolist()
        assert part.models == obs.models
    assert comparisons.select_queries(mask).query.tolist() == [0, 3]  # re-coded: query 5 is 4th
