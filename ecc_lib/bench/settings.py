"""The settings of a benchmark, the methods it runs and the interval of a reading over seeds."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ecc_lib import defaults
from ecc_lib.ecc.estimator import check_cluster_settings
from ecc_lib.protocol.settings import Protocol
from ecc_lib.stats import DEFAULT_N_BOOT

BENCH_VERSION = 3
"""Version of the cached per-seed and per-dataset records (a change recomputes them). 2: no
"probe" routing reading on two-model data; checks with the protocol's tie tolerance."""


@dataclass(frozen=True)
class BenchSettings:
    """The protocol settings of a benchmark (the defaults of ``ecc-lab ecc``).

    Attributes
    ----------
    n_clusters, lam, temperature : ECC parameters (30, 3, 0.1)
    n_pairs, n_probes, test_size : the protocol (7 pairs, 1 probe, 20% test queries)
    seed : int
        First protocol seed; seeds are ``seed, seed + 1, ...``.
    n_seeds : int
    n_boot : int
        Bootstrap resamples of every interval.
    """

    n_clusters: int = defaults.N_CLUSTERS
    lam: float = defaults.LAM
    temperature: float = defaults.TEMPERATURE
    n_pairs: int = defaults.N_PAIRS
    n_probes: int = defaults.N_PROBES
    test_size: float = defaults.TEST_SIZE
    seed: int = defaults.SEED
    n_seeds: int = 3
    n_boot: int = DEFAULT_N_BOOT

    def __post_init__(self) -> None:
        if self.n_seeds < 1:
            raise ValueError(f"the bench needs at least 1 seed, got {self.n_seeds}")
        if self.n_probes < 1:
            raise ValueError(
                f"the bench routes with the probe: n_probes must be >= 1, got {self.n_probes}"
            )
        # checked here, not per seed, by the protocol's and ECC's own checks: a seed whose
        # protocol does not apply is skipped, so a bad setting would leave every seed skipped
        # and write an empty bench (issue 36)
        self.protocol(self.seed)
        check_cluster_settings(self.n_clusters, self.lam, self.temperature)

    @property
    def seeds(self) -> list[int]:
        """The protocol seeds ``seed, seed + 1, ...``."""
        return list(range(self.seed, self.seed + self.n_seeds))

    def protocol(self, seed: int) -> Protocol:
        """The protocol of one seed with these settings.

        Parameters
        ----------
        seed : int

        Returns
        -------
        Protocol
        """
        return Protocol(
            seeds=(seed,),
            n_pairs=self.n_pairs,
            n_probes=self.n_probes,
            test_size=self.test_size,
            n_boot=self.n_boot,
        )

    def key(self) -> dict:
        """What a cached seed depends on (everything but the number of seeds).

        Returns
        -------
        dict
            The settings without ``n_seeds``, with the record version.
        """
        out = asdict(self)
        out.pop("n_seeds")
        out["version"] = BENCH_VERSION
        return out


def bench_methods(has_labels: bool) -> tuple[str, ...]:
    """The methods of ``ecc-lab ecc``: those of the method registry that run by default
    (:func:`~ecc_lib.protocol.methods.default_methods`).

    Parameters
    ----------
    has_labels : bool
        Whether the queries carry at least 2 categories.

    Returns
    -------
    tuple of str
    """
    from ecc_lib.protocol.methods import default_methods

    return default_methods(has_labels)


__all__ = [
    "BenchSettings",
]
