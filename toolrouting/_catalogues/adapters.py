"""Catalogue adapters: tool lists from where users keep them, in the tools-for-llm shape.

One function per source, and :func:`tools_from` that tells the shapes apart entry by
entry. Each keeps the order, the descriptions and the parameter schemas (deep-copied),
and raises :class:`CatalogueError` naming the 0-based entry that cannot be converted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from .._catalogue_checks import ToolSpec, checked_catalogue, shown
from .._errors import CatalogueError
from .._limits import SHOWN_NAME_CHARS

__all__ = [
    "tools_from",
    "tools_from_anthropic",
    "tools_from_declarations",
    "tools_from_mcp",
    "tools_from_openai",
    "tools_from_responses",
]

# The Gemini SDK writes OpenAPI type names in capitals ("OBJECT"); JSON schema wants them lower.
_UPPER_TYPES = frozenset({"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"})


def tools_from_openai(tools: object) -> list[ToolSpec]:
    """OpenAI chat-completions tools (already the shape), checked and deep-copied."""
    return _convert(tools, _from_openai)


def tools_from_responses(tools: object) -> list[ToolSpec]:
    """OpenAI Responses tools: flat ``{"type": "function", "name", "description", "parameters"}``."""
    return _convert(tools, _from_responses)


def tools_from_mcp(tools: object) -> list[ToolSpec]:
    """An MCP ``tools/list`` result's ``tools`` (or the whole result): ``name``, ``inputSchema``.

    The description is the tool's ``description``, or its ``title`` when it has none. The
    result may also be the MCP SDK's objects (``ListToolsResult``, a list of ``Tool``), their
    ``model_dump()`` (``input_schema``), or a saved JSON-RPC response (``{"jsonrpc", "result"}``).
    """
    return _convert(_unwrapped(tools), _from_mcp)


def tools_from_anthropic(tools: object) -> list[ToolSpec]:
    """Anthropic client tools: ``name``, ``description``, ``input_schema``.

    Anthropic's server tools (``web_search_...``, ``bash_...``) run on Anthropic's side and
    cannot be routed; they are refused.
    """
    return _convert(tools, _from_anthropic)


def tools_from_declarations(declarations: object) -> list[ToolSpec]:
    """Bare function declarations ``{"name", "description", "parameters"}`` (Gemini's shape).

    Gemini's ``parametersJsonSchema`` is taken where ``parameters`` is absent, and
    capitalised OpenAPI type names (``"OBJECT"``) are lowered.
    """
    return _convert(declarations, _from_declaration)


def tools_from(source: object) -> list[ToolSpec]:
    """Any of the shapes above, told apart entry by entry (a list may mix them).

    ``source`` is a list of tools, or a mapping with a ``tools`` list (an MCP ``tools/list``
    result, a chat request body), or a JSON-RPC response whose ``result`` is one; pydantic
    models (the MCP SDK's ``ListToolsResult`` and ``Tool``) are read as their JSON form.
    """
    return _convert(_unwrapped(source), _detect)


def _unwrapped(source: object) -> object:
    source = _dumped(source)
    if isinstance(source, Mapping) and "jsonrpc" in source and "tools" not in source:
        # A saved JSON-RPC response to tools/list: the tool list is its result's.
        if "error" in source:
            error = source["error"]
            detail = error.get("message") if isinstance(error, Mapping) else error
            raise TypeError(f"the JSON-RPC response is an error ({shown(detail)}), not a tool list")
        source = _dumped(source.get("result"))
    if isinstance(source, Mapping) and "tools" in source:
        return source["tools"]
    return source


def _dumped(value: object) -> object:
    """A pydantic model (the MCP SDK's ``Tool``, ``ListToolsResult``) as its JSON form, by alias.

    Duck-typed, so that neither pydantic nor the SDK is imported: by alias, because the SDK's
    field names (``input_schema``) are not the protocol's (``inputSchema``).
    """
    dump = getattr(value, "model_dump", None)
    if isinstance(value, Mapping) or not callable(dump):
        return value
    try:
        return dump(mode="json", by_alias=True, exclude_none=True)
    except TypeError:  # a model_dump of another signature: not a pydantic v2 model
        return value


def _convert(tools: object, convert: Callable[[int, Mapping[str, Any]], ToolSpec]) -> list[ToolSpec]:
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence):
        raise CatalogueError(
            None, f"a tool list is a sequence of tool declarations (a list), not {type(tools).__name__}"
        )
    specs: list[ToolSpec] = []
    for index, entry in enumerate(tools):
        tool = _dumped(entry)
        if not isinstance(tool, Mapping):
            raise CatalogueError(index, f"a tool declaration is a mapping, not {type(tool).__name__}")
        specs.append(convert(index, tool))
    # The core's own checks (names, duplicates, "none", object parameters, JSON-only values),
    # with the same indexes, since entries map one to one; the detached copies it makes are kept.
    return [
        _copied(spec, tool.parameters) for spec, tool in zip(specs, checked_catalogue(specs), strict=True)
    ]


def _copied(spec: ToolSpec, parameters: dict[str, Any]) -> ToolSpec:
    function = spec["function"]
    copy: dict[str, Any] = {"name": function["name"]}
    if "description" in function:
        copy["description"] = function["description"]
    if "parameters" in function:
        copy["parameters"] = parameters
    return cast(ToolSpec, {"type": "function", "function": copy})


def _spec(index: int, name: object, description: object, holder: Mapping[str, Any], key: str) -> ToolSpec:
    """A tools-for-llm entry; its parameters are ``holder[key]``, when ``holder`` has ``key``."""
    if description is not None and not isinstance(description, str):
        raise CatalogueError(index, f"the description of {shown(name)} is not a string")
    function: dict[str, Any] = {"name": name}
    if description is not None:
        function["description"] = description
    if key in holder:
        function["parameters"] = holder[key]
    return cast(ToolSpec, {"type": "function", "function": function})


def _from_openai(index: int, tool: Mapping[str, Any]) -> ToolSpec:
    function = tool.get("function")
    if tool.get("type") != "function" or not isinstance(function, Mapping):
        raise CatalogueError(index, 'an OpenAI tool is {"type": "function", "function": {...}}')
    if "name" not in function:
        raise CatalogueError(index, "the function has no name")
    return _spec(index, function["name"], function.get("description"), function, "parameters")


def _from_responses(index: int, tool: Mapping[str, Any]) -> ToolSpec:
    if tool.get("type") != "function" or "name" not in tool:
        raise CatalogueError(
            index, 'a Responses tool is {"type": "function", "name": ..., "parameters": ...}'
        )
    return _spec(index, tool["name"], tool.get("description"), tool, "parameters")


def _from_mcp(index: int, tool: Mapping[str, Any]) -> ToolSpec:
    if "name" not in tool:
        raise CatalogueError(index, "the MCP tool has no name")
    description = tool.get("description")
    if description is None:
        description = tool.get("title")
    # The MCP SDK's model_dump() without by_alias writes the parameters as input_schema: they
    # are the same schema, and dropping them would leave a tool the model may call only with {}.
    key = "input_schema" if "inputSchema" not in tool and "input_schema" in tool else "inputSchema"
    return _spec(index, tool["name"], description, tool, key)


def _from_anthropic(index: int, tool: Mapping[str, Any]) -> ToolSpec:
    kind = tool.get("type", "custom")
    if kind != "custom":
        raise CatalogueError(index, f"{shown(kind)} is an Anthropic server tool; it runs on Anthropic's side")
    if "name" not in tool:
        raise CatalogueError(index, "the Anthropic tool has no name")
    return _spec(index, tool["name"], tool.get("description"), tool, "input_schema")


def _from_declaration(index: int, tool: Mapping[str, Any]) -> ToolSpec:
    if "name" not in tool:
        raise CatalogueError(index, "the function declaration has no name")
    key = "parameters" if "parameters" in tool else "parametersJsonSchema"
    try:
        lowered = {key: _lowered_types(tool[key])} if key in tool else {}
    except RecursionError:
        raise CatalogueError(index, f"the {key} nest too deeply or refer to themselves") from None
    return _spec(index, tool["name"], tool.get("description"), lowered, key)


def _lowered_types(value: Any) -> Any:
    if isinstance(value, list):
        return [_lowered_types(item) for item in value]
    if not isinstance(value, Mapping):
        return value
    copy = {key: _lowered_types(item) for key, item in value.items()}
    if isinstance(copy.get("type"), str) and copy["type"] in _UPPER_TYPES:
        copy["type"] = copy["type"].lower()
    return copy


def _detect(index: int, tool: Mapping[str, Any]) -> ToolSpec:
    if "function" in tool:
        return _from_openai(index, tool)
    if tool.get("type") == "function":
        return _from_responses(index, tool)
    if "inputSchema" in tool or "title" in tool:  # only MCP tools have a title
        return _from_mcp(index, tool)
    if "input_schema" in tool or ("type" in tool and "name" in tool):
        return _from_anthropic(index, tool)
    if "name" in tool:
        return _from_declaration(index, tool)
    keys = ", ".join(sorted(map(shown, tool)))[:SHOWN_NAME_CHARS]
    raise CatalogueError(
        index,
        f"not a tool in a known shape (OpenAI, Responses, MCP, Anthropic, declaration); keys: {keys}",
    )
