"""A Responses API request body read into the one :class:`ServeRequest` the core serves, or
refused with where and why.

``input`` and a ``previous_response_id`` become the conversation (``turns``), ``instructions`` a
system message before it (a stored response's are not carried over, as OpenAI does not carry
them), and the flat ``function`` tools the chat front's declarations; ``parallel_tool_calls``
(true when absent, as OpenAI's default) lets a decision make up to the server's ``max_calls``
calls, as in chat completions. ``text.format`` is the chat front's ``response_format`` in the
Responses API's flat shape (``output_format``), its refusals named under ``text.format``. What
would change the answer in a way the server cannot honour (a built-in tool, ``background``,
reasoning, logprobs) is refused by name; what only tunes something the server does not have
(``truncation``, ``service_tier``, ``include`` of a built-in tool's results, ``text.verbosity``)
is accepted and left alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from ..._errors import ChatRequestError
from .. import fields
from ..output_format import read_response_format
from ..protocol import InMessage, ServeRequest, ToolChoice
from .turns import Origin, check_turns, previous_turns, read_input

__all__ = ["ResponsesRequest", "read_responses_request"]

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
#: The fields refused whenever they are sent, and why.
_UNSERVED = {"conversation": "use previous_response_id", "prompt": "send the instructions and input"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ResponsesRequest:
    """What a Responses request asks, checked: the request the core serves, the conversation to
    store with its reply, and what the response object echoes."""

    request: ServeRequest
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
    body = fields.request_body(body)
    _refuse_unserved(body)
    model = fields.model_name(body)
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise ChatRequestError(
            f"instructions is a string, not {fields.json_kind(instructions)}", "instructions"
        )
    previous = previous_turns(body.get("previous_response_id"), stored)
    messages, origins = read_input(body.get("input"))
    history = previous + messages
    tools = fields.declared_tools(body.get("tools"), "function tools", _declaration)
    max_tokens = fields.token_cap(body, "max_output_tokens")
    form = _text_format(body)
    parallel = fields.flag(
        body, "parallel_tool_calls", True
    )  # OpenAI's default: up to the server's max_calls
    system = (InMessage(role="system", content=instructions),) if instructions else ()
    # No seed and no stop strings: the Responses API has neither.
    request = ServeRequest(
        model=model,
        stream=fields.flag(body, "stream", False),
        include_usage=True,
        messages=system + history,
        tools=tools,
        tool_choice=_tool_choice(body.get("tool_choice"), tools),
        temperature=fields.number_field(body, "temperature", 2.0),
        top_p=fields.number_field(body, "top_p", 1.0),
        max_tokens=max_tokens,
        seed=None,
        stop=(),
        response_format=read_response_format(form, "text.format", flat=True),
        parallel_tool_calls=parallel,
    )
    before: Origin = ("previous_response_id", ())
    check_turns(request, (("instructions", ()),) * len(system) + (before,) * len(previous) + origins)
    metadata = fields.object_field(body, "metadata")
    echo = {
        "instructions": instructions,
        "metadata": None if metadata is None else dict(metadata),
        "tools": list(body.get("tools") or []),
        "tool_choice": body.get("tool_choice") or "auto",
        "parallel_tool_calls": parallel,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "max_output_tokens": max_tokens,
        "previous_response_id": body.get("previous_response_id"),
        "text": {"format": _format_echo(form)},
        "truncation": body.get("truncation")
        if body.get("truncation") in ("auto", "disabled")
        else "disabled",
    }
    store = fields.flag(body, "store", True)
    return ResponsesRequest(request=request, history=history, store=store, echo=echo | {"store": store})


def _refuse_unserved(body: Mapping[str, Any]) -> None:
    """The fields that would change the result in a way this server cannot give, refused by name."""
    if body.get("background"):
        raise fields.unserved(
            "background responses are not served: the server answers while it holds the request", "background"
        )
    fields.unserved_fields(body, _UNSERVED)
    reasoning = fields.object_field(body, "reasoning")
    # An effort would change the answer; a summary of reasoning that never happens is none
    # (the Codex CLI asks for one with every request), so it is left alone.
    if reasoning is not None and reasoning.get("effort") not in (None, "none"):
        raise fields.unserved("reasoning is not served: the model answers without it", "reasoning.effort")
    if body.get("top_logprobs") not in (None, 0):
        raise fields.logprobs_refused("top_logprobs", "top_logprobs")
    include = body.get("include")
    if include is not None:
        for index, value in enumerate(fields.listed(include, "include")):
            if value == "message.output_text.logprobs":
                raise fields.logprobs_refused(f"include[{index}]", "message.output_text.logprobs", "include")
            if not isinstance(value, str) or value not in _HARMLESS_INCLUDES:
                raise ChatRequestError(
                    f"{fields.shown_value(value)} is not a value include takes", f"include[{index}]"
                )


def _text_format(body: Mapping[str, Any]) -> object:
    """The ``format`` of the request's ``text``."""
    text = fields.object_field(body, "text")
    return None if text is None else text.get("format")


def _format_echo(form: object) -> dict[str, Any]:
    """``text.format`` as the response object repeats it, once read (``None`` is plain text)."""
    if not isinstance(form, Mapping) or form.get("type") != "json_schema":
        return {"type": form.get("type") if isinstance(form, Mapping) else "text"}
    echo = {key: form[key] for key in ("type", "name", "schema", "strict") if key in form}
    return echo | ({"description": form["description"]} if isinstance(form.get("description"), str) else {})


def _declaration(tool: object, at: str) -> dict[str, Any]:
    """A flat ``function`` tool as the chat front's declaration; any other type is refused."""
    kind = tool.get("type") if isinstance(tool, Mapping) else None
    if kind != "function" or not isinstance(tool, Mapping):
        raise fields.unserved_tool(kind, at, "function tools are (the server runs no built-in tool)")
    function = {key: tool[key] for key in ("name", "description", "parameters", "strict") if key in tool}
    return {"type": "function", "function": function}


def _tool_choice(value: object, tools: tuple[dict[str, Any], ...]) -> ToolChoice:
    choice = fields.mode_choice(value, tools)
    if choice is not None:
        return choice
    kind = value.get("type") if isinstance(value, Mapping) else None
    if kind == "function" and isinstance(value, Mapping):
        return ToolChoice(
            "required", (fields.declared_name(value.get("name"), tools, "tool_choice.name", _CHOICE_FORMS),)
        )
    if kind == "allowed_tools" and isinstance(value, Mapping):
        mode, named = value.get("mode"), value.get("tools")
        if mode in ("auto", "required") and isinstance(named, list) and named:
            names = []
            for index, entry in enumerate(named):
                name = entry.get("name") if isinstance(entry, Mapping) else None
                names.append(fields.declared_name(name, tools, f"tool_choice.tools[{index}]", _CHOICE_FORMS))
            return ToolChoice(mode, tuple(names))
    if isinstance(kind, str) and kind not in ("function", "allowed_tools"):
        raise fields.unserved(
            f"a tool_choice of type {fields.shown_value(kind)} is not served: only function tools are",
            "tool_choice",
        )
    raise ChatRequestError(_CHOICE_FORMS, "tool_choice")
