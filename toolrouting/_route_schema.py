"""The route schema: one JSON schema with an ``anyOf`` alternative per tool, ``none`` last; and
an action's text as the route grammar writes it under that schema."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ._catalogue_checks import checked_catalogue
from ._errors import CatalogueError
from ._json import pointer_token
from ._limits import LLAMA_CPP_MAX_OPTIONAL_REPEATS
from ._names import NONE_TOOL

__all__ = [
    "action_head",
    "action_text",
    "answer_head",
    "route_choices",
    "route_schema",
    "route_separators",
    "route_tool_names",
]

_NONE_JSON = json.dumps(
    {
        "type": "object",
        "properties": {"tool": {"const": NONE_TOOL}},
        "required": ["tool"],
        "additionalProperties": False,
    }
)


def route_schema(
    tools: Sequence[Mapping[str, Any]],
    *,
    thought: int | None = None,
    handoff: bool = True,
    max_calls: int = 1,
    answer_schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One JSON schema whose alternatives are the catalogue's tools, in order, then ``none``.

    ``tool`` comes first in both ``properties`` and ``required``, so a grammar-compiling
    server has the model name its action before any argument. ``thought=N`` adds a bounded
    reasoning slot in front of it, in every alternative: a ``"thought"`` string of at most
    ``N`` characters the model writes before it chooses (off by default). Each tool's parameters are
    copied, never shared with the catalogue; their ``$defs`` move to the route's own
    ``$defs`` as ``TOOL.NAME`` so that their refs still resolve. ``handoff=False`` leaves
    ``none`` out, for a caller that demands a tool call (an empty catalogue is then refused).
    ``max_calls=K`` (above 1) lets one reply make up to ``K`` calls: one action is written as
    it is at 1, several as an array of 2 to ``K`` tool actions, never ``none`` among them
    (docs/grammar.md). ``answer_schema=S`` has ``none`` hold the answer too, a required
    ``"answer"`` under ``S`` after ``tool`` (``{"tool":"none","answer":...}``: one request both
    decides and answers); ``S``'s ``$defs`` move to the route's as ``none.NAME``, a name no
    tool's can take. Raises :class:`CatalogueError` on a bad entry.
    """
    calls = _max_calls(max_calls)
    slot = _thought_slot(thought)
    alternatives: list[dict[str, Any]] = []
    definitions: dict[str, Any] = {}
    for tool in checked_catalogue(tools):
        at = f"/anyOf/{tool.position}/properties/arguments"
        parameters = _hoisted(tool.parameters, tool.name, at, definitions)
        alternative: dict[str, Any] = {"type": "object"}
        if tool.description is not None:
            alternative["description"] = tool.description
        alternative["properties"] = {**slot, "tool": {"const": tool.name}, "arguments": parameters}
        alternative["required"] = [*slot, "tool", "arguments"]
        alternative["additionalProperties"] = False
        alternatives.append(alternative)
    calls_of = _calls(alternatives, calls)
    if handoff:
        none = json.loads(_NONE_JSON)
        if slot:
            none["properties"] = {**slot, **none["properties"]}
            none["required"] = [*slot, *none["required"]]
        if answer_schema is not None:
            at = f"/anyOf/{len(alternatives)}/properties/answer"
            none["properties"]["answer"] = _answer(answer_schema, at, definitions)
            none["required"].append("answer")
        alternatives.append(none)
    elif not alternatives:
        raise ValueError("a route without the none alternative needs at least one tool")
    # An object or an array: the alternatives say which.
    schema: dict[str, Any] = {"type": "object"} if calls_of is None else {}
    schema["anyOf"] = alternatives if calls_of is None else [*alternatives, calls_of]
    if definitions:
        schema["$defs"] = definitions
    return schema


def _calls(tools: list[dict[str, Any]], calls: int) -> dict[str, Any] | None:
    """The alternative of 2 to ``calls`` tool actions in one array; ``None`` at one call or no tool.

    Each item is a copy of the tool alternatives (never ``none``: a handoff stands alone), not
    ``$ref``s to them: a pointer into ``anyOf`` is not a form every grammar compiler resolves,
    and the copies' own refs point at the route's ``$defs`` and alternatives, as the originals' do.
    One call keeps the one form it has at ``max_calls=1``: the array starts at two.
    """
    if calls == 1 or not tools:
        return None
    return {"type": "array", "items": {"anyOf": copy.deepcopy(tools)}, "minItems": 2, "maxItems": calls}


def _answer(schema: Mapping[str, Any], at: str, definitions: dict[str, Any]) -> Any:
    """The answer's schema, copied, its ``$defs`` hoisted as a tool's are, under ``none``'s name."""
    if not isinstance(schema, Mapping):
        raise TypeError(f"answer_schema= is a JSON schema, a mapping, not {type(schema).__name__}")
    hoisted: dict[str, Any] = {}
    answer = _hoisted(copy.deepcopy(dict(schema)), NONE_TOOL, at, hoisted)
    clash = sorted(hoisted.keys() & definitions.keys())
    if clash:  # only a tool named "none.X" can write such a name
        raise CatalogueError(None, f"a tool's definition and the answer's are both {clash[0]!r} in the $defs")
    definitions.update(hoisted)
    return answer


def _max_calls(max_calls: int) -> int:
    """``max_calls``, checked: a whole number of calls from 1 to ``LLAMA_CPP_MAX_OPTIONAL_REPEATS``."""
    if isinstance(max_calls, bool) or not isinstance(max_calls, int):
        raise TypeError(f"max_calls= is a number of calls, not {type(max_calls).__name__}")
    if not 1 <= max_calls <= LLAMA_CPP_MAX_OPTIONAL_REPEATS:
        # llama-cpp-python's converter writes maxItems - minItems optional items, at most this many.
        raise ValueError(f"max_calls= is from 1 to {LLAMA_CPP_MAX_OPTIONAL_REPEATS} calls, not {max_calls}")
    return max_calls


def _thought_slot(thought: int | None) -> dict[str, Any]:
    """The ``thought`` property of every alternative, or none when the slot is off."""
    if thought is None:
        return {}
    if isinstance(thought, bool) or not isinstance(thought, int):
        raise TypeError(f"thought= is a maximum length in characters, not {type(thought).__name__}")
    if thought < 1:
        raise ValueError(f"thought= is a maximum length of at least 1 character, not {thought}")
    return {"thought": {"type": "string", "maxLength": thought}}


def route_tool_names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """The catalogue's tool names, in order (the catalogue is checked as for the schema)."""
    return [tool.name for tool in checked_catalogue(tools)]


def route_choices(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every action a route offers: the tool names in order, then ``"none"``."""
    return [*route_tool_names(tools), NONE_TOOL]


def route_separators(spaced: bool) -> tuple[str, str]:
    """What the route grammar writes between members and after a key, as ``json.dumps`` takes
    them: ``(",", ":")``, no whitespace at all, or with ``spaced`` one space after each."""
    return (", ", ": ") if spaced else (",", ":")


def action_head(tool: str, *, spaced: bool) -> str:
    """An action's text up to its arguments, as the route grammar writes it: the keys in the
    route schema's order, ``tool`` first (``{"tool":NAME,"arguments":``)."""
    comma, colon = route_separators(spaced)
    return f'{{"tool"{colon}{json.dumps(tool, ensure_ascii=False)}{comma}"arguments"{colon}'


def answer_head(*, spaced: bool) -> str:
    """A ``none`` that holds the answer, up to the answer, as the route grammar writes it
    (``{"tool":"none","answer":``; ``route_schema(tools, answer_schema=S)``)."""
    comma, colon = route_separators(spaced)
    return f'{{"tool"{colon}{json.dumps(NONE_TOOL)}{comma}"answer"{colon}'


def action_text(tool: str, arguments: str, *, spaced: bool) -> str:
    """The action calling ``tool`` with the arguments' JSON text, as the route grammar writes it."""
    return f"{action_head(tool, spaced=spaced)}{arguments}}}"


_DEFINITIONS = ("$defs", "definitions")
# Values that are data, not schemas: a "$ref" key inside them is not a reference.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def _hoisted(parameters: dict[str, Any], name: str, at: str, definitions: dict[str, Any]) -> dict[str, Any]:
    """``parameters`` with its ``$defs`` moved into ``definitions`` under ``NAME.KEY``.

    A tool's local ``$ref`` means "from the parameters' root", but inside the route schema
    "#" is the route's root: refs into its definitions are renamed to the hoisted ones (the
    only form every grammar compiler resolves), and any other local ref gets the pointer
    ``at`` of the tool's arguments in front.
    """
    # parameters is a detached copy: plain dicts, so dict tests suffice.
    if not any(type(parameters.get(key)) is dict for key in _DEFINITIONS):
        return parameters
    renamed = {
        f"#/{key}/{pointer_token(defined)}": f"#/$defs/{pointer_token(f'{name}.{defined}')}"
        for key in _DEFINITIONS
        if isinstance(parameters.get(key), Mapping)
        for defined in parameters[key]
    }
    rewritten: dict[str, Any] = _rewrite_refs(parameters, renamed, at)
    for key in _DEFINITIONS:
        if isinstance(rewritten.get(key), Mapping):
            for defined, subschema in rewritten.pop(key).items():
                definitions[f"{name}.{defined}"] = subschema
    return rewritten


def _rewrite_refs(value: Any, renamed: Mapping[str, str], at: str) -> Any:
    if isinstance(value, list):
        return [_rewrite_refs(item, renamed, at) for item in value]
    if not isinstance(value, dict):
        return value
    copy: dict[str, Any] = {}
    for key, item in value.items():
        if key == "$ref" and isinstance(item, str) and item.startswith("#"):
            head = "/".join(item.split("/", 3)[:3])
            copy[key] = renamed[head] + item[len(head) :] if head in renamed else "#" + at + item[1:]
        elif key in _DATA_KEYWORDS:
            copy[key] = item
        else:
            copy[key] = _rewrite_refs(item, renamed, at)
    return copy
