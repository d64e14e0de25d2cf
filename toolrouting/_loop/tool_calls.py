"""A round's tool calls answered: each checked against the limits, run, and its result committed.

A round's calls are one :class:`CallTools` effect, which the sync driver performs in order and
the async one concurrently, then one commit of all their results in the order of the calls: a
kill leaves the decision answered whole or not at all. One call (every decision at
``max_calls=1``) is answered, committed and told as a round always was. A call the limits
refuse, a tool that raises and one that returns no ``ToolOutput`` of text are answered by an
error result the loop words here (:func:`limit_notice`, :func:`tool_exception`,
:func:`bad_tool_output`).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Generator, Sequence
from typing import Any

from .._backends import Message
from .._names import NONE_TOOL
from .._provider import ToolOutput, exception_text
from .._result_messages import routed_call_id, routed_result_text
from .effects import CallTool, CallTools, Commit, Effect, Emit, ToolRaised
from .events import LimitReached, ToolReturned
from .result import Action, LimitName
from .run_limits import RunLimits
from .state import RunState, call_key, tripped_limit

__all__ = ["bad_tool_output", "commit", "limit_notice", "one_call", "several_calls", "tool_exception"]

#: What a step of the machine is: effects out, their answers in.
_Steps = Generator[Effect, Any, None]

_HANDOFF = json.dumps({"tool": NONE_TOOL})


def commit(state: RunState, *messages: Message) -> _Steps:
    """Append ``messages`` to the run; on disk first, as a message is part of the run only once there."""
    if messages:
        yield Commit(messages)
    state.messages.extend(messages)


def one_call(state: RunState, action: Action, limits: RunLimits) -> _Steps:
    """Answer the round's one call: its limit notice, or the tool run and its result."""
    call_id = routed_call_id(state.next_call())
    limit, runs = tripped_limit(state, action, limits)
    if limit is not None:
        state.limited = limit
        notice = limit_notice(limit, limits.of(limit), runs)
        yield from commit(state, _result_message(action.tool, call_id, notice, True))
        yield Emit(
            LimitReached(round=state.round, limit=limit, tool=action.tool, call_id=call_id, notice=notice)
        )
        return
    state.runs[call_key(action)] = runs + 1
    # A copy: the provider may keep or change its arguments without touching the record.
    (output,) = yield CallTools((CallTool(action.tool, copy.deepcopy(action.arguments or {})),))
    content, is_error = _outcome(output)  # a failing tool is reported to the model: the run goes on
    yield from commit(state, _result_message(action.tool, call_id, content, is_error))
    yield Emit(
        ToolReturned(round=state.round, tool=action.tool, call_id=call_id, content=content, is_error=is_error)
    )


@dataclasses.dataclass
class _Planned:
    """One call of a decision of several: its id, its limit when it tripped one, its result."""

    action: Action
    call_id: str
    limit: LimitName | None = None
    content: str = ""
    is_error: bool = False


def several_calls(state: RunState, actions: Sequence[Action], limits: RunLimits) -> _Steps:
    """Answer a decision of several calls: each checked against the limits in the order written
    (a call that trips one is answered by its notice, and the others still run), those that pass
    run as one effect, and every result goes in one commit, in the order of the calls."""
    planned: list[_Planned] = []
    for action in actions:
        call_id = routed_call_id(state.next_call())
        limit, runs = tripped_limit(state, action, limits)
        if limit is None:
            state.runs[call_key(action)] = runs + 1
            planned.append(_Planned(action, call_id))
        else:
            state.limited = state.limited or limit
            planned.append(
                _Planned(action, call_id, limit, limit_notice(limit, limits.of(limit), runs), True)
            )
    # Copies: the provider may keep or change its arguments without touching the record.
    calls = tuple(
        CallTool(p.action.tool, copy.deepcopy(p.action.arguments or {})) for p in planned if p.limit is None
    )
    outcomes = iter((yield CallTools(calls)) if calls else ())
    for p in planned:
        if p.limit is None:
            p.content, p.is_error = _outcome(next(outcomes))
    yield from commit(
        state, *(_result_message(p.action.tool, p.call_id, p.content, p.is_error) for p in planned)
    )
    for p in planned:
        tool, call_id = p.action.tool, p.call_id
        if p.limit is not None:
            yield Emit(
                LimitReached(round=state.round, limit=p.limit, tool=tool, call_id=call_id, notice=p.content)
            )
        else:
            yield Emit(
                ToolReturned(
                    round=state.round, tool=tool, call_id=call_id, content=p.content, is_error=p.is_error
                )
            )


def _outcome(output: object) -> tuple[str, bool]:
    """A call's outcome (what the provider returned, or :class:`ToolRaised`) as a result's content
    and whether it reports an error."""
    if isinstance(output, ToolRaised):
        return tool_exception(output.error), True
    if not isinstance(output, ToolOutput) or not isinstance(output.content, str):
        return bad_tool_output(output), True
    if not isinstance(output.is_error, bool):
        return bad_tool_output(output), True
    # A str subclass's own __str__ would show one text in the event and commit another.
    return str.__str__(output.content), output.is_error


def _result_message(tool: str, call_id: str, content: str, is_error: bool) -> Message:
    return Message(role="user", content=routed_result_text(tool, call_id, content, is_error=is_error))


def limit_notice(limit: LimitName, value: int, runs: int = 0) -> str:
    """The content of the error result that answers an action tripping ``limit`` (set to ``value``)."""
    if limit == "max_rounds":
        why = f"this run has used all of its {value} rounds (max_rounds)"
    else:
        why = (
            f"this exact call has already run {runs} time{'s' if runs != 1 else ''}, "
            f"and max_repeats allows {value} repeat{'s' if value != 1 else ''}; its result is above"
        )
    return f"Not run: {why}. No more tools can be called: reply {_HANDOFF}."


def tool_exception(error: BaseException) -> str:
    """The content of the error result for a tool that raised."""
    return f"the tool failed: {exception_text(error)}"


def bad_tool_output(value: object) -> str:
    """The content of the error result for a tool that returned something other than a ToolOutput
    of text, or one whose ``is_error`` is not a bool."""
    if isinstance(value, ToolOutput) and not isinstance(value.content, str):
        return f"the tool returned a ToolOutput whose content is {type(value.content).__name__}, not str"
    if isinstance(value, ToolOutput):
        return f"the tool returned a ToolOutput whose is_error is {type(value.is_error).__name__}, not bool"
    return f"the tool returned {type(value).__name__}, not a ToolOutput"
