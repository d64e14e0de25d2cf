"""The preflight's cases for llguidance and xgrammar, proven on llguidance (tests/preflight/) and
read by the preflight's own test of every case."""

from __future__ import annotations

from support.preflight import OBJECT_A, STRING, Case

LLGUIDANCE_CASES = [
    *(
        Case(f"refuses {keyword}", {**schema, keyword: value}, "", keyword, "error", "refuses")
        for keyword, schema, value in [
            ("not", STRING, {"const": "x"}),
            ("uniqueItems", {"type": "array"}, True),
            ("contains", {"type": "array"}, STRING),
            ("if", OBJECT_A, {"required": ["a"]}),
            ("dependentRequired", OBJECT_A, {"a": ["b"]}),
            ("propertyNames", {"type": "object"}, {"pattern": "^a"}),
            ("unevaluatedProperties", OBJECT_A, False),
        ]
    ),
    Case(
        "overlapping oneOf",
        {"oneOf": [{"type": "integer"}, {"type": "number"}]},
        "",
        "oneOf",
        "warning",
        "refuses",
    ),
    Case("unknown format", {"type": "string", "format": "uri-reference"}, "", "format", "error", "refuses"),
    Case("look-around", {"type": "string", "pattern": "^(?=a)a+$"}, "", "pattern", "error", "refuses"),
    Case("remote $ref", {"$ref": "https://example.com/s.json"}, "", "$ref", "error", "refuses"),
    Case("unknown type", {"type": "strng"}, "", "type", "error", "refuses"),
    Case(
        "minProperties with optional properties",
        {"type": "object", "properties": {"a": STRING, "b": STRING}, "minProperties": 1},
        "",
        "minProperties",
        "error",
        "refuses",
    ),
    Case(
        "overlapping patternProperties",
        {"type": "object", "patternProperties": {"^a": STRING, "^ab": STRING}},
        "",
        "patternProperties",
        "warning",
        "refuses",
    ),
    Case("extra keys allowed", OBJECT_A, "", "additionalProperties", "info", "agrees", '{"a":"x","b":1}'),
    Case(
        "property order",
        {"type": "object", "properties": {"a": STRING, "b": STRING}},
        "",
        "properties",
        "info",
        "differs",
        '{"b":"y","a":"x"}',
    ),
    Case("any whitespace", OBJECT_A, "", "x-guidance", "info", "agrees", '{\n\n      "a"  :  "x"\n}'),
    Case("\\u escapes", STRING, "", "", "info", "differs", '"\\u0041"'),
]


XGRAMMAR_CASES = [
    Case("oneOf as anyOf", {"oneOf": [STRING, {"type": "integer"}]}, "", "oneOf", "warning", "differs"),
    Case("allOf of two", {"allOf": [OBJECT_A, OBJECT_A]}, "", "allOf", "error", "refuses"),
    Case("not unsupported", {**STRING, "not": {"const": "x"}}, "", "not", "warning", "differs"),
    Case("format unknown", {**STRING, "format": "regex"}, "", "format", "warning", "differs"),
    Case("look-around ignored", {**STRING, "pattern": "^(?!x)"}, "", "pattern", "warning", "differs"),
    Case("remote $ref", {"$ref": "https://example.com/s.json"}, "", "$ref", "error", "refuses"),
    Case(
        "patternProperties beside properties",
        {**OBJECT_A, "patternProperties": {"^x": STRING}},
        "",
        "patternProperties",
        "warning",
        "differs",
    ),
    Case("strict mode", OBJECT_A, "", "additionalProperties", "info", "differs"),
    Case("whitespace", OBJECT_A, "", "", "info", "agrees"),
]
