"""Scoring fitted methods on the test queries: NLL, ranking quality gain and the leak-aware readings.

Ranking quality gain of a method = ``(NLL_global - NLL_method) / NLL_global`` in percent, with a
percentile bootstrap interval that resamples test queries (the per-query NLL sums of the global
model and of the method are resampled jointly; :func:`ecc_lib.stats.ratio_gain`). Beyond the paper
(issue 16), :func:`score_methods` also reports the gain on the scored pairs that *touch* a probe
model and on those *disjoint* from it, and the share of touching pairs (``probe_leak_share``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ecc_lib.data.splits import touching_probe
from ecc_lib.ecc.mixture import comparison_nll
from ecc_lib.protocol.data import ProtocolData
from ecc_lib.protocol.leak_free import probe_candidate_rows
from ecc_lib.protocol.probes import (
    probe_responsibilities,
    select_probes,
)
from ecc_lib.protocol.settings import Protocol
from ecc_lib.serialization import to_jsonable
from ecc_lib.stats import (
    bootstrap_indices,
    mean_ratio,
    paired_difference,
    ratio_gain,
)


@dataclass
class ECCEvaluation:
    """Result of the protocol for one inference mode and number of probes.

    ``nll`` is the mean NLL per scored comparison; ``gain`` the ranking quality gain over the
    global BT model in percent, ``ci95`` its bootstrap interval over test queries; ``accuracy`` the
    share of scored pairs whose winner gets probability above one half; ``differences`` paired
    bootstrap intervals of gain differences between methods (in percentage points).

    Leak-aware reading (issue 16): ``gain_touching`` / ``gain_disjoint`` are the gains on the
    scored pairs that share a model with the query's probe / share none (``ci95_touching``,
    ``ci95_disjoint`` their intervals, same resamples); ``probe_leak_share`` the share of scored
    pairs that touch a probe model (of ECC's probe; ``probe_leak_share_by_method`` for each method,
    which differ only under a model-dependent probe strategy).

    Attributes
    ----------
    n_queries, n_models, n_train, n_test, n_scored : int
        Kept queries, models, split sizes and scored comparisons.
    mode : str
        Inference mode (``both``, ``embedding`` or ``probe``).
    n_input_queries : int
        Queries before dropping those with too few pairs.
    n_probes : int
        Probe comparisons per test query.
    nll, nll_ci95, gain, ci95, accuracy : dict
        Per method: mean NLL and its interval, gain (%) and its interval, accuracy.
    differences : dict
        Paired intervals of gain differences between methods (pp).
    differences_disjoint : dict
        The same on the scored pairs disjoint from the probe's models (one shared resample).
    probe_coverage : dict
        ``share_with_probe`` (test queries that got a probe, of ECC), ``n_with_probe``,
        ``n_without_probe`` and the gains on the queries with and without a probe
        (``ranking_quality_gain_with_probe`` / ``_without_probe`` with ``ci95_*``): under the
        leak-free protocol many test queries have no leak-free probe and are scored from the
        embedding alone (issue 23); the JSON repeats it as ``leak_free`` there.
    fit_seconds, n_iter, converged : dict
        Per method fit facts.
    per_query : DataFrame
        Per test query NLL of every method.
    params : dict
        Protocol parameters.
    fitted : dict
        The fitted estimators.
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
    gain_touching: dict = field(default_factory=dict)
    gain_disjoint: dict = field(default_factory=dict)
    ci95_touching: dict = field(default_factory=dict)
    ci95_disjoint: dict = field(default_factory=dict)
    probe_leak_share: float = float("nan")
    probe_leak_share_by_method: dict = field(default_factory=dict)
    n_scored_touching: int = 0
    differences_disjoint: dict = field(default_factory=dict)
    probe_coverage: dict = field(default_factory=dict)

    def table(self) -> pd.DataFrame:
        """One row per method (with the touching / disjoint gains and their intervals).

        Returns
        -------
        DataFrame
            ``method, nll, nll_low, nll_high, gain_pct, ...``.
        """
        rows = []
        nan2 = (np.nan, np.nan)
        for name in self.nll:
            rows.append(
                {
                    "method": name,
                    "nll": self.nll[name],
                    "nll_low": self.nll_ci95[name][0],
                    "nll_high": self.nll_ci95[name][1],
                    "gain_pct": self.gain.get(name, 0.0),
                    "gain_low": self.ci95.get(name, nan2)[0],
                    "gain_high": self.ci95.get(name, nan2)[1],
                    "accuracy": self.accuracy[name],
                    "fit_seconds": self.fit_seconds.get(name, np.nan),
                    "n_iter": self.n_iter.get(name, np.nan),
                    "gain_touching_pct": self.gain_touching.get(name, 0.0),
                    "gain_touching_low": self.ci95_touching.get(name, nan2)[0],
                    "gain_touching_high": self.ci95_touching.get(name, nan2)[1],
                    "gain_disjoint_pct": self.gain_disjoint.get(name, 0.0),
                    "gain_disjoint_low": self.ci95_disjoint.get(name, nan2)[0],
                    "gain_disjoint_high": self.ci95_disjoint.get(name, nan2)[1],
                }
            )
        return pd.DataFrame(rows)

    def gains(self, reading: str = "all") -> pd.DataFrame:
        """Each method's gain and its interval in one reading (what a gain figure draws).

        Parameters
        ----------
        reading : {"all", "touching", "disjoint"}, default "all"
            All scored pairs, those sharing a model with the probe, or those disjoint from it.

        Returns
        -------
        DataFrame
            ``method, gain_pct, gain_low, gain_high``.
        """
        if reading not in ("all", "touching", "disjoint"):
            raise ValueError(f"reading must be 'all', 'touching' or 'disjoint', got {reading!r}")
        prefix = "gain" if reading == "all" else f"gain_{reading}"
        columns = {f"{prefix}_{end}": f"gain_{end}" for end in ("pct", "low", "high")}
        return self.table()[["method", *columns]].rename(columns=columns)

    def to_dict(self) -> dict:
        """JSON-ready summary (the ``ecc-lab ecc`` output).

        Returns
        -------
        dict
        """
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
                "ranking_quality_gain_touching": self.gain_touching,
                "ranking_quality_gain_disjoint": self.gain_disjoint,
                "ci95_touching": self.ci95_touching,
                "ci95_disjoint": self.ci95_disjoint,
                "probe_leak_share": self.probe_leak_share,
                "probe_leak_share_by_method": self.probe_leak_share_by_method,
                "n_scored_touching": self.n_scored_touching,
                "n_scored_disjoint": self.n_scored - self.n_scored_touching,
                "differences_disjoint": self.differences_disjoint,
                "probe_coverage": self.probe_coverage,
                "leak_free": self.probe_coverage if self.params.get("leak_free") else None,
                "left_out_reasons": self.params.get("left_out_reasons", {}),
                "tie_tolerance": self.params.get("tie_tolerance"),
                "label_weight": _label_weights(self.fitted),
                "params": self.params,
            }
        )


def score_methods(
    data: ProtocolData,
    fitted: dict,
    *,
    protocol: Protocol | None = None,
    score_from: int | None = None,
    fit_seconds: dict | None = None,
    confidence: float = 0.95,
    random_state: int = 0,
) -> ECCEvaluation:
    """Score fitted methods on the test queries.

    Parameters
    ----------
    data : ProtocolData
    fitted : dict
        Fitted estimators by name; must hold ``"global"`` (the gain reference).
    protocol : Protocol, optional
        The settings (default ``Protocol()``); read here: ``n_probes`` (comparisons of each test
        query revealed as the probe), ``mode`` (inference signal for the responsibilities of
        test queries), ``n_boot`` (bootstrap resamples), ``probe_evidence`` (how several probes
        count, see :func:`~ecc_lib.protocol.probes.probe_responsibilities`) and
        ``probe_strategy`` (which candidate comparisons become probes,
        :data:`~ecc_lib.protocol.probes.PROBE_STRATEGIES`).
    score_from : int, optional
        Score the comparisons from this position on (default ``n_probes``); set it to the largest
        number of probes of a sweep to score the same pairs throughout. The probes are chosen among
        the comparisons before it.
    confidence : float, default 0.95
        Level of the bootstrap intervals over test queries (the same resamples for every method
        and every reading).
    random_state : int, default 0
        Seed of the bootstrap (not the protocol seed); it also seeds a randomised probe strategy.

    Returns
    -------
    ECCEvaluation
        With the leak-aware reading: gains on scored pairs touching / disjoint from the probe's
        models and the share of touching pairs.
    """
    protocol = Protocol() if protocol is None else protocol
    n_probes, mode, n_boot = protocol.n_probes, protocol.mode, protocol.n_boot
    probe_evidence, probe_strategy = protocol.probe_evidence, protocol.probe_strategy
    # mode and probe_evidence are the Protocol's, checked when it was made
    if "global" not in fitted:
        raise ValueError("score_methods needs the fitted 'global' model (reference of the gain)")
    _, scored_mask = probe_candidate_rows(data, n_probes=n_probes, score_from=score_from)
    scored = data.test.take(scored_mask)
    if len(scored) == 0:
        raise ValueError("no scored comparisons remain on the test queries (too many probes?)")
    n_test = data.test.n_queries
    counts = np.bincount(scored.query, minlength=n_test)
    # the options of each method's probes and responsibilities
    options = {"mode": mode, "probe_evidence": probe_evidence, "random_state": random_state}
    probes = {"n_probes": n_probes, "score_from": score_from, "probe_strategy": probe_strategy}
    per_method = {
        name: _MethodLosses.score(data, model, scored, **options, **probes)
        for name, model in fitted.items()
    }
    per_query = {name: r.per_query for name, r in per_method.items()}
    leak_share = {name: r.leak_share for name, r in per_method.items()}
    has = counts > 0
    index = bootstrap_indices(int(has.sum()), n_boot=n_boot, random_state=random_state)
    n_scored = float(counts.sum())
    nll = {name: float(q[has].sum() / n_scored) for name, q in per_query.items()}
    nll_ci = {
        name: mean_ratio(q[has], counts[has], index, confidence=confidence)[1]
        for name, q in per_query.items()
    }
    gain, ci, stats_gain, gain_t, ci_t, gain_d, ci_d, stats_d = ({} for _ in range(8))
    reference = "ecc" if "ecc" in fitted else next(iter(fitted))
    covered = per_method[reference].with_probe[has]
    by_probe = {"with": {}, "without": {}}
    for name, losses in per_query.items():
        if name == "global":
            continue
        m, g = losses[has], per_query["global"][has]
        gain[name], ci[name], stats_gain[name] = ratio_gain(g, m, index, confidence=confidence)
        (gain_t[name], ci_t[name], _), (gain_d[name], ci_d[name], stats_d[name]) = _leak_gains(
            per_method["global"], per_method[name], scored.query, has, index, confidence
        )
        # queries with / without a probe of the reference method (the same resamples)
        for key, mask in (("with", covered), ("without", ~covered)):
            by_probe[key][name] = ratio_gain(g * mask, m * mask, index, confidence=confidence)[:2]
    strategy_name = probe_strategy if isinstance(probe_strategy, str) else probe_strategy.__name__
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
        accuracy={name: r.accuracy for name, r in per_method.items()},
        differences=ecc_minus_others(gain, stats_gain, confidence),
        fit_seconds=dict(fit_seconds or {}),
        n_iter={k: int(getattr(v, "n_iter_", 1)) for k, v in fitted.items()},
        converged={k: bool(getattr(v, "converged_", True)) for k, v in fitted.items()},
        per_query=_per_query_frame(data, counts, per_method, reference),
        params={
            **data.params,
            "score_from": score_from,
            "n_boot": n_boot,
            "bootstrap_seed": random_state,
            "probe_evidence": probe_evidence,
            "probe_strategy": strategy_name,
        },
        fitted=fitted,
        gain_touching=gain_t,
        gain_disjoint=gain_d,
        ci95_touching=ci_t,
        ci95_disjoint=ci_d,
        probe_leak_share=leak_share[reference],
        probe_leak_share_by_method=leak_share,
        n_scored_touching=int(per_method[reference].touch_count.sum()),
        differences_disjoint=ecc_minus_others(gain_d, stats_d, confidence),
        probe_coverage=_probe_coverage(covered, counts[has], by_probe),
    )


def _per_query_frame(
    data: ProtocolData, counts: np.ndarray, per_method: dict, reference: str
) -> pd.DataFrame:
    """One row per test query: scored pairs, the reference's touching pairs and probe, and each
    method's NLL (all scored pairs and touching pairs)."""
    frame = pd.DataFrame({"query_id": data.test.query_ids, "n_scored": counts})
    frame["n_scored_touching"] = per_method[reference].touch_count
    frame["has_probe"] = per_method[reference].with_probe
    for name, result in per_method.items():
        frame[f"nll_{name}"] = result.per_query
        frame[f"nll_{name}_touching"] = result.per_query_touch
    return frame


@dataclass
class _MethodLosses:
    """One fitted method's losses on the scored test comparisons, with its probes.

    ``pair_losses`` and ``touching`` are per scored pair (``touching``: the pair touches the
    probe's models); ``per_query``, ``per_query_touch`` (touching pairs only), ``touch_count`` and
    ``with_probe`` are per test query."""

    pair_losses: np.ndarray
    touching: np.ndarray
    with_probe: np.ndarray
    per_query: np.ndarray
    per_query_touch: np.ndarray
    touch_count: np.ndarray
    leak_share: float
    accuracy: float

    @classmethod
    def score(
        cls, data: ProtocolData, model, scored, *, mode: str, probe_evidence: str, **probes
    ) -> _MethodLosses:
        """Choose ``model``'s probes (``probes``: the options of
        :func:`~ecc_lib.protocol.probes.select_probes`), infer the test responsibilities and score
        the ``scored`` comparisons."""
        n_test = data.test.n_queries
        probe, _, _, _ = select_probes(data, model, **probes)
        resp = probe_responsibilities(
            model,
            data.x_test,
            probe,
            mode=mode,
            labels=data.labels_test,
            probe_evidence=probe_evidence,
        )
        p = model.predict_proba(scored, responsibilities=resp)
        losses = comparison_nll(p, scored.y)
        touching = touching_probe(probe, scored)
        return cls(
            pair_losses=losses,
            touching=touching,
            with_probe=(
                np.zeros(n_test, dtype=bool)
                if probe is None
                else np.bincount(probe.query, minlength=n_test) > 0
            ),
            per_query=np.bincount(scored.query, weights=losses, minlength=n_test),
            per_query_touch=np.bincount(
                scored.query, weights=np.where(touching, losses, 0.0), minlength=n_test
            ),
            touch_count=np.bincount(scored.query[touching], minlength=n_test),
            leak_share=float(touching.mean()),
            accuracy=pairwise_accuracy(p, scored.y),
        )


def _leak_gains(
    reference: _MethodLosses,
    method: _MethodLosses,
    query: np.ndarray,
    has: np.ndarray,
    index: np.ndarray,
    confidence: float,
) -> tuple[tuple, tuple]:
    """``method``'s gain over the reference (global BT) on the scored pairs touching its probe's
    models, and on the pairs disjoint from them: two :func:`~ecc_lib.stats.ratio_gain` results."""
    # the global model ignores the probe: its losses on this method's touching pairs are its
    # per-pair losses restricted to the same pairs
    touching = method.touching
    n_test = len(has)
    g_t = np.bincount(query[touching], weights=reference.pair_losses[touching], minlength=n_test)
    m_t = method.per_query_touch
    touching_gain = ratio_gain(g_t[has], m_t[has], index, confidence=confidence)
    disjoint_gain = ratio_gain(
        (reference.per_query - g_t)[has],
        (method.per_query - m_t)[has],
        index,
        confidence=confidence,
    )
    return touching_gain, disjoint_gain


def ecc_minus_others(gain: dict, stats: dict, confidence: float) -> dict:
    """ECC's value minus each other method's, paired over the same resamples.

    Shared by the clustering scores and the routing experiment (:mod:`ecc_lib.protocol.routing`).

    Parameters
    ----------
    gain : dict
        Method -> its value (a gain, a routed score).
    stats : dict
        Method -> its bootstrap replicates, the same resamples for every method.
    confidence : float
        Level of the intervals.

    Returns
    -------
    dict
        ``{"ecc_minus_<method>": paired difference}`` (:func:`ecc_lib.stats.paired_difference`);
        empty without ECC.
    """
    if "ecc" not in gain:
        return {}
    return {
        f"ecc_minus_{second}": paired_difference(
            gain["ecc"], stats["ecc"], gain[second], stats[second], confidence=confidence
        )
        for second in gain
        if second != "ecc"
    }


def _probe_coverage(covered: np.ndarray, counts: np.ndarray, by_probe: dict) -> dict:
    """Test queries with / without a probe of the reference method, and the gains on each
    (``counts``: scored pairs per test query with any)."""
    n_covered = int(covered.sum())
    return {
        "share_with_probe": float(covered.mean()) if len(covered) else float("nan"),
        "n_with_probe": n_covered,
        "n_without_probe": int(len(covered) - n_covered),
        "n_scored_with_probe": int(counts[covered].sum()),
        "n_scored_without_probe": int(counts[~covered].sum()),
        "ranking_quality_gain_with_probe": {k: v[0] for k, v in by_probe["with"].items()},
        "ci95_with_probe": {k: v[1] for k, v in by_probe["with"].items()},
        "ranking_quality_gain_without_probe": {k: v[0] for k, v in by_probe["without"].items()},
        "ci95_without_probe": {k: v[1] for k, v in by_probe["without"].items()},
    }


def pairwise_accuracy(p: np.ndarray, y: np.ndarray) -> float:
    """Share of decided pairs whose predicted direction is right (a prediction of exactly one
    half counts half).

    A pair is decided when ``y != 0.5``; its winner is ``b`` when ``y > 0.5``, so a soft target
    (``y = 0.3``: ``a`` wins more often) is read by its direction, not as "b won" (issue 23).

    Parameters
    ----------
    p : ndarray
        Predicted ``P(b beats a)``.
    y : ndarray
        Outcomes or soft targets in [0, 1].

    Returns
    -------
    float
        NaN when no pair is decided.
    """
    p, y = np.asarray(p, dtype=float), np.asarray(y, dtype=float)
    decided = y != 0.5
    if not decided.any():
        return float("nan")
    correct = np.where(p == 0.5, 0.5, ((p > 0.5) == (y > 0.5)).astype(float))
    return float(correct[decided].mean())


def _label_weights(fitted: dict) -> dict | None:
    """The label-prior weight of label-informed ECC: chosen, and as each CV reading would choose."""
    model = fitted.get("ecc_labels")
    if model is None or not hasattr(model, "label_weight_"):
        return None
    return {
        "chosen": float(model.label_weight_),
        "cv_pairs": getattr(model, "cv_pairs_used_", None),
        "by_reading": dict(getattr(model, "label_weight_by_reading_", {}) or {}),
    }


__all__: list[str] = []
