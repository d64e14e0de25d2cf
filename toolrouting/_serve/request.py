"""A chat completions request body read into a checked value, or refused with where and why.

Only the fields the server acts on are read (``parallel_tool_calls`` among them: true, OpenAI's
default when absent, lets a decision make several calls); the many others clients send
(``user``, ``metadata``, ``store``, penalties) are accepted and left alone. A
field that would change the answer in a way the server cannot honour (``n`` above 1, a
``response_format``, an image) is refused by name rather than silently ignored.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any, Literal

from .._errors import ChatRequestError
from .._json import is_count, shown
from .._limits import SERVE_MAX_BODY_BYTES, SHOWN_VALUE_CHARS
from .choice import ToolChoice, read_tool_choice

__all__ = ["ChatRequest", "InMessage", "ToolCall", "body_too_large", "decode_body", "read_chat_request"]

_ROLES = ("system", "developer", "user", "assistant", "tool")
#: The most stop sequences OpenAI's API takes.
_MAX_STOPS = 4


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToolCall:
    """One ``tool_calls`` entry of an assistant message, in a request or in a reply: its id, the
    tool and the arguments' text."""

    id: str
    name: str
    arguments: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class InMessage:
    """One message of the request, its content as text (text parts joined)."""

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class ChatRequest:
    """What a chat completions request asks, checked."""

    model: str | None
    messages: tuple[InMessage, ...]
    tools: tuple[dict[str, Any], ...]
    """The declarations as sent: ``route_schema`` checks them and names a bad one by index."""
    tool_choice: ToolChoice
    max_tokens: int | None
    temperature: float | None
    top_p: float | None
    seed: int | None
    stop: tuple[str, ...]
    stream: bool
    include_usage: bool
    parallel_tool_calls: bool = True
    """Whether the decision may make several calls (up to the server's ``max_calls``)."""


def decode_body(raw: bytes) -> Any:
    """The JSON value of a request body; anything else is a :class:`ChatRequestError`."""
    if len(raw) > SERVE_MAX_BODY_BYTES:
        raise body_too_large()
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except UnicodeDecodeError as error:
        raise ChatRequestError(f"the body is not UTF-8 JSON ({error.reason} at byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise ChatRequestError(f"the body is not valid JSON: {error.msg} (character {error.pos})") from None
    except RecursionError:
        raise ChatRequestError("the body nests too deeply to decode") from None
    except ValueError as error:  # a non-finite constant, or an integer too long to convert
        raise ChatRequestError(f"the body is not valid JSON: {error}") from None


def body_too_large() -> ChatRequestError:
    """The 413 a body over ``SERVE_MAX_BODY_BYTES`` is answered with."""
    return ChatRequestError(
        f"the body is over the limit of {SERVE_MAX_BODY_BYTES} bytes (SERVE_MAX_BODY_BYTES)",
        status=413,
        code="request_too_large",
    )


def _refuse_constant(literal: str) -> Any:
    raise ValueError(f"{literal} is not JSON")


def read_chat_request(body: object) -> ChatRequest:
    """The request ``body`` (decoded JSON) as a :class:`ChatRequest`; a bad field is refused by its path."""
    if not isinstance(body, Mapping):
        raise ChatRequestError(f"the body is a JSON object, not {_kind(body)}")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise ChatRequestError(f"a model name is a string, not {_kind(model)}", "model")
    if body.get("n") not in (None, 1):
        raise ChatRequestError("only one choice is served (n=1)", "n", code="unsupported_parameter")
    response_format = body.get("response_format")
    if response_format is not None and response_format != {"type": "text"}:
        raise ChatRequestError(
            "response_format is not supported: the server constrains the tool decision itself",
            "response_format",
            code="unsupported_parameter",
        )
    tools = _tools(body.get("tools"))
    stream = _optional(body, "stream", bool) or False
    options = body.get("stream_options")
    if options is not None and not isinstance(options, Mapping):
        raise ChatRequestError(f"stream_options is an object, not {_kind(options)}", "stream_options")
    include_usage = _optional(options or {}, "include_usage", bool, "stream_options.") or False
    field = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    max_tokens = body.get(field)
    if max_tokens is not None and not is_count(max_tokens, 1):
        raise ChatRequestError(f"a token cap is a positive integer, not {_shown(max_tokens)}", field)
    parallel = _optional(body, "parallel_tool_calls", bool)
    seed = body.get("seed")
    if seed is not None and not is_count(seed, -(2**63)):
        raise ChatRequestError(f"a seed is an integer, not {_shown(seed)}", "seed")
    return ChatRequest(
        model=model,
        messages=_messages(body.get("messages")),
        tools=tools,
        tool_choice=read_tool_choice(body.get("tool_choice"), tools),
        max_tokens=max_tokens,
        temperature=_number(body, "temperature", 2.0),
        top_p=_number(body, "top_p", 1.0),
        seed=seed,
        stop=_stop(body.get("stop")),
        stream=stream,
        include_usage=include_usage,
        parallel_tool_calls=parallel is not False,
    )


def _optional(body: Mapping[str, Any], name: str, kind: type, prefix: str = "") -> Any:
    value = body.get(name)
    if value is not None and not isinstance(value, kind):
        raise ChatRequestError(f"{name} is a {kind.__name__}, not {_kind(value)}", prefix + name)
    return value


def _number(body: Mapping[str, Any], name: str, most: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ChatRequestError(f"{name} is a number, not {_shown(value)}", name)
    if not 0 <= value <= most:
        raise ChatRequestError(f"{name} is between 0 and {most:g}, not {_shown(value)}", name)
    return float(value)


def _stop(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(stop, str) and stop for stop in stops):
        raise ChatRequestError("stop is a non-empty string or a list of them", "stop")
    if len(stops) > _MAX_STOPS:
        raise ChatRequestError(f"stop takes at most {_MAX_STOPS} sequences, not {len(stops)}", "stop")
    return tuple(stops)


def _tools(value: object) -> tuple[dict[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ChatRequestError(f"tools is a list of function declarations, not {_kind(value)}", "tools")
    return tuple(value)


def _messages(value: object) -> tuple[InMessage, ...]:
    if not isinstance(value, list) or not value:
        raise ChatRequestError(f"messages is a non-empty list of messages, not {_kind(value)}", "messages")
    return tuple(_message(item, f"messages[{index}]") for index, item in enumerate(value))


def _message(item: object, at: str) -> InMessage:
    if not isinstance(item, Mapping):
        raise ChatRequestError(f"a message is an object, not {_kind(item)}", at)
    role = item.get("role")
    if role not in _ROLES:
        raise ChatRequestError(
            f"the role {_shown(role)} is not one of {', '.join(_ROLES)}", f"{at}.role", code="unknown_role"
        )
    calls: tuple[ToolCall, ...] = ()
    if role == "assistant" and item.get("tool_calls") is not None:
        calls = _calls(item["tool_calls"], f"{at}.tool_calls")
    content = _content(item.get("content"), f"{at}.content", empty=role == "assistant")
    call_id = None
    if role == "tool":
        call_id = item.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise ChatRequestError("a tool message names the call it answers", f"{at}.tool_call_id")
    return InMessage(role=role, content=content, tool_calls=calls, tool_call_id=call_id)


def _content(value: object, at: str, *, empty: bool) -> str:
    if isinstance(value, str):
        return value
    if value is None and empty:
        return ""
    if not isinstance(value, list):
        raise ChatRequestError(f"content is a string or a list of text parts, not {_kind(value)}", at)
    texts = []
    for index, part in enumerate(value):
        kind = part.get("type") if isinstance(part, Mapping) else None
        key = "refusal" if kind == "refusal" else "text"
        if kind not in ("text", "refusal"):
            raise ChatRequestError(
                f"a content part of type {_shown(kind)} is not supported: only text is served",
                f"{at}[{index}]",
                code="unsupported_content",
            )
        text = part.get(key)
        if not isinstance(text, str):
            raise ChatRequestError(f"a {kind} part carries its {key} as a string", f"{at}[{index}].{key}")
        texts.append(text)
    return "".join(texts)


def _calls(value: object, at: str) -> tuple[ToolCall, ...]:
    if not isinstance(value, list):
        raise ChatRequestError(f"tool_calls is a list, not {_kind(value)}", at)
    calls = []
    for index, call in enumerate(value):
        where = f"{at}[{index}]"
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or call.get("type", "function") != "function":
            raise ChatRequestError('a tool call is {"id", "type": "function", "function": {...}}', where)
        call_id, name, arguments = call.get("id"), function.get("name"), function.get("arguments")
        for key, field in (("id", call_id), ("function.name", name), ("function.arguments", arguments)):
            if not isinstance(field, str):
                raise ChatRequestError(f"{key} is a string, not {_kind(field)}", f"{where}.{key}")
        calls.append(ToolCall(id=str(call_id), name=str(name), arguments=str(arguments)))
    return tuple(calls)


_JSON_KINDS = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array"}


def _kind(value: object) -> str:
    """What a JSON value is, as the error shows it (``an array``, ``null``)."""
    if value is None:
        return "null"
    return "an object" if isinstance(value, Mapping) else _JSON_KINDS.get(type(value), type(value).__name__)


def _shown(value: object) -> str:
    return shown(value, SHOWN_VALUE_CHARS)
