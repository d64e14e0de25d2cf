"""The shape JSON Schema 2020-12's metaschema demands of a schema, checked without a dependency.

A tool's parameters go into the route schema verbatim, and a server that cannot compile a
schema may generate unconstrained (KoboldCpp does, after "JSON to GBNF failed"), so a
catalogue whose schema the metaschema would refuse is refused here, by keyword.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

from ._json import is_count, pointer_token
from ._limits import MAX_CAUSE_QUOTE, SHOWN_VALUE_CHARS

__all__ = ["JSON_TYPES", "ONE_SCHEMA", "SCHEMA_LISTS", "SCHEMA_MAPS", "schema_problem"]

#: The type names JSON Schema knows.
JSON_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})

#: Keywords whose value is one schema, a list of schemas, or a map of names to schemas: the
#: places a schema holds subschemas. The preflight walks the same places.
ONE_SCHEMA = frozenset(
    {"items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not"}
    | {"unevaluatedItems", "unevaluatedProperties", "contentSchema"}
)
SCHEMA_LISTS = frozenset({"prefixItems", "allOf", "anyOf", "oneOf"})
SCHEMA_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"})

# The metaschema's anchorString; $id may end in an empty fragment only.
_ANCHOR = re.compile(r"[A-Za-z_][-A-Za-z0-9._]*")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: object) -> bool:
    # JSON Schema's "integer" is a number with no fractional part, so 2.0 counts.
    return is_count(value) or (isinstance(value, float) and value >= 0 and value.is_integer())


# ECMA-262 escapes (u flag, as JSON Schema's test suite reads patterns) Python's re lacks, each
# with a stand-in of the same syntax; and Python's own syntax, which ECMA-262 refuses.
_ECMA_ESCAPE = re.compile(
    r"\\(?:[pP]\{[A-Za-z_]+(?:=[A-Za-z_]+)?\}|u\{[0-9A-Fa-f]{1,6}\}|c[A-Za-z]|k<([^>]*)>|.)", re.S
)
_ECMA_STAND_IN = {"p": "\\w", "P": "\\W", "u": "x", "c": "x"}
_PYTHON_ONLY = re.compile(r"\(\?(?:P|#|>|\(|[aiLmsux-]+\))|[*+?}]\+")


# A group's name: an ECMA-262 IdentifierName ($ included), named for Python g0, g1 ...
_GROUP_NAME = re.compile(r"((?:[^\W\d]|\$)[\w$]*)>")


_DEFINED_NAME = re.compile(r"\(\?<((?:[^\W\d]|\$)[\w$]*)>")


def _group(names: dict[str, str], name: str) -> str:
    return names.setdefault(name, f"g{len(names)}")


def _python_text(pattern: str) -> str | None:
    """``pattern`` with its ECMA-only syntax replaced by Python's, or ``None`` if it uses Python's own."""
    out: list[str] = []
    names: dict[str, str] = {}
    defined = {name.group(1) for name in _DEFINED_NAME.finditer(pattern)}
    at, in_class = 0, False
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            match = _ECMA_ESCAPE.match(pattern, at)
            if match is None:  # a trailing backslash: re says why
                out.append(char)
                break
            escape = match.group()
            if escape in ("\\A", "\\Z") and not in_class:
                return None
            if match.group(1) is not None and not in_class:
                # ECMA-262 refers to a group anywhere, even before or inside it; Python does not.
                name = match.group(1)
                escape = "(?:)" if name in defined else f"(?P={name if name.isidentifier() else 'unknown'})"
            elif escape[1] in "123456789" and not in_class:
                escape = "(?:)"
            elif len(escape) > 2 or escape[1:] == "c":
                escape = _ECMA_STAND_IN.get(escape[1], escape)
            out.append(escape)
            at = match.end()
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            if pattern.startswith("[^]", at) or pattern.startswith("[]", at):
                out.append("[\\s\\S]" if pattern[at + 1] == "^" else "(?!)")
                at += 3 if pattern[at + 1] == "^" else 2
                continue
            in_class = True
        elif _PYTHON_ONLY.match(pattern, at):
            return None
        elif pattern.startswith(("(?<=", "(?<!"), at):
            out.append("(?:")  # ECMA-262 look-behind takes any length, Python's a fixed one
            at += 4
            continue
        elif pattern.startswith("(?<", at):
            name = _GROUP_NAME.match(pattern, at + 3)
            if name is None:
                return None
            out.append(f"(?P<{_group(names, name.group(1))}>")
            at = name.end()
            continue
        out.append(char)
        at += 1
    return "".join(out)


def _regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` is no ECMA-262 regular expression (JSON Schema's dialect), or ``None``.

    Python's re is not that dialect: ``\\p{Lu}`` and named groups ``(?<n>...)`` are ECMA-262
    and not Python, ``(?P<n>...)``, inline flags, ``\\A`` and possessive quantifiers the reverse.
    Python's own syntax is refused first; the ECMA-only syntax is swapped for Python's, which
    then checks the rest (brackets, quantifiers, ranges).
    """
    text = _python_text(pattern)
    if text is None:
        return "is not an ECMA-262 regular expression (it uses Python-only syntax)"
    try:
        with warnings.catch_warnings():  # "possible set difference": re's own future, not ECMA-262's
            warnings.simplefilter("ignore", FutureWarning)
            re.compile(text)
    except (re.error, RecursionError, OverflowError) as error:
        return f"is not a regular expression ({str(error)[:MAX_CAUSE_QUOTE]})"
    return None


def _type_problem(value: object) -> str | None:
    names = value if isinstance(value, list) else [value]
    if not names or any(not isinstance(n, str) or n not in JSON_TYPES for n in names):
        return f"is not one of {', '.join(sorted(JSON_TYPES))}, or a non-empty list of them"
    return "lists a type twice" if len(set(names)) != len(names) else None


def _names_problem(value: object) -> str | None:
    if not isinstance(value, list) or any(not isinstance(item, str) for item in value):
        return "is not a list of strings"
    return "lists a name twice" if len(set(value)) != len(value) else None


def _expect(test: Callable[[Any], bool], what: str) -> Callable[[Any], str | None]:
    return lambda value: None if test(value) else f"is not {what}"


# Every other keyword the metaschema constrains, with its constraint.
_VALUE_RULES: dict[str, Callable[[Any], str | None]] = {
    **dict.fromkeys(
        [
            "$schema",
            "$ref",
            "$dynamicRef",
            "$recursiveRef",
            "$comment",
            "title",
            "description",
            "format",
            "contentEncoding",
            "contentMediaType",
        ],
        _expect(lambda v: isinstance(v, str), "a string"),
    ),
    "$id": _expect(lambda v: isinstance(v, str) and "#" not in v[:-1], "a URI without a fragment"),
    **dict.fromkeys(
        ["$anchor", "$dynamicAnchor", "$recursiveAnchor"],
        _expect(lambda v: isinstance(v, str) and _ANCHOR.fullmatch(v) is not None, "an anchor name"),
    ),
    "$vocabulary": _expect(
        lambda v: isinstance(v, dict) and all(isinstance(b, bool) for b in v.values()), "a map to booleans"
    ),
    "type": _type_problem,
    **dict.fromkeys(["enum", "examples"], _expect(lambda v: isinstance(v, list), "an array")),
    "multipleOf": _expect(lambda v: _is_number(v) and v > 0, "a number above zero"),
    **dict.fromkeys(
        ["maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"], _expect(_is_number, "a number")
    ),
    **dict.fromkeys(
        [
            "maxLength",
            "minLength",
            "maxItems",
            "minItems",
            "maxContains",
            "minContains",
            "maxProperties",
            "minProperties",
        ],
        _expect(_is_count, "a non-negative integer"),
    ),
    "pattern": lambda v: _regex_problem(v) if isinstance(v, str) else "is not a string",
    **dict.fromkeys(
        ["uniqueItems", "deprecated", "readOnly", "writeOnly"],
        _expect(lambda v: isinstance(v, bool), "a boolean"),
    ),
    "required": _names_problem,
    "dependentRequired": lambda v: (
        "is not an object"
        if not isinstance(v, dict)
        else next((p for p in map(_names_problem, v.values()) if p is not None), None)
    ),
}


_ONE, _LIST, _MAP = "schema", "schemas", "map"
_KINDS: dict[str, str] = {
    **dict.fromkeys(ONE_SCHEMA, _ONE),
    **dict.fromkeys(SCHEMA_LISTS, _LIST),
    **dict.fromkeys(SCHEMA_MAPS, _MAP),
}
# A node's place as (parent's place, key), spelled out as a JSON pointer only for an error.
_Place = tuple[Any, ...]


def _pointer(root: str, place: _Place) -> str:
    keys = []
    while place:
        place, key = place
        keys.append(pointer_token(str(key))[:SHOWN_VALUE_CHARS])
    return root + "".join(f"/{key}" for key in reversed(keys)) or "/"


def schema_problem(schema: Any, pointer: str = "") -> str | None:
    """Where and why ``schema`` (plain JSON values) breaks the 2020-12 metaschema, or ``None``."""
    stack: list[tuple[Any, _Place]] = [(schema, ())]
    while stack:
        node, place = stack.pop()
        if node is True or node is False:
            continue
        if not isinstance(node, dict):
            return f"{_pointer(pointer, place)} is not a schema (an object or a boolean)"
        for key, value in node.items():
            kind = _KINDS.get(key)
            if kind is _ONE:
                stack.append((value, (place, key)))
            elif kind is _LIST:
                if not isinstance(value, list) or not value:
                    return f"{_pointer(pointer, (place, key))} is not a non-empty array of schemas"
                stack.extend((item, ((place, key), i)) for i, item in enumerate(value))
            elif kind is _MAP:
                if not isinstance(value, dict):
                    return f"{_pointer(pointer, (place, key))} is not an object of schemas"
                for name, item in value.items():
                    problem = _regex_problem(name) if key == "patternProperties" else None
                    if problem is not None:
                        where = _pointer(pointer, (place, key))
                        return f"{where}: the key {name[:SHOWN_VALUE_CHARS]!r} {problem}"
                    stack.append((item, ((place, key), name)))
            elif key == "dependencies":
                if not isinstance(value, dict):
                    return f"{_pointer(pointer, (place, key))} is not an object"
                for name, item in value.items():
                    problem = _names_problem(item) if isinstance(item, list) else None
                    if problem is not None:
                        return f"{_pointer(pointer, ((place, key), name))} {problem}"
                    if not isinstance(item, list):
                        stack.append((item, ((place, key), name)))
            elif key in _VALUE_RULES:
                problem = _VALUE_RULES[key](value)
                if problem is not None:
                    return f"{_pointer(pointer, (place, key))} {problem}"
    return None
