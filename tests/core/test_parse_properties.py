"""Hypothesis properties of parse_route: it never raises, and it agrees with the route schema."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from support.catalogues import declared

from toolrouting import parse_route, route_schema, route_tool_names

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "memory_search", "parameters": {"type": "object"}}},
    {
        "type": "function",
        "function": {
            "name": "memory_read",
            "parameters": {
                "type": "object",
                "properties": {"ids": {"type": "array", "items": {"type": "string"}}},
                "required": ["ids"],
                "additionalProperties": False,
            },
        },
    },
    declared("ping"),
]
NAMES = route_tool_names(TOOLS)
FULL = Draft202012Validator(route_schema(TOOLS))
# parse_route takes only names: the arguments inside are the grammar's to constrain.
SHAPE = Draft202012Validator(
    {
        "type": "object",
        "anyOf": [
            {**alt, "properties": {**alt["properties"], "arguments": {"type": "object"}}}
            if "arguments" in alt["properties"]
            else alt
            for alt in route_schema(TOOLS)["anyOf"]
        ],
    }
)

finite = st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | finite | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
tool_values = (
    st.sampled_from([*NAMES, "none", "None", "memory_write", ""]) | st.text(max_size=6) | json_values
)
candidates = st.fixed_dictionaries(
    {"tool": tool_values},
    optional={
        "arguments": json_objects | json_values,
        "extra": json_values,
    },
) | json_objects.map(lambda d: {"tool": "ping", "arguments": {}, **d})
likely_valid = st.one_of(
    st.just({"tool": "none"}),
    st.builds(lambda a: {"tool": "memory_search", "arguments": a}, json_objects),
    st.builds(lambda ids: {"arguments": {"ids": ids}, "tool": "memory_read"}, st.lists(st.text())),
    st.just({"tool": "ping", "arguments": {}}),
)


@given(st.text(max_size=300))
def test_parse_route_never_raises_on_any_text(text: str) -> None:
    route = parse_route(text, NAMES)
    assert route.ok is (route.error is None)


@given(candidates, st.sampled_from(["", " ", "\n", "\t  "]))
def test_parse_route_never_raises_on_near_actions(candidate: dict[str, Any], pad: str) -> None:
    text = pad + json.dumps(candidate) + pad
    for cut in (len(text), len(text) // 2, len(text) - 1):
        route = parse_route(text[:cut], NAMES)
        assert route.ok is (route.error is None)


@given(likely_valid | candidates)
def test_every_action_the_schema_accepts_is_accepted(candidate: dict[str, Any]) -> None:
    assume(FULL.is_valid(candidate))
    route = parse_route(json.dumps(candidate), NAMES)
    assert route.ok, route.error
    assert route.tool == candidate["tool"]
    assert route.arguments == candidate.get("arguments")


@given(candidates, st.booleans())
def test_every_accepted_reply_has_a_shape_the_schema_accepts(candidate: dict[str, Any], indent: bool) -> None:
    text = json.dumps(candidate, indent=2 if indent else None)
    route = parse_route(text, NAMES)
    if route.ok:
        assert SHAPE.is_valid(json.loads(text))
    else:
        assert not SHAPE.is_valid(candidate)
