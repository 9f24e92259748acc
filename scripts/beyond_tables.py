"""Print the measurements of issue 17 (label-informed ECC, active probes, soft evidence).

Usage::

    python scripts/beyond_tables.py labels  --seeds 5 --seed 0   # ecc_labels vs ecc and human
    python scripts/beyond_tables.py probes  --seeds 5 --seed 0   # probe strategies (dcrouter)
    python scripts/beyond_tables.py soft    --seeds 5 --seed 0   # soft evidence (re2, synthetic)

Every seed redraws the pairs, the split and the EM starts (protocol seed ``seed + i``); numbers
are test-query gains (percent) with mean +- sd over seeds; choices (the label weight) are made by
cross-validation on training queries only.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

import numpy as np
import pandas as pd

from ecc_lib.data.sources import load_bundled
from ecc_lib.data.splits import disjoint_from_probe, split_probe
from ecc_lib.ecc.label_informed import LabelInformedECC
from ecc_lib.ecc.mixture import comparison_nll
from ecc_lib.ecc.soft_evidence import true_win_probability
from ecc_lib.embed.encode import embed_texts
from ecc_lib.protocol.data import prepare_protocol
from ecc_lib.protocol.experiments.probe_strategies import compare_probe_strategies
from ecc_lib.protocol.experiments.soft_evidence import soft_evidence_comparison
from ecc_lib.protocol.methods import fit_methods, make_methods
from ecc_lib.protocol.probes import PROBE_STRATEGIES
from ecc_lib.protocol.settings import Protocol
from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes


def _data(name: str):
    queries, outcomes = load_bundled(name)
    emb = embed_texts(queries["text"].astype(str).tolist(), show_progress=False)
    return queries, outcomes, emb


def _gains(data, fitted, n_probes: int = 1) -> dict:
    probe, scored = split_probe(data.test, n_probes=n_probes)
    disjoint = disjoint_from_probe(scored, probe)
    loss = {}
    for name, model in fitted.items():
        p = model.predict_proba(
            scored, embeddings=data.x_test, probe=probe, labels=data.labels_test
        )
        loss[name] = comparison_nll(p, scored.y)
    out = {"n_scored": len(scored), "n_disjoint": int(disjoint.sum())}
    for name in fitted:
        if name == "global":
            continue
        for reading, mask in (("all", slice(None)), ("disjoint", disjoint)):
            ref = loss["global"][mask].sum()
            out[f"{name}:{reading}"] = 100.0 * (ref - loss[name][mask].sum()) / ref
    return out


def labels_table(seeds: list[int]) -> pd.DataFrame:
    queries, outcomes, emb = _data("dcrouter")
    rows = []
    for seed in seeds:
        data = prepare_protocol(queries, outcomes, emb, random_state=seed)
        base, _ = fit_methods(data, make_methods(random_state=seed, methods=("global", "ecc")))
        rng = np.random.default_rng(1000 + seed)
        for shuffled in (False, True):
            labels = rng.permutation(data.labels) if shuffled else data.labels
            d = replace(data, labels=labels)
            fitted = dict(base)
            fitted.update(fit_methods(d, make_methods(random_state=seed, methods=("human",)))[0])
            row = {"seed": seed, "labels": "shuffled" if shuffled else "true"}
            for form in ("absolute", "relative"):
                model = LabelInformedECC(random_state=seed, cv_pairs="disjoint", prior=form)
                fitted[f"{form}[cv=disjoint]"] = model.fit(d.x_train, d.train, d.labels_train)
                table = model.cv_table_["all"]
                chosen = min(table, key=lambda w: (table[w], w))
                if chosen == model.label_weight_:
                    fitted[f"{form}[cv=all]"] = model
                else:
                    other = LabelInformedECC(random_state=seed, label_weight=chosen, prior=form)
                    fitted[f"{form}[cv=all]"] = other.fit(d.x_train, d.train, d.labels_train)
                row[f"w:{form}[cv=disjoint]"] = model.label_weight_
                row[f"w:{form}[cv=all]"] = chosen
            row.update(_gains(d, fitted))
            rows.append(row)
            print(json.dumps(row), flush=True)
    return pd.DataFrame(rows)


def probes_table(seeds: list[int], method: str = "ecc") -> pd.DataFrame:
    queries, outcomes, emb = _data("dcrouter")
    rows = []
    for seed in seeds:
        data = prepare_protocol(queries, outcomes, emb, random_state=seed)
        methods = make_methods(random_state=seed, methods=("global", "ecc"))
        fitted, _ = fit_methods(data, methods)
        for setting, strategies, n_probes, score_from, criterion in (
            ("headline", ("first", "active"), (1,), 1, "entropy"),
            ("headline-predictive", ("first", "active"), (1,), 1, "predictive"),
            ("curve", PROBE_STRATEGIES, (1, 2, 3), 3, "entropy"),
            ("curve-predictive", PROBE_STRATEGIES, (1, 2, 3), 3, "predictive"),
        ):
            for r in compare_probe_strategies(
                data,
                fitted[method],
                fitted["global"],
                protocol=Protocol(seeds=(seed,)),
                strategies=strategies,
                probe_counts=n_probes,
                score_from=score_from,
                criterion=criterion,
            ):
                row = {
                    "seed": seed,
                    "setting": setting,
                    **{k: v for k, v in r.items() if not k.endswith("by_query")},
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    return pd.DataFrame(rows)


def soft_table(seeds: list[int], n_draws: int = 5) -> pd.DataFrame:
    rows = []
    queries, outcomes, emb = _data("re2")
    for seed in seeds:
        for name in ("re2", "synthetic"):
            truth = None
            if name == "re2":
                q, o, x = queries, outcomes, emb
            else:
                s = make_repeated_outcomes(
                    n_queries=1000, n_models=4, n_rewrites=3, n_decodes=3, random_state=seed
                )
                q, o, x = s.queries, s.outcomes, s.embeddings
                truth = true_win_probability(s.truth.p)
            r = soft_evidence_comparison(
                q,
                o,
                x,
                protocol=Protocol(seeds=(seed,), mode="embedding"),
                n_draws=n_draws,
                truth=truth,
            )
            for target in ("logloss", "vs_truth"):
                if target not in r:
                    continue
                t = r[target]
                row = {
                    "seed": seed,
                    "data": name,
                    "target": "empirical" if target == "logloss" else "truth",
                    "n_test_pairs": r["n_test_pairs"],
                    "soft": t["soft"],
                    "sampled_mean": t["sampled_mean"],
                    "sampled_sd_draws": t["sampled_sd"],
                    "sampled_minus_soft": t["sampled_minus_soft"],
                    "ci_low": t["sampled_minus_soft_ci95"][0],
                    "ci_high": t["sampled_minus_soft_ci95"][1],
                    "floor": t["target_entropy"],
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    return pd.DataFrame(rows)


def _summary(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    numeric = frame.drop(columns=["seed"]).select_dtypes("number").columns
    grouped = frame.groupby(by)[list(c for c in numeric if c not in by)]
    return grouped.agg(["mean", "std"]).round(3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("labels", "probes", "soft"))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv", help="write the per-seed rows here")
    args = parser.parse_args()
    seeds = list(range(args.seed, args.seed + args.seeds))
    if args.what == "labels":
        frame = labels_table(seeds)
        summary = _summary(frame, ["labels"])
    elif args.what == "probes":
        frame = probes_table(seeds)
        summary = _summary(frame, ["setting", "n_probes", "strategy"])
    else:
        frame = soft_table(seeds)
        summary = _summary(frame, ["data", "target"])
    if args.csv:
        frame.to_csv(args.csv, index=False)
    with pd.option_context("display.width", 250, "display.max_columns", 50):
        print(summary.T.to_string())


if __name__ == "__main__":
    main()
