"""The synchronous driver: :class:`RoutingLoop` performs the step machine's effects by blocking calls.

The loop's logic is the step machine's (``machine``); this module only asks the backend, calls
the tool, writes the transcript and sleeps, as the machine says, and hands the events out.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, Unpack

from .._backends import Backend, Completion, Message
from .._provider import ToolProvider
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
from .transcript_writer import TranscriptWriter

__all__ = ["RoutingLoop"]


class RoutingLoop(StepMachine):
    """Runs a retrieval phase: every round one routed decision, until the model answers ``none``.

    Each round reads the provider's catalogue again, so a provider may narrow it as the run
    goes. ``instructions`` is what the model is told first, in a system message (see
    :mod:`.system_instructions`): ``True`` renders the run-start catalogue, a string is sent as it is,
    ``False`` sends the caller's messages alone. ``thought=N`` gives every routed reply a
    reasoning slot of at most ``N`` characters before ``tool`` (see :func:`route_schema`). With
    ``answer=True`` the original backend, with its own settings, is then asked for a final
    answer, from the question and the tool results alone (see :mod:`.answer_request`). ``transcript``
    names a JSON Lines file that receives every message as it is committed, which
    :meth:`resume` can continue from (sending the instructions it holds, never rendering them
    again; resume with the same ``thought=``). ``sleep`` waits between retries.
    ``stream_answer=True`` asks for the answer with the backend's ``stream()`` (a
    :class:`StreamingBackend`): each piece is an :class:`AnswerDelta` event as it comes, and the
    answer is committed once whole. ``stream_decisions=True`` streams each routed decision
    the same way, as :class:`DecisionDelta` events, parsed only once whole. ``max_calls=K``
    lets a decision make up to ``K`` calls, which run in the order written, each answered by its
    own result message.

    The limits are one :class:`RunLimits` (``limits=``), or its fields given one by one
    (``max_rounds=``, ``max_repairs=``, ``max_repeats=``). Every option but ``sleep`` is a
    :class:`LoopOptions` key, which :class:`AsyncRoutingLoop` takes too. A provider that is a
    :class:`RestorableToolProvider` gets, on resume, every call the transcript shows was run.
    For async backends and providers, :class:`AsyncRoutingLoop` drives the same rounds.
    """

    def __init__(
        self,
        backend: Backend,
        provider: ToolProvider,
        *,
        sleep: Callable[[float], object] = time.sleep,
        **options: Unpack[LoopOptions],
    ) -> None:
        super().__init__(backend, provider, options)
        if inspect.iscoroutinefunction(getattr(backend, "complete", None)):
            raise TypeError(
                f"{type(backend).__name__} is an async backend (its complete() is a coroutine): "
                "drive it with AsyncRoutingLoop"
            )
        self._sleep = sleep

    def _check_provider(self, provider: object) -> None:
        if not isinstance(provider, ToolProvider):
            raise TypeError(
                f"{type(provider).__name__} is not a tool provider: it needs tools_for_llm() and call()"
            )
        if inspect.iscoroutinefunction(getattr(provider, "call", None)):
            raise TypeError(
                f"{type(provider).__name__}.call() is a coroutine: drive an async provider with "
                "AsyncRoutingLoop"
            )

    def run(self, messages: Sequence[Message]) -> RunResult:
        """Run the routing phase on ``messages`` (which end with a user message) to its end."""
        return _finish(self.iter_run(messages))

    def resume(self) -> RunResult:
        """Continue the run recorded in this loop's transcript file, and finish it."""
        return _finish(self.iter_resume())

    def iter_run(self, messages: Sequence[Message]) -> Iterator[Event]:
        """:meth:`run` as an iterator of its events; the last is :class:`RunFinished`."""
        conversation = checked_messages(messages)
        return self._driven(lambda: self._fresh(conversation), self._writer())

    def iter_resume(self) -> Iterator[Event]:
        """:meth:`resume` as an iterator of its events, :class:`Resumed` first.

        The transcript is locked and read (a damaged one, or one another writer holds, refused)
        at once; the file is changed only as the events are consumed, and unlocked when they end.
        """
        steps, writer = self._resume_start()
        return self._driven(steps, lambda: writer)

    def _driven(
        self, start: Callable[[], Steps], opened: Callable[[], TranscriptWriter] | None
    ) -> Iterator[Event]:
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
                    if writer is not None:
                        writer.append(*effect.messages)
                elif isinstance(effect, CommitOffer):
                    if writer is not None:
                        writer.offer(effect.offered, effect.catalogue)
                elif isinstance(effect, Request):
                    try:
                        if effect.piece is not None:
                            answer = yield from self._streamed(effect)
                        else:
                            answer = effect.backend.complete(effect.messages)
                    except Exception as error:  # the machine retries it or lets it through
                        failure = backend_failure(effect.backend, error)
                elif isinstance(effect, CallTools):  # a decision's calls, in the order written
                    answer = tuple(self._call(call.tool, call.arguments) for call in effect.calls)
                elif isinstance(effect, Wait):
                    self._sleep(effect.seconds)
        finally:
            machine.close()
            if writer is not None:
                writer.close()

    def _call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """What the provider returned for the call, or :class:`ToolRaised` with what it raised."""
        try:
            return self.provider.call(tool, arguments)
        except KeyboardInterrupt:  # the user's, not the tool's: the run ends
            raise
        except BaseException as error:  # SystemExit too: the machine reports it to the model
            return ToolRaised(error)

    def _streamed(self, effect: Request) -> Generator[Event, None, Completion]:
        """Stream ``effect``'s request, handing out each piece as an event; the whole reply at the end.

        The stream is closed however this ends (an error, Ctrl-C, a caller leaving
        ``iter_run`` early), which ends its request.
        """
        with contextlib.closing(effect.backend.stream(effect.messages)) as pieces:
            for piece in pieces:
                if isinstance(piece, Completion):
                    return piece
                event = effect.piece(piece.text)  # type: ignore[misc]  # a streamed request has one
                if self.on_event is not None:
                    self.on_event(event)
                yield event
        raise unfinished_stream(effect.backend)


def _finish(events: Iterator[Event]) -> RunResult:
    for event in events:
        if isinstance(event, RunFinished):
            return event.result
    raise AssertionError("a run's events end with RunFinished")  # pragma: no cover
