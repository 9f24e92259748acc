"""The methods of the ECC protocol: their estimators, built from one ECC prototype.

Each method is one :class:`~ecc_lib.method_registry.MethodSpec` of
:data:`~ecc_lib.method_registry.METHOD_SPECS` (label, words, colour, flags); this module attaches
the built-in methods' estimator factories to their entries. :data:`METHOD_FACTORIES`,
:data:`METHODS`, :data:`LABEL_METHODS`, :data:`DEFAULT_TUNED` and :data:`TUNED_METHODS` are read
from the registry (the tuples and the dict when this module is imported, the factories when read);
:func:`methods_from_prototype` builds them all from one unfitted :class:`~ecc_lib.ecc.estimator.ECC`
(ECC's K, lam and T live only in ``ECC.__init__``); :func:`fit_methods` fits them on the training
queries of a :class:`~ecc_lib.protocol.data.ProtocolData` split.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, MutableMapping

from ecc_lib import defaults
from ecc_lib.data import protocol_policy
from ecc_lib.ecc.baselines import (
    ComparisonOnlyECC,
    EmbeddingClusters,
    GlobalBT,
    HumanLabelClusters,
)
from ecc_lib.ecc.cv import ECCCV
from ecc_lib.ecc.cv_grid import family_grid
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.label_informed import LabelInformedECC
from ecc_lib.method_registry import (
    METHOD_SPECS,
    MethodSpec,
    attach_factory,
    method_keys,
    register_method,
)
from ecc_lib.protocol.data import PAPER_SEED, ProtocolData

logger = logging.getLogger(__name__)

METHODS: tuple[str, ...] = method_keys(paper=True)
"""The paper's five methods (the default of the lower-level protocol functions)."""
LABEL_METHODS: tuple[str, ...] = method_keys(needs_labels=True)
"""The methods that need query categories."""
DEFAULT_TUNED: tuple[str, ...] = method_keys(lambda s: s.tuned is not None, runs_by_default=True)
"""The tuned-prior baselines of the default comparison (issue 34: ECC-CV is compared with them)."""
TUNED_METHODS: dict[str, str] = {k: s.tuned for k, s in METHOD_SPECS.items() if s.tuned is not None}
"""Tuned-prior method -> the method it tunes (the default-prior one beside it)."""


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


def _tuned_factory(family: str):
    """A method tuned alone (issue 34): :class:`~ecc_lib.ecc.cv.ECCCV` over its configured
    settings at every BT prior precision (:func:`~ecc_lib.ecc.cv_grid.family_grid`), so its
    ``alpha`` is chosen by the same inner CV on training queries as ECC-CV's."""

    def factory(n_clusters, lam, temperature, random_state, **ecc_params):
        grid = family_grid(family, n_clusters=n_clusters, temperature=temperature, lam=lam)
        passed = {k: v for k, v in ecc_params.items() if k in _ECC_CV_PASSED}
        return ECCCV(param_grid=grid, random_state=random_state, **passed)

    return factory


for _key, _factory in {
    "global": lambda n_clusters, lam, temperature, random_state, **ecc_params: GlobalBT(),
    "ecc": _ecc_family(ECC),
    "emb_only": _ecc_family(EmbeddingClusters),
    "comp_only": _ecc_family(ComparisonOnlyECC, drop_lam=True),
    "human": lambda n_clusters, lam, temperature, random_state, **ecc_params: HumanLabelClusters(
        lam=lam, temperature=temperature
    ),
    "ecc_labels": _ecc_family(LabelInformedECC),
    "ecc_cv": _ecc_cv_factory,
    **{spec.key: _tuned_factory(spec.tuned) for spec in METHOD_SPECS.values() if spec.tuned},
}.items():
    attach_factory(_key, _factory)
del _key, _factory


class _Factories(MutableMapping):
    """``{method: factory}``, a view of the registry; setting a new key registers a method with
    that factory (and its key as its name), deleting it unregisters it."""

    def __getitem__(self, key: str) -> Callable:
        spec = METHOD_SPECS.get(key)
        if spec is None or spec.factory is None:
            raise KeyError(key)
        return spec.factory

    def __setitem__(self, key: str, factory: Callable) -> None:
        if key in METHOD_SPECS:
            attach_factory(key, factory)
        else:
            register_method(MethodSpec(key, factory=factory))

    def __delitem__(self, key: str) -> None:
        del METHOD_SPECS[key]

    def __iter__(self):
        return iter([k for k, s in METHOD_SPECS.items() if s.factory is not None])

    def __len__(self) -> int:
        return sum(1 for s in METHOD_SPECS.values() if s.factory is not None)


METHOD_FACTORIES: MutableMapping[str, Callable] = _Factories()
"""Estimator factory by method name (a view of :data:`~ecc_lib.method_registry.METHOD_SPECS`).
Each is called as ``factory(n_clusters, lam, temperature, random_state, **ecc_params)`` and returns
an unfitted estimator with ``fit(embeddings, comparisons, labels=None)``,
``predict_responsibilities``, ``predict_proba`` and ``routing_scores``; a new method is one
:class:`~ecc_lib.method_registry.MethodSpec` and then works in every protocol, seed, leak and
routing function, figure, report table and the bench."""


def make_methods(
    *,
    n_clusters: int = defaults.N_CLUSTERS,
    lam: float = defaults.LAM,
    temperature: float = defaults.TEMPERATURE,
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
    return out | {
        name: value
        for name, value in params.items()
        if name not in (*_PROTOTYPE_SETTINGS, "random_state") and value != defaults[name]
    }


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
    """The methods to run: those of :data:`~ecc_lib.method_registry.METHOD_SPECS` that run by
    default, in registry order (the paper's, ``ecc_labels``, the tuned-prior baselines of issue 34
    and ``ecc_cv``, last); those that need query categories only when queries carry them.

    Parameters
    ----------
    has_labels : bool

    Returns
    -------
    tuple of str
    """
    return method_keys(
        lambda s: s.runs_by_default and (has_labels or not s.needs_labels) and s.factory is not None
    )


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
        spec = METHOD_SPECS.get(name)
        needs_labels = (spec is not None and spec.needs_labels) or isinstance(
            estimator, HumanLabelClusters
        )
        if needs_labels and reason:
            logger.info("%s (%s skipped)", reason, name)
            continue
        start = time.perf_counter()
        estimator.fit(data.x_train, data.train, labels=data.labels_train)
        seconds[name] = time.perf_counter() - start
        fitted[name] = estimator
    return fitted, seconds


__all__ = [
    "default_methods",
    "fit_methods",
    "make_methods",
]
