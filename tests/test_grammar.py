"""Our route grammar (toolrouting/_gbnf.py) on llama.cpp's own GBNF parser and grammar sampler.

Every grammar compiled here, from the corpus catalogues, from hostile schemas and from random
ones, is parsed by llama.cpp (``llama_sampler_init_grammar`` over the default model's
vocabulary: a NULL sampler is a refused grammar), and the texts are fed through its grammar
sampler token by token, as in tests/support/compilers.py.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import jsonschema
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from support.compilers import LlamaCpp
from support.gbnf_bound import max_bytes
from test_route_schema_compilers import CASES, _invalid

from toolrouting import GrammarError, route_grammar, route_schema
from toolrouting._limits import BOUNDED_STRING_CHARS, GBNF_MAX_REPETITION

MODES = {
    "compact": {},
    "spaced": {"spaced": True},
    "bounded": {"bounded": True},
    "spaced-bounded": {"spaced": True, "bounded": True},
}


def _text(value: Any, options: dict[str, bool]) -> str:
    separators = (", ", ": ") if options.get("spaced") else (",", ":")
    return json.dumps(value, separators=separators, ensure_ascii=False)


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
            assert len(_text(json.loads(action), MODES[mode]).encode()) <= grammar.max_bytes


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


@pytest.mark.model
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_catalogue_grammars_parse_and_decide_like_the_schema(case: str, mode: str, llama: Ours) -> None:
    tools, valid = CASES[case]
    options = MODES[mode]
    gbnf = route_grammar(route_schema(tools), **options).gbnf
    assert llama.parses(gbnf)
    for action in valid:
        assert llama.accepts(gbnf, _text(json.loads(action), options)), action
    for why, action in _invalid(tools, valid).items():
        assert not llama.accepts(gbnf, action), why
    if options.get("spaced"):  # one whitespace policy at a time
        assert not llama.accepts(gbnf, _text(json.loads(valid[0]), {}))
    else:
        assert not llama.accepts(gbnf, _text(json.loads(valid[0]), {"spaced": True}))


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


def _hostile_schema() -> dict[str, Any]:
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
    grammar = route_grammar(_hostile_schema())
    assert grammar.gbnf.isascii()
    effects = {(note.pointer.rsplit("/", 1)[-1], note.keyword): note.effect for note in grammar.notes}
    assert effects[("many", "maxItems")] == "unbounded"
    assert effects[("least", "minItems")] == "lowers"
    assert effects[("long", "maxLength")] == "unbounded"
    assert f"{{{GBNF_MAX_REPETITION},}}" in grammar.gbnf or f"{{{GBNF_MAX_REPETITION - 1},}}" in grammar.gbnf
    assert max(int(n) for n in re.findall(r"\{(\d+)", grammar.gbnf)) <= GBNF_MAX_REPETITION


@pytest.mark.model
@pytest.mark.parametrize("mode", MODES)
def test_hostile_schema_parses_and_its_values_are_accepted(mode: str, llama: Ours) -> None:
    options = MODES[mode]
    gbnf = route_grammar(_hostile_schema(), **options).gbnf
    assert llama.parses(gbnf)
    for value in _hostile_schema()["properties"]["pick"]["enum"]:
        assert llama.accepts(gbnf, _text({"pick": value}, options)), value
    everything = {f"k{i} {text}": text for i, text in enumerate(HOSTILE_TEXTS)}
    assert llama.accepts(gbnf, _text({**everything, "pick": None, "many": [1, -2]}, options))
    assert not llama.accepts(gbnf, _text({"pick": "say \\"}, options))
    assert not llama.accepts(gbnf, _text({"pick": None, "least": [True]}, options))


def _deep(levels: int) -> dict[str, Any]:
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


@pytest.mark.model
def test_deep_nesting_and_recursion_through_brackets(llama: Ours) -> None:
    deep = route_grammar(_deep(60))
    value: Any = "leaf"
    for level in range(60):
        value = [value] if level % 2 else {"d": value}
    assert llama.parses(deep.gbnf)
    assert llama.accepts(deep.gbnf, _text(value, {}))
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


def test_depth_and_cycles_that_write_nothing_are_refused() -> None:
    with pytest.raises(GrammarError, match="nests deeper"):
        route_grammar(_deep(150))
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
        assert len(_text(instance, {}).encode()) <= grammar.max_bytes


@pytest.mark.model
@settings(max_examples=150, deadline=None)
@given(data=st.data(), pair=SCHEMAS, spaced=st.booleans())
def test_random_instances_are_accepted_by_llama_cpp(
    data: st.DataObject, pair: Any, spaced: bool, llama: Ours
) -> None:
    schema, values = pair
    instance = data.draw(values)
    text = _text(instance, {"spaced": spaced})
    assume(llama.faithful(text))
    gbnf = route_grammar(schema, spaced=spaced).gbnf
    assert llama.parses(gbnf)
    assert llama.accepts(gbnf, text)


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
