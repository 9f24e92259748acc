"""The ECC paper's evaluation protocol: data preparation, the methods, scoring and gains.

Protocol (Wu, Silwal & Zhang 2026, arXiv 2605.17110, as in the authors' code; ``DESIGN.md``
section 3): per query up to 7 non-tie pairs sampled with a seed, queries with fewer than 2 dropped;
an 80/20 split by query (seed 42); on a test query the first pair is the probe and the others are
scored. Every method is fitted on the training queries and predicts ``P(b beats a)`` on the scored
pairs. Ranking quality gain of a method = ``(NLL_global - NLL_method) / NLL_global`` in percent,
with a percentile bootstrap interval that resamples test queries (the per-query NLL sums of the
global model and of the method are resampled jointly).

Beyond the paper (``DESIGN.md`` section 3, issues 10 and 16), each in its own module and used
here:

- **The probe's leak** (:mod:`ecc_lib.protocol.leak_free`): pairs are drawn among non-tie pairs, so with
  binary scores a probe "A beat B" decides every scored pair that contains A or B.
  :func:`score_methods` also reports the gain on the scored pairs that *touch* a probe model and
  on those *disjoint* from it, and the share of touching pairs (``probe_leak_share``);
  ``leak_free=True`` redraws each test query's probe among pairs whose models appear in no scored
  pair (:func:`ecc_lib.protocol.leak_free.make_leak_free`).
- **Probe strategies and probe evidence** (:mod:`ecc_lib.protocol.probes`): which candidate
  comparison of a test query is revealed as its probe (``"first"``, ``"random"``, ``"active"`` or
  a function), and whether several probes' log-likelihoods are averaged (``"mean"``, the authors'
  code) or added (``"sum"``, the Bayesian choice).

Several protocol seeds (mean +- sd beside every per-seed interval) are in :mod:`ecc_lib.protocol.seeds`;
the experiments built on the protocol in :mod:`ecc_lib.protocol.experiments.sweeps` (inference modes, sweeps,
diagnostics), :mod:`ecc_lib.protocol.routing` (routing with the clusterings) and
:mod:`ecc_lib.protocol.experiments.new_model` (ranking a new model from a comparison budget).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ecc_lib.data import protocol_policy
from ecc_lib.data.comparisons import (
    DEFAULT_TIE_TOLERANCE,
    Comparisons,
    make_comparisons,
    score_matrix,
    snap_ties,
)
from ecc_lib.data.splits import split_queries, touching_probe
from ecc_lib.ecc.baselines import (
    ComparisonOnlyECC,
    EmbeddingClusters,
    GlobalBT,
    HumanLabelClusters,
)
from ecc_lib.ecc.cv import ECCCV
from ecc_lib.ecc.estimator import ECC, comparison_nll
from ecc_lib.ecc.label_informed import LabelInformedECC
from ecc_lib.ecc.validation import MODES, check_mode, labels_to_str
from ecc_lib.protocol.leak_free import make_leak_free, probe_candidate_rows
from ecc_lib.protocol.probes import (
    PROBE_EVIDENCE,
    ProbeStrategy,
    probe_responsibilities,
    select_probes,
)
from ecc_lib.serialization import to_jsonable
from ecc_lib.stats import (
    DEFAULT_N_BOOT,
    bootstrap_indices,
    paired_difference,
    percentile_interval,
    ratio_gain,
)

logger = logging.getLogger(__name__)

METHODS: tuple[str, ...] = ("global", "ecc", "emb_only", "comp_only", "human")
LABEL_METHODS: tuple[str, ...] = ("human", "ecc_labels")  # need query categories
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
    probe_candidates : ndarray of bool or None
        Over the rows of ``test``: the comparisons that may be revealed as probes (the others are
        scored). ``None`` (the paper's protocol) means by position: a test query's first
        ``n_probes`` (or ``score_from``) comparisons. Set by
        :func:`~ecc_lib.protocol.leak_free.make_leak_free`.
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
    probe_candidates: np.ndarray | None = None

    @property
    def x_train(self) -> np.ndarray:
        """Embeddings of the training queries."""
        return self.embeddings[self.train_mask]

    @property
    def x_test(self) -> np.ndarray:
        """Embeddings of the test queries."""
        return self.embeddings[self.test_mask]

    @property
    def labels_train(self) -> np.ndarray | None:
        """Human categories of the training queries (None without labels)."""
        return None if self.labels is None else self.labels[self.train_mask]

    @property
    def labels_test(self) -> np.ndarray | None:
        """Human categories of the test queries (None without labels)."""
        return None if self.labels is None else self.labels[self.test_mask]

    @property
    def models(self) -> tuple[str, ...]:
        """Model names, in the comparisons' coding."""
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
    evidence: str = "sampled",
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
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
    evidence : {"sampled", "soft"}, default "sampled"
        ``"soft"``: the same pairs, each with the probability that ``b`` beats ``a`` under the two
        empirical score distributions (:func:`ecc_lib.ecc.soft_evidence.soft_outcomes`) as outcome,
        for fitting and scoring; ``"sampled"``: the mean-score winner (the paper's protocol).
    tie_tolerance : float, default 1e-4
        Mean scores of a query within this distance tie (recorded in ``params``; see
        :func:`ecc_lib.data.comparisons.snap_ties`).

    Returns
    -------
    ProtocolData
        ``params`` records ``left_out_reasons`` (why each dropped query was left out: "all
        models tie", "one non-tie pair", "fewer than 2 models observed") and, with two models,
        ``single_pair`` (each query has its one pair; ``min_pairs`` is lowered to 1 with a
        warning).
    """
    if evidence not in ("sampled", "soft"):
        raise ValueError(f"evidence must be 'sampled' or 'soft', got {evidence!r}")
    query_ids = queries["query_id"].astype(str).to_numpy()
    emb = np.asarray(embeddings)
    if emb.ndim != 2 or emb.shape[0] != len(query_ids):
        raise ValueError(
            f"embeddings have shape {emb.shape}; expected one row per query of the queries table "
            f"({len(query_ids)} rows, in its order)"
        )
    protocol_policy.check_embedding_dims(emb.shape[1])
    n_models = len(models) if models is not None else int(outcomes["model"].nunique())
    notes: list[str] = []
    single_pair = n_models == 2 and min_pairs > 1
    if single_pair:
        min_pairs = 1
        notes.append(
            "only 2 models: each query has a single comparison pair, so ECC is fitted on that one "
            "pair per query and a test query is scored on its pair without a probe (embedding "
            "only); read its gain with care"
        )
        logger.warning(notes[-1])
    comparisons = make_comparisons(
        outcomes,
        n_pairs=n_pairs,
        ties="drop",
        min_pairs=min_pairs,
        query_ids=query_ids,
        models=models,
        random_state=random_state,
        tie_tolerance=tie_tolerance,
    )
    if comparisons.n_queries < 2:
        two = protocol_policy.two_models_note(int(outcomes["model"].nunique()))
        raise ValueError(
            f"only {comparisons.n_queries} query(ies) have at least {min_pairs} non-tie "
            f"pair{'s' if min_pairs != 1 else ''}; "
            "the protocol needs at least 2" + (f" ({two})" if two else "")
        )
    if len(comparisons.dropped_query_ids):
        logger.info(
            "protocol: %d of %d queries dropped with fewer than %d non-tie pairs",
            len(comparisons.dropped_query_ids),
            len(query_ids),
            min_pairs,
        )
    if evidence == "soft":
        from ecc_lib.ecc.soft_evidence import soft_outcomes

        comparisons = soft_outcomes(outcomes, comparisons)
    rows = pd.Index(query_ids).get_indexer(comparisons.query_ids)
    labels = None
    if "category" in queries.columns and queries["category"].notna().any():
        labels = labels_to_str(queries["category"].to_numpy(dtype=object)[rows], len(rows))
    scores, _, _ = score_matrix(
        outcomes, query_ids=comparisons.query_ids, models=comparisons.models
    )
    train_mask, test_mask = split_queries(
        comparisons.n_queries, test_size=test_size, random_state=random_state
    )
    left_out = left_out_reasons(
        outcomes, comparisons.dropped_query_ids, comparisons.models, tie_tolerance, min_pairs
    )
    texts = queries["text"].astype(str).to_numpy()[rows]
    checks = protocol_policy.protocol_notes(
        outcomes, labels, int(train_mask.sum()), train_mask=train_mask, texts=texts
    )
    if single_pair:  # the generic two-model note is replaced by the sentence above
        two = protocol_policy.two_models_note(2)
        checks = [c for c in checks if c != two]
    notes = notes + checks
    return ProtocolData(
        comparisons=comparisons,
        embeddings=np.ascontiguousarray(emb[rows], dtype=np.float32),
        labels=labels,
        texts=texts,
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
            "evidence": evidence,
            "tie_tolerance": float(tie_tolerance),
            "left_out_reasons": left_out,
            "single_pair": bool(single_pair),
        },
    )


def left_out_reasons(
    outcomes: pd.DataFrame,
    dropped_query_ids,
    models: tuple[str, ...],
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
    min_pairs: int = 2,
) -> dict[str, int]:
    """Why the queries left out of the protocol were left out, with their counts.

    Parameters
    ----------
    outcomes : DataFrame
        Long outcomes ``query_id, model, score``.
    dropped_query_ids : sequence of str
        The queries with fewer than ``min_pairs`` non-tie pairs.
    models : tuple of str
    tie_tolerance : float
        As in :func:`prepare_protocol`.
    min_pairs : int, default 2

    Returns
    -------
    dict
        ``{reason: number of queries}`` with reasons ``"all models tie"`` (at least 2 models
        observed, no pair with a winner), ``"fewer than 2 models observed"`` and ``"only k
        non-tie pair(s)"`` (fewer than ``min_pairs``); empty when nothing was left out.
    """
    ids = np.asarray(list(dropped_query_ids), dtype=object).astype(str)
    if len(ids) == 0:
        return {}
    scores, _, _ = score_matrix(outcomes, query_ids=ids, models=models)
    scores = snap_ties(scores, tolerance=tie_tolerance)
    observed = np.isfinite(scores).sum(axis=1)
    # decisive pairs per query = pairs of observed models in different score groups
    ranked = np.sort(scores, axis=1)  # NaN last
    pairs_total = observed * (observed - 1) // 2
    same = np.zeros(len(ids), dtype=np.int64)
    for value_col in range(scores.shape[1]):  # over models, not pairs
        v = ranked[:, [value_col]]
        with np.errstate(invalid="ignore"):
            eq = (scores == v).sum(axis=1)
        first = np.ones(len(ids), dtype=bool)
        if value_col:
            first = ranked[:, value_col] != ranked[:, value_col - 1]
        ok = first & np.isfinite(ranked[:, value_col])
        same += np.where(ok, eq * (eq - 1) // 2, 0)
    decisive = pairs_total - same
    out: dict[str, int] = {}
    few = observed < 2
    tie = ~few & (decisive == 0)
    if few.any():
        out["fewer than 2 models observed"] = int(few.sum())
    if tie.any():
        out["all models tie"] = int(tie.sum())
    for k in range(1, int(min_pairs)):
        n = int((~few & (decisive == k)).sum())
        if n:
            out[f"only {k} non-tie pair(s)"] = n
    return out


# --------------------------------------------------------------------------------------------------
# methods


def _ecc_family(cls, drop_lam: bool = False):
    def factory(n_clusters, lam, temperature, random_state, **ecc_params):
        kwargs = {} if drop_lam else {"lam": lam}
        return cls(
            n_clusters=n_clusters,
            temperature=temperature,
            random_state=random_state,
            **kwargs,
            **ecc_params,
        )

    return factory


_ECC_CV_PASSED = ("max_iter", "tol", "n_init", "dtype", "n_jobs")


def _ecc_cv_factory(n_clusters, lam, temperature, random_state, **ecc_params):
    """:class:`~ecc_lib.ecc.cv.ECCCV` over its default grid plus the configured ECC point (so the
    paper's settings are always a candidate)."""
    point = {"family": "ecc", "n_clusters": n_clusters, "temperature": temperature, "lam": lam}
    passed = {k: v for k, v in ecc_params.items() if k in _ECC_CV_PASSED}
    return ECCCV(extra_candidates=(point,), random_state=random_state, **passed)


METHOD_FACTORIES: dict[str, Callable] = {
    "global": lambda n_clusters, lam, temperature, random_state, **ecc_params: GlobalBT(),
    "ecc": _ecc_family(ECC),
    "emb_only": _ecc_family(EmbeddingClusters),
    "comp_only": _ecc_family(ComparisonOnlyECC, drop_lam=True),
    "human": lambda n_clusters, lam, temperature, random_state, **ecc_params: HumanLabelClusters(
        lam=lam, temperature=temperature
    ),
    "ecc_labels": _ecc_family(LabelInformedECC),
    "ecc_cv": _ecc_cv_factory,
}
"""Estimator factory by method name. Each is called as ``factory(n_clusters, lam, temperature,
random_state, **ecc_params)`` and returns an unfitted estimator with ``fit(embeddings,
comparisons, labels=None)``, ``predict_responsibilities``, ``predict_proba`` and
``routing_scores``; a new method (label-informed ECC, say) is added here and then works in every
protocol, seed, leak and routing function."""


def make_methods(
    n_clusters: int = 30,
    lam: float = 3.0,
    temperature: float = 0.1,
    random_state: int | None = PAPER_SEED,
    methods: tuple[str, ...] = METHODS,
    **ecc_params,
) -> dict:
    """Unfitted estimators by method name (``global``, ``ecc``, ``emb_only``, ``comp_only``,
    ``human`` and any other name in :data:`METHOD_FACTORIES`). Extra keyword arguments
    (``max_iter``, ``n_init``, ``tol`` ...) go to the EM-based methods.

    Parameters
    ----------
    n_clusters, lam, temperature : ECC parameters (paper: 30, 3, 0.1)
    random_state : int, optional
        Seed of the EM initialisations.
    methods : tuple of str
        Method names.

    Returns
    -------
    dict
        ``{name: estimator}`` in the order of ``methods``.
    """
    unknown = [m for m in methods if m not in METHOD_FACTORIES]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; choose from {list(METHOD_FACTORIES)}")
    return {
        name: METHOD_FACTORIES[name](n_clusters, lam, temperature, random_state, **ecc_params)
        for name in methods
    }


_PROTOTYPE_SETTINGS = ("n_clusters", "lam", "temperature")


def prototype_parameters(estimator: ECC | None = None) -> dict:
    """The parameters of an ECC prototype as :func:`make_methods` takes them.

    ``n_clusters``, ``lam`` and ``temperature`` always; every other parameter only where it
    differs from :class:`~ecc_lib.ecc.estimator.ECC`'s default (so a default prototype passes no
    ``**ecc_params`` and the baselines keep their own defaults). ``random_state`` is left out:
    the protocol seeds each fit.

    Parameters
    ----------
    estimator : ECC, optional
        The unfitted prototype (default ``ECC()``, the paper's K = 30, lam = 3, T = 0.1).

    Returns
    -------
    dict
        ``{"n_clusters", "lam", "temperature", **ecc_params}``.
    """
    estimator = ECC() if estimator is None else estimator
    if type(estimator) is not ECC:
        raise TypeError(
            f"the estimator prototype must be an unfitted ecc_lib.ECC, got {type(estimator).__name__}"
            " (the baselines are built from its parameters)"
        )
    params = estimator.get_params(deep=False)
    defaults = ECC().get_params(deep=False)
    out = {name: params[name] for name in _PROTOTYPE_SETTINGS}
    for name, value in params.items():
        if name in _PROTOTYPE_SETTINGS or name == "random_state":
            continue
        if value != defaults[name]:
            out[name] = value
    return out


def methods_from_prototype(
    estimator: ECC | None = None,
    *,
    methods: tuple[str, ...] = METHODS,
    random_state: int | None = PAPER_SEED,
) -> dict:
    """Unfitted estimators by method name, all built from one ECC prototype.

    ``ecc`` is ``sklearn.base.clone(estimator)`` with the protocol seed; the baselines come from
    :data:`METHOD_FACTORIES` with the prototype's parameters (:func:`prototype_parameters`), so
    ECC's K, lam and T are set in one place, ``ECC.__init__``.

    Parameters
    ----------
    estimator : ECC, optional
        The unfitted prototype (default ``ECC()``).
    methods : tuple of str
        Method names (see :data:`METHOD_FACTORIES`).
    random_state : int, optional
        Seed of the EM initialisations (the protocol seed).

    Returns
    -------
    dict
        ``{name: estimator}`` in the order of ``methods``.
    """
    from sklearn.base import clone

    params = prototype_parameters(estimator)
    built = make_methods(random_state=random_state, methods=methods, **params)
    if "ecc" in built and estimator is not None:
        built["ecc"] = clone(estimator).set_params(random_state=random_state)
    return built


def default_methods(has_labels: bool) -> tuple[str, ...]:
    """The methods to run: the paper's, plus ``ecc_labels`` when queries carry categories
    (``human`` and ``ecc_labels`` are left out without categories), plus ``ecc_cv`` (issue 26).

    Parameters
    ----------
    has_labels : bool

    Returns
    -------
    tuple of str
    """
    if has_labels:
        return (*METHODS, "ecc_labels", "ecc_cv")
    return (*(m for m in METHODS if m not in LABEL_METHODS), "ecc_cv")


def fit_methods(data: ProtocolData, methods: dict) -> tuple[dict, dict]:
    """Fit every estimator on the training queries; returns ``(fitted, fit_seconds)``.

    ``human`` and ``ecc_labels`` are skipped (with a log line) when the data have no labels.

    Parameters
    ----------
    data : ProtocolData
        Comparisons, embeddings and split (:func:`prepare_protocol`).
    methods : dict
        Unfitted estimators by name (:func:`make_methods`).

    Returns
    -------
    fitted : dict
        Fitted estimators by name.
    fit_seconds : dict
        Wall seconds of each fit.
    """
    protocol_policy.check_protocol_sizes(
        data.train.n_queries,
        data.test.n_queries,
        embedding_dim=data.embeddings.shape[1],
        n_clusters=[
            m.n_clusters for m in methods.values() if getattr(m, "n_clusters", None) is not None
        ],
    )
    fitted, seconds = {}, {}
    for name, estimator in methods.items():
        reason = protocol_policy.human_baseline_reason(data.labels, train_mask=data.train_mask)
        if (name in LABEL_METHODS or isinstance(estimator, HumanLabelClusters)) and reason:
            logger.info("%s (%s skipped)", reason, name)
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
    n_probes: int = 1,
    mode: str = "both",
    score_from: int | None = None,
    fit_seconds: dict | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = 0.95,
    random_state: int = 0,
    probe_evidence: str = "mean",
    probe_strategy: str | ProbeStrategy = "first",
) -> ECCEvaluation:
    """Score fitted methods on the test queries.

    Parameters
    ----------
    data : ProtocolData
    fitted : dict
        Fitted estimators by name; must hold ``"global"`` (the gain reference).
    n_probes : int, default 1
        Comparisons of each test query revealed as the probe.
    mode : {"both", "embedding", "probe"}
        Inference signal for the responsibilities of test queries.
    score_from : int, optional
        Score the comparisons from this position on (default ``n_probes``); set it to the largest
        number of probes of a sweep to score the same pairs throughout. The probes are chosen among
        the comparisons before it.
    n_boot, confidence, random_state
        Bootstrap over test queries (the same resamples for every method and every reading);
        ``random_state`` also seeds a randomised probe strategy.
    probe_evidence : {"mean", "sum"}, default "mean"
        How several probes count (see :func:`~ecc_lib.protocol.probes.probe_responsibilities`).
    probe_strategy : str or callable, default "first"
        Which candidate comparisons become probes
        (:data:`~ecc_lib.protocol.probes.PROBE_STRATEGIES`).

    Returns
    -------
    ECCEvaluation
        With the leak-aware reading: gains on scored pairs touching / disjoint from the probe's
        models and the share of touching pairs.
    """
    if "global" not in fitted:
        raise ValueError("score_methods needs the fitted 'global' model (reference of the gain)")
    check_mode(mode)
    if probe_evidence not in PROBE_EVIDENCE:
        raise ValueError(f"probe_evidence must be one of {PROBE_EVIDENCE}, got {probe_evidence!r}")
    _, scored_mask = probe_candidate_rows(data, n_probes, score_from)
    scored = data.test.take(scored_mask)
    if len(scored) == 0:
        raise ValueError("no scored comparisons remain on the test queries (too many probes?)")
    n_test = data.test.n_queries
    counts = np.bincount(scored.query, minlength=n_test)
    per_query, per_query_touch, accuracy, touch_count, leak_share = {}, {}, {}, {}, {}
    pair_losses, touch_rows, with_probe = {}, {}, {}
    for name, model in fitted.items():
        probe, _, _, _ = select_probes(
            data, model, n_probes, score_from, probe_strategy, random_state
        )
        resp = probe_responsibilities(
            model, data.x_test, probe, mode, data.labels_test, probe_evidence
        )
        p = model.predict_proba(scored, responsibilities=resp)
        losses = comparison_nll(p, scored.y)
        touching = touching_probe(probe, scored)
        pair_losses[name], touch_rows[name] = losses, touching
        with_probe[name] = (
            np.zeros(n_test, dtype=bool)
            if probe is None
            else np.bincount(probe.query, minlength=n_test) > 0
        )
        per_query[name] = np.bincount(scored.query, weights=losses, minlength=n_test)
        per_query_touch[name] = np.bincount(
            scored.query, weights=np.where(touching, losses, 0.0), minlength=n_test
        )
        touch_count[name] = np.bincount(scored.query[touching], minlength=n_test)
        leak_share[name] = float(touching.mean())
        accuracy[name] = pairwise_accuracy(p, scored.y)
    has = counts > 0
    index = bootstrap_indices(int(has.sum()), n_boot=n_boot, random_state=random_state)
    n_scored = float(counts.sum())
    nll, nll_ci, gain, ci, stats_gain = {}, {}, {}, {}, {}
    gain_t, ci_t, gain_d, ci_d, stats_d = {}, {}, {}, {}, {}
    reference = "ecc" if "ecc" in fitted else next(iter(fitted))
    covered = with_probe[reference][has]
    by_probe = {"with": {}, "without": {}}
    for name, losses in per_query.items():
        m = losses[has]
        nll[name] = float(m.sum() / n_scored)
        reps = m[index].sum(axis=1) / counts[has][index].sum(axis=1)
        nll_ci[name] = percentile_interval(reps, confidence=confidence)
        if name == "global":
            continue
        g = per_query["global"][has]
        gain[name], ci[name], stats_gain[name] = ratio_gain(g, m, index, confidence=confidence)
        # the global model ignores the probe: its losses on this method's touching pairs are its
        # per-pair losses restricted to the same pairs
        touching = touch_rows[name]
        g_losses = pair_losses["global"]
        g_t = np.bincount(scored.query[touching], weights=g_losses[touching], minlength=n_test)
        m_t = per_query_touch[name]
        gain_t[name], ci_t[name], _ = ratio_gain(g_t[has], m_t[has], index, confidence=confidence)
        gain_d[name], ci_d[name], stats_d[name] = ratio_gain(
            (per_query["global"] - g_t)[has], (losses - m_t)[has], index, confidence=confidence
        )
        # queries with / without a probe of the reference method (the same resamples)
        for key, mask in (("with", covered), ("without", ~covered)):
            by_probe[key][name] = ratio_gain(g * mask, m * mask, index, confidence=confidence)[:2]
    differences, differences_disjoint = {}, {}
    if "ecc" in gain:
        for second in gain:
            if second == "ecc":
                continue
            differences[f"ecc_minus_{second}"] = paired_difference(
                gain["ecc"],
                stats_gain["ecc"],
                gain[second],
                stats_gain[second],
                confidence=confidence,
            )
            differences_disjoint[f"ecc_minus_{second}"] = paired_difference(
                gain_d["ecc"],
                stats_d["ecc"],
                gain_d[second],
                stats_d[second],
                confidence=confidence,
            )
    frame = pd.DataFrame({"query_id": data.test.query_ids, "n_scored": counts})
    frame["n_scored_touching"] = touch_count[reference]
    frame["has_probe"] = with_probe[reference]
    for name, losses in per_query.items():
        frame[f"nll_{name}"] = losses
        frame[f"nll_{name}_touching"] = per_query_touch[name]
    fit_seconds = dict(fit_seconds or {})
    strategy_name = probe_strategy if isinstance(probe_strategy, str) else probe_strategy.__name__
    n_covered = int(covered.sum())
    probe_coverage = {
        "share_with_probe": float(covered.mean()) if len(covered) else float("nan"),
        "n_with_probe": n_covered,
        "n_without_probe": int(len(covered) - n_covered),
        "n_scored_with_probe": int(counts[has][covered].sum()),
        "n_scored_without_probe": int(counts[has][~covered].sum()),
        "ranking_quality_gain_with_probe": {k: v[0] for k, v in by_probe["with"].items()},
        "ci95_with_probe": {k: v[1] for k, v in by_probe["with"].items()},
        "ranking_quality_gain_without_probe": {k: v[0] for k, v in by_probe["without"].items()},
        "ci95_without_probe": {k: v[1] for k, v in by_probe["without"].items()},
    }
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
        n_scored_touching=int(touch_count[reference].sum()),
        differences_disjoint=differences_disjoint,
        probe_coverage=probe_coverage,
    )


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
    probe_evidence: str = "mean",
    probe_strategy: str | ProbeStrategy = "first",
    leak_free: bool = False,
    evidence: str = "sampled",
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
    **ecc_params,
) -> ECCEvaluation:
    """The whole paper protocol in one call: sample pairs, split, fit every method, score.

    ``random_state`` seeds the pair draw, the split and the EM initialisations. ``human`` is
    evaluated only when the queries have categories. ``leak_free=True`` redraws the probes with
    :func:`~ecc_lib.protocol.leak_free.make_leak_free`. Extra keyword arguments go to the EM-based
    estimators (see :func:`make_methods`); ``probe_evidence`` and ``probe_strategy`` to :func:`score_methods`.

    Parameters
    ----------
    queries : DataFrame
        ``query_id, text[, category]``.
    outcomes : DataFrame
        Long outcomes ``query_id, model, score``.
    embeddings : ndarray, shape (len(queries), d)
        Rows follow the queries table.
    n_clusters, lam, temperature
        As in :func:`make_methods`.
    n_pairs, test_size, random_state
        As in :func:`prepare_protocol`.
    n_probes, mode, n_boot
        As in :func:`score_methods`.
    methods : tuple of str
        Methods to evaluate.
    **ecc_params
        Further arguments of :class:`~ecc_lib.ecc.estimator.ECC`.

    Returns
    -------
    ECCEvaluation
    """
    data, result = _run_seed(
        queries,
        outcomes,
        embeddings,
        random_state,
        n_clusters=n_clusters,
        lam=lam,
        temperature=temperature,
        n_pairs=n_pairs,
        n_probes=n_probes,
        test_size=test_size,
        mode=mode,
        methods=methods,
        n_boot=n_boot,
        probe_evidence=probe_evidence,
        probe_strategy=probe_strategy,
        leak_free=leak_free,
        evidence=evidence,
        tie_tolerance=tie_tolerance,
        **ecc_params,
    )
    return result


def _run_seed(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    embeddings: np.ndarray,
    seed: int,
    *,
    n_clusters: int,
    lam: float,
    temperature: float,
    n_pairs: int,
    n_probes: int,
    test_size: float,
    mode: str,
    methods: tuple[str, ...],
    n_boot: int,
    probe_evidence: str,
    probe_strategy: str | ProbeStrategy,
    leak_free: bool,
    evidence: str,
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
    estimator: ECC | None = None,
    **ecc_params,
) -> tuple[ProtocolData, ECCEvaluation]:
    """One protocol seed (pairs, split, EM start, leak-free probes); the bootstrap and a
    randomised probe strategy use seed 0. Shared by :func:`run_protocol` and
    :func:`ecc_lib.protocol.seeds.run_seeds`. With an ``estimator`` prototype the methods are built
    from it (:func:`methods_from_prototype`) and its parameters replace ``n_clusters``, ``lam``,
    ``temperature`` and ``**ecc_params``."""
    data = prepare_protocol(
        queries,
        outcomes,
        embeddings,
        n_pairs,
        test_size,
        seed,
        evidence=evidence,
        tie_tolerance=tie_tolerance,
    )
    n_probes, leak_free = single_pair_settings(data, n_probes, leak_free)
    if leak_free:
        data = make_leak_free(data, n_probes=n_probes, random_state=seed, outcomes=outcomes)
    if estimator is not None:
        ecc_params = prototype_parameters(estimator)
        n_clusters = ecc_params.pop("n_clusters")
        lam = ecc_params.pop("lam")
        temperature = ecc_params.pop("temperature")
        estimators = methods_from_prototype(estimator, methods=methods, random_state=seed)
    else:
        estimators = make_methods(n_clusters, lam, temperature, seed, methods, **ecc_params)
    for estimator in estimators.values():  # ecc_cv probes held-out queries like test queries
        if "cv_probe" in estimator.get_params():
            estimator.set_params(n_probes=n_probes, cv_probe="leak_free" if leak_free else "first")
    fitted, seconds = fit_methods(data, estimators)
    result = score_methods(
        data,
        fitted,
        n_probes=n_probes,
        mode=mode,
        fit_seconds=seconds,
        n_boot=n_boot,
        random_state=0,
        probe_evidence=probe_evidence,
        probe_strategy=probe_strategy,
    )
    result.params.update(
        {"n_clusters": n_clusters, "lam": lam, "temperature": temperature, **ecc_params}
    )
    chosen = {k: m.best_params_ for k, m in fitted.items() if hasattr(m, "best_params_")}
    if chosen:  # settings chosen by cross-validation (ecc_cv), per seed
        result.params["best_params"] = chosen
    return data, result


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


def single_pair_settings(data: ProtocolData, n_probes: int, leak_free: bool) -> tuple[int, bool]:
    """Probes and leak-free setting that two-model data allow (issue 23).

    With two models each query has one pair: a probe would leave nothing to score, and no pair
    is disjoint from it. ECC then runs without a probe (the test query's one pair is scored from
    its embedding) and the leak-free protocol is skipped, each with a warning in
    ``data.params["warnings"]``.

    Parameters
    ----------
    data : ProtocolData
    n_probes : int
    leak_free : bool

    Returns
    -------
    n_probes, leak_free : int, bool
    """
    if not data.params.get("single_pair"):
        return n_probes, leak_free
    notes = data.params.setdefault("warnings", [])
    if n_probes:
        notes.append(
            f"{n_probes} probe(s) asked, but with one pair per query a probe would leave nothing "
            "to score: test queries are scored without a probe"
        )
        logger.warning(notes[-1])
    if leak_free:
        notes.append("the leak-free protocol is skipped: with 2 models no pair avoids the probe")
        logger.warning(notes[-1])
    data.params["n_probes_asked"] = n_probes
    return 0, False


__all__ = [
    "ECCEvaluation",
    "LABEL_METHODS",
    "METHODS",
    "METHOD_FACTORIES",
    "MODES",
    "PAPER_N_PAIRS",
    "PAPER_SEED",
    "PAPER_TEST_SIZE",
    "ProtocolData",
    "default_methods",
    "fit_methods",
    "left_out_reasons",
    "make_methods",
    "methods_from_prototype",
    "pairwise_accuracy",
    "prepare_protocol",
    "prototype_parameters",
    "run_protocol",
    "score_methods",
]
