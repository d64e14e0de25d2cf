"""A Responses request's conversation read into the core's messages: the stored conversation a
``previous_response_id`` continues, then the ``input`` (a string, or a list of message,
``function_call`` and ``function_call_output`` items: the chat messages the chat completions front
would read, a call that follows an assistant's message joining that message's calls, a call of a
namespace's tool named ``NAMESPACE.NAME`` as it was offered, a ``reasoning`` item the thought of
the calls after it), built into the core's conversation as it is read (once: the core serves the
conversation built here), so that a refusal names the input item it is about.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from ..._errors import ChatRequestError
from ..core import Conversation, InMessage, ServeRequest, ToolCall, ends_with_user
from ..fields import json_kind, known_role, parts_text, shown_value
from ..reasoning import Signer

__all__ = ["Origin", "checked_turns", "previous_turns", "read_input"]

_ROLES = ("user", "assistant", "system", "developer")


def previous_turns(
    value: object, stored: Callable[[str], tuple[InMessage, ...] | None]
) -> tuple[InMessage, ...]:
    """The conversation of the stored response ``previous_response_id`` names (``stored``
    finds it by its id), none without one."""
    if value is None:
        return ()
    if not isinstance(value, str):
        raise ChatRequestError(
            f"previous_response_id is a string, not {json_kind(value)}", "previous_response_id"
        )
    history = stored(value)
    if history is None:
        raise ChatRequestError(
            f"no response with id {shown_value(value)} is stored (it was not stored, was deleted, or is "
            "older than the last SERVE_STORED_RESPONSES)",
            "previous_response_id",
            code="previous_response_not_found",
        )
    return history


#: Where in the body each message of the conversation comes from: its item, and each of its
#: calls' items (calls that follow an assistant's message are that message's, as chat writes them).
Origin = tuple[str, tuple[str, ...]]


def read_input(
    value: object, signer: Signer | None = None
) -> tuple[tuple[InMessage, ...], tuple[Origin, ...]]:
    """The input's messages, and where in the body each comes from. A ``reasoning`` item is the
    thought of the assistant's calls after it (its ``encrypted_content`` checked by ``signer``);
    the reasoning of an answer in words is left out, as the conversation writes no thought there."""
    if isinstance(value, str):
        return (InMessage(role="user", content=value),), (("input", ()),)
    if not isinstance(value, list) or not value:
        raise ChatRequestError(
            f"input is a string or a non-empty list of items, not {json_kind(value)}", "input"
        )
    messages: list[InMessage] = []
    origins: list[Origin] = []
    thought: str | None = None
    for index, item in enumerate(value):
        at = f"input[{index}]"
        if isinstance(item, Mapping) and item.get("type") == "reasoning":
            thought = _reasoning(item, at, signer)
            continue
        message = _item(item, at)
        if message.role == "assistant" and thought is not None:  # the calls it has, or that join it
            message = dataclasses.replace(message, thought=thought)
        thought = None
        if message.tool_calls and messages and messages[-1].role == "assistant":
            last, (where, calls) = messages[-1], origins[-1]
            merged = last.tool_calls + message.tool_calls
            messages[-1] = dataclasses.replace(
                last, tool_calls=merged, thought=last.thought or message.thought
            )
            origins[-1] = (where, (*calls, at))
            continue
        messages.append(message)
        origins.append((at, (at,) if message.tool_calls else ()))
    return tuple(messages), tuple(origins)


def _item(item: object, at: str) -> InMessage:
    if not isinstance(item, Mapping):
        raise ChatRequestError(f"an input item is an object, not {json_kind(item)}", at)
    kind = item.get("type", "message")
    if kind == "message":
        role = known_role(item, at, _ROLES)
        return InMessage(role=role, content=_content(item.get("content"), f"{at}.content"))
    if kind == "function_call":
        name = _tool_name(item, at)
        call = ToolCall(id=_text(item, "call_id", at), name=name, arguments=_text(item, "arguments", at))
        return InMessage(role="assistant", content="", tool_calls=(call,))
    if kind == "function_call_output" and item.get("call_id") is None and item.get("name") is not None:
        return _unasked(item, at)
    if kind == "function_call_output":
        call_id = _text(item, "call_id", at)
        content = _content(item.get("output"), f"{at}.output")
        return InMessage(role="tool", content=content, tool_call_id=call_id)
    if kind == "additional_tools":
        raise ChatRequestError(
            "an additional_tools item is the tool surface Codex sends for OpenAI's own models: set model "
            "to the name this server lists (GET /v1/models) in Codex's config, and it offers its tools "
            "as function tools",
            f"{at}.type",
            code="unsupported_content",
        )
    raise ChatRequestError(
        f"an input item of type {shown_value(kind)} is not served: only message, function_call, "
        "function_call_output and reasoning items are",
        f"{at}.type",
        code="unsupported_content",
    )


def _unasked(item: Mapping[str, Any], at: str) -> InMessage:
    """A ``function_call_output`` the client sends with a ``name`` and no ``call_id``, answering
    no call (Codex 0.171.0 sends its goal's objective so, after a ``create_goal`` call, as
    ``"name": "goal_objective", "namespace": "agent"``): what the client says of its own state,
    read as a developer message that names it."""
    content = _content(item.get("output"), f"{at}.output")
    return InMessage(
        role="developer", content=f"{_tool_name(item, at)} (from the client, answering no call): {content}"
    )


def _tool_name(item: Mapping[str, Any], at: str) -> str:
    """An item's ``name``, as ``NAMESPACE.NAME`` where it names a namespace (a namespace's tool is
    offered so)."""
    name = _text(item, "name", at)
    if item.get("namespace") is not None:
        name = f"{_text(item, 'namespace', at)}.{name}"
    return name


def _reasoning(item: Mapping[str, Any], at: str, signer: Signer | None) -> str:
    """A reasoning item's thought: its ``encrypted_content``, checked, when it has one; else its
    ``content`` text (``reasoning_text`` parts), or its ``summary`` (``summary_text`` parts)."""
    if item.get("encrypted_content") is not None:
        if signer is None:
            raise ChatRequestError(
                "reasoning items are not read here", f"{at}.type", code="unsupported_content"
            )
        return signer.read(item["encrypted_content"], f"{at}.encrypted_content")
    for name, kind in (("content", "reasoning_text"), ("summary", "summary_text")):
        parts = item.get(name)
        if parts:
            return parts_text(parts, f"{at}.{name}", (kind,))
    return ""


def _text(item: Mapping[str, Any], name: str, at: str) -> str:
    value = item.get(name)
    if not isinstance(value, str) or (not value and name != "arguments"):
        raise ChatRequestError(f"{name} is a non-empty string, not {shown_value(value)}", f"{at}.{name}")
    return value


def _content(value: object, at: str) -> str:
    return value if isinstance(value, str) else parts_text(value, at, ("input_text", "output_text"))


def checked_turns(
    request: ServeRequest, origins: tuple[Origin, ...], build: Callable[[ServeRequest], Conversation]
) -> Conversation:
    """The request's conversation, built once by the core's ``build`` as it reads the input, so
    that a refusal names the input item it is about rather than a chat message."""
    try:
        conversation = build(request)
    except ChatRequestError as error:
        raise _moved(error, origins) from None
    if request.tools and request.tool_choice.mode != "none" and not ends_with_user(conversation.messages):
        raise ChatRequestError(
            "a tool decision answers a user message or a function_call_output, "
            "and the input ends with an assistant's",
            "input",
        )
    return conversation


#: A chat message's fields, as the Responses item they come from names them.
_FIELDS = {
    ".tool_call_id": "call_id",
    ".id": "call_id",
    ".function.name": "name",
    ".function.arguments": "arguments",
}


def _moved(error: ChatRequestError, origins: tuple[Origin, ...]) -> ChatRequestError:
    """``error`` with its ``messages[i]...`` path rewritten to the input item it came from."""
    head, _, rest = (error.param or "").partition("]")
    number = head.removeprefix("messages[")
    if not head.startswith("messages[") or not number.isdigit() or int(number) >= len(origins):
        return error
    where, calls = origins[int(number)]
    if rest.startswith(".tool_calls["):
        position, _, rest = rest.removeprefix(".tool_calls[").partition("]")
        if position.isdigit() and int(position) < len(calls):
            where = calls[int(position)]
    suffix = _FIELDS.get(rest)
    param = f"{where}.{suffix}" if where.startswith("input[") and suffix else where
    return ChatRequestError(error.reason, param, status=error.status, code=error.code)
