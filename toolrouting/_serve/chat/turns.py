"""A chat completions request's ``messages`` read into the core's messages.

Text parts are joined into a message's text; an assistant's ``tool_calls`` are its calls, and a
``tool`` message the result that answers one by its ``tool_call_id``. A history's legacy turns
are a call and its result: an assistant's ``function_call`` (its id is where it is, which no
other call's can be), and the ``function`` message after it, which answers it by the function's
name. An assistant's ``reasoning_content`` before its calls is the thought its first action is
written with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..._errors import ChatRequestError
from ..core import InMessage, ToolCall
from ..fields import json_kind, known_role, listed, parts_text, shown_value

__all__ = ["read_turns"]

_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def read_turns(value: object) -> tuple[InMessage, ...]:
    """A request's ``messages`` read; a bad one is refused by its path."""
    if not isinstance(value, list) or not value:
        raise ChatRequestError(
            f"messages is a non-empty list of messages, not {json_kind(value)}", "messages"
        )
    read: list[InMessage] = []
    open_call: ToolCall | None = None  # the last assistant's legacy function_call, not yet answered
    for index, item in enumerate(value):
        at = f"messages[{index}]"
        if isinstance(item, Mapping) and item.get("role") == "function":
            read.append(_function_result(item, at, open_call))
            open_call = None
            continue
        message = _message(item, at)
        read.append(message)
        if message.role == "assistant":
            open_call = message.tool_calls[0] if message.function_call else None
    return tuple(read)


def _function_result(item: Mapping[str, Any], at: str, call: ToolCall | None) -> InMessage:
    """A legacy ``function`` message: the result of the function_call before it, by its name."""
    name = item.get("name")
    if not isinstance(name, str):
        raise ChatRequestError(f"a function message names its function, not {json_kind(name)}", f"{at}.name")
    if call is None or call.name != name:
        raise ChatRequestError(
            f"the function message answers {shown_value(name)}, which is no function_call of the assistant "
            "message before it, or was answered already",
            f"{at}.name",
            code="unknown_tool_call",
        )
    content = _content(item.get("content"), f"{at}.content", empty=True)
    return InMessage(role="tool", content=content, tool_call_id=call.id)


def _message(item: object, at: str) -> InMessage:
    if not isinstance(item, Mapping):
        raise ChatRequestError(f"a message is an object, not {json_kind(item)}", at)
    role = known_role(item, at, _ROLES)
    calls: tuple[ToolCall, ...] = ()
    if role == "assistant" and item.get("tool_calls") is not None:
        calls = _calls(item["tool_calls"], f"{at}.tool_calls")
    legacy = role == "assistant" and item.get("function_call") is not None
    if legacy:
        if calls:
            raise ChatRequestError(
                "an assistant message carries tool_calls or the legacy function_call, not both",
                f"{at}.function_call",
            )
        calls = (_function_call(item["function_call"], f"{at}.function_call"),)
    content = _content(item.get("content"), f"{at}.content", empty=role == "assistant")
    call_id = None
    if role == "tool":
        call_id = item.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise ChatRequestError("a tool message names the call it answers", f"{at}.tool_call_id")
    thought = _thought(item, at) if calls else None
    return InMessage(
        role=role,
        content=content,
        tool_calls=calls,
        tool_call_id=call_id,
        function_call=legacy,
        thought=thought,
    )


def _thought(item: Mapping[str, Any], at: str) -> str | None:
    """An assistant's reasoning before its calls, sent back as ``reasoning_content`` (llama.cpp's
    and vLLM's field; ``reasoning``, vLLM's newer name, too); nothing signs it on this API."""
    for name in ("reasoning_content", "reasoning"):
        value = item.get(name)
        if value is not None:
            if not isinstance(value, str):
                raise ChatRequestError(f"{name} is a string, not {json_kind(value)}", f"{at}.{name}")
            return value
    return None


def _function_call(value: object, at: str) -> ToolCall:
    """A legacy ``function_call``: its id is where it is, which no other call's can be."""
    if not isinstance(value, Mapping):
        raise ChatRequestError(f'a function_call is {{"name", "arguments"}}, not {json_kind(value)}', at)
    name, arguments = value.get("name"), value.get("arguments")
    for key, field in (("name", name), ("arguments", arguments)):
        if not isinstance(field, str):
            raise ChatRequestError(f"{key} is a string, not {json_kind(field)}", f"{at}.{key}")
    return ToolCall(id=at, name=str(name), arguments=str(arguments))


def _content(value: object, at: str, *, empty: bool) -> str:
    if isinstance(value, str):
        return value
    if value is None and empty:
        return ""
    return parts_text(value, at, ("text",))


def _calls(value: object, at: str) -> tuple[ToolCall, ...]:
    calls = []
    for index, call in enumerate(listed(value, "tool_calls", at=at)):
        where = f"{at}[{index}]"
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or call.get("type", "function") != "function":
            raise ChatRequestError('a tool call is {"id", "type": "function", "function": {...}}', where)
        call_id, name, arguments = call.get("id"), function.get("name"), function.get("arguments")
        for key, field in (("id", call_id), ("function.name", name), ("function.arguments", arguments)):
            if not isinstance(field, str):
                raise ChatRequestError(f"{key} is a string, not {json_kind(field)}", f"{where}.{key}")
        calls.append(ToolCall(id=str(call_id), name=str(name), arguments=str(arguments)))
    return tuple(calls)
