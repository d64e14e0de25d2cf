"""Replay on resume: the state of the run a transcript records, read from its messages alone."""

from __future__ import annotations

import json
from collections.abc import Sequence

from .._backends import Message
from .._errors import TranscriptError
from .._names import NONE_TOOL, tool_name_problem
from .._parse import Route, parse_route
from .._parse_calls import parse_routes
from .._provider import ToolOutput
from .._result_messages import routed_call_id, routed_result_header, split_routed_result
from .abstention_notice import is_abstention_notice, notice_reason
from .answer_request import is_answer_request
from .repair_feedback import is_repair_message
from .result import Action
from .run_limits import RunLimits
from .state import RunState, call_key, tripped_limit
from .transcript_reader import TranscriptRead, read_transcript

__all__ = ["replayed", "resume_point"]


def resume_point(
    path: str | None, limits: RunLimits, *, thought: int | None = None, max_calls: int = 1
) -> tuple[TranscriptRead, RunState, str | None]:
    """What resuming the transcript at ``path`` starts from: the file as read, the state of the run
    it records, and its unanswered last reply if any. A damaged file is refused here, at once."""
    if path is None:
        raise ValueError("resume() continues the file given as transcript=, and this loop has none")
    read = read_transcript(path)
    state, pending = replayed(read, limits, path, thought=thought, max_calls=max_calls)
    state.torn_line = read.torn_line
    state.recorded = {offer.at: offer for offer in read.offers}
    return read, state, pending


def replayed(
    read: TranscriptRead, limits: RunLimits, path: str, *, thought: int | None = None, max_calls: int = 1
) -> tuple[RunState, str | None]:
    """The state of the run ``read`` records, and its unanswered last reply if any.

    ``thought`` is the reasoning slot the run's replies carry (the loop's ``thought=``), and
    ``max_calls`` the most calls one of them makes (the loop's ``max_calls=``): a decision of
    several calls is followed by all their results, each under its own call id.

    The header says where the caller's messages end. A version 1 transcript has none: there
    the caller's conversation ends with a user message and the loop's own messages follow
    it; the earliest such split wins, so a conversation that itself ends in a run of this
    loop is continued rather than restarted.
    """
    messages = read.messages
    if read.caller_messages is None:
        starts = range(1, len(messages) + 1)
    elif len(messages) < read.caller_messages:
        raise TranscriptError(
            path,
            0,
            f"it does not hold a routing run: its header counts {read.caller_messages} messages of the "
            f"caller's and only {len(messages)} were committed; start the run again",
        )
    else:
        starts = range(read.caller_messages, read.caller_messages + 1)
    for start in starts:
        if messages[start - 1]["role"] == "user":
            state = _replayed_from(messages, start, limits, thought, max_calls)
            if state is not None:
                return state
    raise TranscriptError(path, 0, "it does not hold a routing run (a user message, then the loop's own)")


def _replayed_from(
    messages: tuple[Message, ...], start: int, limits: RunLimits, thought: int | None, max_calls: int
) -> tuple[RunState, str | None] | None:
    """The run, when the loop's own messages begin at ``start``; ``None`` when they cannot."""
    state = RunState(messages=list(messages), conversation=start, round_start=start)
    index = start
    while index < len(messages):
        reply = messages[index]
        if reply["role"] != "assistant":
            return None
        handoff = parse_route(reply["content"], (), thought=thought)
        rest = messages[index + 1 :]
        if handoff.ok and _ends_run(rest):
            state.actions.append(Action.from_route(state.round, handoff))
            state.done = True
            state.answer_prompted = bool(rest)
            state.answer = rest[1]["content"] if len(rest) == 2 else None
            return state, None
        if not rest:
            return state, reply["content"]
        following = rest[0]
        if following["role"] != "user":
            return None
        content = following["content"]
        held = _abstained(reply["content"], content, rest[1:], state.round, thought, max_calls)
        if held is not None:
            state.actions.extend(held)
            state.done, state.abstained = True, notice_reason(content)
            state.answer_prompted = len(rest) > 1
            state.answer = rest[2]["content"] if len(rest) == 3 else None
            return state, None
        found = (
            None if handoff.ok else _replayed_calls(state.calls, reply["content"], rest, thought, max_calls)
        )
        if found is not None:
            for route, output in found:
                action = Action.from_route(state.round, route)
                state.actions.append(action)
                state.next_call()
                limit, runs = tripped_limit(state, action, limits)
                if limit is not None:
                    state.limited = state.limited or limit
                else:
                    state.runs[call_key(action)] = runs + 1
                    state.replayed_calls.append((action.tool, action.arguments or {}, output))
            index += 1 + len(found)
            state.next_round(index)
        elif is_repair_message(content):
            state.repairs += 1
            index += 2
        else:
            return None
    return state, None


def _abstained(
    reply: str, notice: str, rest: Sequence[Message], round: int, thought: int | None, max_calls: int
) -> list[Action] | None:
    """The actions of a decision the run abstained from, when ``notice`` follows its ``reply`` and
    the run ends after them (nothing, or the answer request and perhaps the answer), else ``None``."""
    if not is_abstention_notice(notice) or not _ends_run(rest):
        return None
    try:
        value = json.loads(reply)
    except (ValueError, RecursionError):
        return None
    items = value if isinstance(value, list) and max_calls > 1 else [value]
    tools = [item.get("tool") if isinstance(item, dict) else None for item in items]
    if not all(
        isinstance(tool, str) and tool != NONE_TOOL and tool_name_problem(tool) is None for tool in tools
    ):
        return None
    routes = parse_routes(reply, tuple(str(tool) for tool in tools), max_calls=max_calls, thought=thought)
    if not routes.ok or routes.text != reply:
        return None
    return [Action.from_route(round, route) for route in routes.calls]


def _replayed_calls(
    calls: int, reply: str, rest: Sequence[Message], thought: int | None, max_calls: int
) -> list[tuple[Route, ToolOutput]] | None:
    """The calls ``reply`` makes and their outputs when the messages after it (``rest``) answer
    them all, the first under ``route-(calls + 1)``; else ``None``."""
    try:
        value = json.loads(reply)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list):
        one = _replayed_action(calls + 1, reply, rest[0]["content"], thought)
        return None if one is None else [one]
    if max_calls == 1 or not all(isinstance(item, dict) for item in value):
        return None
    tools = [item.get("tool") for item in value]
    if not all(
        isinstance(tool, str) and tool != NONE_TOOL and tool_name_problem(tool) is None for tool in tools
    ):
        return None
    routes = parse_routes(reply, tuple(tools), max_calls=max_calls, thought=thought)
    if not routes.ok or routes.text != reply or len(rest) < len(routes.calls):
        return None
    found: list[tuple[Route, ToolOutput]] = []
    for number, (route, result) in enumerate(zip(routes.calls, rest, strict=False), start=calls + 1):
        output = None if result["role"] != "user" else _output(route, number, result["content"])
        if output is None:
            return None
        found.append((route, output))
    return found


def _replayed_action(
    number: int, reply: str, result: str, thought: int | None
) -> tuple[Route, ToolOutput] | None:
    """The action ``reply`` and its output when ``result`` answers it as call ``number``, else ``None``."""
    if split_routed_result(result) is None:
        return None
    try:
        tool = json.loads(reply).get("tool")
    except (ValueError, AttributeError, RecursionError):
        return None
    if not isinstance(tool, str) or tool == NONE_TOOL or tool_name_problem(tool) is not None:
        return None
    route = parse_route(reply, (tool,), thought=thought)
    output = _output(route, number, result) if route.ok and route.text == reply else None
    return None if output is None else (route, output)


def _output(route: Route, number: int, result: str) -> ToolOutput | None:
    """What ``result`` says call ``number`` (an accepted ``route``) returned, when it answers it."""
    split = split_routed_result(result)
    if split is None or route.tool is None:
        return None
    call_id = routed_call_id(number)
    headers = {routed_result_header(route.tool, call_id, is_error=flag): flag for flag in (False, True)}
    if split[0] not in headers:
        return None
    return ToolOutput(split[1], is_error=headers[split[0]])


def _ends_run(rest: Sequence[Message]) -> bool:
    """Whether the messages after a handoff are what the loop writes after one: nothing, or the
    answer request and perhaps the answer."""
    if not rest:
        return True
    prompted = rest[0]["role"] == "user" and is_answer_request(rest[0]["content"])
    return prompted and (len(rest) == 1 or (len(rest) == 2 and rest[1]["role"] == "assistant"))
