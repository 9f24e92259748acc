"""ECC on partitioned data with Dask: the E-step per partition, the M-step on reduced statistics.

Importing this package registers it as a data backend of the EM engine
(:func:`ecc_lib.ecc.backends.register_data_backend`); :mod:`ecc_lib.ecc.backends` never imports it, except when a
dask array is passed to a fit. Dask itself is imported on first use (the ``[dask]`` extra).

Both EM steps are sums over queries (``docs/design.md`` section 5): the E-step of a partition needs
only its own embeddings and comparisons plus the current profiles and centroids, and the M-step
needs only the sums over partitions of ``C_p^T R_p`` (weighted win counts per observed pair) and
``X_p^T R_p`` (centroid sums). So a fit sends the profiles (as a ``log P / T`` table over the
observed pairs) and scaled centroids to every partition, runs
:func:`ecc_lib.ecc.engine.block_e_step` there (the same function the in-memory fit runs on its
blocks), adds the statistics up in a tree, and runs the M-step of :func:`ecc_lib.ecc.engine.run_em` on
the client. The EM loop, the BT fit and the stopping rule are the in-memory ones.

Tasks are pure functions of a partition and the parameters: a partition's responsibilities before
the step (needed for the KL stopping test) are recomputed from the previous parameters, or from
the seeded Dirichlet start, instead of being kept on a worker. A worker that dies mid-fit is
therefore survived: the scheduler reruns its tasks elsewhere (reloading the partition from its
source); when a task keeps failing, the fit raises a :class:`RuntimeError` that says so.

Usage::

    from ecc_lib.distributed import scheduler_context
    with scheduler_context("local"):
        ECC(random_state=0).fit(embeddings, comparisons)   # runs partitioned

DARS statistics (distributions, labels, the three flip readings) come from one
``dask.dataframe`` group-by over partitioned outcomes: :func:`dars_statistics`.

Or pass a ``dask.array`` of embeddings (for example over a memory-mapped ``.npy`` file) to
:func:`fit_partitioned`; its row chunks are the partitions and are read from disk at every step.
"""

from ecc_lib.distributed.ecc_fit import Partition, fit_partitioned
from ecc_lib.distributed.group_bys import dars_statistics, flip_rate_agreement
from ecc_lib.distributed.scheduler import active, scheduler_context
from ecc_lib.ecc.backends import register_data_backend

# the EM engine runs a fit here when `active` says so (inside `use_dask`, or on a dask array)
register_data_backend("dask", active, fit_partitioned)

__all__ = [
    "Partition",
    "dars_statistics",
    "fit_partitioned",
    "flip_rate_agreement",
    "scheduler_context",
]
