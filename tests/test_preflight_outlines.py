"""The preflight's outlines rules, each checked against outlines-core, and the index a long string
bound would need."""

from __future__ import annotations

import pytest
from support.compilers import Outlines
from support.preflight import OBJECT_A, STRING, Case, proven, reported

from toolrouting import preflight
from toolrouting._limits import OUTLINES_MAX_STRING_BOUND

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


@pytest.mark.parametrize("case", OUTLINES_CASES, ids=lambda c: c.id)
def test_outlines_rule(case: Case, outlines: Outlines) -> None:
    reported(case, "outlines")
    proven(case, outlines)


def test_outlines_index_of_a_long_string_bound_does_not_fit(outlines: Outlines) -> None:
    # outlines-core builds its index from the regex when a model decodes: time and memory grow
    # exponentially with a string's length bound. Built in a subprocess under 1 GiB and 60 s.
    limit = OUTLINES_MAX_STRING_BOUND
    assert outlines.index_fits({"type": "string", "maxLength": 8}, 2**30, 60)
    too_long = {"type": "string", "maxLength": limit + 4}
    assert reported(Case("bound", too_long, "", "maxLength", "error", "refuses"), "outlines")
    assert not outlines.index_fits(too_long, 2**30, 60)
    assert not [
        f for f in preflight({"type": "string", "maxLength": limit}, "outlines") if f.severity == "error"
    ]
