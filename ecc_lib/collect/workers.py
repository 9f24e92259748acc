"""How a collection run executes: pools of asyncio workers with a progress bar, and a coroutine run
to completion from synchronous code (a script, the CLI, or a Jupyter kernel whose event loop is
already running), with Ctrl-C and SIGTERM turned into a clean cancellation.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ecc_lib._optional import require
from ecc_lib.collect.errors import CollectionInterrupted


async def run_pool(
    jobs: Sequence,
    handle: Callable[[Any, Progress], Awaitable[None]],
    concurrency: int,
    progress: Progress,
) -> None:
    """Run ``handle(job, progress)`` on every job with ``concurrency`` workers; the first error
    cancels the rest. The progress bar is closed at the end, whatever happens.

    Parameters
    ----------
    jobs : sequence
        The jobs, taken in order.
    handle : callable
        Coroutine function handling one job and counting it on the bar.
    concurrency : int
        Workers at once (at most one per job).
    progress : Progress
        The phase's progress bar.
    """
    try:
        if not jobs:
            return
        iterator = iter(jobs)

        async def worker() -> None:
            for job in iterator:
                await handle(job, progress)

        tasks = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(jobs)))]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    raise task.exception()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        progress.close()


class Progress:
    """A tqdm bar with done / remaining / failed counts and spend in the postfix.

    Parameters
    ----------
    desc : str
        Label of the bar.
    total : int
        Calls planned, those already done included.
    done : int
        Calls done before the bar starts.
    show : bool
        Draw the bar (False: count only).
    """

    def __init__(self, desc: str, total: int, done: int, show: bool) -> None:
        try:  # widget bars need ipywidgets; tqdm.auto fails in a kernel without it
            import ipywidgets  # noqa: F401
            from tqdm.auto import tqdm
        except ImportError:
            tqdm = require("tqdm", extra="collect", purpose="collection progress bars").tqdm

        self.total, self.done, self.failed, self.spend = total, done, 0, 0.0
        self.bar = tqdm(
            total=total, initial=done, desc=desc, unit="call", disable=not show, dynamic_ncols=True
        )
        self._postfix()

    def _postfix(self) -> None:
        self.bar.set_postfix(
            done=self.done,
            remaining=self.total - self.done - self.failed,
            failed=self.failed,
            spend=f"${self.spend:.4f}",
            refresh=False,
        )

    def step(self, ok: bool, spend: float) -> None:
        """Count one call as done (``ok``) or failed, and show the spend so far.

        Parameters
        ----------
        ok : bool
            Whether the call succeeded.
        spend : float
            Known spend of the run so far, USD.
        """
        self.done += ok
        self.failed += not ok
        self.spend = spend
        self._postfix()
        self.bar.update(1)

    def close(self) -> None:
        """Close the bar."""
        self.bar.close()


def _run_in_main_thread(make: Callable[[], Awaitable[Any]]) -> Any:
    """``asyncio.run`` with SIGTERM turned into a cancellation of the run (the manifest then says
    "interrupted") and then into :class:`CollectionInterrupted`; the previous handler is restored.
    """
    received: list[int] = []
    holder: dict[str, asyncio.Task] = {}

    async def main() -> Any:
        task = asyncio.current_task()
        assert task is not None
        holder["task"] = task
        return await make()

    with asyncio.Runner() as runner:
        loop = runner.get_loop()

        def on_signal(signum: int, frame: Any) -> None:
            received.append(signum)
            if "task" in holder:
                loop.call_soon_threadsafe(holder["task"].cancel)

        previous = signal.signal(signal.SIGTERM, on_signal)
        try:
            return runner.run(main())
        except asyncio.CancelledError:
            if not received:
                raise
            raise CollectionInterrupted(
                "collection interrupted by SIGTERM; every record written is kept and the manifest "
                "says 'interrupted': run the same command again to resume",
                signal_number=received[0],
            ) from None
        finally:
            signal.signal(signal.SIGTERM, previous)


def run_coroutine(make: Callable[[], Awaitable[Any]]) -> Any:
    """Run a coroutine to completion from synchronous code, also inside a running event loop
    (Jupyter), where it runs in a helper thread; Ctrl-C cancels it cleanly in both cases, and so
    does SIGTERM when called from the main thread.

    Parameters
    ----------
    make : callable
        Makes the coroutine (called once, in the thread that runs it).

    Returns
    -------
    object
        What the coroutine returns.

    Raises
    ------
    CollectionInterrupted
        SIGTERM stopped the run (main thread only).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        if threading.current_thread() is threading.main_thread():
            return _run_in_main_thread(make)
        return asyncio.run(make())
    state: dict[str, Any] = {}
    ready = threading.Event()

    def target() -> None:
        loop = asyncio.new_event_loop()
        try:
            task = loop.create_task(make())
            state["loop"], state["task"] = loop, task
            ready.set()
            state["value"] = loop.run_until_complete(task)
        except BaseException as error:  # handed to the caller's thread
            state["error"] = error
        finally:
            ready.set()
            loop.close()

    thread = threading.Thread(target=target, name="ecc-lib-collect", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.1)
    except KeyboardInterrupt:
        ready.wait()
        if "task" in state:
            state["loop"].call_soon_threadsafe(state["task"].cancel)
        thread.join()
        raise
    if "error" in state:
        raise state["error"]
    return state["value"]


__all__: list[str] = []
