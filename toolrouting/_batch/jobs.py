"""One run of a batch, and :func:`drive`, the one place that knows how to run it.

An async backend (:class:`AsyncOpenAICompatible`, :class:`AsyncEmbeddedLlama`) is driven by
:class:`AsyncRoutingLoop` on the event loop itself: a run in flight costs a task, not a
thread, and cancelling it closes its request. A sync backend keeps the synchronous
:class:`RoutingLoop`, in a daemon thread of its own a run (so a batch of 64 is never queued
behind a default pool of fewer, and Ctrl-C does not wait for it).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import inspect
import threading
from collections.abc import Callable

from .._backends import AsyncBackend, Backend
from .._loop import AsyncRoutingLoop, Event, LoopOptions, RoutingLoop, RunResult
from .._provider import AsyncToolProvider, ToolProvider
from .questions import BatchQuestion

__all__ = ["RunJob", "Tracing", "drive", "is_async_backend"]

#: What makes one run's tracer: given the question, a context manager around its run whose value
#: takes the run's events (``lambda question: RunTracer(attributes={...})`` is one).
Tracing = Callable[[BatchQuestion], contextlib.AbstractContextManager[Callable[[Event], object]]]


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunJob:
    """Everything one question's run needs: where it is written, whether it resumes, how it is built."""

    question: BatchQuestion
    transcript: str
    resume: bool
    backend: Backend | AsyncBackend
    tools: Callable[[], ToolProvider | AsyncToolProvider]
    loop_options: LoopOptions
    on_event: Callable[[Event], object]
    trace: Tracing | None = None

    def _options(self, on_event: Callable[[Event], object]) -> LoopOptions:
        """Every run's loop options, with this run's transcript and what takes its events."""
        return {**self.loop_options, "transcript": self.transcript, "on_event": on_event}

    def run_sync(self) -> RunResult:
        """The run on the synchronous loop, in the calling thread, its tools made and closed here.

        The tools are made in the thread that calls them, so a provider bound to the thread
        that made it (a plain ``sqlite3`` connection) works here.
        """
        provider = self.tools()
        try:
            with self.trace(self.question) if self.trace else contextlib.nullcontext() as traced:
                on_event = self.on_event if traced is None else _both(self.on_event, traced)
                loop = RoutingLoop(
                    self.backend,  # type: ignore[arg-type]  # drive() sends an async backend elsewhere
                    provider,  # type: ignore[arg-type]
                    **self._options(on_event),
                )
                return loop.resume() if self.resume else loop.run(list(self.question.messages))
        finally:
            _close(provider)

    async def run_async(self) -> RunResult:
        """The run on the async loop, awaited on the event loop; a sync provider's calls go to a
        worker thread each (``sync_tools="thread"``), so a slow tool stalls no other run."""
        provider = self.tools()
        try:
            with self.trace(self.question) if self.trace else contextlib.nullcontext() as traced:
                on_event = self.on_event if traced is None else _both(self.on_event, traced)
                loop = AsyncRoutingLoop(
                    self.backend,  # type: ignore[arg-type]  # drive() sends a sync backend elsewhere
                    provider,
                    **self._options(on_event),
                )
                return await (loop.resume() if self.resume else loop.run(list(self.question.messages)))
        finally:
            _close(provider)


def is_async_backend(backend: object) -> bool:
    """Whether ``backend`` is driven by awaiting it (its ``complete`` is a coroutine)."""
    return inspect.iscoroutinefunction(getattr(backend, "complete", None))


def _close(provider: object) -> None:
    close = getattr(provider, "close", None)
    if callable(close):
        close()


def _both(first: Callable[[Event], object], second: Callable[[Event], object]) -> Callable[[Event], None]:
    def observe(event: Event) -> None:
        first(event)
        second(event)

    return observe


async def drive(job: RunJob) -> RunResult:
    """Drive one run to its end: on the async loop for an async backend, else in a thread.

    The one place a batch runs a loop. An async backend's run is awaited here, and a batch
    cancelled (Ctrl-C) cancels it at the await it is in. A sync backend's run is the
    synchronous loop in a daemon thread of its own: a batch stopped with Ctrl-C exits without
    waiting for it. Either way the runs in flight resume from their transcripts, as after a
    kill (docs/batch.md).
    """
    if is_async_backend(job.backend):
        return await job.run_async()
    running = asyncio.get_running_loop()
    settled: asyncio.Future[RunResult] = running.create_future()
    context = contextvars.copy_context()  # as asyncio.to_thread does: a tracer's context goes along

    def work() -> None:
        try:
            result = context.run(job.run_sync)
        except BaseException as error:
            _settle(running, settled, None, error)
        else:
            _settle(running, settled, result, None)

    threading.Thread(target=work, name=f"toolrouting-batch {job.question.id}", daemon=True).start()
    return await settled


def _settle(
    running: asyncio.AbstractEventLoop,
    settled: asyncio.Future[RunResult],
    result: RunResult | None,
    error: BaseException | None,
) -> None:
    """Hand a run's end to the event loop, unless the batch has stopped waiting for it."""

    def hand() -> None:
        if settled.done():
            return  # the batch was cancelled while the run went on
        if error is not None:
            settled.set_exception(error)
        else:
            settled.set_result(result)  # type: ignore[arg-type]

    with contextlib.suppress(RuntimeError):  # the event loop has closed: nobody waits for the run
        running.call_soon_threadsafe(hand)
