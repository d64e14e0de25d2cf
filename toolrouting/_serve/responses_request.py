"""A Responses API request body read into the one :class:`ChatRequest` the core serves, or refused
with where and why.

``input`` (a string, or a list of message, ``function_call`` and ``function_call_output``
items) becomes the chat messages the chat completions front would read, ``instructions`` a
system message before them, and the flat ``function`` tools the chat front's declarations;
``parallel_tool_calls`` (true when absent, as OpenAI's default) lets a decision make up to the
server's ``max_calls`` calls, as in chat completions; a
``previous_response_id`` puts the stored conversation before the input (its instructions are not
carried over, as OpenAI does not carry them). ``text.format`` is the chat front's
``response_format`` in the Responses API's flat shape (``output_format``), its refusals named
under ``text.format``. What would change the answer in a way the server cannot honour (a built-in
tool, ``background``, reasoning, logprobs) is refused by name; what only tunes something the
server does not have (``truncation``, ``service_tier``, ``include`` of a built-in tool's results,
``text.verbosity``) is accepted and left alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from .._errors import ChatRequestError
from .._json import is_count
from .choice import ToolChoice, read_tool_choice
from .conversation import conversation_of, ends_with_user
from .fields import json_kind, number_field, parts_text, shown_value
from .output_format import read_response_format
from .request import ChatRequest, InMessage, ToolCall

__all__ = ["ResponsesRequest", "read_responses_request"]

_ROLES = ("user", "assistant", "system", "developer")
#: ``include`` values that add nothing here: the items they fill in (reasoning, a built-in tool's
#: calls, an input image) never occur in what this server serves.
_HARMLESS_INCLUDES = frozenset(
    {
        "reasoning.encrypted_content",
        "file_search_call.results",
        "web_search_call.results",
        "web_search_call.action.sources",
        "code_interpreter_call.outputs",
        "computer_call_output.output.image_url",
        "message.input_image.image_url",
    }
)
_CHOICE_FORMS = (
    'tool_choice is "auto", "required", "none", {"type": "function", "name": NAME} or '
    '{"type": "allowed_tools", "mode": "auto"|"required", "tools": [{"type": "function", "name": NAME}, ...]}'
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ResponsesRequest:
    """What a Responses request asks, checked: the chat request the core serves, the conversation
    to store with its reply, and what the response object echoes."""

    chat: ChatRequest
    history: tuple[InMessage, ...]
    """The conversation without the instructions: what a response continuing this one starts from."""
    store: bool
    echo: dict[str, Any]
    """The request's fields the response object repeats (``instructions``, ``tools``, ``tool_choice``...)."""


def read_responses_request(
    body: object, stored: Callable[[str], tuple[InMessage, ...] | None]
) -> ResponsesRequest:
    """The request ``body`` (decoded JSON) as a :class:`ResponsesRequest`; ``stored`` finds the
    conversation of a stored response by its id. A bad field is refused by its path."""
    if not isinstance(body, Mapping):
        raise ChatRequestError(f"the body is a JSON object, not {json_kind(body)}")
    _refuse_unserved(body)
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise ChatRequestError(f"a model name is a string, not {json_kind(model)}", "model")
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise ChatRequestError(f"instructions is a string, not {json_kind(instructions)}", "instructions")
    previous = _previous(body.get("previous_response_id"), stored)
    messages, origins = _input(body.get("input"))
    history = previous + messages
    tools = _tools(body.get("tools"))
    max_tokens = body.get("max_output_tokens")
    if max_tokens is not None and not is_count(max_tokens, 1):
        raise ChatRequestError(
            f"a token cap is a positive integer, not {shown_value(max_tokens)}", "max_output_tokens"
        )
    form = _text_format(body.get("text"))
    parallel = _flag(body, "parallel_tool_calls", True)  # OpenAI's default: up to the server's max_calls
    system = (InMessage(role="system", content=instructions),) if instructions else ()
    # No seed and no stop strings: the Responses API has neither.
    chat = ChatRequest(
        model=model,
        stream=_flag(body, "stream", False),
        include_usage=True,
        messages=system + history,
        tools=tools,
        tool_choice=_tool_choice(body.get("tool_choice"), tools),
        temperature=number_field(body, "temperature", 2.0),
        top_p=number_field(body, "top_p", 1.0),
        max_tokens=max_tokens,
        seed=None,
        stop=(),
        response_format=read_response_format(form, "text.format", flat=True),
        parallel_tool_calls=parallel,
    )
    before: Origin = ("previous_response_id", ())
    _check_conversation(chat, (("instructions", ()),) * len(system) + (before,) * len(previous) + origins)
    echo = {
        "instructions": instructions,
        "metadata": _metadata(body.get("metadata")),
        "tools": list(body.get("tools") or []),
        "tool_choice": body.get("tool_choice") or "auto",
        "parallel_tool_calls": parallel,
        "temperature": chat.temperature,
        "top_p": chat.top_p,
        "max_output_tokens": max_tokens,
        "previous_response_id": body.get("previous_response_id"),
        "text": {"format": _format_echo(form)},
        "truncation": body.get("truncation")
        if body.get("truncation") in ("auto", "disabled")
        else "disabled",
    }
    store = _flag(body, "store", True)
    return ResponsesRequest(chat=chat, history=history, store=store, echo=echo | {"store": store})


def _refuse_unserved(body: Mapping[str, Any]) -> None:
    """The fields that would change the result in a way this server cannot give, refused by name."""
    if body.get("background"):
        raise _unsupported(
            "background responses are not served: the server answers while it holds the request", "background"
        )
    for name, why in (
        ("conversation", "use previous_response_id"),
        ("prompt", "send the instructions and input"),
    ):
        if body.get(name) is not None:
            raise _unsupported(f"{name} is not served: {why}", name)
    reasoning = body.get("reasoning")
    if reasoning is not None:
        if not isinstance(reasoning, Mapping):
            raise ChatRequestError(f"reasoning is an object, not {json_kind(reasoning)}", "reasoning")
        # An effort would change the answer; a summary of reasoning that never happens is none
        # (the Codex CLI asks for one with every request), so it is left alone.
        if reasoning.get("effort") not in (None, "none"):
            raise _unsupported("reasoning is not served: the model answers without it", "reasoning.effort")
    top = body.get("top_logprobs")
    if top not in (None, 0):
        raise _unsupported(
            "log-probabilities are not served: no backend here reports them; leave top_logprobs out",
            "top_logprobs",
        )
    include = body.get("include")
    if include is not None:
        if not isinstance(include, list):
            raise ChatRequestError(f"include is a list, not {json_kind(include)}", "include")
        for index, value in enumerate(include):
            if value == "message.output_text.logprobs":
                raise _unsupported(
                    "log-probabilities are not served: no backend here reports them; leave "
                    "message.output_text.logprobs out of include",
                    f"include[{index}]",
                )
            if not isinstance(value, str) or value not in _HARMLESS_INCLUDES:
                raise ChatRequestError(
                    f"{shown_value(value)} is not a value include takes", f"include[{index}]"
                )


def _text_format(text: object) -> object:
    """The ``format`` of the request's ``text``."""
    if text is None:
        return None
    if not isinstance(text, Mapping):
        raise ChatRequestError(f"text is an object, not {json_kind(text)}", "text")
    return text.get("format")


def _format_echo(form: object) -> dict[str, Any]:
    """``text.format`` as the response object repeats it, once read (``None`` is plain text)."""
    if not isinstance(form, Mapping) or form.get("type") != "json_schema":
        return {"type": form.get("type") if isinstance(form, Mapping) else "text"}
    echo = {key: form[key] for key in ("type", "name", "schema", "strict") if key in form}
    return echo | ({"description": form["description"]} if isinstance(form.get("description"), str) else {})


def _unsupported(reason: str, param: str) -> ChatRequestError:
    return ChatRequestError(reason, param, code="unsupported_parameter")


def _flag(body: Mapping[str, Any], name: str, default: bool) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ChatRequestError(f"{name} is a boolean, not {json_kind(value)}", name)
    return value


def _metadata(value: object) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ChatRequestError(f"metadata is an object, not {json_kind(value)}", "metadata")
    return dict(value)


def _previous(value: object, stored: Callable[[str], tuple[InMessage, ...] | None]) -> tuple[InMessage, ...]:
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


def _input(value: object) -> tuple[tuple[InMessage, ...], tuple[Origin, ...]]:
    """The input's messages, and where in the body each comes from."""
    if isinstance(value, str):
        return (InMessage(role="user", content=value),), (("input", ()),)
    if not isinstance(value, list) or not value:
        raise ChatRequestError(
            f"input is a string or a non-empty list of items, not {json_kind(value)}", "input"
        )
    messages: list[InMessage] = []
    origins: list[Origin] = []
    for index, item in enumerate(value):
        at = f"input[{index}]"
        message = _item(item, at)
        if message.tool_calls and messages and messages[-1].role == "assistant":
            last, (where, calls) = messages[-1], origins[-1]
            messages[-1] = dataclasses.replace(last, tool_calls=last.tool_calls + message.tool_calls)
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
        role = item.get("role")
        if role not in _ROLES:
            raise ChatRequestError(
                f"the role {shown_value(role)} is not one of {', '.join(_ROLES)}",
                f"{at}.role",
                code="unknown_role",
            )
        return InMessage(role=role, content=_content(item.get("content"), f"{at}.content"))
    if kind == "function_call":
        call = ToolCall(
            id=_text(item, "call_id", at),
            name=_text(item, "name", at),
            arguments=_text(item, "arguments", at),
        )
        return InMessage(role="assistant", content="", tool_calls=(call,))
    if kind == "function_call_output":
        call_id = _text(item, "call_id", at)
        content = _content(item.get("output"), f"{at}.output")
        return InMessage(role="tool", content=content, tool_call_id=call_id)
    raise ChatRequestError(
        f"an input item of type {shown_value(kind)} is not served: only message, function_call and "
        "function_call_output items are",
        f"{at}.type",
        code="unsupported_content",
    )


def _text(item: Mapping[str, Any], name: str, at: str) -> str:
    value = item.get(name)
    if not isinstance(value, str) or (not value and name != "arguments"):
        raise ChatRequestError(f"{name} is a non-empty string, not {shown_value(value)}", f"{at}.{name}")
    return value


def _content(value: object, at: str) -> str:
    return value if isinstance(value, str) else parts_text(value, at, ("input_text", "output_text"))


def _tools(value: object) -> tuple[dict[str, Any], ...]:
    """The flat ``function`` tools as the chat front's declarations, in their order, so a
    catalogue error's ``tools[i]`` is the same tool; any other tool type is refused by its index."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ChatRequestError(f"tools is a list of function tools, not {json_kind(value)}", "tools")
    tools = []
    for index, tool in enumerate(value):
        kind = tool.get("type") if isinstance(tool, Mapping) else None
        if kind != "function":
            raise ChatRequestError(
                f"a tool of type {shown_value(kind)} is not served: only function tools are "
                "(the server runs no built-in tool)",
                f"tools[{index}].type",
                code="unsupported_tool",
            )
        assert isinstance(tool, Mapping)
        function = {key: tool[key] for key in ("name", "description", "parameters", "strict") if key in tool}
        tools.append({"type": "function", "function": function})
    return tuple(tools)


def _tool_choice(value: object, tools: tuple[dict[str, Any], ...]) -> ToolChoice:
    if value is None or value in ("auto", "required", "none"):
        return read_tool_choice(value, tools)
    kind = value.get("type") if isinstance(value, Mapping) else None
    if kind == "function":
        assert isinstance(value, Mapping)
        return ToolChoice("required", (_declared(value.get("name"), tools, "tool_choice.name"),))
    if kind == "allowed_tools":
        assert isinstance(value, Mapping)
        mode, listed = value.get("mode"), value.get("tools")
        if mode in ("auto", "required") and isinstance(listed, list) and listed:
            names = []
            for index, entry in enumerate(listed):
                name = entry.get("name") if isinstance(entry, Mapping) else None
                names.append(_declared(name, tools, f"tool_choice.tools[{index}]"))
            return ToolChoice(mode, tuple(names))
    if isinstance(kind, str) and kind not in ("function", "allowed_tools"):
        raise _unsupported(
            f"a tool_choice of type {shown_value(kind)} is not served: only function tools are", "tool_choice"
        )
    raise ChatRequestError(_CHOICE_FORMS, "tool_choice")


def _declared(name: object, tools: tuple[dict[str, Any], ...], at: str) -> str:
    if not isinstance(name, str):
        raise ChatRequestError(_CHOICE_FORMS, at)
    if name not in [tool["function"].get("name") for tool in tools]:
        raise ChatRequestError(
            f"tool_choice names {shown_value(name)}, which tools does not declare", at, code="unknown_tool"
        )
    return name


def _check_conversation(chat: ChatRequest, origins: tuple[Origin, ...]) -> None:
    """The checks the core makes of a conversation, made now, so that a refusal names the input
    item it is about rather than a chat message."""
    try:
        conversation = conversation_of(chat, spaced=False)
    except ChatRequestError as error:
        raise _moved(error, origins) from None
    if chat.tools and chat.tool_choice.mode != "none" and not ends_with_user(conversation.messages):
        raise ChatRequestError(
            "a tool decision answers a user message or a function_call_output, "
            "and the input ends with an assistant's",
            "input",
        )


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
