"""An Anthropic Messages request body read into the one :class:`ServeRequest` the core serves,
or refused with where and why.

``system`` and ``messages`` become the conversation (``turns``); ``tools`` become function
declarations and ``tool_choice`` the core's offer. ``output_config.format`` (what the SDK's
``messages.parse`` and ``output_config={"format": ...}`` send, and the older beta's top-level
``output_format``) is the chat front's ``response_format``: the answer decoded under its schema,
held by the route's ``none`` when tools are offered. ``thinking`` (with ``output_config.effort``)
asks for reasoning before the decision (``reasoning``), written back as a ``thinking`` block. What
the server cannot honour (server tools, and in ``turns`` images and documents) is refused by the
field that asks for it;
what is harmless to leave alone (``metadata``, ``cache_control``, ``service_tier``) is accepted.
``tool_choice``'s ``disable_parallel_tool_use: true`` makes a decision one call; absent or
false, it may make up to the server's ``max_calls``, one ``tool_use`` block each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..._errors import ChatRequestError
from ..._json import is_count
from .. import fields
from ..core import OutputFormat, ServeRequest, ToolChoice, checked_tools
from ..reasoning import Signer, messages_reasoning
from .turns import read_turns, referenced_tools

__all__ = ["read_messages_request"]

_CHOICES = '{"type": "auto"}, {"type": "any"}, {"type": "tool", "name": NAME} or {"type": "none"}'
#: The fields refused whenever they are sent, and why.
_UNSERVED = {
    "mcp_servers": "the server connects to no MCP server",
    "container": "the server runs no container",
}
#: The name an answer's schema is sent upstream under (Anthropic's format has none; the
#: ``openai`` dialect's server wants one).
_FORMAT_NAME = "output"


def read_messages_request(
    body: object, *, counting: bool = False, signer: Signer | None = None
) -> ServeRequest:
    """The Messages request ``body`` (decoded JSON) as a :class:`ServeRequest`; ``signer`` checks
    the thinking blocks sent back (without one, none is taken). ``counting`` reads a
    ``count_tokens`` body, which has no ``max_tokens``."""
    body = fields.request_body(body)
    model = fields.model_name(body)
    _refuse_unserved(body)
    if body.get("max_tokens") is None and not counting:
        raise ChatRequestError("max_tokens is required", "max_tokens")
    max_tokens = fields.token_cap(body, "max_tokens")
    fields.object_field(body, "metadata")
    stream = fields.flag(body, "stream", False)
    top_k = body.get("top_k")
    if top_k is not None and not is_count(top_k, 0):
        raise ChatRequestError(f"top_k is a non-negative integer, not {fields.shown_value(top_k)}", "top_k")
    response_format = _output_format(body)
    stops = _stops(body.get("stop_sequences"))
    if response_format is not None and stops:
        raise ChatRequestError(
            "stop sequences could cut the JSON output_config.format asks for: leave stop_sequences out",
            "stop_sequences",
        )
    tools = _offered(
        fields.declared_tools(body.get("tools"), "tools", _declaration),
        body.get("tools"),
        referenced_tools(body.get("messages")),
    )
    choice = body.get("tool_choice")
    return ServeRequest(
        model=model,
        messages=read_turns(body.get("system"), body.get("messages"), signer=signer),
        tools=tools,
        tool_choice=_tool_choice(choice, tools),
        max_tokens=max_tokens,
        temperature=fields.number_field(body, "temperature", 1.0),
        top_p=fields.number_field(body, "top_p", 1.0),
        top_k=top_k,
        seed=None,
        stop=stops,
        response_format=response_format,
        stream=stream,
        include_usage=True,
        # _tool_choice checked that the flag, when sent, is a boolean.
        parallel_tool_calls=not (isinstance(choice, Mapping) and choice.get("disable_parallel_tool_use")),
        reasoning=messages_reasoning(body, max_tokens),
    )


def _refuse_unserved(body: Mapping[str, Any]) -> None:
    """The fields that would change the reply in a way the server cannot honour, refused by name."""
    fields.unserved_fields(body, _UNSERVED)


def _output_format(body: Mapping[str, Any]) -> OutputFormat | None:
    """The answer's schema: ``output_config.format``, or the older beta's top-level ``output_format``
    (both sent must agree), ``{"type": "json_schema", "schema": {...}}``; ``None`` for free text."""
    config = fields.object_field(body, "output_config")
    given = {
        at: value
        for at, value in (
            ("output_config.format", None if config is None else config.get("format")),
            ("output_format", body.get("output_format")),
        )
        if value is not None
    }
    if not given:
        return None
    if len(given) == 2 and given["output_config.format"] != given["output_format"]:
        raise ChatRequestError(
            "output_config.format and the older output_format are two forms of one field, and they "
            "differ: send output_config.format alone",
            "output_format",
            code="conflicting_parameters",
        )
    at, value = next(iter(given.items()))
    if not isinstance(value, Mapping):
        raise ChatRequestError(f"{at} is an object, not {fields.json_kind(value)}", at)
    if value.get("type") != "json_schema":
        raise ChatRequestError(
            f"{at}'s type is json_schema, not {fields.shown_value(value.get('type'))}",
            f"{at}.type",
            code="unsupported_parameter",
        )
    schema = value.get("schema")
    if not isinstance(schema, Mapping):
        raise ChatRequestError(f"a schema is a JSON object, not {fields.json_kind(schema)}", f"{at}.schema")
    return OutputFormat(schema=dict(schema), name=_FORMAT_NAME, strict=True, at=f"{at}.schema")


def _offered(
    declared: tuple[dict[str, Any], ...], sent: object, referenced: frozenset[str]
) -> tuple[dict[str, Any], ...]:
    """The tools a decision may offer: every one but those declared ``defer_loading: true`` that
    no ``tool_reference`` in the conversation has loaded (a deferred tool is not shown to the
    model until a tool search finds it; Claude Code declares a placeholder it says never to call).
    The whole catalogue is checked first, so an error names a tool by its index as sent."""
    if not isinstance(sent, list) or not any(
        isinstance(t, Mapping) and t.get("defer_loading") is True for t in sent
    ):
        return declared
    checked_tools(list(declared), [f"tools[{index}]" for index in range(len(declared))])
    return tuple(
        tool
        for tool, given in zip(declared, sent, strict=True)
        if given.get("defer_loading") is not True or tool["function"]["name"] in referenced
    )


def _stops(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(stop, str) and stop for stop in value):
        raise ChatRequestError("stop_sequences is a list of non-empty strings", "stop_sequences")
    return tuple(value)


def _declaration(tool: object, at: str) -> dict[str, Any]:
    """A client tool as a function declaration (the core's one catalogue shape); a server tool
    is refused by its type."""
    if not isinstance(tool, Mapping):
        raise ChatRequestError(f"a tool is an object, not {fields.json_kind(tool)}", at)
    if tool.get("type") not in (None, "custom"):
        raise fields.unserved_tool(tool.get("type"), at, "client tools (name, description, input_schema) are")
    if not isinstance(tool.get("input_schema"), Mapping):
        raise ChatRequestError(
            f"a tool's input_schema is an object, not {fields.json_kind(tool.get('input_schema'))}",
            f"{at}.input_schema",
        )
    function: dict[str, Any] = {"name": tool.get("name")}
    if "description" in tool:
        function["description"] = tool["description"]
    function["parameters"] = tool["input_schema"]
    return {"type": "function", "function": function}


def _tool_choice(value: object, tools: tuple[dict[str, Any], ...]) -> ToolChoice:
    if value is None:
        return fields.default_choice(tools)
    kind = value.get("type") if isinstance(value, Mapping) else None
    if not isinstance(value, Mapping) or kind not in ("auto", "any", "tool", "none"):
        raise ChatRequestError(f"tool_choice is {_CHOICES}", "tool_choice")
    fields.flag(value, "disable_parallel_tool_use", False, "tool_choice.disable_parallel_tool_use")
    if kind == "none":
        return ToolChoice("none")
    offer = fields.tools_needed(ToolChoice("required" if kind != "auto" else "auto"), kind, tools)
    if kind != "tool":
        return offer
    return ToolChoice(
        "required",
        (fields.declared_name(value.get("name"), tools, "tool_choice.name", f"tool_choice is {_CHOICES}"),),
    )
