"""The clustering methods of the ECC protocol, one :class:`MethodSpec` each (issue 33).

Every fact about a method lives in its entry of :data:`METHOD_SPECS`: the label of figures and
tables, the words of sentences, whether those words are plural, a short description, the colour of
every figure, whether it needs query categories, whether it runs by default, whether it is one of
the paper's five, the method whose BT prior it tunes (issue 34's ``*_tuned``) and its estimator
factory. The protocol (:mod:`ecc_lib.protocol.methods`), the figures, the report, the bench and the
notebooks read these entries and nothing else, so a new method is one entry here plus its factory
(``ecc_lib/protocol/methods.py``), or one :func:`register_method` call with the factory in the spec.

This module is in the bottom layer (it imports nothing of ``ecc_lib``): the factories, which build
estimators of a higher layer, are attached by :mod:`ecc_lib.protocol.methods`
(:func:`attach_factory`). The views (:func:`spec_view`, :func:`method_keys`) read the registry when
they are read, so a method registered at run time is seen everywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MethodSpec:
    """One clustering method of the ECC protocol.

    Parameters
    ----------
    key : str
        Its name in ``methods=``, in ``metrics.json`` and on the command line.
    label : str, optional
        Its name in figures and tables (default: ``key``).
    name : str, optional
        Its name in sentences (default: ``key`` with spaces).
    plural : bool
        Whether ``name`` is plural ("human labels are").
    description : str
        One line of prose: what the method clusters by.
    colour : str, optional
        Its colour in every figure (a matplotlib colour); None: a spare colour fixed by its key.
    needs_labels : bool
        Whether it needs query categories (skipped without them).
    runs_by_default : bool
        Whether ``ecc-lab ecc``, ``run_ecc`` and the bench run it when no methods are given.
    paper : bool
        One of the paper's five methods (the default of the lower-level protocol functions).
    baseline : bool
        A baseline that ECC is compared with (not ECC or one of its variants).
    tuned : str, optional
        The method whose BT prior this one chooses by inner CV (issue 34), else None.
    searched : bool
        Its settings are chosen by cross-validation (ECC-CV).
    factory : callable, optional
        ``factory(n_clusters, lam, temperature, random_state, **ecc_params)`` -> an unfitted
        estimator; the built-in methods get theirs from :mod:`ecc_lib.protocol.methods`.
    """

    key: str
    label: str | None = None
    name: str | None = None
    plural: bool = False
    description: str = ""
    colour: str | None = None
    needs_labels: bool = False
    runs_by_default: bool = False
    paper: bool = False
    baseline: bool = False
    tuned: str | None = None
    searched: bool = False
    factory: Callable[..., Any] | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key or self.key != self.key.strip():
            raise ValueError(f"a method key must be a non-empty string, got {self.key!r}")
        if self.label is None:
            object.__setattr__(self, "label", self.key)
        if self.name is None:
            object.__setattr__(self, "name", self.key.replace("_", " "))


def _tuned(key: str, family: str, label: str, name: str, colour: str, **flags) -> MethodSpec:
    return MethodSpec(
        key=key,
        label=f"{label}, tuned prior",
        name=f"{name} at the tuned prior",
        description=f"{name} with the BT prior precision chosen by inner CV on training queries",
        colour=colour,
        tuned=family,
        **flags,
    )


_BUILT_IN = (
    MethodSpec(
        "global",
        label="global BT (reference)",
        name="one global BT",
        description="one Bradley-Terry ranking of all queries (the reference)",
        colour="black",
        runs_by_default=True,
        paper=True,
        baseline=True,
    ),
    MethodSpec(
        "ecc",
        label="ECC",
        name="ECC",
        description="clusters of the embeddings and the comparisons together (the paper's method)",
        colour="tab:red",
        runs_by_default=True,
        paper=True,
    ),
    MethodSpec(
        "emb_only",
        label="embedding-only clusters",
        name="embedding-only clusters",
        plural=True,
        description="clusters of the embeddings alone, one BT profile each",
        colour="tab:green",
        runs_by_default=True,
        paper=True,
        baseline=True,
    ),
    MethodSpec(
        "comp_only",
        label="comparison-only clusters",
        name="comparison-only clusters",
        plural=True,
        description="clusters of the comparisons alone (ECC without the embedding term)",
        colour="tab:orange",
        runs_by_default=True,
        paper=True,
        baseline=True,
    ),
    MethodSpec(
        "human",
        label="human labels",
        name="human labels",
        plural=True,
        description="one BT profile per human query category",
        colour="tab:purple",
        needs_labels=True,
        runs_by_default=True,
        paper=True,
        baseline=True,
    ),
    MethodSpec(
        "ecc_labels",
        label="label-informed ECC",
        name="label-informed ECC",
        description="ECC whose clusters also see the query categories",
        colour="#8b0000",
        needs_labels=True,
        runs_by_default=True,
    ),
    _tuned(
        "global_tuned",
        "global",
        "global BT",
        "one global BT",
        "#555555",
        runs_by_default=True,
    ),
    _tuned(
        "human_tuned",
        "human",
        "human labels",
        "human labels",
        "#c5b0d5",
        plural=True,
        needs_labels=True,
        runs_by_default=True,
    ),
    _tuned(
        "emb_only_tuned",
        "emb_only",
        "embedding-only clusters",
        "embedding-only clusters",
        "#98df8a",
        plural=True,
        runs_by_default=True,
    ),
    MethodSpec(
        "ecc_cv",
        label="ECC-CV (settings chosen by CV)",
        name="ECC-CV",
        description="ECC and its baselines with the settings chosen by inner CV on training queries",
        colour="#ff6f61",
        runs_by_default=True,
        searched=True,
    ),
    _tuned(
        "comp_only_tuned",
        "comp_only",
        "comparison-only clusters",
        "comparison-only clusters",
        "#ffbb78",
        plural=True,
    ),
    _tuned("ecc_tuned", "ecc", "ECC", "ECC", "#ff9896"),
    _tuned(
        "ecc_labels_tuned",
        "ecc_labels",
        "label-informed ECC",
        "label-informed ECC",
        "#c44e52",
        needs_labels=True,
    ),
)

METHOD_SPECS: dict[str, MethodSpec] = {spec.key: spec for spec in _BUILT_IN}
"""Every method by key, in the order the protocol runs and reports them."""

REFERENCE = "global"
"""The method every gain is read over (the paper's reference, the global BT)."""


def register_method(spec: MethodSpec, *, replace: bool = False) -> MethodSpec:
    """Add a method (or, with ``replace=True``, replace one) in :data:`METHOD_SPECS`.

    Parameters
    ----------
    spec : MethodSpec
        The method, with its ``factory``.
    replace : bool
        Whether an existing key may be replaced.

    Returns
    -------
    MethodSpec
    """
    if not isinstance(spec, MethodSpec):
        raise TypeError(f"register_method takes a MethodSpec, got {type(spec).__name__}")
    if spec.key in METHOD_SPECS and not replace:
        raise ValueError(f"method {spec.key!r} is registered already (pass replace=True)")
    if spec.tuned is not None and spec.tuned not in METHOD_SPECS:
        raise ValueError(f"method {spec.key!r} tunes {spec.tuned!r}, which is not registered")
    METHOD_SPECS[spec.key] = spec
    return spec


def unregister_method(key: str) -> None:
    """Remove a method from :data:`METHOD_SPECS` (a method registered for a test, say).

    Parameters
    ----------
    key : str
    """
    if key not in METHOD_SPECS:
        raise KeyError(f"method {key!r} is not registered")
    del METHOD_SPECS[key]


def attach_factory(key: str, factory: Callable[..., Any]) -> None:
    """Give a registered method its estimator factory (kept in its place in the order).

    Parameters
    ----------
    key : str
        A registered method.
    factory : callable
        ``factory(n_clusters, lam, temperature, random_state, **ecc_params)``.
    """
    if key not in METHOD_SPECS:
        raise KeyError(f"method {key!r} is not registered; choose from {list(METHOD_SPECS)}")
    METHOD_SPECS[key] = dataclasses.replace(METHOD_SPECS[key], factory=factory)


def method_spec(key: str) -> MethodSpec:
    """The :class:`MethodSpec` of ``key`` (a one-line error for an unknown key).

    Parameters
    ----------
    key : str

    Returns
    -------
    MethodSpec
    """
    try:
        return METHOD_SPECS[key]
    except KeyError:
        raise KeyError(f"unknown method {key!r}; choose from {list(METHOD_SPECS)}") from None


def method_keys(keep: Callable[[MethodSpec], bool] | None = None, **flags: Any) -> tuple[str, ...]:
    """Keys of the methods that ``keep`` accepts and whose fields equal ``flags``, in registry order.

    ``method_keys(paper=True)`` are the paper's five, ``method_keys(needs_labels=True)`` those that
    need categories, ``method_keys(lambda s: s.tuned is not None)`` the ``*_tuned`` methods.

    Parameters
    ----------
    keep : callable, optional
        ``keep(spec) -> bool``.
    **flags
        Field values the methods must have.

    Returns
    -------
    tuple of str
    """
    return tuple(
        key
        for key, spec in METHOD_SPECS.items()
        if (keep is None or keep(spec)) and all(getattr(spec, f) == v for f, v in flags.items())
    )


class SpecView(Mapping):
    """A read-only ``{key: field}`` view of :data:`METHOD_SPECS`, read when it is read.

    Parameters
    ----------
    field : str
        The :class:`MethodSpec` field.
    keep : callable, optional
        ``keep(spec) -> bool``: which methods the view holds (default: those whose field is set).
    """

    def __init__(self, field: str, keep: Callable[[MethodSpec], bool] | None = None) -> None:
        self._field = field
        self._keep = keep or (lambda spec: getattr(spec, field) is not None)

    def __getitem__(self, key: str) -> Any:
        spec = METHOD_SPECS.get(key)
        if spec is None or not self._keep(spec):
            raise KeyError(key)
        return getattr(spec, self._field)

    def __iter__(self) -> Iterator[str]:
        return iter([k for k, s in METHOD_SPECS.items() if self._keep(s)])

    def __len__(self) -> int:
        return sum(1 for s in METHOD_SPECS.values() if self._keep(s))

    def __repr__(self) -> str:
        return f"SpecView({self._field!r}, {dict(self)!r})"


def spec_view(field: str, keep: Callable[[MethodSpec], bool] | None = None) -> SpecView:
    """A live ``{key: field}`` mapping of the registry (see :class:`SpecView`).

    Parameters
    ----------
    field : str
        The :class:`MethodSpec` field.
    keep : callable, optional
        Which methods the view holds (default: those whose field is set).

    Returns
    -------
    SpecView
    """
    return SpecView(field, keep)


__all__ = [
    "METHOD_SPECS",
    "MethodSpec",
    "attach_factory",
    "register_method",
]
