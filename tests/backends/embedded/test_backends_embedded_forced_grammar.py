"""The forced path's grammar: our route grammar read by llguidance accepts what llama.cpp accepts under it.

The embedded backend's forced path gives llguidance the same compact GBNF the grammar sampler
and the llama.cpp dialects get, through llguidance's GBNF reader. These tests feed llguidance
raw bytes (a one-byte-per-token vocabulary, tests/support/compilers.py) and hold it to what
tests/grammar/test_grammar_llama_cpp.py holds llama.cpp's grammar engine to: every corpus catalogue in every
mode, hostile values, random schemas and their instances, and the same refusals.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.compilers import LlguidanceOurs
from support.corpus import CASES, _invalid
from support.grammar_cases import MODES, SCHEMAS, action_text, hostile_schema

from toolrouting import GrammarError, route_grammar, route_schema
from toolrouting._limits import BOUNDED_ARRAY_ITEMS, BOUNDED_STRING_CHARS


@pytest.fixture(scope="module")
def ours() -> LlguidanceOurs:
    return LlguidanceOurs()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_catalogue_grammars_decide_as_under_llama_cpp(case: str, mode: str, ours: LlguidanceOurs) -> None:
    tools, valid = CASES[case]
    options = MODES[mode]
    schema = route_schema(tools)
    assert ours.error(schema, **options) is None
    for action in valid:
        assert ours.accepts(schema, action_text(json.loads(action), options), **options), action
    for why, action in _invalid(tools, valid).items():
        assert not ours.accepts(schema, action, **options), why
    # One whitespace policy at a time, byte-stable: the other spacing is refused.
    other = {} if options.get("spaced") else {"spaced": True}
    assert not ours.accepts(schema, action_text(json.loads(valid[0]), other), **options)


@pytest.mark.parametrize("mode", MODES)
def test_hostile_values_are_accepted_and_escaped_alike(mode: str, ours: LlguidanceOurs) -> None:
    options = MODES[mode]
    schema = hostile_schema()
    for value in schema["properties"]["pick"]["enum"]:
        assert ours.accepts(schema, action_text({"pick": value}, options), **options), value
    assert not ours.accepts(schema, action_text({"pick": "say \\"}, options), **options)
    assert not ours.accepts(schema, action_text({"pick": None, "least": [True]}, options), **options)


def test_bounded_decisions_keep_their_bounds() -> None:
    # What bounded decisions add to an unbounded string and array, llguidance enforces too.
    schema = {
        "type": "object",
        "properties": {"labels": {"type": "array", "items": {"type": "string"}}},
        "required": ["labels"],
        "additionalProperties": False,
    }
    checked = LlguidanceOurs()
    longest = ["x" * BOUNDED_STRING_CHARS] * BOUNDED_ARRAY_ITEMS
    assert checked.accepts(schema, action_text({"labels": longest}, {}), bounded=True)
    assert not checked.accepts(schema, action_text({"labels": [*longest, "x"]}, {}), bounded=True)
    too_long = ["x" * (BOUNDED_STRING_CHARS + 1)]
    assert not checked.accepts(schema, action_text({"labels": too_long}, {}), bounded=True)
    bound = route_grammar(schema, bounded=True).max_bytes
    assert bound is not None
    assert len(action_text({"labels": longest}, {}).encode()) <= bound
    assert checked.accepts(schema, action_text({"labels": [*longest, "x"]}, {}), bounded=False)


def test_what_our_compiler_refuses_is_refused_before_llguidance() -> None:
    checked = LlguidanceOurs()
    schema = {"type": "object", "properties": {"a": {"prefixItems": [{"type": "string"}]}}}
    with pytest.raises(GrammarError) as caught:
        checked.grammar(schema)
    assert caught.value.pointer == "/properties/a"


@settings(max_examples=150, deadline=None)
@given(data=st.data(), pair=SCHEMAS, spaced=st.booleans(), bounded=st.booleans())
def test_random_instances_are_accepted(
    data: st.DataObject, pair: Any, spaced: bool, bounded: bool, ours: LlguidanceOurs
) -> None:
    schema, values = pair
    instance = data.draw(values)
    jsonschema.validate(instance, schema)
    assert ours.accepts(schema, action_text(instance, {"spaced": spaced}), spaced=spaced, bounded=bounded)
