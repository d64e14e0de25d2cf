"""``tool_choice`` read: which tools a decision offers, and whether ``none`` is among them.

OpenAI's four forms map onto one value: ``"auto"`` offers every tool and ``none``;
``"required"`` every tool without ``none``; ``{"type": "function", ...}`` that tool alone;
``"none"`` no decision at all. The newer ``{"type": "allowed_tools", ...}`` names a subset
with a mode of its own, ``auto`` or ``required``. The legacy ``function_call`` maps the same
way: ``"auto"``, ``"none"``, and ``{"name": NAME}`` for that function alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from .._errors import ChatRequestError
from .._json import shown
from .._limits import SHOWN_VALUE_CHARS

__all__ = ["ToolChoice", "read_function_call", "read_tool_choice"]

_FORMS = (
    'tool_choice is "auto", "required", "none", {"type": "function", "function": {"name": NAME}} or '
    '{"type": "allowed_tools", "allowed_tools": {"mode": "auto"|"required", "tools": [...]}}'
)

_FUNCTION_FORMS = 'function_call is "auto", "none" or {"name": NAME}'


@dataclasses.dataclass(frozen=True)
class ToolChoice:
    """A decision's offer: ``mode`` (``none`` asks no decision) over ``names``, every tool when ``None``."""

    mode: Literal["auto", "required", "none"]
    names: tuple[str, ...] | None = None


def read_tool_choice(value: object, tools: Sequence[Mapping[str, Any]]) -> ToolChoice:
    """The :class:`ToolChoice` a request's ``tool_choice`` field asks for, given its ``tools``."""
    if value is None:
        return ToolChoice("auto" if tools else "none")
    if value == "none":
        return ToolChoice("none")
    if value in ("auto", "required"):
        if not tools:
            raise ChatRequestError(f"tool_choice {value!r} needs tools to choose from", "tool_choice")
        return ToolChoice(value)
    if not isinstance(value, Mapping):
        raise ChatRequestError(_FORMS, "tool_choice")
    kind = value.get("type")
    if kind == "function":
        function = value.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
        return ToolChoice("required", (_declared(name, tools, "tool_choice.function.name"),))
    if kind == "allowed_tools":
        allowed = value.get("allowed_tools")
        mode = allowed.get("mode") if isinstance(allowed, Mapping) else None
        listed = allowed.get("tools") if isinstance(allowed, Mapping) else None
        if mode in ("auto", "required") and isinstance(listed, list) and listed:
            names = []
            for index, entry in enumerate(listed):
                function = entry.get("function") if isinstance(entry, Mapping) else None
                name = function.get("name") if isinstance(function, Mapping) else None
                names.append(_declared(name, tools, f"tool_choice.allowed_tools.tools[{index}]"))
            return ToolChoice(mode, tuple(names))
    raise ChatRequestError(_FORMS, "tool_choice")


def read_function_call(value: object, tools: Sequence[Mapping[str, Any]]) -> ToolChoice:
    """The :class:`ToolChoice` the legacy ``function_call`` field asks for, given the request's
    ``functions`` as ``tools``."""
    if value is None:
        return ToolChoice("auto" if tools else "none")
    if value == "none":
        return ToolChoice("none")
    if value == "auto":
        if not tools:
            raise ChatRequestError("function_call 'auto' needs functions to choose from", "function_call")
        return ToolChoice("auto")
    if not isinstance(value, Mapping):
        raise ChatRequestError(_FUNCTION_FORMS, "function_call")
    name = _declared(value.get("name"), tools, "function_call.name", legacy=True)
    return ToolChoice("required", (name,))


def _declared(name: object, tools: Sequence[Mapping[str, Any]], at: str, *, legacy: bool = False) -> str:
    field, declared = ("function_call", "functions") if legacy else ("tool_choice", "tools")
    if not isinstance(name, str):
        raise ChatRequestError(_FUNCTION_FORMS if legacy else _FORMS, at)
    functions = [tool.get("function") for tool in tools if isinstance(tool, Mapping)]
    if name not in [function.get("name") for function in functions if isinstance(function, Mapping)]:
        raise ChatRequestError(
            f"{field} names {shown(name, SHOWN_VALUE_CHARS)}, which {declared} does not declare",
            at,
            code="unknown_tool",
        )
    return name
