"""A Responses API request body read into the one :class:`ServeRequest` the core serves, or
refused with where and why.

``input`` and a ``previous_response_id`` become the conversation (``turns``), ``instructions`` a
system message before it (a stored response's are not carried over, as OpenAI does not carry
them), and the flat ``function`` tools the chat front's declarations; ``parallel_tool_calls``
(true when absent, as OpenAI's default) lets a decision make up to the server's ``max_calls``
calls, as in chat completions. ``text.format`` is the chat front's ``response_format`` in the
Responses API's flat shape (``output_format``), its refusals named under ``text.format``. What
would change the answer in a way the server cannot honour (``background``, logprobs) is refused
by name; ``reasoning.effort`` asks for reasoning before the decision, written back as a
``reasoning`` item (with its ``summary`` when one is asked, and its signed ``encrypted_content``
when ``include`` asks for it); what only tunes something the server does not have
(``truncation``, ``service_tier``, ``include`` of a built-in tool's results, ``text.verbosity``)
is accepted and left alone.

A ``namespace`` tool (Codex groups its sub-agent tools so) is the function tools it groups, each
offered as ``NAMESPACE.NAME`` and written back as OpenAI writes such a call, ``name`` and
``namespace`` apart (``namespaces``). A tool OpenAI's servers run (``web_search``,
``file_search``, ``code_interpreter``, image generation, computer use, a remote ``mcp`` server)
cannot run here, and Codex offers ``web_search`` with every request: it is left out of the
offer, and the response says so (``omitted``: its ``x-toolrouting-omitted-tools`` header, and a
log line). The model is never offered it, so no reply can pretend it ran; a ``tool_choice``
that picks one is refused, as it cannot be left out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from ..._errors import ChatRequestError
from .. import fields
from ..core import Conversation, InMessage, ServeRequest, ToolChoice, checked_tools, conversation_of
from ..reasoning import Signer, effort_reasoning
from .shapes import FormatEcho, ResponseEcho
from .turns import Origin, checked_turns, previous_turns, read_input

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


#: The tools OpenAI's servers run, which no reply here can call: left out of the offer.
_HOSTED = frozenset(
    {
        "web_search",
        "web_search_preview",
        "web_search_preview_2025_03_11",
        "file_search",
        "code_interpreter",
        "image_generation",
        "computer_use",
        "computer_use_preview",
        "mcp",
    }
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ResponsesRequest:
    """What a Responses request asks, checked: the request the core serves, the conversation to
    store with its reply, and what the response object echoes."""

    request: ServeRequest
    conversation: Conversation
    """The request's messages as the core's conversation, built once as they were read."""
    history: tuple[InMessage, ...]
    """The conversation without the instructions: what a response continuing this one starts from."""
    store: bool
    echo: ResponseEcho
    """The request's fields the response object repeats (``instructions``, ``tools``, ``tool_choice``...)."""
    summary: bool = False
    """Whether a reasoning item carries its thought as a summary too (``reasoning.summary`` asked)."""
    encrypted: bool = False
    """Whether a reasoning item carries its signed thought (``include``: ``reasoning.encrypted_content``)."""
    namespaces: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    """Each offered name of a namespace's tool (``NAMESPACE.NAME``) and the two it is written back as."""
    omitted: tuple[str, ...] = ()
    """The types of the hosted tools left out of the offer, in the order sent."""


def read_responses_request(
    body: object,
    stored: Callable[[str], tuple[InMessage, ...] | None],
    signer: Signer | None = None,
    build: Callable[[ServeRequest], Conversation] | None = None,
) -> ResponsesRequest:
    """The request ``body`` (decoded JSON) as a :class:`ResponsesRequest`; ``stored`` finds the
    conversation of a stored response by its id, ``signer`` checks a reasoning item sent back,
    ``build`` is the core's conversation of a request (the server's ``RoutedEngine.conversation``;
    ``None``: one in the compact layout). A bad field is refused by its path."""
    body = fields.request_body(body)
    _refuse_unserved(body)
    model = fields.model_name(body)
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise ChatRequestError(
            f"instructions is a string, not {fields.json_kind(instructions)}", "instructions"
        )
    previous = previous_turns(body.get("previous_response_id"), stored)
    offered = _offered(body.get("tools"))
    messages, origins = read_input(body.get("input"), signer)
    reasoning = fields.object_field(body, "reasoning") or {}
    history = previous + messages
    tools = offered.declared
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
        response_format=fields.read_response_format(form, "text.format", flat=True),
        parallel_tool_calls=parallel,
        reasoning=effort_reasoning(reasoning.get("effort"), "reasoning.effort"),
    )
    before: Origin = ("previous_response_id", ())
    conversation = checked_turns(
        request,
        (("instructions", ()),) * len(system) + (before,) * len(previous) + origins,
        build or (lambda asked: conversation_of(asked, spaced=False)),
    )
    metadata = fields.object_field(body, "metadata")
    store = fields.flag(body, "store", True)
    echo: ResponseEcho = {
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
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "truncation": "auto" if body.get("truncation") == "auto" else "disabled",
        "store": store,
    }
    return ResponsesRequest(
        request=request,
        conversation=conversation,
        history=history,
        store=store,
        echo=echo,
        namespaces=offered.namespaces,
        omitted=offered.omitted,
        summary=reasoning.get("summary") is not None,
        encrypted="reasoning.encrypted_content" in (body.get("include") or ()),
    )


def _refuse_unserved(body: Mapping[str, Any]) -> None:
    """The fields that would change the result in a way this server cannot give, refused by name."""
    if body.get("background"):
        raise fields.unserved(
            "background responses are not served: the server answers while it holds the request", "background"
        )
    fields.unserved_fields(body, _UNSERVED)
    reasoning = fields.object_field(body, "reasoning")
    summary = None if reasoning is None else reasoning.get("summary")
    if summary not in (None, "auto", "concise", "detailed"):
        raise ChatRequestError(
            f'reasoning.summary is "auto", "concise" or "detailed", not {fields.shown_value(summary)}',
            "reasoning.summary",
        )
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


def _format_echo(form: object) -> FormatEcho:
    """``text.format`` as the response object repeats it, once read (``None`` is plain text)."""
    if not isinstance(form, Mapping) or form.get("type") != "json_schema":
        kind = form.get("type") if isinstance(form, Mapping) else None  # text or json_object, once read
        return {"type": kind if isinstance(kind, str) else "text"}
    echo: FormatEcho = {"type": "json_schema"}
    for key in ("name", "schema", "strict"):
        if key in form:
            echo[key] = form[key]
    if isinstance(form.get("description"), str):
        echo["description"] = form["description"]
    return echo


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Offered:
    """A request's ``tools`` read: the function declarations offered, where each is in the body,
    the namespaces' names, and the hosted tools left out."""

    declared: tuple[dict[str, Any], ...]
    namespaces: dict[str, tuple[str, str]]
    omitted: tuple[str, ...]


def _offered(value: object) -> _Offered:
    """The function tools, a namespace's among them, as the chat front's declarations; the
    hosted tools left out; anything else refused by its path. The catalogue is checked here,
    so an error names a tool where it was sent (``tools[4].tools[1]``)."""
    if value is None:
        return _Offered(declared=(), namespaces={}, omitted=())
    declared: list[dict[str, Any]] = []
    paths: list[str] = []
    namespaces: dict[str, tuple[str, str]] = {}
    omitted: list[str] = []
    for index, tool in enumerate(fields.listed(value, "tools", "function tools")):
        at = f"tools[{index}]"
        kind = tool.get("type") if isinstance(tool, Mapping) else None
        if kind in _HOSTED:
            omitted.append(str(kind))
        elif kind == "namespace" and isinstance(tool, Mapping):
            space = tool.get("name")
            if not isinstance(space, str) or not space:
                raise ChatRequestError(
                    f"a namespace's name is a non-empty string, not {fields.shown_value(space)}", f"{at}.name"
                )
            for inner, grouped in enumerate(
                fields.listed(tool.get("tools"), "a namespace's tools", at=f"{at}.tools")
            ):
                where = f"{at}.tools[{inner}]"
                function = _declaration(grouped, where)["function"]
                name = function.get("name")
                if isinstance(name, str):
                    namespaces[f"{space}.{name}"] = (space, name)
                    function["name"] = f"{space}.{name}"
                declared.append({"type": "function", "function": function})
                paths.append(where)
        else:
            declared.append(_declaration(tool, at))
            paths.append(at)
    checked_tools(declared, paths)
    return _Offered(declared=tuple(declared), namespaces=namespaces, omitted=tuple(omitted))


def _declaration(tool: object, at: str) -> dict[str, Any]:
    """A flat ``function`` tool as the chat front's declaration; a type no tool here has is refused."""
    kind = tool.get("type") if isinstance(tool, Mapping) else None
    if kind != "function" or not isinstance(tool, Mapping):
        raise fields.unserved_tool(
            kind,
            at,
            "function tools are, and namespaces of them (a hosted tool is left out; this server runs none)",
        )
    function = {key: tool[key] for key in ("name", "description", "parameters", "strict") if key in tool}
    return {"type": "function", "function": function}


def _tool_choice(value: object, tools: tuple[dict[str, Any], ...]) -> ToolChoice:
    choice = fields.mode_choice(value, tools)
    if choice is not None:
        return choice
    kind = value.get("type") if isinstance(value, Mapping) else None
    if kind == "function" and isinstance(value, Mapping):
        name = value.get("name")
        space = value.get("namespace")
        if isinstance(space, str) and isinstance(name, str):
            name = f"{space}.{name}"
        return ToolChoice("required", (fields.declared_name(name, tools, "tool_choice.name", _CHOICE_FORMS),))
    if kind == "allowed_tools" and isinstance(value, Mapping):
        mode, named = value.get("mode"), value.get("tools")
        if mode in ("auto", "required") and isinstance(named, list) and named:
            names = []
            for index, entry in enumerate(named):
                name = entry.get("name") if isinstance(entry, Mapping) else None
                names.append(fields.declared_name(name, tools, f"tool_choice.tools[{index}]", _CHOICE_FORMS))
            return ToolChoice(mode, tuple(names))
    if kind in _HOSTED:
        raise fields.unserved(
            f"tool_choice picks the hosted tool {fields.shown_value(kind)}, which runs on OpenAI's servers: "
            "this server runs none, and a tool the choice demands cannot be left out; choose a function "
            "tool, or auto",
            "tool_choice",
        )
    if isinstance(kind, str) and kind not in ("function", "allowed_tools"):
        raise fields.unserved(
            f"a tool_choice of type {fields.shown_value(kind)} is not served: only function tools are",
            "tool_choice",
        )
    raise ChatRequestError(_CHOICE_FORMS, "tool_choice")
