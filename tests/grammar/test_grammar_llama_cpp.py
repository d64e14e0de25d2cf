"""Our route grammar (toolrouting/_grammar/) on llama.cpp's own GBNF parser and grammar sampler.

Every grammar compiled here, from the corpus catalogues, from hostile schemas and from random
ones, is parsed by llama.cpp (``llama_sampler_init_grammar`` over the default model's
vocabulary: a NULL sampler is a refused grammar), and the texts are fed through its grammar
sampler token by token, as in tests/support/compilers.py. What the compiler writes, refuses and
notes on its own is tests/grammar/test_grammar.py's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from support.compilers import LlamaCpp
from support.corpus import CASES, _invalid
from support.grammar_cases import HOSTILE_TEXTS, MODES, SCHEMAS, action_text, deep_schema, hostile_schema

from toolrouting import route_grammar, route_schema


class Ours(LlamaCpp):
    """llama.cpp's grammar engine over a GBNF text of ours (``gbnf`` takes the text itself)."""

    def gbnf(self, schema: Any) -> str:
        return str(schema)

    def accepts(self, schema: Any, text: str) -> bool:
        """Whether the grammar ``schema`` (a GBNF text, as :meth:`gbnf` takes) accepts ``text``."""
        return super().accepts(schema, text)

    def faithful(self, text: str) -> bool:
        """Whether the vocabulary writes ``text`` at all (SmolLM2's has no token for the byte 0xF1)."""
        data = text.encode("utf-8")
        return bool(self._llama.detokenize(self._llama.tokenize(data, add_bos=False, special=False)) == data)

    def parses(self, grammar: str) -> bool:
        sampler = self._sampler(grammar)
        if not sampler:
            return False
        self._lib.llama_sampler_free(sampler)
        return True


@pytest.fixture(scope="module")
def llama() -> Ours:
    return Ours()


@pytest.mark.model
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_catalogue_grammars_parse_and_decide_like_the_schema(case: str, mode: str, llama: Ours) -> None:
    tools, valid = CASES[case]
    options = MODES[mode]
    gbnf = route_grammar(route_schema(tools), **options).gbnf
    assert llama.parses(gbnf)
    for action in valid:
        assert llama.accepts(gbnf, action_text(json.loads(action), options)), action
    for why, action in _invalid(tools, valid).items():
        assert not llama.accepts(gbnf, action), why
    if options.get("spaced"):  # one whitespace policy at a time
        assert not llama.accepts(gbnf, action_text(json.loads(valid[0]), {}))
    else:
        assert not llama.accepts(gbnf, action_text(json.loads(valid[0]), {"spaced": True}))


@pytest.mark.model
def test_keys_in_properties_order_each_optional_one_or_not(llama: Ours) -> None:
    tools, _ = CASES["issue_tracker"]
    gbnf = route_grammar(route_schema(tools)).gbnf
    written = '{"tool":"create_issue","arguments":{"title":"t","body":"b","priority":"low"}}'
    required_first = '{"tool":"create_issue","arguments":{"title":"t","priority":"low","body":"b"}}'
    assert llama.accepts(gbnf, written)
    assert not llama.accepts(gbnf, required_first)
    assert llama.accepts(gbnf, '{"tool":"list_issues","arguments":{"labels":[],"limit":3}}')
    assert not llama.accepts(gbnf, '{"tool":"list_issues","arguments":{"limit":3,"labels":[]}}')
    assert not llama.accepts(gbnf, '{"tool":"list_issues","arguments":{"state":"all",}}')
    assert not llama.accepts(gbnf, '{"tool":"get_issue","arguments":{"number":0}}')  # minimum 1
    assert not llama.accepts(gbnf, '{"tool":"get_issue","arguments":{"number":01}}')
    # comment_on_issue leaves additionalProperties unset: extra keys are never written.
    assert not llama.accepts(gbnf, '{"tool":"comment_on_issue","arguments":{"number":7,"body":"ok","x":1}}')


@pytest.mark.model
@pytest.mark.parametrize("mode", MODES)
def test_hostile_schema_parses_and_its_values_are_accepted(mode: str, llama: Ours) -> None:
    options = MODES[mode]
    gbnf = route_grammar(hostile_schema(), **options).gbnf
    assert llama.parses(gbnf)
    for value in hostile_schema()["properties"]["pick"]["enum"]:
        assert llama.accepts(gbnf, action_text({"pick": value}, options)), value
    everything = {f"k{i} {text}": text for i, text in enumerate(HOSTILE_TEXTS)}
    assert llama.accepts(gbnf, action_text({**everything, "pick": None, "many": [1, -2]}, options))
    assert not llama.accepts(gbnf, action_text({"pick": "say \\"}, options))
    assert not llama.accepts(gbnf, action_text({"pick": None, "least": [True]}, options))


@pytest.mark.model
def test_deep_nesting_and_recursion_through_brackets(llama: Ours) -> None:
    deep = route_grammar(deep_schema(60))
    value: Any = "leaf"
    for level in range(60):
        value = [value] if level % 2 else {"d": value}
    assert llama.parses(deep.gbnf)
    assert llama.accepts(deep.gbnf, action_text(value, {}))
    tree = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            }
        },
        "$ref": "#/$defs/node",
    }
    grammar = route_grammar(tree)
    assert grammar.max_bytes is None  # recursive: no longest reply, even bounded
    assert route_grammar(tree, bounded=True).max_bytes is None
    assert llama.parses(grammar.gbnf)
    assert llama.accepts(grammar.gbnf, '{"kids":[{"kids":[]},{}]}')
    assert not llama.accepts(grammar.gbnf, '{"kids":[1]}')


@pytest.mark.model
@settings(max_examples=150, deadline=None)
@given(data=st.data(), pair=SCHEMAS, spaced=st.booleans())
def test_random_instances_are_accepted_by_llama_cpp(
    data: st.DataObject, pair: Any, spaced: bool, llama: Ours
) -> None:
    schema, values = pair
    instance = data.draw(values)
    text = action_text(instance, {"spaced": spaced})
    assume(llama.faithful(text))
    gbnf = route_grammar(schema, spaced=spaced).gbnf
    assert llama.parses(gbnf)
    assert llama.accepts(gbnf, text)
