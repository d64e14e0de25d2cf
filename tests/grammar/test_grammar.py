"""Our route grammar compiler (toolrouting/_grammar/) on its own: the longest reply each grammar
allows, what it refuses, widens and bounds, its bytes and its cache, on the corpus catalogues,
hostile schemas and random ones.

The schemas here are shared with tests/grammar/test_grammar_llama_cpp.py, which holds the same grammars
to llama.cpp's own parser and grammar sampler.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.corpus import CASES
from support.gbnf_bound import max_bytes
from support.grammar_cases import MODES, SCHEMAS, action_text, deep_schema, hostile_schema

from toolrouting import GrammarError, route_grammar, route_schema
from toolrouting._limits import BOUNDED_STRING_CHARS, GBNF_MAX_REPETITION

# --- the corpus: every catalogue, in every mode ----------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_longest_reply_is_what_the_grammar_allows(case: str, mode: str) -> None:
    tools, valid = CASES[case]
    grammar = route_grammar(route_schema(tools), **MODES[mode])
    bound = max_bytes(grammar.gbnf)
    assert grammar.max_bytes == (None if bound == float("inf") else bound)
    if MODES[mode].get("bounded"):
        assert grammar.max_bytes is not None
        for action in valid:
            assert len(action_text(json.loads(action), MODES[mode]).encode()) <= grammar.max_bytes


@pytest.mark.parametrize(
    ("gbnf", "bound"),
    [
        ('root ::= ""* "a"', 1),
        ('root ::= ()+ "ab"', 2),
        ('root ::= "a"* "b"', float("inf")),
        ('root ::= "é"{0,3}', 6),
    ],
)
def test_the_reference_bound_of_edge_repetitions(gbnf: str, bound: float) -> None:
    # The bound the tests trust: a repetition of nothing writes nothing, however often.
    assert max_bytes(gbnf) == bound


# --- hostile schemas -------------------------------------------------------------------------


def test_hostile_values_are_escaped_and_huge_counts_widened() -> None:
    grammar = route_grammar(hostile_schema())
    assert grammar.gbnf.isascii()
    effects = {(note.pointer.rsplit("/", 1)[-1], note.keyword): note.effect for note in grammar.notes}
    assert effects[("many", "maxItems")] == "unbounded"
    assert effects[("least", "minItems")] == "lowers"
    assert effects[("long", "maxLength")] == "unbounded"
    assert f"{{{GBNF_MAX_REPETITION},}}" in grammar.gbnf or f"{{{GBNF_MAX_REPETITION - 1},}}" in grammar.gbnf
    assert max(int(n) for n in re.findall(r"\{(\d+)", grammar.gbnf)) <= GBNF_MAX_REPETITION


def test_depth_and_cycles_that_write_nothing_are_refused() -> None:
    with pytest.raises(GrammarError, match="nests deeper"):
        route_grammar(deep_schema(150))
    cycle = {
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}},
        "$ref": "#/$defs/a",
    }
    with pytest.raises(GrammarError, match="cycle") as caught:
        route_grammar(cycle)
    assert caught.value.pointer == "/$defs/b/anyOf/0"


@pytest.mark.parametrize(
    ("schema", "pointer", "keyword"),
    [
        ({"type": "array", "prefixItems": [{"type": "string"}]}, "", "prefixItems"),
        ({"type": "object", "properties": {"a": {"$ref": "other.json#/a"}}}, "/properties/a", "$ref"),
        ({"properties": {"a~b/c": {"$ref": "#/$defs/missing"}}}, "/properties/a~0b~1c", "$ref"),
        ({"allOf": [{"type": "string"}, {"maxLength": 3}]}, "", "allOf"),
        ({"type": "text"}, "", "type"),
        ({"anyOf": [{"type": "string"}], "minLength": 2}, "", "minLength"),
        ({"type": "string", "maxLength": -1}, "", "maxLength"),
        (False, "", ""),
    ],
)
def test_what_it_cannot_express_is_refused_with_pointer_and_keyword(
    schema: Any, pointer: str, keyword: str
) -> None:
    with pytest.raises(GrammarError) as caught:
        route_grammar(schema)
    assert caught.value.pointer == pointer
    assert keyword in str(caught.value)


def test_what_it_widens_is_noted() -> None:
    schema = {
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "n": {"type": "number", "minimum": 1, "maximum": 50},
            "pick": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        },
    }
    notes = {(n.pointer, n.keyword): n.effect for n in route_grammar(schema).notes}
    assert notes == {
        ("/properties/when", "format"): "ignores",
        ("/properties/code", "pattern"): "ignores",
        ("/properties/n", "minimum"): "ignores",
        ("/properties/pick", "oneOf"): "treats as anyOf",
        ("/properties/tags", "uniqueItems"): "ignores",
        ("", "additionalProperties"): "forbids extra keys",
    }


def test_bounded_mode_bounds_what_the_tool_left_open_and_never_tightens() -> None:
    schema = {
        "type": "object",
        "properties": {
            "free": {"type": "string"},
            "short": {"type": "string", "maxLength": 3},
            "long": {"type": "string", "minLength": 400},
            "any": {},
        },
        "required": ["free"],
        "additionalProperties": False,
    }
    assert route_grammar(schema).max_bytes is None
    grammar = route_grammar(schema, bounded=True)
    assert grammar.max_bytes == max_bytes(grammar.gbnf)
    assert f"char{{0,{BOUNDED_STRING_CHARS}}}" in grammar.gbnf
    assert "char{0,3}" in grammar.gbnf
    assert "char{400}" in grammar.gbnf


def test_equal_schemas_give_equal_bytes() -> None:
    tools, _ = CASES["many_200"]
    first = route_grammar(route_schema(tools))
    again = route_grammar(json.loads(json.dumps(route_schema(copy.deepcopy(tools)))))
    assert first.gbnf.encode() == again.gbnf.encode()
    assert first == again


# --- random schemas of the subset and their instances ----------------------------------------


@settings(max_examples=100, deadline=None)
@given(data=st.data(), pair=SCHEMAS, bounded=st.booleans())
def test_random_instances_fit_the_bound(data: st.DataObject, pair: Any, bounded: bool) -> None:
    schema, values = pair
    instance = data.draw(values)
    jsonschema.validate(instance, schema)
    grammar = route_grammar(schema, bounded=bounded)
    bound = max_bytes(grammar.gbnf)
    assert grammar.max_bytes == (None if bound == float("inf") else bound)
    if grammar.max_bytes is not None:
        assert len(action_text(instance, {}).encode()) <= grammar.max_bytes


def test_equal_schemas_share_one_compiled_grammar() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "cached_tool",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            },
        }
    ]
    schema = route_schema(tools)
    first = route_grammar(schema, bounded=True)
    assert route_grammar(copy.deepcopy(schema), bounded=True) is first  # a loop's next round: no compile
    assert route_grammar(schema) is not first  # the settings are part of the key
    assert route_grammar(schema, bounded=True, spaced=True).gbnf != first.gbnf
    reordered = {"anyOf": schema["anyOf"], "type": "object"}  # key order orders properties: another entry
    assert route_grammar(reordered, bounded=True) is not first
    assert route_grammar(reordered, bounded=True).gbnf == first.gbnf


def test_a_schema_that_is_not_json_is_refused() -> None:
    with pytest.raises(GrammarError, match="not JSON"):
        route_grammar({"enum": [float("nan")]})
