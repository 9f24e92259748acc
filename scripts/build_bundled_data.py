"""Rebuild the bundled datasets in ``data/`` from the original public files.

The originals are the unchanged copies described in each folder's SOURCE.md (LLMRouter, Re2 and
RouteLLM repositories at pinned commits). Run from the repository root::

    python scripts/build_bundled_data.py --source ../shared/data

It writes, for each dataset, ``data/<name>/queries.parquet`` and ``data/<name>/outcomes.parquet`` in
the ecc_lib data model, the origin's LICENSE, and ``data/<name>/BUILD.json`` with what was kept and
dropped (and why). Then ``python scripts/build_embedding_cache.py`` refreshes the shipped embeddings.
Only the build needs the originals; ecc_lib reads the Parquet files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ecc_lib.data.schema import validate_outcomes, validate_queries  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]

RE2_FILES = {
    # file name: (benchmark, model, read_times) as mapped by the repository's results/README.md
    "gsm_topp1.0_temp0.0_majority1_20230828_141934.jsonl": ("gsm8k", "text-davinci-003", 1),
    "gsm_topp1.0_temp0.0_majority1_20230828_142302.jsonl": ("gsm8k", "text-davinci-003", 2),
    "gsm_topp1.0_temp0.0_majority1_20230828_1157.jsonl": ("gsm8k", "gpt-3.5-turbo", 1),
    "gsm_topp1.0_temp0.0_majority1_20230828_1200.jsonl": ("gsm8k", "gpt-3.5-turbo", 2),
    "gsm_gpt-4o-mini-2024-07-18_topp1.0_temp0.0_majority1_readtimes1_20240926_221724.jsonl": (
        "gsm8k",
        "gpt-4o-mini-2024-07-18",
        1,
    ),
    "gsm_gpt-4o-mini-2024-07-18_topp1.0_temp0.0_majority1_readtimes2_20240926_222057.jsonl": (
        "gsm8k",
        "gpt-4o-mini-2024-07-18",
        2,
    ),
    "commonsenseqa_topp1.0_temp0.0_majority1_readtimes1_20230912_002205.jsonl": (
        "commonsense_qa",
        "text-davinci-003",
        1,
    ),
    "commonsenseqa_topp1.0_temp0.0_majority1_readtimes2_20230912_002237.jsonl": (
        "commonsense_qa",
        "text-davinci-003",
        2,
    ),
    "commonsenseqa_topp1.0_temp0.0_majority1_readtimes1_20230912_002124.jsonl": (
        "commonsense_qa",
        "gpt-3.5-turbo",
        1,
    ),
    "commonsenseqa_topp1.0_temp0.0_majority1_readtimes2_20230912_002132.jsonl": (
        "commonsense_qa",
        "gpt-3.5-turbo",
        2,
    ),
    "commonsenseqa_gpt-4o-mini-2024-07-18_topp1.0_temp0.0_majority1_readtimes1_20240926_224916.jsonl": (
        "commonsense_qa",
        "gpt-4o-mini-2024-07-18",
        1,
    ),
    "commonsenseqa_gpt-4o-mini-2024-07-18_topp1.0_temp0.0_majority1_readtimes2_20240926_225049.jsonl": (
        "commonsense_qa",
        "gpt-4o-mini-2024-07-18",
        2,
    ),
}
# variant_id of each (prompt style, read times); 0 is the original prompt (direct answer, read once)
RE2_VARIANTS = {("vanilla", 1): 0, ("cot", 1): 1, ("vanilla", 2): 2, ("cot", 2): 3}

ATTRIBUTIONS = {
    "dcrouter": (
        "Derived from LLMRouter (https://github.com/ulab-uiuc/LLMRouter, commit 4e7a7969), "
        "Copyright (c) 2024 U Lab @UIUC, MIT licence. Queries come from public benchmarks that keep "
        "their own terms (GPQA's authors ask that its examples not be posted in plain text online)."
    ),
    "re2": (
        "Derived from Re2 / Rereading-LLM-Reasoning "
        "(https://github.com/Tebmer/Rereading-LLM-Reasoning, commit 0dbad50b), Apache-2.0. "
        "GSM8K (MIT) and CommonsenseQA keep their own licences."
    ),
    "mmlu2": (
        "Derived from RouteLLM (https://github.com/lm-sys/RouteLLM, commit 0b64fdaf), Apache-2.0. "
        "MMLU keeps its own licence (MIT)."
    ),
}


def stable_id(prefix: str, text: str) -> str:
    """A short id derived from the text, so it survives reordering of the source files."""
    return f"{prefix}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]}"


def build_dcrouter(source: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """LLMRouter's dcrouter split: train + test, deduplicated by question text."""
    root = source / "llmrouter-dcrouter" / "data"
    train = json.loads((root / "dcrouter_preprocessed" / "train.json").read_text())
    test = json.loads((root / "dcrouter_preprocessed" / "test.json").read_text())
    task_by_split: dict[str, dict[str, str]] = {}
    for split in ("train", "test"):
        path = root / "example_data" / "query_data" / f"default_query_{split}.jsonl"
        frame = pd.read_json(path, lines=True)
        # the first task name of a text in its own split file (6 texts carry two names)
        task_by_split[split] = dict(
            frame.drop_duplicates("query", keep="first")[["query", "task_name"]].to_numpy()
        )
    prices = json.loads((root / "example_data" / "llm_candidates" / "default_llm.json").read_text())

    rows = [dict(r, split="train") for r in train] + [dict(r, split="test") for r in test]
    frame = pd.DataFrame(rows)
    first = ~frame["question"].duplicated(keep="first")
    repeated = frame.loc[~first]
    kept_scores = frame.loc[first].set_index("question")["scores"]
    disagreeing = int(
        sum(kept_scores[q] != s for q, s in zip(repeated["question"], repeated["scores"]))
    )
    frame = frame.loc[first].reset_index(drop=True)
    frame["query_id"] = [stable_id("dcr", q) for q in frame["question"]]
    frame["category"] = [
        task_by_split[split].get(q, task_by_split["train" if split == "test" else "test"].get(q))
        for q, split in zip(frame["question"], frame["split"])
    ]
    queries = pd.DataFrame(
        {
            "query_id": frame["query_id"],
            "text": frame["question"],
            "category": frame["category"],
            "source": frame["split"],
        }
    )
    scores = pd.DataFrame(list(frame["scores"]), index=frame["query_id"])
    outcomes = (
        scores.rename_axis("query_id")
        .reset_index()
        .melt(id_vars="query_id", var_name="model", value_name="score")
    )
    # dcrouter has no per-query spend: the cost column is the model's list price
    # (mean of input and output price, USD per 1M tokens), a per-model proxy.
    outcomes["cost"] = [
        (prices[m]["input_price"] + prices[m]["output_price"]) / 2 for m in outcomes["model"]
    ]
    outcomes["variant_id"] = 0
    outcomes["decode_id"] = 0
    outcomes["observation_type"] = "original"
    report = {
        "rows_in_files": len(rows),
        "test_rows_repeating_a_train_question_dropped": int(len(repeated)),
        "of_which_with_different_scores": disagreeing,
        "queries": len(queries),
        "cost": "model list price, mean of input and output USD per 1M tokens (not per-query spend)",
    }
    return queries, outcomes, report


def _re2_text(record: dict, benchmark: str) -> str:
    if benchmark == "gsm8k":
        return str(record["input"])
    question = record["question"]
    options = "\n".join(f"{c['label']}. {c['text']}" for c in question["choices"])
    return f"{question['stem']}\n{options}"


def build_re2(source: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Re2 results: 3 models x 4 prompt variants on GSM8K and CommonsenseQA."""
    root = source / "re2-rereading" / "results"
    query_rows: dict[str, dict] = {}
    outcome_rows = []
    duplicate_lines = 0
    duplicate_lines_disagreeing = 0
    missing_scores = 0
    for name, (benchmark, model, read_times) in RE2_FILES.items():
        seen: dict[str, tuple] = {}
        for line in (root / name).read_text().splitlines():
            record = json.loads(line)
            prefix = "gsm8k" if benchmark == "gsm8k" else "csqa"
            query_id = f"{prefix}-{record['id']}"
            scores = tuple((record.get(style) or {}).get("score") for style in ("vanilla", "cot"))
            if query_id in seen:
                duplicate_lines += 1
                duplicate_lines_disagreeing += int(seen[query_id] != scores)
                continue
            seen[query_id] = scores
            query_rows.setdefault(
                query_id,
                {
                    "query_id": query_id,
                    "text": _re2_text(record, benchmark),
                    "category": benchmark,
                    "source": f"re2/{benchmark}",
                },
            )
            for style, score in zip(("vanilla", "cot"), scores):
                if score is None or score == "":
                    missing_scores += 1
                    continue
                variant = RE2_VARIANTS[(style, read_times)]
                outcome_rows.append(
                    {
                        "query_id": query_id,
                        "model": model,
                        "score": float(score),
                        "variant_id": variant,
                        "decode_id": 0,
                        "observation_type": "original" if variant == 0 else "rewrite",
                        "prompt_style": style,
                        "read_times": read_times,
                    }
                )
    queries = pd.DataFrame(list(query_rows.values()))
    outcomes = pd.DataFrame(outcome_rows)
    report = {
        "duplicate_id_lines_dropped_keeping_first": duplicate_lines,
        "of_which_with_different_scores": duplicate_lines_disagreeing,
        "missing_scores_dropped": missing_scores,
        "variants": {
            "0": "direct answer, question read once (original)",
            "1": "chain of thought, read once",
            "2": "direct answer, question read twice (Re2)",
            "3": "chain of thought, read twice (Re2)",
        },
        "decodes": "one per variant, temperature 0",
        "cost": "none in the source",
    }
    return queries, outcomes, report


def build_mmlu2(source: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """RouteLLM's MMLU outcomes: 57 subjects x 2 models (GPT-4-1106, Mixtral-8x7B)."""
    root = source / "routellm-evals" / "routellm" / "evals" / "mmlu"
    contaminated = set(pd.read_json(root / "contaminated_prompts.jsonl", lines=True).iloc[:, 0])
    frames = []
    for path in sorted((root / "responses").glob("mmlu_*.csv")):
        subject = path.stem.removeprefix("mmlu_")
        frame = pd.read_csv(path)
        frame["query_id"] = [f"mmlu-{subject}-{i:04d}" for i in range(len(frame))]
        frame["category"] = subject
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    models = [c for c in frame.columns if c not in ("prompt", "query_id", "category")]
    queries = pd.DataFrame(
        {
            "query_id": frame["query_id"],
            "text": frame["prompt"],
            "category": frame["category"],
            "source": "routellm/mmlu",
            "routellm_contaminated": frame["prompt"].isin(contaminated),
        }
    )
    outcomes = frame.melt(
        id_vars="query_id", value_vars=models, var_name="model", value_name="score"
    )
    missing = int(outcomes["score"].isna().sum())
    outcomes = outcomes.dropna(subset=["score"])
    outcomes["score"] = outcomes["score"].astype(float)
    outcomes["variant_id"] = 0
    outcomes["decode_id"] = 0
    outcomes["observation_type"] = "original"
    report = {
        "missing_scores_dropped": missing,
        "queries_marked_routellm_contaminated": int(queries["routellm_contaminated"].sum()),
        "cost": "none in the source",
    }
    return queries, outcomes, report


BUILDERS = {"dcrouter": build_dcrouter, "re2": build_re2, "mmlu2": build_mmlu2}
LICENSES = {
    "dcrouter": "llmrouter-dcrouter/LICENSE",
    "re2": "re2-rereading/LICENSE.txt",
    "mmlu2": "routellm-evals/LICENSE",
}


def build(source: Path, out: Path, names: list[str]) -> None:
    """Build each named dataset from ``source`` into ``out/<name>/``."""
    for name in names:
        queries, outcomes, report = BUILDERS[name](source)
        queries = validate_queries(queries, source=name)
        outcomes = validate_outcomes(outcomes, queries, source=name)
        target = out / name
        target.mkdir(parents=True, exist_ok=True)
        queries.to_parquet(target / "queries.parquet", index=False, compression="zstd")
        outcomes.to_parquet(target / "outcomes.parquet", index=False, compression="zstd")
        shutil.copyfile(source / LICENSES[name], target / "LICENSE")
        report.update(
            {
                "dataset": name,
                "attribution": ATTRIBUTIONS[name],
                "n_queries": int(len(queries)),
                "n_models": int(outcomes["model"].nunique()),
                "n_observations": int(len(outcomes)),
                "n_categories": int(queries["category"].nunique()),
            }
        )
        (target / "BUILD.json").write_text(json.dumps(report, indent=2) + "\n")
        print(json.dumps(report))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "data")
    parser.add_argument("--only", nargs="*", choices=sorted(BUILDERS), default=sorted(BUILDERS))
    args = parser.parse_args(argv)
    if not args.source.is_dir():
        parser.error(f"source folder {args.source} not found (the originals are in shared/data)")
    build(args.source, args.out, args.only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
