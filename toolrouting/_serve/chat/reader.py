"""A chat completions request body read into the one :class:`ServeRequest` the core serves, or
refused with where and why.

Only the fields the server acts on are read (``parallel_tool_calls`` among them: true, OpenAI's
default when absent, lets a decision make several calls); the many others clients send
(``user``, ``metadata``, ``store``, penalties) are accepted and left alone. A field that would
change the answer in a way the server cannot honour (``n`` above 1, log-probabilities, an image)
is refused by name rather than silently ignored. A ``response_format`` is the schema the answer
is decoded under (``output_format``). ``reasoning_effort`` asks for reasoning before the
decision (``reasoning``), which the reply carries as ``reasoning_content``, as llama.cpp's and
vLLM's servers write it.

``tool_choice``'s four forms map onto one offer: ``"auto"`` offers every tool and ``none``;
``"required"`` every tool without ``none``; ``{"type": "function", ...}`` that tool alone;
``"none"`` no decision at all. The newer ``{"type": "allowed_tools", ...}`` names a subset with
a mode of its own, ``auto`` or ``required``.

The legacy ``functions`` and ``function_call`` are read as the ``tools`` and ``tool_choice``
they were replaced by (``function_call``: ``"auto"``, ``"none"``, or ``{"name": NAME}`` for that
function alone), and a history's legacy turns as a call and its result (``turns``). The two
forms in one request are refused, as they could disagree. A legacy request makes one call a
decision, the one ``function_call`` can carry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..._errors import ChatRequestError
from ..._json import is_count
from .. import fields
from ..core import ServeRequest, ToolChoice
from ..reasoning import effort_reasoning
from .turns import read_turns

__all__ = ["read_chat_request", "read_function_call", "read_tool_choice"]

#: The most stop sequences OpenAI's API takes.
_MAX_STOPS = 4
_FORMS = (
    'tool_choice is "auto", "required", "none", {"type": "function", "function": {"name": NAME}} or '
    '{"type": "allowed_tools", "allowed_tools": {"mode": "auto"|"required", "tools": [...]}}'
)
_FUNCTION_FORMS = 'function_call is "auto", "none" or {"name": NAME}'


def read_chat_request(body: object) -> ServeRequest:
    """The request ``body`` (decoded JSON) as a :class:`ServeRequest`; a bad field is refused by its path."""
    body = fields.request_body(body)
    model = fields.model_name(body)
    _refuse_unserved(body)
    response_format = fields.read_response_format(body.get("response_format"))
    legacy = _legacy(body)
    tools = (
        _functions(body.get("functions"))
        if legacy
        else fields.declared_tools(body.get("tools"), "function declarations")
    )
    choice = (read_function_call if legacy else read_tool_choice)(
        body.get("function_call" if legacy else "tool_choice"), tools
    )
    stream = fields.flag(body, "stream", False)
    options = fields.object_field(body, "stream_options")
    include_usage = fields.flag(options or {}, "include_usage", False, "stream_options.include_usage")
    max_tokens = fields.token_cap(
        body, "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    )
    parallel = fields.flag(body, "parallel_tool_calls", True)
    seed = body.get("seed")
    if seed is not None and not is_count(seed, -(2**63)):
        raise ChatRequestError(f"a seed is an integer, not {fields.shown_value(seed)}", "seed")
    stop = _stop(body.get("stop"))
    if response_format is not None and stop:
        raise ChatRequestError(
            "stop strings could cut the JSON response_format asks for: leave stop out", "stop"
        )
    return ServeRequest(
        model=model,
        messages=read_turns(body.get("messages")),
        tools=tools,
        tool_choice=choice,
        max_tokens=max_tokens,
        temperature=fields.number_field(body, "temperature", 2.0),
        top_p=fields.number_field(body, "top_p", 1.0),
        seed=seed,
        stop=stop,
        stream=stream,
        include_usage=include_usage,
        legacy_functions=legacy,
        response_format=response_format,
        parallel_tool_calls=parallel and not legacy,
        reasoning=effort_reasoning(body.get("reasoning_effort"), "reasoning_effort"),
    )


def read_tool_choice(value: object, tools: Sequence[Mapping[str, Any]]) -> ToolChoice:
    """The :class:`ToolChoice` a request's ``tool_choice`` field asks for, given its ``tools``."""
    choice = fields.mode_choice(value, tools)
    if choice is not None:
        return choice
    if not isinstance(value, Mapping):
        raise ChatRequestError(_FORMS, "tool_choice")
    kind = value.get("type")
    if kind == "function":
        function = value.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
        return ToolChoice(
            "required", (fields.declared_name(name, tools, "tool_choice.function.name", _FORMS),)
        )
    if kind == "allowed_tools":
        allowed = value.get("allowed_tools")
        mode = allowed.get("mode") if isinstance(allowed, Mapping) else None
        named = allowed.get("tools") if isinstance(allowed, Mapping) else None
        if mode in ("auto", "required") and isinstance(named, list) and named:
            names = []
            for index, entry in enumerate(named):
                function = entry.get("function") if isinstance(entry, Mapping) else None
                name = function.get("name") if isinstance(function, Mapping) else None
                names.append(
                    fields.declared_name(name, tools, f"tool_choice.allowed_tools.tools[{index}]", _FORMS)
                )
            return ToolChoice(mode, tuple(names))
    raise ChatRequestError(_FORMS, "tool_choice")


def read_function_call(value: object, tools: Sequence[Mapping[str, Any]]) -> ToolChoice:
    """The :class:`ToolChoice` the legacy ``function_call`` field asks for, given the request's
    ``functions`` as ``tools``."""
    if value is None:
        return fields.default_choice(tools)
    if value == "none":
        return ToolChoice("none")
    if value == "auto":
        return fields.tools_needed(ToolChoice("auto"), "auto", tools, "function_call", "functions")
    if not isinstance(value, Mapping):
        raise ChatRequestError(_FUNCTION_FORMS, "function_call")
    name = fields.declared_name(
        value.get("name"),
        tools,
        "function_call.name",
        _FUNCTION_FORMS,
        field="function_call",
        declared="functions",
    )
    return ToolChoice("required", (name,))


def _refuse_unserved(body: Mapping[str, Any]) -> None:
    """The fields that would change the answer in a way the server cannot honour, refused by
    name: several choices, and log-probabilities (a completion carries none)."""
    if body.get("n") not in (None, 1):
        raise fields.unserved(
            f"only one choice is served, not {fields.shown_value(body['n'])}: send n=1 (or leave n out), "
            "and send the request again for another choice",
            "n",
        )
    if fields.flag(body, "logprobs", False):
        raise fields.logprobs_refused("logprobs", "logprobs")
    top = body.get("top_logprobs")
    if top is not None and not is_count(top, 0):
        raise ChatRequestError(f"top_logprobs is a count, not {fields.shown_value(top)}", "top_logprobs")
    if top:
        raise fields.logprobs_refused("top_logprobs", "top_logprobs")


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
    tools = []
    for index, function in enumerate(fields.listed(value, "functions", "function declarations")):
        if not isinstance(function, Mapping):
            raise ChatRequestError(
                "a function is an object {name, description, parameters}, not " + fields.json_kind(function),
                f"functions[{index}]",
            )
        tools.append({"type": "function", "function": dict(function)})
    return tuple(tools)


def _stop(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(stop, str) and stop for stop in stops):
        raise ChatRequestError("stop is a non-empty string or a list of them", "stop")
    if len(stops) > _MAX_STOPS:
        raise ChatRequestError(f"stop takes at most {_MAX_STOPS} sequences, not {len(stops)}", "stop")
    return tuple(stops)
