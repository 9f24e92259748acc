"""The ECC paper's evaluation protocol: data preparation, the methods, scoring and gains.

Protocol (Wu, Silwal & Zhang 2026, arXiv 2605.17110, as in the authors' code; ``DESIGN.md``
section 3): per query up to 7 non-tie pairs sampled with a seed, queries with fewer than 2 dropped;
an 80/20 split by query (seed 42); on a test query the first pair is the probe and the others are
scored. Every method is fitted on the training queries and predicts ``P(b beats a)`` on the scored
pairs. Ranking quality gain of a method = ``(NLL_global - NLL_method) / NLL_global`` in percent,
with a percentile bootstrap interval that resamples test queries (the per-query NLL sums of the
global model and of the method are resampled jointly).

The experiments built on the protocol (inference modes, sweeps, diagnostics, the new-model
experiment) are in :mod:`ecc_lib.ecc_experiments`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ecc_lib import data_checks
from ecc_lib.comparisons import (
    Comparisons,
    make_comparisons,
    score_matrix,
    split_probe,
    split_queries,
)
from ecc_lib.ecc import (
    ECC,
    ComparisonOnlyECC,
    EmbeddingClusters,
    GlobalBT,
    HumanLabelClusters,
    _labels_to_str,
    comparison_nll,
)
from ecc_lib.metrics import DEFAULT_N_BOOT, bootstrap_indices, percentile_interval
from ecc_lib.serialization import to_jsonable

logger = logging.getLogger(__name__)

METHODS: tuple[str, ...] = ("global", "ecc", "emb_only", "comp_only", "human")
MODES: tuple[str, ...] = ("both", "embedding", "probe")
PAPER_N_PAIRS = 7
PAPER_SEED = 42
PAPER_TEST_SIZE = 0.2


# --------------------------------------------------------------------------------------------------
# data preparation


@dataclass
class ProtocolData:
    """Comparisons, embeddings and labels of the kept queries, split into train and test.

    Attributes
    ----------
    comparisons : Comparisons
        All kept queries (``query_ids`` in the order of the queries table).
    embeddings : ndarray (n, d)
        Aligned to ``comparisons.query_ids``.
    labels : ndarray of str or None
        Human category per query (``None`` when the queries table has none).
    texts : ndarray of str
    scores : ndarray (n, M)
        Mean score per (query, model), NaN where missing (for the new-model experiment).
    train_mask, test_mask : ndarray of bool (n,)
    train, test : Comparisons
        Re-coded to the training / test queries.
    n_input_queries : int
        Queries in the queries table before dropping those with too few pairs.
    params : dict
    """

    comparisons: Comparisons
    embeddings: np.ndarray
    labels: np.ndarray | None
    texts: np.ndarray
    scores: np.ndarray
    train_mask: np.ndarray
    test_mask: np.ndarray
    train: Comparisons
    test: Comparisons
    n_input_queries: int
    params: dict = field(default_factory=dict)

    @property
    def x_train(self) -> np.ndarray:
        return self.embeddings[self.train_mask]

    @property
    def x_test(self) -> np.ndarray:
        return self.embeddings[self.test_mask]

    @property
    def labels_train(self) -> np.ndarray | None:
        return None if self.labels is None else self.labels[self.train_mask]

    @property
    def labels_test(self) -> np.ndarray | None:
        return None if self.labels is None else self.labels[self.test_mask]

    @property
    def models(self) -> tuple[str, ...]:
        return self.comparisons.models


def prepare_protocol(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    embeddings: np.ndarray,
    n_pairs: int = PAPER_N_PAIRS,
    test_size: float = PAPER_TEST_SIZE,
    random_state: int = PAPER_SEED,
    min_pairs: int = 2,
    models: tuple[str, ...] | None = None,
) -> ProtocolData:
    """Sample comparisons and split queries as in the paper's protocol.

    Parameters
    ----------
    queries : DataFrame
        ``query_id, text[, category]``; ``embeddings`` rows follow its row order.
    outcomes : DataFrame
        Long outcomes ``query_id, model, score``.
    embeddings : ndarray, shape (len(queries), d)
    n_pairs : int, default 7
        Non-tie pairs per query (seeded with ``random_state``).
    test_size : float, default 0.2
    random_state : int, default 42
        Seed of the pair draw and of the split.
    min_pairs : int, default 2
        Queries with fewer non-tie pairs are dropped (logged).
    models : tuple of str, optional
        Model order (default: sorted names).
    """
    query_ids = queries["query_id"].astype(str).to_numpy()
    emb = np.asarray(embeddings)
    if emb.ndim != 2 or emb.shape[0] != len(query_ids):
        raise ValueError(
            f"embeddings have shape {emb.shape}; expected one row per query of the queries table "
            f"({len(query_ids)} rows, in its order)"
        )
    data_checks.check_embedding_dims(emb.shape[1])
    comparisons = make_comparisons(
        outcomes,
        n_pairs=n_pairs,
        ties="drop",
        min_pairs=min_pairs,
        query_ids=query_ids,
        models=models,
        random_state=random_state,
    )
    if comparisons.n_queries < 2:
        two = data_checks.two_models_note(int(outcomes["model"].nunique()))
        raise ValueError(
            f"only {comparisons.n_queries} query(ies) have at least {min_pairs} non-tie pairs; "
            "the protocol needs at least 2" + (f" ({two})" if two else "")
        )
    if len(comparisons.dropped_query_ids):
        logger.info(
            "protocol: %d of %d queries dropped with fewer than %d non-tie pairs",
            len(comparisons.dropped_query_ids),
            len(query_ids),
            min_pairs,
        )
    rows = pd.Index(query_ids).get_indexer(comparisons.query_ids)
    labels = None
    if "category" in queries.columns and queries["category"].notna().any():
        labels = _labels_to_str(queries["category"].to_numpy(dtype=object)[rows], len(rows))
    scores, _, _ = score_matrix(outcomes, comparisons.query_ids, comparisons.models)
    train_mask, test_mask = split_queries(comparisons.n_queries, test_size, random_state)
    notes = data_checks.protocol_notes(outcomes, labels, int(train_mask.sum()))
    return ProtocolData(
        comparisons=comparisons,
        embeddings=np.ascontiguousarray(emb[rows], dtype=np.float32),
        labels=labels,
        texts=queries["text"].astype(str).to_numpy()[rows],
        scores=scores,
        train_mask=train_mask,
        test_mask=test_mask,
        train=comparisons.select_queries(train_mask),
        test=comparisons.select_queries(test_mask),
        n_input_queries=len(query_ids),
        params={
            "n_pairs": n_pairs,
            "test_size": test_size,
            "random_state": random_state,
            "min_pairs": min_pairs,
            "warnings": notes,
        },
    )


# --------------------------------------------------------------------------------------------------
# methods


def make_methods(
    n_clusters: int = 30,
    lam: float = 3.0,
    temperature: float = 0.1,
    random_state: int | None = PAPER_SEED,
    methods: tuple[str, ...] = METHODS,
    **ecc_params,
) -> dict:
    """Unfitted estimators by method name (``global``, ``ecc``, ``emb_only``, ``comp_only``,
    ``human``). Extra keyword arguments (``max_iter``, ``n_init``, ``tol`` ...) go to the three
    EM-based methods."""
    factories = {
        "global": lambda: GlobalBT(),
        "ecc": lambda: ECC(
            n_clusters=n_clusters,
            lam=lam,
            temperature=temperature,
            random_state=random_state,
            **ecc_params,
        ),
        "emb_only": lambda: EmbeddingClusters(
            n_clusters=n_clusters,
            lam=lam,
            temperature=temperature,
            random_state=random_state,
            **ecc_params,
        ),
        "comp_only": lambda: ComparisonOnlyECC(
            n_clusters=n_clusters, temperature=temperature, random_state=random_state, **ecc_params
        ),
        "human": lambda: HumanLabelClusters(lam=lam, temperature=temperature),
    }
    unknown = [m for m in methods if m not in factories]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; choose from {list(factories)}")
    return {name: factories[name]() for name in methods}


def fit_methods(data: ProtocolData, methods: dict) -> tuple[dict, dict]:
    """Fit every estimator on the training queries; returns ``(fitted, fit_seconds)``.

    ``human`` is skipped (with a log line) when the data have no labels."""
    data_checks.check_protocol_sizes(
        data.train.n_queries,
        data.test.n_queries,
        data.embeddings.shape[1],
        [m.n_clusters for m in methods.values() if getattr(m, "n_clusters", None) is not None],
    )
    fitted, seconds = {}, {}
    for name, estimator in methods.items():
        if isinstance(estimator, HumanLabelClusters) and data_checks.human_baseline_reason(
            data.labels
        ):
            logger.info("%s", data_checks.human_baseline_reason(data.labels))
            continue
        start = time.perf_counter()
        estimator.fit(data.x_train, data.train, labels=data.labels_train)
        seconds[name] = time.perf_counter() - start
        fitted[name] = estimator
    return fitted, seconds


# --------------------------------------------------------------------------------------------------
# scoring


@dataclass
class ECCEvaluation:
    """Result of the protocol for one inference mode and number of probes.

    ``nll`` is the mean NLL per scored comparison; ``gain`` the ranking quality gain over the
    global BT model in percent, ``ci95`` its bootstrap interval over test queries; ``accuracy`` the
    share of scored pairs whose winner gets probability above one half; ``differences`` paired
    bootstrap intervals of gain differences between methods (in percentage points).
    """

    n_queries: int
    n_models: int
    n_train: int
    n_test: int
    n_scored: int
    mode: str
    n_input_queries: int
    n_probes: int
    nll: dict
    nll_ci95: dict
    gain: dict
    ci95: dict
    accuracy: dict
    differences: dict
    fit_seconds: dict
    n_iter: dict
    converged: dict
    per_query: pd.DataFrame
    params: dict = field(default_factory=dict)
    fitted: dict = field(default_factory=dict, repr=False)

    def table(self) -> pd.DataFrame:
        """One row per method."""
        rows = []
        for name in self.nll:
            rows.append(
                {
                    "method": name,
                    "nll": self.nll[name],
                    "nll_low": self.nll_ci95[name][0],
                    "nll_high": self.nll_ci95[name][1],
                    "gain_pct": self.gain.get(name, 0.0),
                    "gain_low": self.ci95.get(name, (np.nan, np.nan))[0],
                    "gain_high": self.ci95.get(name, (np.nan, np.nan))[1],
                    "accuracy": self.accuracy[name],
                    "fit_seconds": self.fit_seconds.get(name, np.nan),
                    "n_iter": self.n_iter.get(name, np.nan),
                }
            )
        return pd.DataFrame(rows)

    def to_dict(self) -> dict:
        """JSON-ready summary (the ``ecc-lab ecc`` output)."""
        return to_jsonable(
            {
                "n_queries": self.n_queries,
                "n_input_queries": self.n_input_queries,
                "n_dropped_queries": self.n_input_queries - self.n_queries,
                "n_models": self.n_models,
                "n_train": self.n_train,
                "n_test": self.n_test,
                "n_scored": self.n_scored,
                "mode": self.mode,
                "n_probes": self.n_probes,
                "nll": self.nll,
                "nll_ci95": self.nll_ci95,
                "ranking_quality_gain": self.gain,
                "ci95": self.ci95,
                "accuracy": self.accuracy,
                "differences": self.differences,
                "fit_seconds": self.fit_seconds.get("ecc", float("nan")),
                "n_iter": self.n_iter.get("ecc"),
                "converged": self.converged.get("ecc"),
                "fit_seconds_by_method": self.fit_seconds,
                "n_iter_by_method": self.n_iter,
                "converged_by_method": self.converged,
                "params": self.params,
            }
        )


def _probe_and_scored(
    test: Comparisons, n_probes: int, score_from: int | None
) -> tuple[Comparisons, Comparisons]:
    probe, scored = split_probe(test, n_probes)
    if score_from is not None:
        if score_from < n_probes:
            raise ValueError(f"score_from ({score_from}) must be >= n_probes ({n_probes})")
        scored = split_probe(test, score_from)[1]
    return probe, scored


def score_methods(
    data: ProtocolData,
    fitted: dict,
    n_probes: int = 1,
    mode: str = "both",
    score_from: int | None = None,
    fit_seconds: dict | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = 0.95,
    random_state: int = 0,
) -> ECCEvaluation:
    """Score fitted methods on the test queries.

    Parameters
    ----------
    data : ProtocolData
    fitted : dict
        Fitted estimators by name; must hold ``"global"`` (the gain reference).
    n_probes : int, default 1
        Leading comparisons of each test query used as the probe.
    mode : {"both", "embedding", "probe"}
        Inference signal for the responsibilities of test queries.
    score_from : int, optional
        Score the comparisons from this position on (default ``n_probes``); set it to the largest
        number of probes of a sweep to score the same pairs throughout.
    n_boot, confidence, random_state
        Bootstrap over test queries (the same resamples for every method).
    """
    if "global" not in fitted:
        raise ValueError("score_methods needs the fitted 'global' model (reference of the gain)")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    probe, scored = _probe_and_scored(data.test, n_probes, score_from)
    if len(scored) == 0:
        raise ValueError("no scored comparisons remain on the test queries (too many probes?)")
    n_test = data.test.n_queries
    counts = np.bincount(scored.query, minlength=n_test)
    per_query = {}
    accuracy = {}
    for name, model in fitted.items():
        resp = model.predict_responsibilities(
            data.x_test, probe if n_probes > 0 else None, mode, labels=data.labels_test
        )
        p = model.predict_proba(scored, responsibilities=resp)
        losses = comparison_nll(p, scored.y)
        per_query[name] = np.bincount(scored.query, weights=losses, minlength=n_test)
        decided = scored.y != 0.5
        correct = np.where(p == 0.5, 0.5, ((p > 0.5) == (scored.y == 1.0)).astype(float))
        accuracy[name] = float(correct[decided].mean()) if decided.any() else float("nan")
    has = counts > 0
    index = bootstrap_indices(int(has.sum()), n_boot, random_state)
    n_scored = float(counts.sum())
    g = per_query["global"][has]
    nll, nll_ci, gain, ci = {}, {}, {}, {}
    stats_gain = {}
    for name, losses in per_query.items():
        m = losses[has]
        nll[name] = float(m.sum() / n_scored)
        reps = m[index].sum(axis=1) / counts[has][index].sum(axis=1)
        nll_ci[name] = percentile_interval(reps, confidence)
        if name == "global":
            continue
        gain[name] = float(100.0 * (g.sum() - m.sum()) / g.sum())
        rep_gain = 100.0 * (g[index].sum(axis=1) - m[index].sum(axis=1)) / g[index].sum(axis=1)
        stats_gain[name] = rep_gain
        ci[name] = percentile_interval(rep_gain, confidence)
    differences = {}
    for first in ("ecc",):
        for second in gain:
            if first in gain and second != first:
                diff = stats_gain[first] - stats_gain[second]
                low, high = percentile_interval(diff, confidence)
                differences[f"{first}_minus_{second}"] = {
                    "estimate": gain[first] - gain[second],
                    "ci95": [low, high],
                }
    frame = pd.DataFrame({"query_id": data.test.query_ids, "n_scored": counts})
    for name, losses in per_query.items():
        frame[f"nll_{name}"] = losses
    fit_seconds = dict(fit_seconds or {})
    return ECCEvaluation(
        n_queries=data.comparisons.n_queries,
        n_models=data.comparisons.n_models,
        n_train=data.train.n_queries,
        n_test=n_test,
        n_scored=int(n_scored),
        mode=mode,
        n_input_queries=data.n_input_queries,
        n_probes=n_probes,
        nll=nll,
        nll_ci95=nll_ci,
        gain=gain,
        ci95=ci,
        accuracy=accuracy,
        differences=differences,
        fit_seconds=fit_seconds,
        n_iter={k: int(getattr(v, "n_iter_", 1)) for k, v in fitted.items()},
        converged={k: bool(getattr(v, "converged_", True)) for k, v in fitted.items()},
        per_query=frame,
        params={**data.params, "score_from": score_from, "n_boot": n_boot},
        fitted=fitted,
    )


def run_protocol(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    embeddings: np.ndarray,
    n_clusters: int = 30,
    lam: float = 3.0,
    temperature: float = 0.1,
    n_pairs: int = PAPER_N_PAIRS,
    n_probes: int = 1,
    test_size: float = PAPER_TEST_SIZE,
    random_state: int = PAPER_SEED,
    mode: str = "both",
    methods: tuple[str, ...] = METHODS,
    n_boot: int = DEFAULT_N_BOOT,
    **ecc_params,
) -> ECCEvaluation:
    """The whole paper protocol in one call: sample pairs, split, fit every method, score.

    ``random_state`` seeds the pair draw, the split and the EM initialisations. ``human`` is
    evaluated only when the queries have categories. Extra keyword arguments go to the EM-based
    estimators (see :func:`make_methods`).
    """
    data = prepare_protocol(queries, outcomes, embeddings, n_pairs, test_size, random_state)
    estimators = make_methods(n_clusters, lam, temperature, random_state, methods, **ecc_params)
    fitted, seconds = fit_methods(data, estimators)
    result = score_methods(
        data, fitted, n_probes=n_probes, mode=mode, fit_seconds=seconds, n_boot=n_boot
    )
    result.params.update(
        {"n_clusters": n_clusters, "lam": lam, "temperature": temperature, **ecc_params}
    )
    return result


__all__ = [
    "ECCEvaluation",
    "METHODS",
    "MODES",
    "ProtocolData",
    "fit_methods",
    "make_methods",
    "prepare_protocol",
    "run_protocol",
    "score_methods",
]
