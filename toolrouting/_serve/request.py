"""A chat completions request body read into a checked value, or refused with where and why.

Only the fields the server acts on are read (``parallel_tool_calls`` among them: true, OpenAI's
default when absent, lets a decision make several calls); the many others clients send
(``user``, ``metadata``, ``store``, penalties) are accepted and left alone. A field that would
change the answer in a way the server cannot honour (``n`` above 1, log-probabilities, an image)
is refused by name rather than silently ignored. A ``response_format`` is the schema the answer
is decoded under (``output_format``).

The legacy ``functions`` and ``function_call`` are read as the ``tools`` and ``tool_choice``
they were replaced by, and a history's legacy turns as a call and its result: an assistant's
``function_call``, and the ``function`` message after it, which answers it by the function's
name. The two forms in one request are refused, as they could disagree. A legacy request makes
one call a decision, the one ``function_call`` can carry.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, Literal

from .._errors import ChatRequestError
from .._json import is_count
from .choice import ToolChoice, read_function_call, read_tool_choice
from .fields import json_kind, number_field, parts_text, shown_value
from .limits import SERVE_MAX_BODY_BYTES
from .output_format import OutputFormat, read_response_format

__all__ = [
    "ChatRequest",
    "InMessage",
    "ToolCall",
    "body_too_large",
    "decode_body",
    "read_chat_request",
]

_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
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
    is_error: bool = False
    """Whether a tool message reports the tool's failure (a front whose results can say so)."""
    function_call: bool = False
    """The one call came as the legacy ``function_call``; a ``function`` message is read as a
    ``tool`` message that answers it."""


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
    top_k: int | None = None
    """Sampling's ``top_k``, for a front whose API has one (chat completions has none)."""
    legacy_functions: bool = False
    """The declarations came as the legacy ``functions``: a call is written back as ``function_call``."""
    response_format: OutputFormat | None = None
    """The schema the answer is decoded under; ``None`` for free text."""
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
        raise ChatRequestError(f"the body is a JSON object, not {json_kind(body)}")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise ChatRequestError(f"a model name is a string, not {json_kind(model)}", "model")
    if body.get("n") not in (None, 1):
        raise ChatRequestError(
            f"only one choice is served, not {shown_value(body['n'])}: send n=1 (or leave n out), "
            "and send the request again for another choice",
            "n",
            code="unsupported_parameter",
        )
    _refuse_logprobs(body)
    response_format = read_response_format(body.get("response_format"))
    legacy = _legacy(body)
    tools = _functions(body.get("functions")) if legacy else _tools(body.get("tools"))
    choice = (read_function_call if legacy else read_tool_choice)(
        body.get("function_call" if legacy else "tool_choice"), tools
    )
    stream = _optional(body, "stream", bool) or False
    options = body.get("stream_options")
    if options is not None and not isinstance(options, Mapping):
        raise ChatRequestError(f"stream_options is an object, not {json_kind(options)}", "stream_options")
    include_usage = _optional(options or {}, "include_usage", bool, "stream_options.") or False
    field = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    max_tokens = body.get(field)
    if max_tokens is not None and not is_count(max_tokens, 1):
        raise ChatRequestError(f"a token cap is a positive integer, not {shown_value(max_tokens)}", field)
    parallel = _optional(body, "parallel_tool_calls", bool)
    seed = body.get("seed")
    if seed is not None and not is_count(seed, -(2**63)):
        raise ChatRequestError(f"a seed is an integer, not {shown_value(seed)}", "seed")
    stop = _stop(body.get("stop"))
    if response_format is not None and stop:
        raise ChatRequestError(
            "stop strings could cut the JSON response_format asks for: leave stop out", "stop"
        )
    return ChatRequest(
        model=model,
        messages=_messages(body.get("messages")),
        tools=tools,
        tool_choice=choice,
        max_tokens=max_tokens,
        temperature=number_field(body, "temperature", 2.0),
        top_p=number_field(body, "top_p", 1.0),
        seed=seed,
        stop=stop,
        stream=stream,
        include_usage=include_usage,
        legacy_functions=legacy,
        response_format=response_format,
        parallel_tool_calls=parallel is not False and not legacy,
    )


def _refuse_logprobs(body: Mapping[str, Any]) -> None:
    """No backend gives token log-probabilities (a completion carries none), so a request that
    asks for them is refused rather than answered without them."""
    if _optional(body, "logprobs", bool):
        raise ChatRequestError(
            "log-probabilities are not served: no backend here reports them; leave logprobs out",
            "logprobs",
            code="unsupported_parameter",
        )
    top = body.get("top_logprobs")
    if top is not None and not is_count(top, 0):
        raise ChatRequestError(f"top_logprobs is a count, not {shown_value(top)}", "top_logprobs")
    if top:
        raise ChatRequestError(
            "log-probabilities are not served: no backend here reports them; leave top_logprobs out",
            "top_logprobs",
            code="unsupported_parameter",
        )


def _legacy(body: Mapping[str, Any]) -> bool:
    """Whether the request declares its tools in the legacy form, ``functions`` and ``function_call``."""
    legacy = [name for name in ("functions", "function_call") if body.get(name) is not None]
    current = [name for name in ("tools", "tool_choice") if body.get(name) is not None]
    if legacy and current:
        raise ChatRequestError(
            f"{' and '.join(current)} and the legacy {' and '.join(legacy)} are two forms of one "
            "request: send tools and tool_choice alone",
            legacy[0],
            code="conflicting_parameters",
        )
    return bool(legacy)


def _functions(value: object) -> tuple[dict[str, Any], ...]:
    """The legacy ``functions`` as the ``tools`` entries they stand for."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ChatRequestError(
            f"functions is a list of function declarations, not {json_kind(value)}", "functions"
        )
    tools = []
    for index, function in enumerate(value):
        if not isinstance(function, Mapping):
            raise ChatRequestError(
                f"a function is an object {{name, description, parameters}}, not {json_kind(function)}",
                f"functions[{index}]",
            )
        tools.append({"type": "function", "function": dict(function)})
    return tuple(tools)


def _optional(body: Mapping[str, Any], name: str, kind: type, prefix: str = "") -> Any:
    value = body.get(name)
    if value is not None and not isinstance(value, kind):
        raise ChatRequestError(f"{name} is a boolean, not {json_kind(value)}", prefix + name)
    return value


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
        raise ChatRequestError(f"tools is a list of function declarations, not {json_kind(value)}", "tools")
    return tuple(value)


def _messages(value: object) -> tuple[InMessage, ...]:
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
    role = item.get("role")
    if role not in _ROLES:
        raise ChatRequestError(
            f"the role {shown_value(role)} is not one of {', '.join(_ROLES)}",
            f"{at}.role",
            code="unknown_role",
        )
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
    return InMessage(role=role, content=content, tool_calls=calls, tool_call_id=call_id, function_call=legacy)


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
    if not isinstance(value, list):
        raise ChatRequestError(f"tool_calls is a list, not {json_kind(value)}", at)
    calls = []
    for index, call in enumerate(value):
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
