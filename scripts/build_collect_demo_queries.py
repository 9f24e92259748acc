"""Build ``data/collect-demo/queries.jsonl``: 20 bundled questions with reference answers.

The bundled ``data/re2`` queries carry no answers; the unchanged Re2 originals (``../shared/data``,
the same source ``scripts/build_bundled_data.py`` reads) do. This script draws 20 CommonsenseQA
questions of ``data/re2`` with ``np.random.default_rng(0)``, looks their answers up in the originals,
and writes ``query_id, text, category, answer, choices, scorer`` (the options as ``choices``, so that
rewrites change only the question stem).

No GSM8K questions: asked to paraphrase a word problem, SmolLM2-135M (the demo's local model) mostly
solves it or drops a number, and the rewrite refusal rules turn those away. Measured on the 10
shortest GSM8K questions: 12 calls each gave no question its 3 rewrites, and 6 calls each with four
prompt designs accepted 3-13 of 60, several of which changed the problem. With those questions the
demo's store stayed at 72.5% of its records.
Run it only to rebuild the shipped file::

    python scripts/build_collect_demo_queries.py --source ../shared/data
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CSQA_FILE = "commonsenseqa_gpt-4o-mini-2024-07-18_topp1.0_temp0.0_majority1_readtimes1_20240926_224916.jsonl"
N_QUESTIONS = 20


def build(source: Path, out: Path) -> pd.DataFrame:
    """Write the demo queries; returns them."""
    queries = pd.read_parquet(ROOT / "data" / "re2" / "queries.parquet")
    results = source / "re2-rereading" / "results"
    csqa = {f"csqa-{r['id']}": r for r in map(json.loads, (results / CSQA_FILE).open())}

    rows = []
    common = queries[(queries["category"] == "commonsense_qa")]
    common = common[common["query_id"].isin(list(csqa))].sort_values("query_id", kind="stable")
    picked = np.random.default_rng(0).choice(len(common), size=N_QUESTIONS, replace=False)
    for query_id in common["query_id"].iloc[np.sort(picked)]:
        record = csqa[query_id]
        question = record["question"]
        rows.append(
            {
                "query_id": query_id,
                "text": question["stem"],
                "category": "commonsense_qa",
                "answer": record["answerKey"],
                "choices": [c["text"] for c in question["choices"]],
                "scorer": "multiple_choice",
            }
        )
    frame = pd.DataFrame(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "data" / "collect-demo" / "queries.jsonl"
    )
    args = parser.parse_args()
    frame = build(args.source, args.out)
    print(f"{args.out}: {len(frame)} queries")
    print(frame.groupby("category").size().to_string())


if __name__ == "__main__":
    main()
