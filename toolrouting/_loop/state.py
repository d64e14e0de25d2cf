"""The state of one run, and the rules a fresh run and a replayed one share to advance it."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from .._backends import Message, Usage
from .._provider import RecordedCall
from .result import Action, LimitName
from .run_limits import RunLimits
from .transcript_reader import RecordedOffer

__all__ = ["RunState", "call_key", "repeated_tools", "tripped_limit"]


@dataclasses.dataclass
class RunState:
    """The mutable state of one run; everything in it can be derived again from the transcript."""

    messages: list[Message]
    conversation: int = 0
    """How many of ``messages`` the run started from: the caller's, the instructions merged in."""
    round: int = 1
    calls: int = 0
    """Calls accepted so far, a limit's notice's included: the next is ``routed_call_id(calls + 1)``."""
    repairs: int = 0
    """Refused replies so far in this round."""
    runs: dict[str, int] = dataclasses.field(default_factory=dict)
    """Times each call (tool and canonical arguments) has run."""
    limited: LimitName | None = None
    abstained: str | None = None
    """Why the decision that ended the run was not run (``abstain=``), ``None`` otherwise."""
    done: bool = False
    actions: list[Action] = dataclasses.field(default_factory=list)
    usage: dict[int, tuple[int, int, int]] = dataclasses.field(default_factory=dict)
    """Per round: requests, prompt tokens, completion tokens."""
    answer_prompted: bool = False
    answer: str | None = None
    answer_usage: Usage | None = None
    torn_line: str | None = None
    replayed_calls: list[RecordedCall] = dataclasses.field(default_factory=list)
    """On resume: the calls the transcript shows were run, with what they answered."""
    round_start: int = 0
    """How many messages were committed when this round began (a shortlist's offer is recorded there)."""
    offered: list[dict[str, Any]] | None = None
    """With ``shortlist=``: this round's offered tools, chosen at its start and kept through its
    repairs; ``None`` until then."""
    catalogue: int = 0
    """With ``shortlist=``: how many tools the catalogue held when this round's offer was made."""
    recorded: dict[int, RecordedOffer] = dataclasses.field(default_factory=dict)
    """On resume: the offers the transcript records, by the message count their round began at."""
    records_offers: bool = False
    """Whether each round's offer goes into the transcript (a version 4 one, with ``shortlist=``)."""

    def add_usage(self, usage: Usage) -> None:
        requests, prompt, completion = self.usage.get(self.round, (0, 0, 0))
        self.usage[self.round] = (
            requests + 1,
            prompt + usage.prompt_tokens,
            completion + usage.completion_tokens,
        )

    def next_call(self) -> int:
        """Count one more call; its number, from 1 across the run (one call a round: the round's)."""
        self.calls += 1
        return self.calls

    def next_round(self, start: int) -> None:
        """Go on to the next round, which begins after the first ``start`` messages."""
        self.round += 1
        self.repairs = 0
        self.round_start = start
        self.offered = None


def call_key(action: Action) -> str:
    """A call's identity for the repeat limit: the tool and its arguments in canonical JSON."""
    return _key(action.tool, action.arguments)


def _key(tool: str, arguments: Any) -> str:
    return json.dumps([tool, arguments], sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def repeated_tools(calls: Iterable[tuple[str, Any]], max_repeats: int) -> tuple[str, ...]:
    """The tools of which ``calls`` (each a tool and its arguments, as made) made one call more
    than ``max_repeats`` times: that call once more is one :func:`tripped_limit` refuses. Each
    tool once, in the order its call passed the limit."""
    runs: dict[str, int] = {}
    tools: dict[str, None] = {}
    for tool, arguments in calls:
        key = _key(tool, arguments)
        runs[key] = runs.get(key, 0) + 1
        if runs[key] > max_repeats:
            tools[tool] = None
    return tuple(tools)


def tripped_limit(state: RunState, action: Action, limits: RunLimits) -> tuple[LimitName | None, int]:
    """The limit an accepted action trips, if any, and how often the same call has run.

    ``state.calls`` counts this call already: ``max_rounds`` bounds the calls of a run, which
    are its rounds when each decision makes one call.
    """
    runs = state.runs.get(call_key(action), 0)
    if state.calls > limits.max_rounds:
        return "max_rounds", runs
    if runs > limits.max_repeats:
        return "max_repeats", runs
    return None, runs
