"""The route schema: one JSON schema with an ``anyOf`` alternative per tool, ``none`` last."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

from ._errors import CatalogueError
from ._limits import MAX_SCHEMA_DEPTH
from ._names import NONE_TOOL, tool_name_problem

__all__ = [
    "FunctionSpec",
    "ToolSpec",
    "route_choices",
    "route_schema",
    "route_tool_names",
]


class FunctionSpec(TypedDict):
    """The ``function`` part of a tools-for-llm declaration."""

    name: str
    description: NotRequired[str]
    parameters: NotRequired[Mapping[str, Any]]


class ToolSpec(TypedDict):
    """A tool in the tools-for-llm (OpenAI chat completions) shape."""

    type: str
    function: FunctionSpec


_NO_PARAMETERS: Mapping[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

_NONE_ALTERNATIVE: Mapping[str, Any] = {
    "type": "object",
    "properties": {"tool": {"const": NONE_TOOL}},
    "required": ["tool"],
    "additionalProperties": False,
}


def route_schema(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One JSON schema whose alternatives are the catalogue's tools, in order, then ``none``.

    ``tool`` comes first in both ``properties`` and ``required``, so a grammar-compiling
    server has the model name its action before any argument. Each tool's parameters are
    copied, never shared with the catalogue. Raises :class:`CatalogueError` on a bad entry.
    """
    alternatives: list[dict[str, Any]] = []
    for _, name, description, parameters in _checked(tools):
        alternative: dict[str, Any] = {"type": "object"}
        if description is not None:
            alternative["description"] = description
        alternative["properties"] = {"tool": {"const": name}, "arguments": parameters}
        alternative["required"] = ["tool", "arguments"]
        alternative["additionalProperties"] = False
        alternatives.append(alternative)
    alternatives.append(_detach(_NONE_ALTERNATIVE, -1, ""))
    return {"type": "object", "anyOf": alternatives}


def route_tool_names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """The catalogue's tool names, in order (the catalogue is checked as for the schema)."""
    return [name for _, name, _, _ in _checked(tools)]


def route_choices(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every action a route offers: the tool names in order, then ``"none"``."""
    return [*route_tool_names(tools), NONE_TOOL]


def _checked(
    tools: Sequence[Mapping[str, Any]],
) -> list[tuple[int, str, str | None, dict[str, Any]]]:
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence):
        raise TypeError(f"a tool catalogue is a sequence of tool declarations, not {type(tools).__name__}")
    seen: dict[str, int] = {}
    entries = []
    for index, tool in enumerate(tools):
        name, description, parameters = _entry(index, tool)
        if name in seen:
            raise CatalogueError(index, f"the name {name!r} is used twice (first by entry {seen[name]})")
        seen[name] = index
        entries.append((index, name, description, parameters))
    return entries


def _entry(index: int, tool: object) -> tuple[str, str | None, dict[str, Any]]:
    if not isinstance(tool, Mapping):
        raise CatalogueError(index, f"a tool declaration is a mapping, not {type(tool).__name__}")
    if tool.get("type") != "function":
        raise CatalogueError(
            index, f'the declaration is not "type": "function" (type is {tool.get("type")!r:.40})'
        )
    function = tool.get("function")
    if not isinstance(function, Mapping):
        raise CatalogueError(index, 'the declaration has no "function" mapping')
    if "name" not in function:
        raise CatalogueError(index, "the function has no name")
    name = function["name"]
    problem = tool_name_problem(name)
    if problem is not None:
        raise CatalogueError(index, problem)
    if name == NONE_TOOL:
        raise CatalogueError(index, 'a tool named "none" would be indistinguishable from the handoff')
    description = function.get("description")
    if description is not None and not isinstance(description, str):
        raise CatalogueError(index, f"the description of {name!r} is not a string")
    parameters = function.get("parameters")
    if parameters is None:
        return name, description, _detach(_NO_PARAMETERS, index, "")
    if not isinstance(parameters, Mapping) or parameters.get("type") != "object":
        raise CatalogueError(index, f'the parameters of {name!r} are not an object schema ("type": "object")')
    return name, description, _detach(parameters, index, "/parameters")


def _detach(value: Any, index: int, pointer: str, depth: int = 0) -> Any:
    """A deep copy of a JSON value; anything JSON cannot carry is a CatalogueError."""
    if depth > MAX_SCHEMA_DEPTH:
        raise CatalogueError(index, f"{pointer[:80]}... nests deeper than {MAX_SCHEMA_DEPTH} levels")
    if isinstance(value, Mapping):
        copy: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise CatalogueError(index, f"{pointer or '/'} has a key that is not a string: {key!r:.40}")
            copy[key] = _detach(item, index, f"{pointer}/{_escape(key)}", depth + 1)
        return copy
    if isinstance(value, (list, tuple)):
        return [_detach(item, index, f"{pointer}/{i}", depth + 1) for i, item in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        raise CatalogueError(index, f"{pointer} is {value}, which JSON cannot carry")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise CatalogueError(index, f"{pointer} is a {type(value).__name__}, which JSON cannot carry")


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
