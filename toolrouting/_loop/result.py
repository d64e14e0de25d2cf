"""What a routing run produced: its actions, its usage per round, and why it ended."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from .._backends import Message, Usage
from .._parse import Route

__all__ = ["Action", "EndReason", "LimitName", "RoundUsage", "RunResult"]

#: Why a run ended: the model handed off on its own (``handoff``), after a named limit
#: tripped and left it only ``none`` (``max_rounds``, ``max_repeats``), or the loop turned a
#: decision the conversation cannot fill into ``none`` (``abstained``, with ``abstain=``).
EndReason = Literal["handoff", "max_rounds", "max_repeats", "abstained"]

#: The named limits a run can trip (the loop's keyword arguments of the same names).
LimitName = Literal["max_rounds", "max_repeats"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Action:
    """One round's accepted action, as a run records it (:attr:`RunResult.actions`).

    A :class:`Route` is the parser's verdict on a reply, accepted or refused; an accepted one
    becomes the action of its round through :meth:`from_route`, which adds the ``round`` to the
    route's ``tool`` (``"none"`` for the handoff), ``arguments``, exact ``text`` and ``thought``.
    A refused reply is never an action: it is repaired within its round.
    """

    round: int
    tool: str
    arguments: dict[str, Any] | None
    """``None`` for ``none``, which takes no arguments."""
    text: str
    """The action as the model wrote it, trimmed; also the assistant message's content."""
    thought: str | None = None
    """What the model wrote in the route's reasoning slot, when the loop has one (``thought=``)."""

    @classmethod
    def from_route(cls, round: int, route: Route) -> Action:
        """The action an accepted ``route`` is in ``round``; a refused route is a ValueError."""
        if not route.ok or route.tool is None or route.text is None:
            raise ValueError(f"only an accepted route is an action, and this one was refused: {route.error}")
        return cls(
            round=round, tool=route.tool, arguments=route.arguments, text=route.text, thought=route.thought
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class RoundUsage:
    """Tokens one round consumed over all its requests (a repaired round makes more than one)."""

    round: int
    requests: int
    usage: Usage


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunResult:
    """A finished routing run."""

    messages: tuple[Message, ...]
    """The whole conversation, as the transcript holds it: the caller's messages, then the run's."""
    actions: tuple[Action, ...]
    """Every accepted action in order, the final ``none`` included (after an abstention, the
    decision that was not run is the last)."""
    answer: str | None
    """The final answer, when the run was asked for one."""
    usage: tuple[RoundUsage, ...]
    """Usage of the rounds this process ran (a resumed run's earlier rounds are not known)."""
    answer_usage: Usage | None
    reason: EndReason
    abstained: str | None = None
    """Why the last decision was not run, when the loop abstained (``reason`` ``abstained``)."""
    torn_line: str | None = None
    """On a resumed run: the start of what a kill left uncommitted at the transcript's end (a torn
    last line, or a commit of several lines cut short) and resume dropped, if anything."""

    @property
    def rounds(self) -> int:
        """How many rounds the run took, the handoff's included."""
        return self.actions[-1].round if self.actions else 0

    def as_dict(self) -> dict[str, Any]:
        """The result as plain JSON values."""
        return {
            "reason": self.reason,
            "rounds": self.rounds,
            "answer": self.answer,
            "actions": [dataclasses.asdict(action) for action in self.actions],
            "usage": [
                {
                    "round": item.round,
                    "requests": item.requests,
                    "prompt_tokens": item.usage.prompt_tokens,
                    "completion_tokens": item.usage.completion_tokens,
                }
                for item in self.usage
            ],
            "answer_usage": dataclasses.asdict(self.answer_usage) if self.answer_usage else None,
            "messages": [dict(message) for message in self.messages],
            "abstained": self.abstained,
            "torn_line": self.torn_line,
        }
