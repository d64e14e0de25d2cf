"""A request's messages as the conversation ``RoutingLoop`` would send, and an action as its text.

A run's conversation has three roles; a chat request has five. System and developer messages
are system messages. An assistant's tool call is the action it stands for, written as the
route grammar writes it (``{"tool":NAME,"arguments":ARGS}``, spaced as the backend's settings
say), with the arguments' own text kept verbatim: so when the call was this server's reply,
the backend is sent back, byte for byte, what it wrote, and consecutive requests of one
conversation share their prefix. A tool message is the result message the loop would commit,
under the call id the loop would have given that call: the n-th call of the conversation is
``route-n``, whatever id the client knows it by.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from .._backends import Message
from .._errors import ChatRequestError
from .._names import tool_name_problem
from .._result_messages import routed_call_id, routed_result_text
from .request import ChatRequest, InMessage

__all__ = [
    "Conversation",
    "action_head",
    "action_text",
    "arguments_text",
    "conversation_of",
    "ends_with_user",
]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Conversation:
    """A request's messages translated: the messages, where the question ends, the calls so far."""

    messages: tuple[Message, ...]
    question: int
    """How many of ``messages`` come up to and with the last user message that is not a result:
    the run's own conversation, as the loop's answer request counts it."""
    calls: int
    """Tool calls the conversation holds: the next one is ``routed_call_id(calls + 1)``."""


def action_head(tool: str, *, spaced: bool) -> str:
    """An action's text up to its arguments: ``{"tool":NAME,"arguments":``."""
    colon, comma = (": ", ", ") if spaced else (":", ",")
    return f'{{"tool"{colon}{json.dumps(tool, ensure_ascii=False)}{comma}"arguments"{colon}'


def action_text(tool: str, arguments: str, *, spaced: bool) -> str:
    """The action a call of ``tool`` with the arguments' JSON text stands for, as the grammar writes it."""
    return f"{action_head(tool, spaced=spaced)}{arguments}}}"


def arguments_text(reply: str, tool: str, arguments: dict[str, Any], *, spaced: bool) -> str:
    """The arguments' JSON text of an accepted action: the reply's own text when it has the
    grammar's layout (so :func:`action_text` gives the reply back), else the arguments written
    compactly."""
    head = action_head(tool, spaced=spaced)
    if reply.startswith(head) and reply.endswith("}"):
        inner = reply[len(head) : -1]
        try:
            if json.loads(inner) == arguments:
                return inner
        except (ValueError, RecursionError):
            pass
    separators = (", ", ": ") if spaced else (",", ":")
    return json.dumps(arguments, ensure_ascii=False, separators=separators)


def conversation_of(request: ChatRequest, *, spaced: bool) -> Conversation:
    """The request's messages as a run's conversation; a call or result that cannot be one is refused."""
    calls: dict[str, tuple[str, str]] = {}
    answered: set[str] = set()
    messages: list[Message] = []
    question = 0
    for index, message in enumerate(request.messages):
        at = f"messages[{index}]"
        if message.role in ("system", "developer"):
            messages.append(Message(role="system", content=message.content))
        elif message.role == "user":
            messages.append(Message(role="user", content=message.content))
            question = len(messages)
        elif message.role == "assistant":
            messages.append(Message(role="assistant", content=_assistant(message, at, calls, spaced)))
        else:
            messages.append(Message(role="user", content=_result(message, at, calls, answered)))
    return Conversation(messages=tuple(messages), question=question, calls=len(calls))


def _assistant(message: InMessage, at: str, calls: dict[str, tuple[str, str]], spaced: bool) -> str:
    if not message.tool_calls:
        return message.content
    call = message.tool_calls[0]
    where = f"{at}.tool_calls[0]"
    if call.id in calls:
        raise ChatRequestError(f"the call id {json.dumps(call.id)[:80]} is used twice", f"{where}.id")
    problem = tool_name_problem(call.name)
    if problem is not None:
        raise ChatRequestError(problem, f"{where}.function.name")
    arguments = call.arguments if call.arguments.strip() else "{}"
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        raise ChatRequestError("the arguments are not a JSON object's text", f"{where}.function.arguments")
    calls[call.id] = (call.name, routed_call_id(len(calls) + 1))
    # A text the assistant wrote beside its call is not part of the action it stands for.
    return action_text(call.name, arguments, spaced=spaced)


def _result(message: InMessage, at: str, calls: dict[str, tuple[str, str]], answered: set[str]) -> str:
    call_id = message.tool_call_id or ""
    if call_id not in calls or call_id in answered:
        why = "was answered already" if call_id in answered else "is no earlier assistant message's call"
        raise ChatRequestError(
            f"the tool message answers the call {json.dumps(call_id)[:80]}, which {why}",
            f"{at}.tool_call_id",
            code="unknown_tool_call",
        )
    answered.add(call_id)
    tool, routed = calls[call_id]
    return routed_result_text(tool, routed, message.content)


def ends_with_user(messages: Sequence[Message]) -> bool:
    """Whether a decision can be asked: the conversation ends with a user message or a result."""
    return bool(messages) and messages[-1]["role"] == "user"
