"""Hostile catalogues, one or more for each family where a grammar and the parser were found to part.

Each builder makes its catalogue afresh (some are large, one is a generator). The families:
free keys (duplicate keys), non-finite numbers, wide objects (the compiler's recursion), deep
schemas, shared sub-dicts, checks that disagreed (integral floats, ECMA-262 patterns), bounds
that multiply, catalogues of the wrong type, and escapes of every kind in names and values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["HOSTILE", "tool"]


def tool(parameters: dict[str, Any], name: str = "t") -> dict[str, Any]:
    """``T(params)``: a tools-for-llm declaration of one tool with these parameters."""
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def _object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def _nested_items(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return _object(x=schema)


def _deep_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _shared(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"anyOf": [schema, schema]}
    return _object(x=schema)


def _self_referencing() -> dict[str, Any]:
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    parameters["properties"]["loop"] = parameters
    return parameters


def _generator() -> Iterator[dict[str, Any]]:
    yield tool(_object(q={"type": "string"}))


_ESCAPES = '"\\/\b\f\n\r\t\x00\x1f\x7f\u2028\u2029\ufeff\uffff\U0001f600\U0010ffff'

#: name -> (family, builder). Every builder's catalogue must end in a working route or in a
#: CatalogueError or GrammarError that names the place.
HOSTILE: dict[str, tuple[str, Callable[[], Any]]] = {
    # Free keys: the grammar cannot forbid a repeated key.
    "free-object": (
        "free keys",
        lambda: [tool(_object(gradeDict={"type": "object", "description": "scores"}))],
    ),
    "map": (
        "free keys",
        lambda: [tool(_object(m={"type": "object", "additionalProperties": {"type": "integer"}}))],
    ),
    "map-min": (
        "free keys",
        lambda: [tool(_object(m={"type": "object", "additionalProperties": {}, "minProperties": 2}))],
    ),
    "true-schema": ("free keys", lambda: [tool(_object(x=True))]),
    "lone-not": ("free keys", lambda: [tool(_object(x={"not": {"type": "string"}}))]),
    "untyped-if": (
        "free keys",
        lambda: [tool(_object(x={"if": {"type": "string"}, "then": {"minLength": 1}, "else": {}}))],
    ),
    "required-unlisted": (
        "free keys",
        lambda: [tool({"type": "object", "properties": {}, "required": ["a", "b"]})],
    ),
    "anyof-objects": (
        "free keys",
        lambda: [tool(_object(x={"anyOf": [{"type": "object"}, _object(a={"type": "null"})]}))],
    ),
    # Numbers the grammar widened past what a double holds.
    "max-1e300": ("non-finite numbers", lambda: [tool(_object(y={"type": "number", "maximum": 1e300}))]),
    "min-10**4299": (
        "non-finite numbers",
        lambda: [tool(_object(y={"type": "number", "minimum": 10**4299}))],
    ),
    "range-1e308": (
        "non-finite numbers",
        lambda: [tool(_object(y={"type": "number", "minimum": -1.7e308, "maximum": 1.7e308}))],
    ),
    "integer-10**1500": (
        "non-finite numbers",
        lambda: [tool(_object(y={"type": "integer", "maximum": 10**1500}))],
    ),
    # Wide objects: the compiler's longest-reply walk recursed once per optional member.
    "optional-244": (
        "wide objects",
        lambda: [tool(_object(**{f"p{i}": {"type": "integer"} for i in range(244)}))],
    ),
    "optional-600": (
        "wide objects",
        lambda: [tool(_object(**{f"p{i}": {"type": "string"} for i in range(600)}))],
    ),
    "required-600": (
        "wide objects",
        lambda: [
            tool(
                {
                    "type": "object",
                    "properties": {f"p{i}": {"type": "boolean"} for i in range(600)},
                    "required": [f"p{i}" for i in range(0, 600, 2)],
                }
            )
        ],
    ),
    # Deep schemas.
    "items-60": ("deep schemas", lambda: [tool(_nested_items(60))]),
    "items-500": ("deep schemas", lambda: [tool(_nested_items(500))]),
    "enum-900": ("deep schemas", lambda: [tool(_object(x={"enum": [_deep_list(900)]}))]),
    "enum-100": ("deep schemas", lambda: [tool(_object(x={"enum": [_deep_list(100), "a"]}))]),
    "self-reference": ("deep schemas", lambda: [tool(_self_referencing())]),
    "ref-recursion": (
        "deep schemas",
        lambda: [
            tool(
                {
                    "type": "object",
                    "properties": {"node": {"$ref": "#/$defs/node"}},
                    "$defs": {
                        "node": _object(
                            value={"type": "integer"},
                            children={"type": "array", "items": {"$ref": "#/$defs/node"}},
                        )
                    },
                }
            )
        ],
    ),
    # Shared sub-dicts: tiny in memory, a tree of 2**depth nodes as text.
    "shared-8": ("shared sub-dicts", lambda: [tool(_shared(8))]),
    "shared-22": ("shared sub-dicts", lambda: [tool(_shared(22))]),
    "shared-40": ("shared sub-dicts", lambda: [tool(_shared(40))]),
    # Checks that disagreed with the grammar.
    "maxLength-3.0": (
        "checks that disagree",
        lambda: [tool(_object(s={"type": "string", "maxLength": 3.0}))],
    ),
    "minItems-2.0": (
        "checks that disagree",
        lambda: [
            tool(_object(a={"type": "array", "minItems": 2.0, "maxItems": 4.0, "items": {"type": "integer"}}))
        ],
    ),
    "pattern-unicode-property": (
        "checks that disagree",
        lambda: [tool(_object(s={"type": "string", "pattern": "\\p{Lu}"}))],
    ),
    "pattern-python-only": (
        "checks that disagree",
        lambda: [tool(_object(s={"type": "string", "pattern": "(?P<n>a)(?P=n)"}))],
    ),
    # Bounds that multiply under bounded decisions.
    "arrays-20": ("bounds that multiply", lambda: [tool(_nested_items(20))]),
    "arrays-1999-strings-1999": (
        "bounds that multiply",
        lambda: [
            tool(
                _object(
                    x={
                        "type": "array",
                        "maxItems": 1999,
                        "items": {
                            "type": "array",
                            "maxItems": 1999,
                            "items": {"type": "string", "maxLength": 1999},
                        },
                    }
                )
            )
        ],
    ),
    # Catalogues of the wrong type.
    "generator": ("wrong types", _generator),
    "dict": ("wrong types", lambda: {"t": tool(_object())}),
    # Escapes of every kind, in names, keys, enum values and consts.
    "escapes": (
        "escapes",
        lambda: [
            tool(
                {
                    "type": "object",
                    "properties": {
                        _ESCAPES: {"enum": [_ESCAPES, -0.0, 1e308, -(10**300), 5e-324, None, True, [], {}]},
                        "k": {"const": {_ESCAPES: [_ESCAPES]}},
                        "n": {"type": "number"},
                        "i": {"type": "integer", "minimum": -5, "maximum": 5},
                        "s": {"type": "string", "minLength": 2, "maxLength": 2},
                    },
                    "required": ["n"],
                },
                name="récupérer_検索",
            )
        ],
    ),
}
