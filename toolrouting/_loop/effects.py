"""What the step machine asks its driver to do: the only ways a run touches the world.

The machine (``machine``) is a generator that yields one of these and is sent back the answer:
a :class:`Request` gets the :class:`Completion` (a streamed one after its pieces, which the
driver hands out as the events its ``piece`` makes), a :class:`CallTools` what each of its calls
returned (a :class:`ToolRaised` for one that raised, which is reported to the model), the others
get ``None``. An exception the backend raised is thrown into the machine at the same point
(``generator.throw``), where it is retried or let through exactly as when the loop performed
the request itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from .._backends import Message
from .._errors import BackendResponseError
from .events import Event

__all__ = [
    "CallTool",
    "CallTools",
    "Commit",
    "CommitOffer",
    "Effect",
    "Emit",
    "Request",
    "ToolRaised",
    "Wait",
    "backend_failure",
    "unfinished_stream",
]


@dataclasses.dataclass(frozen=True, slots=True)
class Request:
    """Ask ``backend`` (the routed clone, or the caller's own for the answer) to complete ``messages``."""

    backend: Any
    messages: list[Message]
    piece: Callable[[str], Event] | None = None
    """Ask with ``backend.stream()``, each piece handed out as the event this makes of its text
    (an :class:`AnswerDelta`, a :class:`DecisionDelta`); ``None`` asks with ``complete()``."""


@dataclasses.dataclass(frozen=True, slots=True)
class CallTool:
    """One call of :class:`CallTools`: the provider's ``tool`` with ``arguments`` (a copy the
    provider may keep or change)."""

    tool: str
    arguments: dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class CallTools:
    """Call each of ``calls`` (a round's, one or more): in order, or concurrently; the answer is
    what each returned, in the order of ``calls``, a :class:`ToolRaised` for each that raised."""

    calls: tuple[CallTool, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Commit:
    """Append ``messages`` to the transcript in one write; the run holds them once this returns."""

    messages: tuple[Message, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class CommitOffer:
    """Record a round's offer in the transcript (a run with ``shortlist=``), before its first request:
    the tools ``offered`` (``none`` aside) out of a catalogue of ``catalogue`` tools."""

    offered: tuple[str, ...]
    catalogue: int


@dataclasses.dataclass(frozen=True, slots=True)
class Wait:
    """Wait ``seconds`` before a retry."""

    seconds: float


@dataclasses.dataclass(frozen=True, slots=True)
class Emit:
    """Tell the caller ``event`` (``on_event``, and the next item of ``iter_run``)."""

    event: Event


Effect = Request | CallTools | Commit | CommitOffer | Wait | Emit


def unfinished_stream(backend: object) -> BackendResponseError:
    """What a driver throws into the machine when a stream ends without its whole Completion."""
    return BackendResponseError(
        f"{type(backend).__name__}.stream() ended without its Completion; a stream's last item "
        "is the whole reply"
    )


class ToolRaised(Exception):
    """What a driver answers for a call that raised: ``error``, whatever it was.

    A tool's ``SystemExit``, ``GeneratorExit`` or ``CancelledError`` is the tool's failure, not
    the run's end: wrapped, it is never taken for the machine's own close or cancellation.
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def backend_failure(backend: object, error: Exception) -> Exception:
    """What a driver throws into the machine for ``error`` raised by a request to ``backend``.

    A ``StopIteration`` thrown into a generator would surface as PEP 479's ``RuntimeError``
    (a coroutine turns it into one already): it is a backend that broke its protocol.
    """
    stopped = isinstance(error, StopIteration | StopAsyncIteration) or (
        isinstance(error, RuntimeError) and isinstance(error.__cause__, StopIteration | StopAsyncIteration)
    )
    if not stopped:
        return error
    return BackendResponseError(
        f"{type(backend).__name__} raised StopIteration during a request; a backend returns a "
        "Completion or raises a BackendError"
    )
