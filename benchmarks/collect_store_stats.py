"""What a collection run cost in time: completeness, throughput and latency of a store.

Run: ``python benchmarks/collect_store_stats.py --store runs/collect-demo/store`` (after
``make collect-demo``). Prints one table per run of the store's manifest (records added, wall time,
completion tokens per second of wall time, rewrite calls and how they were read) and one table per
model (records, mean score, tokens, latency). Nothing is asserted: this is a measurement.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from ecc_lib.collect import CollectionStore, records_frame


def run_table(store: CollectionStore) -> pd.DataFrame:
    """One row per run: planned / done records, wall time, completion tokens per second."""
    records = records_frame(store)
    calls = pd.DataFrame(store.rewrite_calls())
    rows = []
    for run in store.manifest().get("runs", []):
        summary = run.get("summary") or {}
        run_id = run["run_id"]
        mine = records[records.get("run_id") == run_id] if "run_id" in records else records[:0]
        rewrites = calls[calls["run_id"] == run_id] if "run_id" in calls else calls[:0]
        tokens = float(pd.to_numeric(mine.get("completion_tokens"), errors="coerce").sum())
        tokens += float(pd.to_numeric(rewrites.get("completion_tokens"), errors="coerce").sum())
        elapsed = summary.get("elapsed_s") or np.nan
        rows.append(
            {
                "run": run_id[:23],
                "status": run.get("status"),
                "planned": summary.get("n_planned"),
                "done": summary.get("n_done"),
                "complete_%": 100.0
                * summary.get("n_done", 0)
                / max(summary.get("n_planned", 1), 1),
                "new_records": len(mine),
                "rewrite_calls": len(rewrites),
                "rewrite_json": summary.get("n_rewrite_structured"),
                "rewrite_fallback": summary.get("n_rewrite_fallback"),
                "rewrite_unusable": summary.get("n_rewrite_unusable"),
                "wall_s": elapsed,
                "completion_tokens": tokens,
                "tokens_per_s": tokens / elapsed if elapsed and elapsed > 0 else np.nan,
            }
        )
    return pd.DataFrame(rows)


def model_table(store: CollectionStore) -> pd.DataFrame:
    """One row per model: records, mean score, unscored, tokens and latency."""
    records = records_frame(store)
    if records.empty:
        return pd.DataFrame()
    records["completion_tokens"] = pd.to_numeric(records["completion_tokens"], errors="coerce")
    return (
        records.groupby("model")
        .agg(
            records=("score", "size"),
            mean_score=("score", "mean"),
            unscored=("score", lambda s: int(s.isna().sum())),
            mean_completion_tokens=("completion_tokens", "mean"),
            mean_latency_s=("latency_s", "mean"),
            finish_length=("finish_reason", lambda s: int((s == "length").sum())),
        )
        .reset_index()
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=Path("runs/collect-demo/store"))
    args = parser.parse_args(argv)
    store = CollectionStore(args.store)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(run_table(store).round(2).to_string(index=False))
        print()
        print(model_table(store).round(3).to_string(index=False))
    problems = [c.get("problem") for c in store.rewrite_calls() if c.get("problem")]
    if problems:
        print()
        print("rewrite problems:", json.dumps(pd.Series(problems).value_counts().to_dict()))


if __name__ == "__main__":
    main()
