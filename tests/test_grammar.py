"""Our route grammar compiler (toolrouting/_grammar/) on its own: the longest reply each grammar
allows, what it refuses, widens and bounds, its bytes and its cache, on the corpus catalogues,
hostile schemas and random ones.

The schemas here are shared with tests/test_grammar_llama_cpp.py, which holds the same grammars
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
from support.gbnf_bound import max_bytes
from test_route_schema_compilers import CASES

from toolrouting import GrammarError, route_grammar, route_schema
from toolrouting._limits import BOUNDED_STRING_CHARS, GBNF_MAX_REPETITION

MODES = {
    "compact": {},
    "spaced": {"spaced": True},
    "bounded": {"bounded": True},
    "spaced-bounded": {"spaced": True, "bounded": True},
}


def action_text(value: Any, options: dict[str, bool]) -> str:
    separators = (", ", ": ") if options.get("spaced") else (",", ":")
    return json.dumps(value, separators=separators, ensure_ascii=False)


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

HOSTILE_TEXTS = [
    'say "hi"',
    "back\\slash",
    "tab\tnew\nline\r",
    "nul\x00bel\x07del\x7f",
    "]^-[#",
    "é—😀",
    "\\u0041",
    "",
]


def hostile_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            **{f"k{i} {text}": {"const": text} for i, text in enumerate(HOSTILE_TEXTS)},
            "pick": {"enum": [*HOSTILE_TEXTS, 1, 2.5, None, True, [1, "a"], {"a": "]"}]},
            "many": {"type": "array", "items": {"type": "integer"}, "maxItems": 10_000},
            "least": {"type": "array", "items": {"type": "boolean"}, "minItems": 5000},
            "long": {"type": "string", "minLength": 3000, "maxLength": 100_000},
        },
        "required": ["pick"],
        "additionalProperties": False,
    }


def test_hostile_values_are_escaped_and_huge_counts_widened() -> None:
    grammar = route_grammar(hostile_schema())
    assert grammar.gbnf.isascii()
    effects = {(note.pointer.rsplit("/", 1)[-1], note.keyword): note.effect for note in grammar.notes}
    assert effects[("many", "maxItems")] == "unbounded"
    assert effects[("least", "minItems")] == "lowers"
    assert effects[("long", "maxLength")] == "unbounded"
    assert f"{{{GBNF_MAX_REPETITION},}}" in grammar.gbnf or f"{{{GBNF_MAX_REPETITION - 1},}}" in grammar.gbnf
    assert max(int(n) for n in re.findall(r"\{(\d+)", grammar.gbnf)) <= GBNF_MAX_REPETITION


def deep_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "enum": ["leaf"]}
    for level in range(levels):
        schema = (
            {"type": "array", "items": schema, "maxItems": 2}
            if level % 2
            else {
                "type": "object",
                "properties": {"d": schema},
                "required": ["d"],
                "additionalProperties": False,
            }
        )
    return schema


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

KEYS = st.text(st.sampled_from('ab"\\é-]^ \n'), min_size=1, max_size=4)
STRINGS = st.text(st.characters(exclude_categories=["Cs"]), max_size=6)


def _leaf() -> st.SearchStrategy[tuple[dict[str, Any], st.SearchStrategy[Any]]]:
    def string(bounds: tuple[int, int]) -> tuple[dict[str, Any], st.SearchStrategy[Any]]:
        low, high = sorted(bounds)
        return {"type": "string", "minLength": low, "maxLength": high}, st.text(
            st.characters(exclude_categories=["Cs"]), min_size=low, max_size=high
        )

    def enum(values: list[Any]) -> tuple[dict[str, Any], st.SearchStrategy[Any]]:
        return {"enum": values}, st.sampled_from(values)

    return st.one_of(
        st.tuples(st.integers(0, 4), st.integers(0, 4)).map(string),
        st.just(({"type": "integer"}, st.integers(-(10**15), 10**15))),
        st.just(({"type": "number"}, st.integers(-(10**9), 10**9).map(lambda n: n / 1000))),
        st.just(({"type": "boolean"}, st.booleans())),
        st.just(({"type": "null"}, st.none())),
        st.lists(STRINGS, min_size=1, max_size=4, unique=True).map(enum),
    )


def _node(
    children: st.SearchStrategy[Any],
) -> st.SearchStrategy[tuple[dict[str, Any], st.SearchStrategy[Any]]]:
    def array(args: tuple[tuple[dict[str, Any], Any], int, int]) -> tuple[dict[str, Any], Any]:
        (item, values), low, extra = args
        schema = {"type": "array", "items": item, "minItems": low, "maxItems": low + extra}
        return schema, st.lists(values, min_size=low, max_size=low + extra)

    def obj(
        args: tuple[list[tuple[str, tuple[dict[str, Any], Any], bool]], bool],
    ) -> tuple[dict[str, Any], Any]:
        members, _ = args
        schema = {
            "type": "object",
            "properties": {key: sub for key, (sub, _), _ in members},
            "required": [key for key, _, required in members if required],
            "additionalProperties": False,
        }
        parts = [
            st.tuples(st.just(key), values, st.just(True) if req else st.booleans())
            for key, (_, values), req in members
        ]
        return schema, st.tuples(*parts).map(
            lambda chosen: {key: value for key, value, keep in chosen if keep}
        )

    def any_of(options: list[tuple[dict[str, Any], Any]]) -> tuple[dict[str, Any], Any]:
        return {"anyOf": [schema for schema, _ in options]}, st.one_of(*[values for _, values in options])

    members = st.lists(st.tuples(KEYS, children, st.booleans()), max_size=4, unique_by=lambda m: m[0])
    return st.one_of(
        st.tuples(children, st.integers(0, 2), st.integers(0, 2)).map(array),
        st.tuples(members, st.booleans()).map(obj),
        st.lists(children, min_size=2, max_size=3).map(any_of),
    )


SCHEMAS = st.recursive(_leaf(), _node, max_leaves=8)


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
