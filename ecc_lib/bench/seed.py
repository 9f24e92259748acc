"""One seed of one dataset: the ECC protocol, the paired differences on disjoint pairs against
human labels and the routing experiment with its two paired readings."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ecc_lib.bench.settings import BenchSettings
from ecc_lib.serialization import to_jsonable
from ecc_lib.stats import (
    DEFAULT_N_BOOT,
    bootstrap_indices,
    mean_with_replicates,
    paired_difference,
    ratio_gain,
)


def disjoint_differences(result, *, reference: str, n_boot: int = DEFAULT_N_BOOT) -> dict:
    """Gain on disjoint pairs of every method minus that of ``reference``, with a paired bootstrap
    interval over test queries (the resamples of :func:`~ecc_lib.protocol.scoring.score_methods`).

    Needs the probe strategy ``"first"`` (every method reads the same probe, so the pairs touching
    it are the same for all).

    Parameters
    ----------
    result : ECCEvaluation
    reference : str
        A method of ``result`` (``"human"``).
    n_boot : int

    Returns
    -------
    dict
        ``{method: {"estimate": pp, "ci95": [low, high]}}`` ({} when ``reference`` is absent).
    """
    frame = result.per_query
    if f"nll_{reference}" not in frame:
        return {}
    has = frame["n_scored"].to_numpy() > 0
    index = bootstrap_indices(int(has.sum()), n_boot=n_boot, random_state=0)
    glob = (frame["nll_global"] - frame["nll_global_touching"]).to_numpy()[has]

    def gain(name: str) -> tuple[float, np.ndarray]:
        # NaN when no scored pair is disjoint from the probe (3 models, say)
        m = (frame[f"nll_{name}"] - frame[f"nll_{name}_touching"]).to_numpy()[has]
        value, _, reps = ratio_gain(glob, m, index)
        return value, reps

    ref, ref_reps = gain(reference)
    out = {}
    for name in result.gain_disjoint:
        if name == reference:
            continue
        value, reps = gain(name)
        out[name] = paired_difference(value, reps, ref, ref_reps)
    return out


def _paired_routing(data, routing, fitted: dict, n_boot: int) -> dict:
    """Per method: routed score minus the best fixed model (``no_probe``) and minus the probe's
    winner (``probe``), paired over test queries, with bootstrap intervals and mean costs."""
    from ecc_lib.protocol.routing import routed_scores

    n_test = data.test.n_queries
    index = bootstrap_indices(n_test, n_boot=n_boot, random_state=0)
    cells = routing.to_dict()

    def paired(values: np.ndarray, reference: np.ndarray) -> dict:
        d = values - reference
        estimate, ci, _ = mean_with_replicates(d, index)
        return {"estimate": estimate, "ci95": ci, "n_queries": int(np.isfinite(d).sum())}

    out: dict = {}
    for setting, reference in (("no_probe", "global"), ("probe", "probe_winner")):
        if setting not in routing.choices:  # no probe on two-model data: no "probe" setting
            continue
        choices = routing.choices[setting]
        ref = routed_scores(data, choices[reference])
        block = {}
        for method in fitted:
            if setting == "no_probe" and method == reference:
                continue
            entry = paired(routed_scores(data, choices[method]), ref)
            for prefix, m in (("", method), ("reference_", reference)):
                entry.update({prefix + k: cells[setting][m][k] for k in ("score", "cost")})
            block[method] = entry
        out[setting] = {"reference": reference, "methods": block}
    return out


_SIZES = ("queries", "input_queries", "models", "train", "test", "scored")
"""The sizes a seed's record copies from its evaluation (``n_queries`` ...)."""
_READINGS = "gain ci95 gain_touching ci95_touching gain_disjoint ci95_disjoint differences".split()
"""The gains, their intervals and the differences a seed's record copies from its evaluation."""


def bench_seed(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    embeddings: np.ndarray,
    *,
    seed: int,
    methods: tuple[str, ...],
    settings: BenchSettings,
) -> dict:
    """The protocol and the routing experiment on one seed, as a JSON-ready record.

    Runs :func:`ecc_lib.protocol.seeds.run_seeds` with ``seeds=[seed]`` (each seed of ``run_seeds`` is
    independent, so this is the seed's share of ``ecc-lab ecc --seeds S``), then
    :func:`ecc_lib.protocol.routing.routing_experiment` as ``run_seeds(routing=True)`` does.

    Parameters
    ----------
    queries, outcomes, embeddings
        After the data policy; ``embeddings`` rows follow ``queries``.
    seed : int
    methods : tuple of str
    settings : BenchSettings

    Returns
    -------
    dict
        ``seed``, sizes, ``gain`` / ``gain_touching`` / ``gain_disjoint`` with their ``ci95*``,
        ``differences``, ``disjoint_minus_human``, ``probe_leak_share``, ``routing`` (the
        experiment's cells) and ``routing_paired``, ``seconds``.
    """
    from ecc_lib.ecc.estimator import ECC
    from ecc_lib.protocol.comparisons import routed_scores_by_setting
    from ecc_lib.protocol.routing import routing_experiment
    from ecc_lib.protocol.seeds import run_seeds

    protocol = settings.protocol(int(seed))
    start, cpu = time.perf_counter(), time.process_time()
    multi = run_seeds(
        queries,
        outcomes,
        embeddings,
        protocol=protocol,
        estimator=ECC(
            n_clusters=settings.n_clusters, lam=settings.lam, temperature=settings.temperature
        ),
        methods=methods,
        routing=False,
    )
    result, data = multi.first, multi.data
    routing = routing_experiment(
        data,
        result.fitted,
        outcomes=outcomes,
        # n_probes 0 on two-model data, as run_seeds(routing=True) passes
        protocol=protocol.replace(
            n_probes=result.n_probes, probe_evidence="mean", probe_strategy="first"
        ),
        random_state=0,
    )
    record = {
        "seed": int(seed),
        "n_boot": settings.n_boot,
        **{f"n_{k}": getattr(result, f"n_{k}") for k in _SIZES},
        "methods": list(result.gain),
        **{k: getattr(result, k) for k in _READINGS},
        "disjoint_minus_human": disjoint_differences(
            result, reference="human", n_boot=settings.n_boot
        ),
        "probe_leak_share": result.probe_leak_share,
        "best_params": result.params.get("best_params", {}),  # what ecc_cv chose on this seed
        "warnings": result.params.get("warnings", []),
        "routing": routing.to_dict(),
        "routing_paired": _paired_routing(data, routing, result.fitted, settings.n_boot),
        # issue 35: what the one producer (ecc_lib.protocol.comparisons) combines over seeds
        "per_query": {
            c: result.per_query[c].tolist()
            for c in result.per_query.columns
            if c == "n_scored" or c.startswith("nll_")
        },
        "routing_per_query": {
            setting: {m: v.tolist() for m, v in arms.items()}
            for setting, arms in routed_scores_by_setting(data, routing).items()
        },
        "train_ids": [str(q) for q in data.train.query_ids],
        "test_ids": [str(q) for q in data.test.query_ids],
    }
    record["seconds"] = time.perf_counter() - start
    record["cpu_seconds"] = time.process_time() - cpu
    return to_jsonable(record)


__all__: list[str] = []
