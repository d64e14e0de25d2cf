"""The typed progress events of a routing run, in the order a run emits them.

Every routing request starts with :class:`RoundStarted`, and every request that got an
answer, the final answer's too, gives :class:`ReplyReceived` with what the server reported
(model, tokens, finish reason); a refused reply gives
:class:`RepairRequested`, and the repaired request starts again under the same round number.
An accepted reply gives :class:`ActionChosen`, then :class:`ToolReturned` (or
:class:`LimitReached` when the action trips a limit and is not run, or :class:`Abstained` when
``abstain=`` turns the decision into ``none``). :class:`RetryScheduled`
comes before a retried request, :class:`Resumed` first on a resumed run, and
:class:`RunFinished` last. A final answer asked for with ``stream_answer=True`` comes as
:class:`AnswerDelta` pieces before its :class:`ReplyReceived`, and a routed decision with
``stream_decisions=True`` as :class:`DecisionDelta` pieces. Each is named for what has
just happened, in the past tense.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .._backends import Usage
from .result import LimitName, RunResult

__all__ = [
    "Abstained",
    "ActionChosen",
    "AnswerDelta",
    "DecisionDelta",
    "Event",
    "LimitReached",
    "RepairRequested",
    "ReplyReceived",
    "Resumed",
    "RetryScheduled",
    "RoundStarted",
    "RunFinished",
    "ToolReturned",
]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Resumed:
    """A run picked up from its transcript: ``messages`` read back, the ``round`` it goes on with."""

    messages: int
    round: int
    torn_line: str | None
    """The start of the torn end that was dropped (a torn last line, or a commit of several lines
    cut short), ``None`` when the file ended with a whole commit."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class RoundStarted:
    """A routing request is about to be made; ``choices`` are the actions it offers."""

    round: int
    choices: tuple[str, ...]
    catalogue: int | None = None
    """With ``shortlist=``: how many tools the catalogue held, of which ``choices`` (``none``
    aside) are the shortlist; ``None`` without one, where the choices are the whole catalogue."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class RetryScheduled:
    """A request failed with a retryable backend error and is retried after ``delay`` seconds."""

    round: int
    attempt: int
    delay: float
    error: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReplyReceived:
    """A request was answered (a routing one, or the final answer), and what the server said of it."""

    round: int
    routed: bool
    """True for a routing request (it carried the route schema), False for the final answer's."""
    model: str | None
    """The model the request named, where the backend names one (``None`` for a server's default)."""
    response_model: str | None
    """The model the server said answered, where it said."""
    usage: Usage
    finish_reason: str | None
    truncated: bool
    seconds: float
    """How long the request took, its last attempt's alone when it was retried."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class RepairRequested:
    """The reply was refused (``problem``) and fed back; ``attempt`` counts from 1 within the round."""

    round: int
    attempt: int
    problem: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class ActionChosen:
    """The reply was accepted: the model chose ``tool`` (``"none"`` for the handoff)."""

    round: int
    tool: str
    arguments: dict[str, Any] | None
    text: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToolReturned:
    """The tool ran (or raised) and its result was fed back under ``call_id``."""

    round: int
    tool: str
    call_id: str
    content: str
    is_error: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class LimitReached:
    """The action tripped ``limit``; it was not run, ``notice`` was fed back, only ``none`` remains."""

    round: int
    limit: LimitName
    tool: str
    call_id: str
    notice: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class Abstained:
    """The decision's calls were not run (``abstain=``): the conversation does not give the
    ``arguments`` of ``tool``'s call, as ``reason`` says; the run ends as after a handoff."""

    round: int
    tool: str
    arguments: tuple[str, ...]
    reason: str
    """``get_weather needs city, which the conversation does not give``."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class DecisionDelta:
    """A piece of a routed decision as it streams (``stream_decisions=True``), for a host to show.

    The decision is parsed only once whole, and judged as :class:`ActionChosen` or
    :class:`RepairRequested` then; the pieces of a refused or retried reply are shown too.
    """

    round: int
    text: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class AnswerDelta:
    """A piece of the final answer as it streams (``stream_answer=True``), in order.

    The pieces are shown, not kept: the answer is committed whole once its stream has ended,
    so a stream cut short commits nothing and a resume asks again. After a
    :class:`RetryScheduled` the pieces start over.
    """

    text: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunFinished:
    """The run ended; ``result`` is what :meth:`RoutingLoop.run` returns."""

    result: RunResult


Event = (
    Resumed
    | RoundStarted
    | RetryScheduled
    | ReplyReceived
    | RepairRequested
    | ActionChosen
    | ToolReturned
    | LimitReached
    | Abstained
    | DecisionDelta
    | AnswerDelta
    | RunFinished
)
