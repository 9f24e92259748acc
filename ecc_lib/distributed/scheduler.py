"""Where ECC fits run: a Dask client for ``"local"`` or a scheduler address, and the switch that
sends every ECC-family fit inside a block to Dask partitions (:func:`scheduler_context`, behind
``--scheduler`` and the notebooks' ``scheduler`` parameter)."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from ecc_lib._optional import require

DEFAULT_PARTITION_ROWS = 50_000
CONNECT_TIMEOUT = "20s"
"""How long a scheduler address is tried before :class:`SchedulerError`."""


class SchedulerError(RuntimeError):
    """The ``--scheduler`` / ``scheduler`` address cannot be reached or is not an address
    (a one-line error in the CLI)."""


_ACTIVE: contextvars.ContextVar[dict | None] = contextvars.ContextVar("ecc_dask", default=None)


@contextlib.contextmanager
def dask_client(scheduler: str, *, n_workers: int = 2, threads_per_worker: int = 1) -> Iterator:
    """A ``distributed.Client`` for ``scheduler``: ``"local"`` starts a ``LocalCluster`` of
    ``n_workers`` worker processes (closed on exit); anything else is a scheduler address such as
    ``tcp://10.0.0.5:8786`` (the cluster is left running).

    Parameters
    ----------
    scheduler : str
        ``"local"`` or a scheduler address.
    n_workers, threads_per_worker : int
        Size of the local cluster (ignored for an address).

    Yields
    ------
    distributed.Client
    """
    distributed = require("distributed", extra="dask", purpose="a Dask scheduler")
    Client, LocalCluster = distributed.Client, distributed.LocalCluster

    if not scheduler:
        raise ValueError("scheduler must be 'local' or a scheduler address, got an empty string")
    if scheduler == "local":
        with (
            LocalCluster(
                n_workers=n_workers,
                threads_per_worker=threads_per_worker,
                processes=True,
                dashboard_address=":0",
            ) as cluster,
            Client(cluster) as client,
        ):
            yield client
    else:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, ValueError, TypeError) as error:  # unreachable, or not an address
            raise SchedulerError(
                f"cannot reach the Dask scheduler at {scheduler!r} ({error}); give 'local' or an "
                "address such as tcp://HOST:8786, start a scheduler with `dask scheduler` and "
                "workers with `dask worker ADDRESS`"
            ) from None
        with client:
            yield client


@contextlib.contextmanager
def use_dask(client=None, *, partition_rows: int | None = None) -> Iterator[None]:
    """Run every ECC-family fit inside the block on Dask partitions.

    Parameters
    ----------
    client : distributed.Client, optional
        Where to run (default: the current default Dask scheduler).
    partition_rows : int, optional
        Queries per partition for in-memory inputs (default: an even split into twice as many
        partitions as workers, at most ``DEFAULT_PARTITION_ROWS`` rows each).

    Yields
    ------
    None
        The settings hold until the block exits.
    """
    token = _ACTIVE.set({"client": client, "partition_rows": partition_rows})
    try:
        yield
    finally:
        _ACTIVE.reset(token)


@contextlib.contextmanager
def scheduler_context(scheduler: str = "", *, partition_rows: int | None = None) -> Iterator:
    """Run the ECC-family fits of the block on ``scheduler``, or in memory when it is empty.

    The one switch behind ``--scheduler`` and the notebooks' ``scheduler`` parameter:
    ``""`` changes nothing, ``"local"`` starts a local cluster for the block, anything else is
    the address of a running scheduler (:func:`dask_client`); inside the block every ECC fit runs
    on Dask partitions (:func:`use_dask`).

    Parameters
    ----------
    scheduler : str
        ``""`` (in memory), ``"local"`` or a scheduler address such as ``tcp://10.0.0.5:8786``.
    partition_rows : int, optional
        Queries per partition (see :func:`use_dask`).

    Yields
    ------
    distributed.Client or None
        The client, or ``None`` in memory.
    """
    if not scheduler:
        yield None
        return
    with dask_client(scheduler) as client, use_dask(client, partition_rows=partition_rows):
        yield client


def active(embeddings=None) -> bool:
    """Whether an ECC fit should run partitioned: inside :func:`use_dask`, or on a dask array.

    Parameters
    ----------
    embeddings : array-like, optional
        The fit's embeddings (a dask array makes the answer True).

    Returns
    -------
    bool
    """
    return _ACTIVE.get() is not None or is_dask_array(embeddings)


def is_dask_array(x) -> bool:
    """Whether ``x`` is a dask array (judged by its type's module; dask is not imported).

    Parameters
    ----------
    x : object

    Returns
    -------
    bool
    """
    return type(x).__module__.startswith("dask.array")


def active_settings() -> dict | None:
    """The settings :func:`use_dask` made active (``client``, ``partition_rows``), or None outside
    it.

    Returns
    -------
    dict or None
    """
    return _ACTIVE.get()


__all__ = [
    "scheduler_context",
]
