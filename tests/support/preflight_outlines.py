"""The preflight's cases for outlines, proven on outlines-core (tests/preflight/) and read by the
preflight's own test of every case."""

from __future__ import annotations

from support.preflight import OBJECT_A, STRING, Case

OUTLINES_CASES = [
    Case("no type", {"description": "anything"}, "", "", "error", "refuses"),
    Case(
        "allOf beside properties",
        {
            "properties": {"a": {"type": "integer"}},
            "required": ["a"],
            "allOf": [{"properties": {"a": {"const": 1}}}],
        },
        "",
        "allOf",
        "warning",
        "differs",
        '{"a":2}',
    ),
    Case(
        "uniqueItems ignored",
        {"type": "array", "items": STRING, "uniqueItems": True},
        "",
        "uniqueItems",
        "warning",
        "differs",
        '["a","a"]',
    ),
    Case("minimum ignored", {"type": "integer", "minimum": 1}, "", "minimum", "warning", "differs", "0"),
    Case(
        "oneOf as anyOf",
        {"oneOf": [{"type": "integer"}, {"type": "number"}]},
        "",
        "oneOf",
        "warning",
        "differs",
        "1",
    ),
    Case(
        "allOf concatenated",
        {
            "allOf": [
                {"type": "object", "properties": {"a": STRING}},
                {"type": "object", "properties": {"b": STRING}},
            ]
        },
        "",
        "allOf",
        "error",
        "differs",
        '{"a":"x"}',
    ),
    Case("remote $ref", {"$ref": "https://example.com/s.json"}, "", "$ref", "error", "refuses"),
    Case(
        "recursion truncated",
        {"$defs": {"n": {"type": "object", "properties": {"k": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"},
        "/$defs/n/properties/k",
        "$ref",
        "warning",
        "differs",
        '{"k":{"k":{"k":{"k":{"k":{"k":{}}}}}}}',
    ),
    Case(
        "additionalProperties true ignored",
        {**OBJECT_A, "additionalProperties": True},
        "",
        "additionalProperties",
        "warning",
        "differs",
        '{"a":"x","b":"y"}',
    ),
    Case("extra keys forbidden", OBJECT_A, "", "additionalProperties", "info", "differs", '{"a":"x","b":1}'),
    Case(
        "required not in properties",
        {**OBJECT_A, "required": ["a", "z"]},
        "",
        "required",
        "warning",
        "differs",
        '{"a":"x"}',
    ),
    Case(
        "pattern beside a length",
        {"type": "string", "minLength": 1, "pattern": "^a+$"},
        "",
        "pattern",
        "warning",
        "differs",
        '"b"',
    ),
    Case(
        "unanchored pattern", {"type": "string", "pattern": "a"}, "", "pattern", "warning", "differs", '"bab"'
    ),
    Case("unknown format", {"type": "string", "format": "hostname"}, "", "format", "error", "refuses"),
    Case(
        "format beside minLength",
        {"type": "string", "format": "date", "minLength": 1},
        "",
        "format",
        "warning",
        "differs",
        '"x"',
    ),
    Case(
        "format beside pattern",
        {"type": "string", "format": "date", "pattern": "^x$"},
        "",
        "format",
        "warning",
        "differs",
        '"x"',
    ),
    Case("unknown type", {"type": "strng"}, "", "type", "error", "refuses"),
    Case(
        "property order",
        {"type": "object", "properties": {"a": STRING, "b": STRING}},
        "",
        "properties",
        "info",
        "differs",
        '{"b":"y","a":"x"}',
    ),
]
