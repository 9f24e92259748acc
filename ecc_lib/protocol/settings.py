"""The protocol's settings as one value: :class:`Protocol` (issue 22 item 1).

Everything :func:`~ecc_lib.protocol.seeds.run_seeds` and :func:`~ecc_lib.protocol.ecc_protocol.run_protocol`
take besides the data and the estimator's own parameters lives in one frozen dataclass. The
estimator's parameters (ECC's ``n_clusters``, ``lam``, ``temperature``, ``max_iter`` ...) live only
in the estimator prototype (an unfitted :class:`~ecc_lib.ecc.estimator.ECC`); the baselines are built from
its parameters (:func:`ecc_lib.protocol.methods.methods_from_prototype`). The CLI (``ecc-lab ecc``) and
notebook 03 build the same :class:`Protocol`, and :func:`ecc_lib.protocol.results.run_ecc` runs it.

Examples
--------
>>> from ecc_lib.protocol.settings import Protocol
>>> Protocol.from_seed(42, n_seeds=3).seeds
(42, 43, 44)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from ecc_lib import defaults
from ecc_lib.data.comparisons import DEFAULT_TIE_TOLERANCE
from ecc_lib.ecc.validation import MODES
from ecc_lib.protocol.data import (
    PAPER_N_PAIRS,
    PAPER_SEED,
    PAPER_TEST_SIZE,
    ProtocolData,
    prepare_protocol,
)
from ecc_lib.protocol.probes import PROBE_EVIDENCE, ProbeStrategy
from ecc_lib.stats import DEFAULT_N_BOOT

EVIDENCE: tuple[str, ...] = ("sampled", "soft")
_CHOICES = {"probe_evidence": PROBE_EVIDENCE, "evidence": EVIDENCE, "mode": MODES}


@dataclass(frozen=True)
class Protocol:
    """The settings of the ECC evaluation protocol (frozen; change one with :meth:`replace`).

    Parameters
    ----------
    n_pairs : int, default 7
        Non-tie pairs sampled per query (the paper's 7).
    test_size : float, default 0.2
        Share of test queries of the split by query.
    n_probes : int, default 1
        Comparisons of each test query revealed as its probe.
    probe_evidence : {"mean", "sum"}, default "mean"
        How several probes count (mean of their log-likelihoods, the authors' code, or the sum).
    probe_strategy : {"first", "random", "active"} or callable, default "first"
        Which candidate comparison of a test query is its probe.
    leak_free : bool, default False
        Redraw each test query's probe among pairs whose models appear in no scored pair.
    seeds : tuple of int, default (42,)
        Protocol seeds; each redraws the pairs, the split and the EM start. The first seed gives
        the top-level numbers.
    n_boot : int, default 1000
        Bootstrap resamples of test queries for the 95% intervals.
    evidence : {"sampled", "soft"}, default "sampled"
        Pair outcomes: the mean-score winner (the paper) or the win probability under the
        empirical score distributions.
    tie_tolerance : float, default 1e-4
        Mean scores of a query within this distance tie.
    mode : {"both", "embedding", "probe"}, default "both"
        Inference signal for the responsibilities of test queries.
    """

    n_pairs: int = PAPER_N_PAIRS
    test_size: float = PAPER_TEST_SIZE
    n_probes: int = defaults.N_PROBES
    probe_evidence: str = defaults.PROBE_EVIDENCE
    probe_strategy: str | ProbeStrategy = defaults.PROBE_STRATEGY
    leak_free: bool = False
    seeds: tuple[int, ...] = (PAPER_SEED,)
    n_boot: int = DEFAULT_N_BOOT
    evidence: str = defaults.EVIDENCE
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE
    mode: str = "both"

    def __post_init__(self) -> None:
        seeds = tuple(int(s) for s in self.seeds)
        object.__setattr__(self, "seeds", seeds)
        if not seeds:
            raise ValueError("Protocol needs at least one seed")
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"Protocol seeds must be distinct, got {list(seeds)}")
        if min(seeds) < 0:
            raise ValueError(f"Protocol seeds must be whole numbers >= 0, got {list(seeds)}")
        if int(self.n_pairs) < 2:
            raise ValueError(
                f"n_pairs must be >= 2 (one probe and one scored pair), got {self.n_pairs}"
            )
        if not 0 <= int(self.n_probes) < int(self.n_pairs):
            raise ValueError(f"n_probes must lie in [0, n_pairs), got {self.n_probes}")
        if not 0.0 < float(self.test_size) < 1.0:
            raise ValueError(f"test_size must be a share in (0, 1), got {self.test_size}")
        if self.leak_free and int(self.n_probes) < 1:
            raise ValueError("leak_free needs n_probes >= 1")
        if self.probe_strategy != "first" and int(self.n_probes) < 1:
            raise ValueError("probe_strategy other than 'first' needs n_probes >= 1")
        for name, allowed in _CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if int(self.n_boot) < 1:
            raise ValueError(f"n_boot must be >= 1, got {self.n_boot}")
        if not (math.isfinite(float(self.tie_tolerance)) and float(self.tie_tolerance) >= 0):
            raise ValueError(
                f"tie_tolerance must be a finite number >= 0, got {self.tie_tolerance}"
            )

    @classmethod
    def from_seed(cls, seed: int = PAPER_SEED, *, n_seeds: int = 1, **settings: Any) -> Protocol:
        """The protocol over the seeds ``seed, seed + 1, ...`` (``n_seeds`` of them).

        Parameters
        ----------
        seed : int, default 42
            First protocol seed.
        n_seeds : int, default 1
            Number of protocol seeds.
        **settings
            Other fields of :class:`Protocol`.

        Returns
        -------
        Protocol
        """
        if int(n_seeds) < 1:
            raise ValueError(f"n_seeds must be >= 1, got {n_seeds}")
        if int(seed) < 0:
            raise ValueError(f"seed must be a whole number >= 0, got {seed}")
        return cls(seeds=tuple(range(int(seed), int(seed) + int(n_seeds))), **settings)

    @property
    def seed(self) -> int:
        """The first protocol seed (the top-level numbers)."""
        return self.seeds[0]

    def replace(self, **changes: Any) -> Protocol:
        """A copy with some fields changed (the dataclass is frozen).

        Parameters
        ----------
        **changes
            New values of fields.

        Returns
        -------
        Protocol
        """
        return replace(self, **changes)

    def with_probes(self, n_probes: int) -> Protocol:
        """This protocol revealing ``n_probes`` comparisons of each test query; with none (two-model
        data, a sweep's 0), the settings that need a probe fall back: no leak-free probe draw, the
        first strategy.

        Parameters
        ----------
        n_probes : int

        Returns
        -------
        Protocol
        """
        if int(n_probes) >= 1:
            return self.replace(n_probes=int(n_probes))
        return self.replace(n_probes=0, leak_free=False, probe_strategy=defaults.PROBE_STRATEGY)

    def prepare(
        self, queries, outcomes, embeddings, *, seed: int | None = None, **options: Any
    ) -> ProtocolData:
        """The pairs and split of one protocol seed under these settings.

        Parameters
        ----------
        queries, outcomes, embeddings
            As :func:`~ecc_lib.protocol.data.prepare_protocol`.
        seed : int, optional
            The protocol seed (default :attr:`seed`, the first).
        **options
            Other arguments of :func:`~ecc_lib.protocol.data.prepare_protocol` (``models``).

        Returns
        -------
        ProtocolData
            :func:`~ecc_lib.protocol.data.prepare_protocol` with this protocol's pairs, test
            size, evidence and tie tolerance.
        """
        return prepare_protocol(
            queries,
            outcomes,
            embeddings,
            n_pairs=self.n_pairs,
            test_size=self.test_size,
            random_state=self.seed if seed is None else seed,
            evidence=self.evidence,
            tie_tolerance=self.tie_tolerance,
            **options,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings (a callable probe strategy by its name).

        Returns
        -------
        dict
        """
        strategy = self.probe_strategy
        return {
            "seeds": list(self.seeds),
            "n_pairs": self.n_pairs,
            "n_probes": self.n_probes,
            "test_size": self.test_size,
            "mode": self.mode,
            "n_boot": self.n_boot,
            "probe_evidence": self.probe_evidence,
            "probe_strategy": strategy if isinstance(strategy, str) else strategy.__name__,
            "leak_free": self.leak_free,
            "evidence": self.evidence,
            "tie_tolerance": self.tie_tolerance,
        }


__all__ = [
    "Protocol",
]
