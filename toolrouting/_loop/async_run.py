"""The async driver: :class:`AsyncRoutingLoop` performs the step machine's effects by awaiting them.

The rounds are the step machine's (``machine``), the same as :class:`RoutingLoop`'s; this
module awaits the backend and the tools instead of blocking on them. A sync tool provider runs
in a worker thread, so a slow tool does not stall the other runs on the event loop.

Cancelling the task that runs a loop stops it at the await it is in: an unanswered request is
abandoned, a tool call's result is dropped, a retry's wait ends. What was committed stays, and
nothing else is: the transcript then resumes like one whose process was killed there.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Literal, Unpack

import anyio.to_thread

from .._backends import AsyncBackend, Completion, Message
from .._provider import AsyncToolProvider, ToolOutput, ToolProvider
from .effects import (
    CallTools,
    Commit,
    CommitOffer,
    Emit,
    Request,
    ToolRaised,
    Wait,
    backend_failure,
    unfinished_stream,
)
from .events import Event, RunFinished
from .machine import StepMachine, Steps, checked_messages
from .options import LoopOptions
from .result import RunResult
from .run_limits import check_count
from .transcript_writer import TranscriptWriter

__all__ = ["AsyncRoutingLoop", "SyncTools"]

#: Where :class:`AsyncRoutingLoop` calls a sync provider: in a worker thread, or on the event loop.
SyncTools = Literal["thread", "inline"]


class AsyncRoutingLoop(StepMachine):
    """:class:`RoutingLoop` for asyncio code: the same rounds, awaited.

    ``await loop.run(messages)`` and ``await loop.resume()`` return the :class:`RunResult`;
    ``loop.iter_run(messages)`` and ``loop.iter_resume()`` are async iterators of the events.
    The backend is an :class:`AsyncBackend`; the provider an :class:`AsyncToolProvider`
    (awaited) or a :class:`ToolProvider` (its ``call`` runs in a worker thread). ``sleep`` is
    awaited between retries. ``sync_tools="inline"`` calls a sync provider on the event loop
    instead of in a worker thread: for fast tools, and for a provider bound to the thread that
    made it (an ``sqlite3`` connection, say). The calls of one decision (``max_calls=K``) run
    concurrently, at most ``max_concurrent_calls`` at a time (``None``: all of them, so at most
    ``K``), and their results go back in the order the calls were written. Every other option
    (:class:`LoopOptions`), the transcript and the events are :class:`RoutingLoop`'s, and so are
    the bytes a run writes.
    """

    def __init__(
        self,
        backend: AsyncBackend,
        provider: AsyncToolProvider | ToolProvider,
        *,
        sleep: Callable[[float], Awaitable[object]] = anyio.sleep,
        sync_tools: SyncTools = "thread",
        max_concurrent_calls: int | None = None,
        **options: Unpack[LoopOptions],
    ) -> None:
        super().__init__(backend, provider, options)
        if max_concurrent_calls is not None:
            check_count("max_concurrent_calls", max_concurrent_calls, 1)
        self.max_concurrent_calls = max_concurrent_calls
        if not inspect.iscoroutinefunction(getattr(backend, "complete", None)):
            raise TypeError(
                f"{type(backend).__name__}.complete() is not a coroutine: AsyncRoutingLoop takes an "
                "AsyncBackend (drive a sync backend with RoutingLoop)"
            )
        if sync_tools not in ("thread", "inline"):
            raise ValueError(f"sync_tools is 'thread' or 'inline', not {sync_tools!r}")
        self.sync_tools = sync_tools
        self._sleep = sleep

    def _check_provider(self, provider: object) -> None:
        if not isinstance(provider, (AsyncToolProvider, ToolProvider)):
            raise TypeError(
                f"{type(provider).__name__} is not a tool provider: it needs tools_for_llm() and "
                "acall() (async) or call()"
            )

    async def run(self, messages: Sequence[Message]) -> RunResult:
        """Run the routing phase on ``messages`` (which end with a user message) to its end."""
        return await _finish(self.iter_run(messages))

    async def resume(self) -> RunResult:
        """Continue the run recorded in this loop's transcript file, and finish it."""
        return await _finish(self.iter_resume())

    def iter_run(self, messages: Sequence[Message]) -> AsyncIterator[Event]:
        """:meth:`run` as an async iterator of its events; the last is :class:`RunFinished`.

        Leaving it early, close it (``contextlib.aclosing``) so the transcript closes at once.
        """
        conversation = checked_messages(messages)
        return self._driven(lambda: self._fresh(conversation), self._writer())

    def iter_resume(self) -> AsyncIterator[Event]:
        """:meth:`resume` as an async iterator of its events, :class:`Resumed` first.

        The transcript is locked and read (a damaged one, or one another writer holds, refused)
        at once; the file is changed only as the events are consumed, and unlocked when they end.
        """
        steps, writer = self._resume_start()
        return self._driven(steps, lambda: writer)

    async def _driven(
        self, start: Callable[[], Steps], opened: Callable[[], TranscriptWriter] | None
    ) -> AsyncIterator[Event]:
        """Perform the effects of the run ``start`` begins, handing out its events as they come."""
        writer = None if opened is None else opened()
        try:
            machine = start()
        except BaseException:
            if writer is not None:
                writer.close()
            raise
        try:
            answer: Any = None
            failure: BaseException | None = None
            while True:
                try:
                    effect = machine.send(answer) if failure is None else machine.throw(failure)
                except StopIteration:
                    return
                answer, failure = None, None
                if isinstance(effect, Emit):
                    if self.on_event is not None:
                        self.on_event(effect.event)
                    yield effect.event
                elif isinstance(effect, Commit):
                    # Written here, with no await: a cancellation cannot land inside a commit.
                    if writer is not None:
                        writer.append(*effect.messages)
                elif isinstance(effect, CommitOffer):  # the same: one write, no await
                    if writer is not None:
                        writer.offer(effect.offered, effect.catalogue)
                elif isinstance(effect, Request) and effect.piece is not None:
                    # The pieces are handed out here (an async generator cannot delegate); the
                    # stream is closed however this ends, which ends its request.
                    try:
                        async with contextlib.aclosing(effect.backend.stream(effect.messages)) as pieces:
                            async for piece in pieces:
                                if isinstance(piece, Completion):
                                    answer = piece
                                    break
                                event = effect.piece(piece.text)
                                if self.on_event is not None:
                                    self.on_event(event)
                                yield event
                        if answer is None:
                            failure = unfinished_stream(effect.backend)
                    except Exception as error:  # the machine retries it or lets it through
                        failure = backend_failure(effect.backend, error)
                elif isinstance(effect, Request):
                    try:
                        answer = await effect.backend.complete(effect.messages)
                    except Exception as error:  # the machine retries it or lets it through
                        failure = backend_failure(effect.backend, error)
                elif isinstance(effect, CallTools):
                    answer = await self._outcomes(effect)
                elif isinstance(effect, Wait):
                    await self._sleep(effect.seconds)
        finally:
            machine.close()
            if writer is not None:
                writer.close()

    async def _outcomes(self, effect: CallTools) -> tuple[Any, ...]:
        """What each of a decision's calls returned (or :class:`ToolRaised`), in their order: two
        or more run concurrently, at most ``max_concurrent_calls`` at a time."""
        calls = effect.calls
        if len(calls) == 1:
            return (await self._outcome(calls[0].tool, calls[0].arguments),)
        outcomes: list[Any] = [None] * len(calls)
        limiter = anyio.CapacityLimiter(self.max_concurrent_calls or len(calls))

        async def one(index: int) -> None:
            async with limiter:
                outcomes[index] = await self._outcome(calls[index].tool, calls[index].arguments)

        async with anyio.create_task_group() as group:
            for index in range(len(calls)):
                group.start_soon(one, index)
        return tuple(outcomes)

    async def _outcome(self, tool: str, arguments: dict[str, Any]) -> Any:
        """What the provider returned for the call, or :class:`ToolRaised` with what it raised."""
        try:
            return await self._call(tool, arguments)
        except KeyboardInterrupt:  # the user's, not the tool's: the run ends
            raise
        except BaseException as error:  # SystemExit too: the machine reports it to the model
            if _cancelled(error):  # this run's own task is being cancelled: it ends
                raise
            return error if isinstance(error, ToolRaised) else ToolRaised(error)

    async def _call(self, tool: str, arguments: dict[str, Any]) -> ToolOutput:
        acall = getattr(self.provider, "acall", None)
        if inspect.iscoroutinefunction(acall):
            output: ToolOutput = await acall(tool, arguments)
            return output
        if self.sync_tools == "inline":
            inline: ToolOutput = self.provider.call(tool, arguments)
            return inline
        # A cancelled run leaves the thread to finish on its own; its result is dropped.
        output, raised = await anyio.to_thread.run_sync(
            _caught, self.provider.call, tool, arguments, abandon_on_cancel=True
        )
        if raised is not None:
            raise ToolRaised(raised)
        return output


def _caught(
    call: Callable[[str, dict[str, Any]], ToolOutput], tool: str, arguments: dict[str, Any]
) -> tuple[Any, BaseException | None]:
    """``call``'s answer, or what it raised: a worker thread's GeneratorExit or CancelledError,
    handed to the event loop as a future's exception, would be taken for the task's own."""
    try:
        return call(tool, arguments), None
    except BaseException as error:  # the tool's, whatever it is, is the tool's error result
        return None, error


def _cancelled(error: BaseException) -> bool:
    """Whether ``error`` is the cancellation of the task running the loop, not one a tool raised.

    A task being cancelled counts its pending cancellations (``Task.cancelling()``); a tool's
    own ``CancelledError`` (a future it awaited was cancelled) leaves that count at 0. Off
    asyncio (trio under anyio), every cancellation is taken as the run's.
    """
    if not isinstance(error, anyio.get_cancelled_exc_class()):
        return False
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return True
    return task is None or task.cancelling() > 0


async def _finish(events: AsyncIterator[Event]) -> RunResult:
    async with contextlib.aclosing(events):  # type: ignore[type-var]
        async for event in events:
            if isinstance(event, RunFinished):
                return event.result
    raise AssertionError("a run's events end with RunFinished")  # pragma: no cover
