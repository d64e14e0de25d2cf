"""The catalogue as the model reads it: tools, their parameters, the reply format and ``none``.

The route schema constrains sampling and is never shown to the model; this text is what
tells it what each tool is for. It is a pure function of the catalogue, the style and the
budget, so the same catalogue gives the same bytes and a server's prefix cache is hit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, get_args

from ._catalogue_checks import CheckedTool, checked_catalogue
from ._limits import (
    DEFAULT_PROMPT_CHARS,
    PROMPT_DESCRIPTION_CHARS,
    PROMPT_ENUM_VALUES,
    PROMPT_NESTING,
    PROMPT_PARAMETER_NOTE_CHARS,
    PROMPT_SHORT_DESCRIPTION_CHARS,
    PROMPT_VALUE_CHARS,
)

__all__ = ["PROMPT_STYLES", "PromptStyle", "catalogue_prompt"]

#: How the tools are written out: a compact text listing, one JSON object per tool, or
#: TypeScript-like signatures. The frame around them (reply format, when to answer
#: ``none``) is the same in every style.
PromptStyle = Literal["text", "json", "typescript"]

#: Every style, in the order the benchmarks report them. The default, ``typescript``, is the
#: one docs/prompts.md's figures favour: the fewest prompt tokens per tool and the most valid
#: replies, at a balanced accuracy level with ``text`` on the default model.
PROMPT_STYLES: tuple[PromptStyle, ...] = get_args(PromptStyle)

_HEAD = "You choose the next action. The tools you can call:"
_EMPTY_HEAD = "You choose the next action. No tools are available."
# The call's example comes last, nearest the conversation: a first draft that ended on
# {"tool": "none"} got none from the default model on every case of a 10-case sample. This
# order did no better there (docs/prompts.md has the full run); it is kept as the neutral one.
_REPLY = (
    'Reply with one JSON object and nothing else, "tool" first. Reply {"tool": "none"} when no '
    "tool above does what the user asks, or when no tool is needed (a greeting, thanks, general "
    "knowledge, or the tool results above already answer it). Otherwise call the tool that does "
    'what the user asks: {"tool": "NAME", "arguments": {...}}.'
)
# One worked example, on a made-up tool, after the reply format: one request the tool does not
# do, one it does. On the decision benchmark with the 0.5B measurement model it raised
# balanced accuracy on both classes, 54.5% against 50.2% on 160 cases; on the default model it
# cost 1.8 points (docs/benchmarks/history.md, "What was tried for decision quality"). A resumed run
# sends the instructions its transcript holds, so older transcripts resume unchanged.
_EXAMPLE = (
    "For example, if the only tool were find_recipe(ingredient: string), which finds recipes "
    'that use an ingredient: "Book me a table for two tonight" gets {"tool": "none"}, as '
    'finding recipes does not book tables; "What can I cook with lentils?" gets '
    '{"tool": "find_recipe", "arguments": {"ingredient": "lentils"}}.'
)
_FOOT = f"{_REPLY}\n{_EXAMPLE}"
# With max_calls=K above 1, the route takes an array of 2 to K tool calls too; one call is
# still its object alone, and none stands alone.
_SEVERAL = (
    "When the user asks for several things that need tool calls, reply instead with a JSON array "
    'of 2 to {max_calls} such calls, in the order to run them: [{{"tool": "NAME", "arguments": '
    '{{...}}}}, {{"tool": "NAME", "arguments": {{...}}}}]; "none" is never among them.'
)

# The degradation steps, tried in order until the text fits; each but the first says so.
_FULL, _SHORT, _BRIEF, _NAMES = range(4)
_NOTES = {
    _FULL: "",
    _SHORT: "(Descriptions are shortened to fit.)",
    _BRIEF: "(Descriptions are shortened and parameters named without their types, to fit.)",
    _NAMES: "(Only the tools' names are listed, to fit.)",
}
_UNLISTED = "({count} more tools are not listed, to fit; a reply may still call them.)"

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$.\-]*")
# What a line of prose may not hold: line and paragraph breaks, every whitespace and every
# control character, so a description can never start a line of its own.
_BREAKS = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u2028\u2029]+")
_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u2028\u2029]")


def catalogue_prompt(
    tools: Sequence[Mapping[str, Any]],
    *,
    style: PromptStyle = "typescript",
    max_chars: int = DEFAULT_PROMPT_CHARS,
    max_calls: int = 1,
) -> str:
    """The catalogue rendered for the model's system message, at most ``max_chars`` characters.

    Every tool's name, description (cut at ``PROMPT_DESCRIPTION_CHARS``) and parameters, then
    the reply format and when to answer ``{"tool": "none"}``. Past ``max_chars`` it degrades
    in steps the text states: descriptions cut to one short sentence and parameter notes
    dropped, then parameters named without types, then names alone, then as many names as
    fit and a count of the rest. Raises :class:`CatalogueError` on a bad entry, and
    ``ValueError`` for an unknown style or a budget too small for the reply format.
    ``max_calls`` above 1 adds to the reply format that a reply may be an array of 2 to
    ``max_calls`` tool calls (the route of ``route_schema(tools, max_calls=K)``).
    """
    if style not in PROMPT_STYLES:
        raise ValueError(f"style is one of {', '.join(PROMPT_STYLES)}, not {style!r:.40}")
    if isinstance(max_chars, bool) or not isinstance(max_chars, int):
        raise TypeError(f"max_chars is an int, not {type(max_chars).__name__}")
    if isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 1:
        raise ValueError(f"max_calls is a number of calls of at least 1, not {max_calls!r:.40}")
    checked = checked_catalogue(tools)
    if not checked:
        return _fitted(f"{_EMPTY_HEAD}\n\n{_FOOT}", max_chars)
    render = _RENDERERS[style]
    foot = _FOOT if max_calls == 1 else f"{_REPLY}\n{_SEVERAL.format(max_calls=max_calls)}\n{_EXAMPLE}"
    for level in (_FULL, _SHORT, _BRIEF, _NAMES):
        entries = [render(tool, level) for tool in checked]
        text = _framed(entries, _NOTES[level], foot)
        if len(text) <= max_chars:
            return text
    return _some_names([render(tool, _NAMES) for tool in checked], max_chars, foot)


def _framed(entries: Sequence[str], note: str, foot: str) -> str:
    listing = "\n".join(entries)
    return f"{_HEAD}\n{listing}\n{note + chr(10) if note else ''}\n{foot}"


def _some_names(entries: Sequence[str], max_chars: int, foot: str) -> str:
    """As many entries as fit, in catalogue order, and a line saying how many are left out."""
    # The note's count only shrinks as entries are kept, so its widest form bounds them all.
    room = max_chars - len(_framed([], _NOTES[_NAMES] + "\n" + _UNLISTED.format(count=len(entries)), foot))
    if room < 0:
        raise ValueError(
            f"max_chars {max_chars} leaves no room for the reply format; give at least {max_chars - room}"
        )
    count = 0
    used = 0
    for entry in entries:
        used += len(entry) + 1
        if used > room:
            break
        count += 1
    note = _NOTES[_NAMES] + "\n" + _UNLISTED.format(count=len(entries) - count)
    return _framed(entries[:count], note, foot)


def _fitted(text: str, max_chars: int) -> str:
    if len(text) > max_chars:
        raise ValueError(
            f"max_chars {max_chars} leaves no room for the reply format; give at least {len(text)}"
        )
    return text


# --- what every style shares: prose on one line, values as JSON, keys, types ---


def _prose(text: str | None, width: int) -> str:
    """``text`` on one line, whitespace runs made one space, cut at a word within ``width``."""
    if not text:
        return ""
    flat = _BREAKS.sub(" ", text).strip()
    if len(flat) <= width:
        return flat
    cut = flat[: width - 1]
    space = cut.rfind(" ")
    if space > width // 2:
        cut = cut[:space]
    return cut.rstrip(" .,;:") + "…"


def _json(value: Any) -> str:
    """``value`` as one line of JSON: the characters JSON leaves raw but that break lines escaped."""
    text = json.dumps(value, ensure_ascii=False)
    return _JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _value(value: Any) -> str:
    text = _json(value)
    return text if len(text) <= PROMPT_VALUE_CHARS else text[: PROMPT_VALUE_CHARS - 1] + "…"


def _key(name: str) -> str:
    return name if _IDENTIFIER.fullmatch(name) else _value(name)


def _name(name: str) -> str:
    """A tool's name as written in a listing: verbatim (the reply must repeat it exactly)."""
    # Names hold no whitespace or control characters (checked_catalogue), so one never breaks a line.
    return name


def _properties(schema: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], bool]]:
    """``(name, schema, required)`` of an object schema's properties, in their declared order."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    return [
        (name, sub if isinstance(sub, Mapping) else {}, name in needed) for name, sub in properties.items()
    ]


def _type(schema: Mapping[str, Any], depth: int, typescript: bool) -> str:
    """A schema's type in brief: literals for an enum, nested objects spelled out to ``depth``."""
    if "const" in schema:
        return _value(schema["const"])
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        shown = [_value(item) for item in enum[:PROMPT_ENUM_VALUES]]
        if len(enum) > PROMPT_ENUM_VALUES:
            shown.append("…")
        return " | ".join(shown) if typescript else "one of " + ", ".join(shown)
    if "$ref" in schema and isinstance(schema["$ref"], str):
        return _key(schema["$ref"].rsplit("/", 1)[-1]) or "object"
    for combinator in ("anyOf", "oneOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            parts = [_type(o, depth, typescript) for o in options[:4] if isinstance(o, Mapping)]
            return " | ".join(dict.fromkeys(parts + (["…"] if len(options) > 4 else []))) or "any"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_type({**schema, "type": k}, depth, typescript) for k in kind if isinstance(k, str))
    if kind == "array":
        items = schema.get("items")
        inner = _type(items, depth - 1, typescript) if isinstance(items, Mapping) and depth > 0 else "any"
        if typescript:
            return f"({inner})[]" if " | " in inner else f"{inner}[]"
        return f"array of {inner}"
    if kind == "object" or "properties" in schema:
        fields = _properties(schema)
        if not fields or depth <= 0:
            return "object"
        inner = ", ".join(
            f"{_key(name)}{'' if needed else '?'}: {_type(sub, depth - 1, typescript)}"
            for name, sub, needed in fields
        )
        return "{" + inner + "}" if typescript else "object {" + inner + "}"
    if typescript and kind == "integer":
        return "number"
    return kind if isinstance(kind, str) else "any"


def _description(tool: CheckedTool, level: int) -> str:
    if level >= _NAMES:
        return ""
    return _prose(
        tool.description, PROMPT_DESCRIPTION_CHARS if level == _FULL else PROMPT_SHORT_DESCRIPTION_CHARS
    )


def _depth(level: int) -> int:
    return PROMPT_NESTING if level == _FULL else 1


# --- the styles: one entry per tool, each entry's first line starting with its marker ---


def _text(tool: CheckedTool, level: int) -> str:
    description = _description(tool, level)
    head = f"- {_name(tool.name)}" + (f": {description}" if description else "")
    fields = _properties(tool.parameters)
    if level >= _NAMES or not fields:
        return head
    if level == _BRIEF:
        return head + "\n  arguments: " + ", ".join(_key(n) + ("" if r else "?") for n, _, r in fields)
    lines = [head]
    for name, schema, required in fields:
        parts = [_type(schema, _depth(level), typescript=False), "required" if required else "optional"]
        if "default" in schema:
            parts.append(f"default {_value(schema['default'])}")
        note = _prose(schema.get("description"), PROMPT_PARAMETER_NOTE_CHARS) if level == _FULL else ""
        lines.append(f"  {_key(name)}: {', '.join(parts)}" + (f" ({note})" if note else ""))
    return "\n".join(lines)


def _typescript(tool: CheckedTool, level: int) -> str:
    fields = _properties(tool.parameters)
    notes = []
    arguments = []
    for name, schema, required in fields:
        optional = "" if required else "?"
        if level >= _BRIEF:
            arguments.append(f"{_key(name)}{optional}")
            continue
        argument = f"{_key(name)}{optional}: {_type(schema, _depth(level), typescript=True)}"
        if "default" in schema:
            argument += f" = {_value(schema['default'])}"
        arguments.append(argument)
        note = _prose(schema.get("description"), PROMPT_PARAMETER_NOTE_CHARS) if level == _FULL else ""
        if note:
            notes.append(f"{_key(name)}: {note}")
    description = _description(tool, level)
    comment = "; ".join(part.rstrip(".") for part in ([description] if description else []) + notes)
    name = _name(tool.name) if _IDENTIFIER.fullmatch(tool.name) else _json(tool.name)
    signature = f"{name}()" if level >= _NAMES or not fields else f"{name}({{{', '.join(arguments)}}})"
    return f"{signature}" + (f" // {comment}" if comment else "")


def _brief_schema(schema: Mapping[str, Any], depth: int, notes: bool) -> dict[str, Any]:
    """A parameter schema cut down to what a reader needs: types, enums, defaults, bounds, notes."""
    brief: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description":
            if notes and isinstance(value, str):
                brief[key] = _prose(value, PROMPT_PARAMETER_NOTE_CHARS)
        elif key == "enum" and isinstance(value, list):
            brief[key] = [_json_value(item) for item in value[:PROMPT_ENUM_VALUES]] + (
                ["…"] if len(value) > PROMPT_ENUM_VALUES else []
            )
        elif key in ("const", "default"):
            brief[key] = _json_value(value)
        elif key in _JSON_KEPT:
            brief[key] = value
        elif key == "$ref" and isinstance(value, str):
            brief[key] = _prose(value, PROMPT_VALUE_CHARS)
        elif key == "properties" and isinstance(value, Mapping):
            if depth <= 0:
                continue
            brief[key] = {
                name: _brief_schema(sub, depth - 1, notes)
                for name, sub in value.items()
                if isinstance(sub, Mapping)
            }
        elif key == "required" and isinstance(value, list) and depth > 0:
            brief[key] = [item for item in value if isinstance(item, str)]
        elif key == "items" and isinstance(value, Mapping) and depth > 0:
            brief[key] = _brief_schema(value, depth - 1, notes)
        elif key in ("anyOf", "oneOf") and isinstance(value, list) and depth > 0:
            brief[key] = [_brief_schema(o, depth - 1, notes) for o in value[:4] if isinstance(o, Mapping)]
    return brief


_JSON_KEPT = frozenset(
    {
        "type",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
    }
)


def _json_value(value: Any) -> Any:
    """A data value as the JSON style shows it: itself when short, else its JSON text cut."""
    text = _json(value)
    if len(text) <= PROMPT_VALUE_CHARS:
        return value
    return text[: PROMPT_VALUE_CHARS - 1] + "…"


def _json_style(tool: CheckedTool, level: int) -> str:
    entry: dict[str, Any] = {"name": tool.name}
    description = _description(tool, level)
    if description:
        entry["description"] = description
    fields = _properties(tool.parameters)
    if fields and level < _NAMES:
        if level == _BRIEF:
            entry["arguments"] = [_key(name) + ("" if required else "?") for name, _, required in fields]
        else:
            kinds = {k: v for k, v in tool.parameters.items() if k in ("properties", "required")}
            entry["parameters"] = _brief_schema(kinds, _depth(level) + 1, notes=level == _FULL)
    return _json(entry)


_RENDERERS: dict[PromptStyle, Callable[[CheckedTool, int], str]] = {
    "text": _text,
    "json": _json_style,
    "typescript": _typescript,
}
