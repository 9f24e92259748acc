"""One typed comparison record per question, produced once (issue 35).

The summary, the report body, the CLI text, ``metrics.json["summary"]`` and ``ecc-lab bench`` all
read :class:`ComparisonRecord` values made here, never their own arithmetic:

- ``clustering_gain``: a method's gain over one global BT (percent of its held-out NLL), on pairs
  disjoint from the probe's models and on all pairs (:func:`clustering_records`);
- ``method_difference``: the gain of one method minus another's, same readings;
- ``routing_pays``: the best cluster router's mean held-out score minus the global BT's one model
  (no probe, models outside the probe pair) and the probe's winner minus the best router with the
  probe (:func:`routing_records`);
- ``flip_reading``: a winner-flip reading minus its chance level (:func:`flip_records`).

Every interval is the one interval of :func:`ecc_lib.stats.seed_query_interval` (a bootstrap over
test queries within each protocol seed, the seed-level estimates averaged); a record without a
finite interval has no verdict (docs/design.md, section 3).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from ecc_lib.grammar import HIGHER_LOWER, Comparison, direction, finite, number, verdict
from ecc_lib.stats import (
    DEFAULT_N_BOOT,
    INTERVAL_NAME,
    finite_interval,
    mean_with_replicates,
    ratio_gain,
    seed_bootstrap_indices,
    seed_query_interval,
)

QUESTIONS = ("clustering_gain", "method_difference", "routing_pays", "flip_reading")
"""The questions a record answers."""

ROUTING_REFERENCES = ("global", "random", "oracle", "probe_winner")
"""Rows of a routing experiment that are references, not routers."""

LEAK_FREE_SETTINGS = ("no_probe", "probe_outside")
"""Routing settings whose choice never sees the probe's outcome."""


@dataclass(frozen=True)
class ComparisonRecord:
    """``a minus b = estimate [ci]`` in ``unit``, for one question.

    Parameters
    ----------
    question : str
        One of :data:`QUESTIONS`.
    a, b : str
        Internal keys of the two sides (method keys, ``"chance"``, ``"global"``).
    estimate : float
        ``a minus b`` (mean of the seed-level estimates).
    ci : pair of float, optional
        The one interval (None when it cannot be formed).
    unit : str
        Key of :data:`ecc_lib.grammar.UNITS` of the difference.
    reading : str, default ""
        ``"disjoint"`` or ``"all"`` (pairs scored), a routing setting, a flip reading.
    n_seeds : int, default 1
    interval : str
        How the interval was formed (:data:`ecc_lib.stats.INTERVAL_NAME`).
    levels : dict
        The two sides' own values where they mean something (routed scores, flip rates):
        ``{"a": [value, low, high], "b": [...]}``.
    """

    question: str
    a: str
    b: str
    estimate: float
    ci: tuple[float, float] | None
    unit: str
    reading: str = ""
    n_seeds: int = 1
    interval: str = INTERVAL_NAME
    levels: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.question not in QUESTIONS:
            raise ValueError(f"question must be one of {QUESTIONS}, got {self.question!r}")
        ci = self.ci
        if ci is not None and (len(ci) != 2 or not all(finite(b) for b in ci)):
            ci = None
        object.__setattr__(self, "ci", None if ci is None else (float(ci[0]), float(ci[1])))
        object.__setattr__(
            self, "estimate", float(self.estimate) if finite(self.estimate) else float("nan")
        )

    @property
    def has_interval(self) -> bool:
        """Whether the record carries a finite interval (only then does it get a verdict)."""
        return self.ci is not None and finite(self.estimate)

    @property
    def zero_width(self) -> bool:
        """Whether the interval has width 0 (e.g. every router picks the same model)."""
        return self.has_interval and self.ci[0] == self.ci[1]

    @property
    def zero_as_printed(self) -> bool:
        """Whether estimate and both bounds print as 0 in the record's unit (``0.0 pp [0.0,
        0.0]``): a degenerate result, said in plain words rather than as a verdict."""
        if not self.has_interval:
            return False
        shown = {
            number(v, self.unit, with_sign=False).lstrip("+-") for v in (self.estimate, *self.ci)
        }
        return len(shown) == 1 and shown.pop().strip("0.,") == ""

    def comparison(self, a: str = "", b: str = "") -> Comparison:
        """The grammar's :class:`~ecc_lib.grammar.Comparison` of the record.

        Parameters
        ----------
        a, b : str, optional
            Display names of the two sides (default the keys).

        Returns
        -------
        Comparison
        """
        extra = {"words": HIGHER_LOWER} if self.question == "flip_reading" else {}
        return Comparison(
            a or self.a,
            b or self.b,
            self.estimate,
            self.ci,
            self.unit,
            interval_kind=self.interval,
            **extra,
        )

    @property
    def direction(self) -> int:
        """+1, -1 or 0 (:func:`ecc_lib.grammar.direction`)."""
        return direction(self.comparison())

    @property
    def verdict(self) -> str | None:
        """The direction word, None without an interval (a comparison without one gets none)."""
        return verdict(self.comparison()) if self.has_interval else None

    def flipped(self) -> ComparisonRecord:
        """``b minus a``: the estimate and the interval negated, the levels swapped.

        Returns
        -------
        ComparisonRecord
        """
        ci = None if self.ci is None else (-self.ci[1], -self.ci[0])
        levels = (
            {"a": self.levels["b"], "b": self.levels["a"]}
            if {"a", "b"} <= set(self.levels)
            else dict(self.levels)
        )
        return replace(self, a=self.b, b=self.a, estimate=-self.estimate, ci=ci, levels=levels)

    def to_dict(self) -> dict:
        """JSON-ready, with ``verdict`` and ``direction`` (a stored record reads back equal).

        Returns
        -------
        dict
        """
        out = asdict(self)
        out["ci"] = list(self.ci) if self.ci is not None else None
        out["verdict"] = self.verdict
        out["direction"] = self.direction
        return out

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> ComparisonRecord:
        """The record of :meth:`to_dict` (``verdict`` and ``direction`` are recomputed).

        Parameters
        ----------
        payload : mapping
            A :meth:`to_dict` output (as JSON holds it).

        Returns
        -------
        ComparisonRecord
        """
        ci = payload.get("ci")
        return cls(
            question=str(payload["question"]),
            a=str(payload["a"]),
            b=str(payload["b"]),
            estimate=payload["estimate"] if finite(payload.get("estimate")) else float("nan"),
            ci=tuple(ci) if ci is not None else None,
            unit=str(payload.get("unit", "plain")),
            reading=str(payload.get("reading", "")),
            n_seeds=int(payload.get("n_seeds", 1)),
            interval=str(payload.get("interval", INTERVAL_NAME)),
            levels=dict(payload.get("levels") or {}),
        )


def find(
    records: Iterable[ComparisonRecord], question: str, a: str, b: str, reading: str = ""
) -> ComparisonRecord | None:
    """The record ``a minus b`` of ``question`` (flipped from ``b minus a`` where that is stored).

    Parameters
    ----------
    records : iterable of ComparisonRecord
    question, a, b, reading : str

    Returns
    -------
    ComparisonRecord or None
    """
    for r in records:
        if r.question != question or (reading and r.reading != reading):
            continue
        if (r.a, r.b) == (a, b):
            return r
        if (r.a, r.b) == (b, a):
            return r.flipped()
    return None


def read_records(payload: Iterable[Mapping[str, Any]] | None) -> list[ComparisonRecord]:
    """Records stored as JSON (``metrics.json["ecc"]["comparisons"]``, a bench summary).

    Parameters
    ----------
    payload : iterable of dict, optional

    Returns
    -------
    list of ComparisonRecord
    """
    return [ComparisonRecord.from_dict(p) for p in payload or []]


# --------------------------------------------------------------------------------------------------
# producers


def _frame_losses(frame: pd.DataFrame, method: str, reading: str) -> np.ndarray | None:
    """Per scored test query, a method's NLL sum on all pairs or on the disjoint pairs."""
    column = f"nll_{method}"
    if column not in frame:
        return None
    total = frame[column].to_numpy(dtype=float)
    if reading == "all":
        return total
    touching = frame[f"{column}_touching"].to_numpy(dtype=float)
    return touching if reading == "touching" else total - touching


def clustering_records(
    frames: Sequence[pd.DataFrame],
    *,
    methods: Sequence[str] | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = 0.95,
    random_state: int = 0,
    readings: Sequence[str] = ("disjoint", "all"),
) -> list[ComparisonRecord]:
    """Gains over one global BT and every pairwise difference of gains, over the protocol seeds.

    Parameters
    ----------
    frames : sequence of DataFrame
        Per protocol seed, :attr:`~ecc_lib.protocol.scoring.ECCEvaluation.per_query`
        (``n_scored``, ``nll_<method>``, ``nll_<method>_touching`` per test query).
    methods : sequence of str, optional
        Methods to compare (default: every ``nll_<method>`` column of the first seed but the
        global model). A method missing on some seed has a NaN estimate and no interval.
    n_boot, confidence, random_state
        The bootstrap over test queries within each seed (:func:`ecc_lib.stats.seed_bootstrap_indices`).
        With one seed and ``random_state = 0`` the intervals are those of
        :func:`~ecc_lib.protocol.scoring.score_methods`.
    readings : sequence of str, default ("disjoint", "all")
        Which scored pairs: ``"disjoint"`` from the probe's models, ``"all"``, or
        ``"touching"`` (the CLI's leak table); the resamples do not depend on it.

    Returns
    -------
    list of ComparisonRecord
        ``clustering_gain`` (``a`` = method, ``b`` = ``"global"``) per method and reading, then
        ``method_difference`` for every pair of methods in the order given, per reading.
    """
    if not frames:
        raise ValueError("clustering_records needs the per-query table of at least one seed")
    if methods is None:
        methods = [
            c[4:]
            for c in frames[0].columns
            if c.startswith("nll_") and not c.endswith("_touching") and c != "nll_global"
        ]
    methods = [m for m in methods if m != "global"]
    has = [f["n_scored"].to_numpy() > 0 for f in frames]
    indices = seed_bootstrap_indices(
        [int(h.sum()) for h in has], n_boot=n_boot, random_state=random_state
    )
    n_seeds = len(frames)
    out: list[ComparisonRecord] = []
    unknown = set(readings) - {"disjoint", "all", "touching"}
    if unknown:
        raise ValueError(f"readings must be disjoint, all or touching, got {sorted(unknown)}")
    for reading in readings:
        arms: dict[str, tuple[float, np.ndarray] | None] = {}
        for m in methods:
            losses = [
                (_frame_losses(f, "global", reading), _frame_losses(f, m, reading)) for f in frames
            ]
            estimate, ci, arms[m] = np.nan, None, None
            if all(g is not None and loss is not None for g, loss in losses):
                per_seed = [
                    ratio_gain(g[h], loss[h], index, confidence=confidence)
                    for (g, loss), h, index in zip(losses, has, indices, strict=True)
                ]
                estimate, ci, reps = seed_query_interval(
                    [p[0] for p in per_seed], [p[2] for p in per_seed], confidence=confidence
                )
                arms[m] = (estimate, reps)
            out.append(
                ComparisonRecord(
                    "clustering_gain", m, "global", estimate, ci, "pp", reading, n_seeds
                )
            )
        for i, a in enumerate(methods):
            for b in methods[i + 1 :]:
                estimate, ci = np.nan, None
                if arms[a] is not None and arms[b] is not None:
                    estimate = arms[a][0] - arms[b][0]
                    ci = finite_interval(arms[a][1] - arms[b][1], confidence=confidence)
                out.append(
                    ComparisonRecord(
                        "method_difference", a, b, estimate, ci, "pp", reading, n_seeds
                    )
                )
    return out


def _combined_level(
    per_seed: Sequence[np.ndarray], indices: Sequence[np.ndarray], confidence: float
) -> tuple[float, list[float], np.ndarray]:
    """Mean of per-query values within each seed, combined over seeds."""
    parts = [
        mean_with_replicates(v, i, confidence=confidence)
        for v, i in zip(per_seed, indices, strict=True)
    ]
    return seed_query_interval([p[0] for p in parts], [p[2] for p in parts], confidence=confidence)


def routing_levels(
    per_seed: Sequence[Mapping[str, Mapping[str, np.ndarray]]],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = 0.95,
    random_state: int = 0,
) -> dict[str, dict[str, tuple[float, list[float], np.ndarray]]]:
    """Each router's mean routed score per setting, with the one interval over the seeds.

    Parameters
    ----------
    per_seed : sequence of mapping
        As :func:`routing_records`.
    n_boot, confidence, random_state
        As :func:`routing_records` (the same resamples, so these are the records' levels).

    Returns
    -------
    dict
        ``{setting: {method: (estimate, [low, high], replicates)}}`` for the settings and
        methods present on every seed.
    """
    if not per_seed:
        return {}
    # one resample of each seed's test queries, shared by every setting and method
    indices = seed_bootstrap_indices(
        [len(next(iter(next(iter(s.values())).values()))) for s in per_seed],
        n_boot=n_boot,
        random_state=random_state,
    )
    out: dict[str, dict[str, tuple[float, list[float], np.ndarray]]] = {}
    for setting in per_seed[0]:
        if any(setting not in s for s in per_seed):
            continue
        names = [m for m in per_seed[0][setting] if all(m in s[setting] for s in per_seed)]
        out[setting] = {
            m: _combined_level(
                [np.asarray(s[setting][m], float) for s in per_seed], indices, confidence
            )
            for m in names
        }
    return out


def _routing_record(
    levels: Mapping[str, tuple[float, list[float], np.ndarray]],
    a: str,
    b: str,
    setting: str,
    n_seeds: int,
    routers: list,
    confidence: float,
) -> ComparisonRecord:
    """``a minus b`` of two routing rows of one setting (paired: the same resamples)."""
    ea, ca, ra = levels[a]
    eb, cb, rb = levels[b]
    return ComparisonRecord(
        "routing_pays",
        a,
        b,
        ea - eb,
        finite_interval(ra - rb, confidence=confidence),
        "score_diff",
        setting,
        n_seeds,
        levels={"a": [ea, *ca], "b": [eb, *cb], "routers": routers},
    )


def routing_difference_records(
    per_seed: Sequence[Mapping[str, Mapping[str, np.ndarray]]],
    *,
    a: str = "ecc",
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = 0.95,
    random_state: int = 0,
) -> list[ComparisonRecord]:
    """``a`` minus every other routing row per setting, with the one interval (the CLI's
    paired routing differences; not part of the summary's records).

    Parameters
    ----------
    per_seed : sequence of mapping
        As :func:`routing_records`.
    a : str, default "ecc"
    n_boot, confidence, random_state
        As :func:`routing_records`.

    Returns
    -------
    list of ComparisonRecord
        ``routing_pays`` records ``a`` minus each other row, ``reading`` the setting.
    """
    out = []
    for setting, levels in routing_levels(
        per_seed, n_boot=n_boot, confidence=confidence, random_state=random_state
    ).items():
        if a not in levels:
            continue
        routers = [m for m in levels if m not in ROUTING_REFERENCES]
        out += [
            _routing_record(levels, a, b, setting, len(per_seed), routers, confidence)
            for b in levels
            if b != a
        ]
    return out


def routing_records(
    per_seed: Sequence[Mapping[str, Mapping[str, np.ndarray]]],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = 0.95,
    random_state: int = 0,
) -> list[ComparisonRecord]:
    """Whether cluster routing pays: the best router minus the global BT's one model in every
    setting, and the probe's winner minus the best router with the probe.

    Parameters
    ----------
    per_seed : sequence of mapping
        Per protocol seed ``{setting: {method: per-test-query routed score}}``
        (:func:`routed_scores_by_setting`); the methods are the fitted ones plus
        ``probe_winner`` where there is a probe.
    n_boot, confidence, random_state
        As :func:`clustering_records` (one resample of each seed's test queries, shared by every
        setting and method, so the differences are paired).

    Returns
    -------
    list of ComparisonRecord
        ``routing_pays`` per setting: ``a`` the best router (largest combined mean score), ``b``
        ``"global"``; in ``probe`` also ``probe_winner`` minus the best router. ``levels`` holds
        both sides' mean score with its interval and ``routers``: the routers' names.
    """
    n_seeds = len(per_seed)
    out: list[ComparisonRecord] = []
    for setting, levels in routing_levels(
        per_seed, n_boot=n_boot, confidence=confidence, random_state=random_state
    ).items():
        routers = [m for m in levels if m not in ROUTING_REFERENCES]
        if not routers or "global" not in levels:
            continue
        best = max(routers, key=lambda m: (levels[m][0], -routers.index(m)))
        out.append(_routing_record(levels, best, "global", setting, n_seeds, routers, confidence))
        if setting == "probe" and "probe_winner" in levels:
            out.append(
                _routing_record(levels, "probe_winner", best, setting, n_seeds, routers, confidence)
            )
    return out


def routed_scores_by_setting(data: Any, routing: Any) -> dict[str, dict[str, np.ndarray]]:
    """Per setting and method, the routed model's mean score on each test query.

    Parameters
    ----------
    data : ProtocolData
    routing : RoutingResult
        :func:`~ecc_lib.protocol.routing.routing_experiment` on ``data``.

    Returns
    -------
    dict
        ``{setting: {method: ndarray (n_test,)}}`` (``probe_cost`` left out: same choices as
        ``probe``).
    """
    from ecc_lib.protocol.routing import held_out_means, routed_values

    truth = held_out_means(data)  # once: every choice reads the same held-out means
    return {
        setting: {m: routed_values(truth, choice) for m, choice in choices.items()}
        for setting, choices in routing.choices.items()
        if setting != "probe_cost"
    }


def flip_records(dars: Mapping[str, Any]) -> list[ComparisonRecord]:
    """Each winner-flip reading minus its chance level (one dataset, bootstrap over queries).

    Parameters
    ----------
    dars : mapping
        ``metrics.json["dars"]`` (``winner_flip_rate*`` with ``_ci95``, ``flip_rate_chance``;
        :func:`ecc_lib.report.bench.bench_metrics` writes the bench's flips so).

    Returns
    -------
    list of ComparisonRecord
        ``flip_reading`` with ``a`` = the reading (``strict``, ``change``, ``pairwise``),
        ``b`` = ``"chance"``; ``levels["a"]`` the rate with its interval.
    """
    keys = {
        "strict": "winner_flip_rate_strict",
        "change": "winner_change_rate",
        "pairwise": "winner_flip_rate",
    }
    out = []
    chance_block = dars.get("flip_rate_chance") or {}
    for reading, key in keys.items():
        value, ci, chance = dars.get(key), dars.get(key + "_ci95"), chance_block.get(reading)
        if not finite(value) or not finite(chance):
            continue
        shifted = [float(b) - float(chance) for b in ci] if ci and len(ci) == 2 else None
        out.append(
            ComparisonRecord(
                "flip_reading",
                reading,
                "chance",
                float(value) - float(chance),
                shifted,
                "pp_share",
                reading,
                1,
                interval="95% bootstrap over queries",
                levels={"a": [float(value), *(ci or [np.nan, np.nan])], "b": [float(chance)] * 3},
            )
        )
    return out


def records_to_metrics(records: Iterable[ComparisonRecord]) -> list[dict]:
    """Records as JSON (``metrics.json["ecc"]["comparisons"]``, the bench's ``comparisons``).

    Parameters
    ----------
    records : iterable of ComparisonRecord

    Returns
    -------
    list of dict
    """
    from ecc_lib.serialization import to_jsonable

    return to_jsonable([r.to_dict() for r in records])


__all__ = [
    "ComparisonRecord",
]
