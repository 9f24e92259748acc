"""Issue 33, one fact in one place: every table file is read by ``ecc_lib.data.tables.read_table``
(the queries file of collection and the bundled datasets too), with the readers' own options."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from ecc_lib import paths
from ecc_lib.collect import queries as collect_queries
from ecc_lib.collect.queries import read_queries_file
from ecc_lib.data import sources, tables
from ecc_lib.data.schema import DataValidationError, validate_queries


@pytest.mark.parametrize("module", [collect_queries, sources])
def test_no_module_keeps_its_own_table_reader(module):
    text = Path(module.__file__).read_text(encoding="utf-8")
    assert not re.search(r"\bpd\.read_(csv|parquet|json|table|pickle)\(", text)


def test_the_queries_file_goes_through_the_one_reader(tmp_path, monkeypatch):
    path = tmp_path / "queries.csv"
    path.write_text("query_id,text,category\n001,What is 2+2?,NA\n")
    seen = []
    real = tables.read_table

    def spy(file, **kwargs):
        seen.append((Path(file), kwargs))
        return real(file, **kwargs)

    monkeypatch.setattr(collect_queries, "read_table", spy)
    frame = read_queries_file(path)
    assert seen and seen[0][0] == path and "csv_options" in seen[0][1]
    # text columns stay text: "001" is not 1 and a category named NA keeps its name
    assert frame["query_id"].tolist() == ["001"] and frame["category"].tolist() == ["NA"]


def test_the_queries_csv_reads_only_empty_cells_as_missing(tmp_path):
    path = tmp_path / "queries.tsv"
    path.write_text("query_id\ttext\tpassage\tmax_tokens\nq1\t hello\t\t12\n")
    frame = read_queries_file(path)
    assert frame["text"].tolist() == [" hello"]  # no skipping of spaces after the separator
    assert frame["passage"].isna().all()
    bad = tmp_path / "bad.csv"
    bad.write_text("query_id,text,temperature\nq1,hi,NA\n")
    with pytest.raises(DataValidationError, match="'temperature' has an invalid value at row 0"):
        read_queries_file(bad)


def test_the_queries_reader_keeps_its_messages(tmp_path):
    with pytest.raises(FileNotFoundError, match="queries file .* does not exist"):
        read_queries_file(tmp_path / "none.csv")
    other = tmp_path / "queries.json"
    other.write_text("[]")
    with pytest.raises(DataValidationError, match="queries file must end in one of"):
        read_queries_file(other)


def test_bundled_data_is_read_by_the_one_reader():
    folder = paths.data_dir() / "re2"
    queries, _ = sources.load_bundled("re2")
    direct = validate_queries(pd.read_parquet(folder / "queries.parquet"), source="re2")
    pd.testing.assert_frame_equal(queries, direct)
