"""The preflight's llama.cpp rules, each checked against llama.cpp's own converter and parser.

The compiler needs the default model's vocabulary, so these tests are marked ``model``.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.compilers import LlamaCpp
from support.preflight import OBJECT_A, STRING, Case, proven, reported

from toolrouting import preflight

LLAMA_CASES = [
    Case(
        "skips uniqueItems",
        {"type": "object", "properties": {"t": {"type": "array", "items": STRING, "uniqueItems": True}}},
        "/properties/t",
        "uniqueItems",
        "warning",
        "differs",
        '{"t":["a","a"]}',
    ),
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
        "enum beside anyOf",
        {"anyOf": [{"type": "integer"}, {"type": "string"}], "enum": [1, "a"]},
        "",
        "enum",
        "warning",
        "differs",
        "2",
    ),
    Case("extra keys forbidden", OBJECT_A, "", "additionalProperties", "info", "differs", '{"a":"x","b":1}'),
    Case(
        "required first",
        {
            "type": "object",
            "properties": {"a": STRING, "b": STRING},
            "required": ["b"],
            "additionalProperties": False,
        },
        "",
        "properties",
        "info",
        "differs",
        '{"a":"x","b":"y"}',
    ),
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
        "allOf merged as an object",
        {"type": "object", "properties": {"v": {"allOf": [STRING, {"minLength": 2}]}}, "required": ["v"]},
        "/properties/v",
        "allOf",
        "warning",
        "differs",
        '{"v":"ab"}',
    ),
    Case("unanchored pattern", {"type": "string", "pattern": "a+"}, "", "pattern", "error", "refuses"),
    Case(
        "email format skipped",
        {"type": "string", "format": "email"},
        "",
        "format",
        "warning",
        "differs",
        '"nope"',
    ),
    Case(
        "number maximum skipped", {"type": "number", "maximum": 5}, "", "maximum", "warning", "differs", "6"
    ),
    Case(
        "integer minimum skipped", {"type": "integer", "minimum": 1}, "", "minimum", "warning", "differs", "0"
    ),
    Case(
        "prefixItems as a fixed tuple",
        {"type": "array", "prefixItems": [STRING, {"type": "integer"}]},
        "",
        "prefixItems",
        "warning",
        "differs",
        '["a"]',
    ),
    Case("remote $ref", {"$ref": "https://example.com/s.json"}, "", "$ref", "error", "refuses"),
    Case(
        "escaped $ref",
        {"$defs": {"a/b": STRING}, "$ref": "#/$defs/a~1b"},
        "",
        "$ref",
        "error",
        "refuses",
    ),
    Case(
        "no type",
        {"type": "object", "properties": {"v": {"description": "any value"}}},
        "/properties/v",
        "",
        "error",
        "refuses",
    ),
    Case(
        "{} as any object",
        {"type": "object", "properties": {"v": {}}, "required": ["v"]},
        "/properties/v",
        "",
        "warning",
        "differs",
        '{"v":1}',
    ),
    Case(
        "boolean schema",
        {"type": "object", "properties": {"v": True}},
        "/properties/v",
        "",
        "error",
        "refuses",
    ),
    Case("unknown type", {"type": "strng"}, "", "type", "error", "refuses"),
    # llama-cpp-python escapes only [\r\n"] in json.dumps's text (excel-mcp-server's enum ["\""]).
    Case("quote in an enum", {"enum": ['"', "'"]}, "", "enum", "error", "refuses"),
    Case("backspace in a const", {"const": "a\bb"}, "", "const", "error", "refuses"),
    Case("form feed in an object const", {"const": {"k": "\f"}}, "", "const", "error", "refuses"),
    Case(
        "quote in a property name",
        {"type": "object", "properties": {'say "hi"': STRING}},
        "",
        "properties",
        "error",
        "refuses",
    ),
    Case("backslash in an enum", {"enum": ["a\\b", "c"]}, "", "enum", "warning", "differs", '"a\\\\b"'),
    Case("tab in a const", {"const": "a\tb"}, "", "const", "warning", "differs", '"a\\tb"'),
    Case("emoji in an enum", {"enum": ["\U0001f600"]}, "", "enum", "warning", "differs", '"\U0001f600"'),
    # One nested optional group per optional repeat; llama.cpp refuses a group of 2000 rules.
    Case(
        "1001 optional items",
        {"type": "array", "items": STRING, "maxItems": 1001},
        "",
        "maxItems",
        "error",
        "refuses",
    ),
    Case(
        "1001 optional items in a property",
        {"type": "object", "properties": {"arr": {"type": "array", "items": OBJECT_A, "maxItems": 1001}}},
        "/properties/arr",
        "maxItems",
        "error",
        "refuses",
    ),
    Case(
        "1001 optional objects",
        {"type": "array", "items": OBJECT_A, "minItems": 1, "maxItems": 1002},
        "",
        "maxItems",
        "error",
        "refuses",
    ),
    Case(
        "1001 optional characters",
        {"type": "string", "minLength": 5, "maxLength": 1006},
        "",
        "maxLength",
        "error",
        "refuses",
    ),
]


@pytest.mark.model
@pytest.mark.parametrize("case", LLAMA_CASES, ids=lambda c: c.id)
def test_llama_cpp_rule(case: Case, llama: LlamaCpp) -> None:
    reported(case, "llama.cpp")
    proven(case, llama)


@pytest.mark.model
@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array", "items": STRING, "maxItems": 1000},
        {"type": "object", "properties": {"arr": {"type": "array", "items": OBJECT_A, "maxItems": 1000}}},
        {"type": "string", "minLength": 1, "maxLength": 1001},
        {"enum": ["it's", "a/b", "é", "\u2028", "\x7f"]},
    ],
)
def test_llama_cpp_takes_what_its_rules_let_through(schema: dict[str, Any], llama: LlamaCpp) -> None:
    assert [f for f in preflight(schema, "llama.cpp") if f.severity == "error"] == []
    assert llama.error(schema) is None
