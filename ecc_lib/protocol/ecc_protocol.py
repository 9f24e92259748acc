"""The ECC paper's evaluation protocol in one call: sample pairs, split, fit every method, score.

Protocol (Wu, Silwal & Zhang 2026, arXiv 2605.17110, as in the authors' code; ``docs/design.md``
section 3): per query up to 7 non-tie pairs sampled with a seed, queries with fewer than 2 dropped;
an 80/20 split by query (seed 42); on a test query the first pair is the probe and the others are
scored. Every method is fitted on the training queries and predicts ``P(b beats a)`` on the scored
pairs. Ranking quality gain of a method = ``(NLL_global - NLL_method) / NLL_global`` in percent,
with a percentile bootstrap interval that resamples test queries.

The steps live in their own modules, each importing only those below it:

- :mod:`ecc_lib.protocol.data`: :class:`~ecc_lib.protocol.data.ProtocolData` and
  :func:`~ecc_lib.protocol.data.prepare_protocol` (pairs, split, the paper's defaults);
- :mod:`ecc_lib.protocol.leak_free`: probe and scored rows, the leak-free protocol (the probe's
  leak: with binary scores a probe "A beat B" decides every scored pair that contains A or B);
- :mod:`ecc_lib.protocol.probes`: the probe strategies (one registry) and how probe evidence counts;
- :mod:`ecc_lib.protocol.methods`: the method registry, built from one ECC prototype;
- :mod:`ecc_lib.protocol.scoring`: :func:`~ecc_lib.protocol.scoring.score_methods` and
  :class:`~ecc_lib.protocol.scoring.ECCEvaluation` (gains, touching / disjoint readings).

This module runs them for one protocol seed (:func:`run_seed`, :func:`run_protocol`) with the
settings of one :class:`~ecc_lib.protocol.settings.Protocol` and one estimator prototype. Several
protocol seeds are in :mod:`ecc_lib.protocol.seeds`; the experiments built on the protocol in
:mod:`ecc_lib.protocol.experiments` and :mod:`ecc_lib.protocol.routing`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ecc_lib.ecc.estimator import ECC
from ecc_lib.protocol.data import ProtocolData, single_pair_settings
from ecc_lib.protocol.leak_free import make_leak_free
from ecc_lib.protocol.methods import (
    METHODS,
    fit_methods,
    methods_from_prototype,
    prototype_parameters,
)
from ecc_lib.protocol.scoring import ECCEvaluation, score_methods
from ecc_lib.protocol.settings import Protocol


def run_protocol(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    embeddings: np.ndarray,
    *,
    protocol: Protocol | None = None,
    estimator: ECC | None = None,
    methods: tuple[str, ...] = METHODS,
) -> ECCEvaluation:
    """The whole paper protocol in one call on the protocol's first seed: sample pairs, split,
    fit every method, score.

    ``protocol.seed`` seeds the pair draw, the split and the EM initialisations. ``human`` is
    evaluated only when the queries have categories. ``protocol.leak_free`` redraws the probes with
    :func:`~ecc_lib.protocol.leak_free.make_leak_free`.

    Parameters
    ----------
    queries : DataFrame
        ``query_id, text[, category]``.
    outcomes : DataFrame
        Long outcomes ``query_id, model, score``.
    embeddings : ndarray, shape (len(queries), d)
        Rows follow the queries table.
    protocol : Protocol, optional
        The settings (default ``Protocol()``, the paper's); only its first seed is run.
    estimator : ECC, optional
        The unfitted ECC prototype (default ``ECC()``): ECC is its clone and the baselines are
        built from its parameters (:func:`~ecc_lib.protocol.methods.methods_from_prototype`).
    methods : tuple of str
        Methods to evaluate.

    Returns
    -------
    ECCEvaluation
    """
    protocol = Protocol() if protocol is None else protocol
    return run_seed(
        queries,
        outcomes,
        embeddings,
        seed=protocol.seed,
        protocol=protocol,
        estimator=estimator,
        methods=methods,
    )[1]


def run_seed(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    embeddings: np.ndarray,
    *,
    seed: int,
    protocol: Protocol,
    estimator: ECC | None = None,
    methods: tuple[str, ...] = METHODS,
) -> tuple[ProtocolData, ECCEvaluation]:
    """One protocol seed: pairs, split, EM start and leak-free probes drawn with ``seed``; the
    bootstrap and a randomised probe strategy use seed 0.

    Shared by :func:`run_protocol` and :func:`ecc_lib.protocol.seeds.run_seeds`. The methods are
    built from the ``estimator`` prototype (:func:`~ecc_lib.protocol.methods.methods_from_prototype`);
    the other seeds of ``protocol`` are ignored here.

    Parameters
    ----------
    queries, outcomes, embeddings
        As in :func:`run_protocol`.
    seed : int
        The protocol seed.
    protocol : Protocol
        The settings (pairs, test size, probes, probe evidence and strategy, leak-free, bootstrap,
        evidence, tie tolerance, inference mode).
    estimator : ECC, optional
        The unfitted ECC prototype (default ``ECC()``).
    methods : tuple of str
        Methods to evaluate.

    Returns
    -------
    data : ProtocolData
        The seed's pairs and split (leak-free probes where asked for).
    result : ECCEvaluation
    """
    if not isinstance(protocol, Protocol):
        raise TypeError(f"protocol must be an ecc_lib Protocol, got {type(protocol).__name__}")
    data = protocol.prepare(queries, outcomes, embeddings, seed=seed)
    n_probes, leak_free = single_pair_settings(
        data, n_probes=protocol.n_probes, leak_free=protocol.leak_free
    )
    if leak_free:
        data = make_leak_free(data, n_probes=n_probes, random_state=seed, outcomes=outcomes)
    ecc_params = prototype_parameters(estimator)
    estimators = methods_from_prototype(estimator, methods=methods, random_state=seed)
    for model in estimators.values():  # ecc_cv probes held-out queries like test queries
        if "cv_probe" in model.get_params():
            model.set_params(n_probes=n_probes, cv_probe="leak_free" if leak_free else "first")
    fitted, seconds = fit_methods(data, estimators)
    result = score_methods(
        data,
        fitted,
        protocol=protocol.with_probes(n_probes),  # 0 on two-model data
        fit_seconds=seconds,
        random_state=0,
    )
    result.params.update(ecc_params)
    chosen = {k: m.best_params_ for k, m in fitted.items() if hasattr(m, "best_params_")}
    if chosen:  # settings chosen by cross-validation (ecc_cv), per seed
        result.params["best_params"] = chosen
    return data, result


__all__ = [
    "run_protocol",
]
