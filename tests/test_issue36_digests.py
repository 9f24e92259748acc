"""Issue 36 item 11: a dataset edited between ``--only`` runs into one folder is refused instead of
mixing two versions in one report; ``run.json`` records the data digests per notebook."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ecc_lib.cli import main
from ecc_lib.runs import digests, pipeline

sys.path.insert(0, str(Path(__file__).parent))
from test_pipeline import write_notebook  # noqa: E402


def _dataset(tmp_path, score="1"):
    data = tmp_path / "mydata"
    data.mkdir(exist_ok=True)
    (data / "outcomes.csv").write_text(f"query_id,model,score\nq1,a,{score}\n")
    return str(data)


def test_check_data_digests_records_refuses_and_accepts_a_full_rerun(tmp_path):
    data = _dataset(tmp_path)
    first = digests.check_data_digests(tmp_path, {}, {"01_data": [data], "05_report": []})
    assert set(first["01_data"][data]) == {"mydata/outcomes.csv"} and first["05_report"] == {}
    previous = {digests.DATA_DIGESTS_KEY: first}
    same = digests.check_data_digests(tmp_path, previous, {"02_more": [data]})
    assert same["02_more"] == same["01_data"] == first["01_data"]  # 01 kept, 02 added
    _dataset(tmp_path, score="0")  # edited
    with pytest.raises(
        digests.DatasetChangedError, match=r"changed since notebook\(s\) \['01_data'\]"
    ):
        digests.check_data_digests(tmp_path, {digests.DATA_DIGESTS_KEY: same}, {"02_more": [data]})
    again = digests.check_data_digests(
        tmp_path, {digests.DATA_DIGESTS_KEY: same}, {"01_data": [data], "02_more": [data]}
    )
    assert again["01_data"] == again["02_more"] != first["01_data"]
    assert again["05_report"] == {}
    # a dataset without files (downloaded on demand, a collection) is not compared
    assert digests.check_data_digests(tmp_path, previous, {"02_more": ["collected"]})


def test_run_only_refuses_an_edited_dataset_before_anything_runs(tmp_path, capsys):
    pytest.importorskip("papermill")
    notebooks = tmp_path / "notebooks"
    for stem in ("01_data", "02_more"):
        write_notebook(
            notebooks / f"{stem}.ipynb",
            'run_dir: str = ""  # run folder\ndataset: str = "a"  # dataset',
            "print(dataset)",
        )
    data = _dataset(tmp_path)
    out = tmp_path / "run"
    pipeline.run_pipeline(out=out, notebooks_dir=notebooks, progress=False, dataset=data, only="01")
    assert set(json.loads((out / "run.json").read_text())[digests.DATA_DIGESTS_KEY]) == {"01_data"}
    _dataset(tmp_path, score="0")  # edited
    before = (out / "run.json").read_bytes()
    status = main(
        ["run", "--out", str(out), "--notebooks", str(notebooks), "--dataset", data,
         "--only", "02", "--no-progress"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert status == 1 and "Traceback" not in err
    assert "changed since notebook(s) ['01_data']" in err and "mydata/outcomes.csv" in err
    assert "--only 01,02" in err
    assert (out / "run.json").read_bytes() == before
    assert not (out / "02_more.ipynb").exists()
