"""The route of up to K calls: route_schema(tools, max_calls=K), its grammar and parse_routes.

One action is written as it is at ``max_calls=1``; two to K tool actions as a JSON array of
them; ``none`` only alone. The schema at K=1 is today's, byte for byte; above 1 the real
compilers each take it, every reply drawn from our grammar of it validates against it, and
parse_routes reads it with parse_route's strictness, call by call.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from support.catalogues import declared, tool
from support.compilers import LlamaCpp, Llguidance, Outlines
from support.differential import GrammarCheck
from support.gbnf_sample import STYLES, Sampler, calls_rule

from toolrouting import (
    MAX_REPLY_QUOTE,
    Routes,
    parse_route,
    parse_routes,
    route_grammar,
    route_schema,
    route_tool_names,
)

WEATHER = tool("weather", city={"type": "string", "maxLength": 12})
TOOLS: list[dict[str, Any]] = [
    WEATHER,
    tool("play", artist={"type": "string", "maxLength": 12}, minutes={"type": "integer"}),
    tool("ping"),
]
NAMES = route_tool_names(TOOLS)
PARIS = '{"tool":"weather","arguments":{"city":"Paris"}}'
LONDON = '{"tool":"weather","arguments":{"city":"London"}}'
PING = '{"tool":"ping","arguments":{}}'
NONE = '{"tool":"none"}'


# --- the schema -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options", [{}, {"thought": 40}, {"handoff": False}], ids=["plain", "thought", "no handoff"]
)
@pytest.mark.parametrize("tools", [TOOLS, [], [declared("ping")]], ids=["three", "empty", "one"])
def test_one_call_is_the_route_schema_of_today_byte_for_byte(tools: list[Any], options: Any) -> None:
    if not tools and "handoff" in options:
        return  # refused either way: a route without none needs a tool
    assert json.dumps(route_schema(tools, max_calls=1, **options)) == json.dumps(
        route_schema(tools, **options)
    )


@pytest.mark.parametrize("calls", [2, 3, 7])
def test_several_calls_add_one_array_of_tool_actions_after_the_actions_of_today(calls: int) -> None:
    one, several = route_schema(TOOLS), route_schema(TOOLS, max_calls=calls)
    assert list(several) == ["anyOf"]  # no "type": the reply is an object or an array
    assert several["anyOf"][:-1] == one["anyOf"]
    assert several["anyOf"][-1] == {
        "type": "array",
        "items": {"anyOf": one["anyOf"][:-1]},  # every tool, never none
        "minItems": 2,
        "maxItems": calls,
    }


def test_each_call_of_a_route_with_a_reasoning_slot_carries_its_own() -> None:
    items = route_schema(TOOLS, thought=30, max_calls=2)["anyOf"][-1]["items"]["anyOf"]
    assert all(list(item["properties"])[:2] == ["thought", "tool"] for item in items)


def test_a_route_with_no_tool_has_no_array() -> None:
    assert route_schema([], max_calls=4) == route_schema([])


def test_the_definitions_stay_where_the_copies_refs_point() -> None:
    parameters = {
        "type": "object",
        "properties": {"at": {"$ref": "#/$defs/place"}},
        "required": ["at"],
        "$defs": {"place": {"type": "string", "maxLength": 8}},
    }
    schema = route_schema([declared("go", parameters=parameters)], max_calls=2)
    assert schema["$defs"] == {"go.place": {"type": "string", "maxLength": 8}}
    item = schema["anyOf"][-1]["items"]["anyOf"][0]
    assert item["properties"]["arguments"]["properties"]["at"] == {"$ref": "#/$defs/go.place"}
    validator = Draft202012Validator(schema)
    go = {"tool": "go", "arguments": {"at": "home"}}
    assert validator.is_valid([go, go])
    assert not validator.is_valid([go, {"tool": "go", "arguments": {"at": "far too far away"}}])


@pytest.mark.parametrize(
    ("calls", "error"),
    [(0, ValueError), (1001, ValueError), (True, TypeError), (2.0, TypeError), ("2", TypeError)],
)
def test_a_number_of_calls_that_is_not_one_to_a_thousand_is_refused(calls: Any, error: type) -> None:
    with pytest.raises(error, match="max_calls="):
        route_schema(TOOLS, max_calls=calls)


# --- the grammar ------------------------------------------------------------------------------------


@pytest.mark.parametrize("calls", [2, 3, 4])
@pytest.mark.parametrize("spaced", [False, True])
def test_the_longest_reply_is_the_longest_array_of_the_longest_actions(calls: int, spaced: bool) -> None:
    one = route_grammar(route_schema(TOOLS), spaced=spaced).max_bytes
    several = route_grammar(route_schema(TOOLS, max_calls=calls), spaced=spaced).max_bytes
    assert one is not None
    assert several is not None
    comma = len(", ") if spaced else len(",")
    assert several == len("[]") + calls * one + (calls - 1) * comma


@pytest.fixture(scope="module")
def check() -> GrammarCheck:
    return GrammarCheck()


def _drawn(gbnf: str, seed: int, count: int) -> list[str]:
    sampler = Sampler(gbnf)
    several = calls_rule(sampler.rules)
    rng = random.Random(seed)
    roots = ["root", several or "root"]
    return [sampler.sample(rng, STYLES[index % len(STYLES)], roots[index % 2]) for index in range(count)]


def test_one_action_is_the_same_text_under_every_number_of_calls(check: GrammarCheck) -> None:
    several = route_grammar(route_schema(TOOLS, max_calls=3)).gbnf
    for text in _drawn(route_grammar(route_schema(TOOLS)).gbnf, 3, 40):
        assert check.accepts(several, text), text


@pytest.mark.parametrize("options", [{}, {"spaced": True}, {"bounded": True}])
def test_every_reply_the_grammar_allows_the_schema_allows_and_parse_routes_accepts(
    options: dict[str, bool], check: GrammarCheck
) -> None:
    schema = route_schema(TOOLS, max_calls=3)
    grammar = route_grammar(schema, **options)
    assert {note.effect for note in grammar.notes} <= {"forbids extra keys"}  # narrowed, never widened
    validator = Draft202012Validator(schema)
    counts = set()
    for text in _drawn(grammar.gbnf, 31, 80):
        assert check.accepts(grammar.gbnf, text)
        assert validator.is_valid(json.loads(text)), text
        routes = parse_routes(text, NAMES, max_calls=3)
        assert routes.ok, (routes.error, text)
        assert grammar.max_bytes is not None
        assert len(text.encode()) <= grammar.max_bytes
        counts.add(len(routes.calls))
    assert counts == {1, 2, 3}


# --- the compilers each server family uses --------------------------------------------------------

ACCEPTED = [PARIS, NONE, f"[{PARIS},{LONDON}]", f"[{PARIS},{PING},{LONDON}]", f"[{PARIS},{PARIS}]"]
REFUSED = ["[]", f"[{PARIS}]", f"[{PARIS},{NONE}]", f"[{NONE},{NONE}]", f"[{PARIS},{PING},{LONDON},{PING}]"]


# llama.cpp's converter and engine run over the default model's vocabulary: a model test, as elsewhere.
@pytest.fixture(
    scope="module",
    params=[Llguidance, pytest.param(LlamaCpp, marks=pytest.mark.model), Outlines],
    ids=["llguidance", "llama.cpp", "outlines"],
)
def compiled(request: pytest.FixtureRequest) -> Any:
    return request.param()


def test_every_compiler_takes_the_route_of_several_calls_exactly(compiled: Any) -> None:
    # llguidance: vLLM, SGLang and our embedded forced path; llama.cpp: llama-server and
    # llama-cpp-python; outlines: vLLM and TGI. A JSON value at the top: an object or an array.
    schema = route_schema(TOOLS, max_calls=3)
    assert compiled.error(schema) is None
    for text in ACCEPTED:
        assert compiled.accepts(schema, text), text
    for text in REFUSED:
        assert not compiled.accepts(schema, text), text


@pytest.mark.parametrize("text", ACCEPTED + REFUSED)
def test_our_grammar_agrees_with_the_compilers(text: str, check: GrammarCheck) -> None:
    gbnf = route_grammar(route_schema(TOOLS, max_calls=3)).gbnf
    assert check.accepts(gbnf, text) is (text in ACCEPTED)
    assert parse_routes(text, NAMES, max_calls=3).ok is (text in ACCEPTED)


# --- the parser ---------------------------------------------------------------------------------------


def test_each_call_comes_back_with_its_own_text() -> None:
    reply = f" [{PARIS}, {PING}]\n"
    routes = parse_routes(reply, NAMES, max_calls=2)
    assert routes == Routes(
        ok=True, calls=(parse_route(PARIS, NAMES), parse_route(PING, NAMES)), text=reply.strip()
    )
    assert [call.text for call in routes.calls] == [PARIS, PING]
    assert routes.as_dict()["calls"][1] == {"ok": True, "tool": "ping", "arguments": {}, "text": PING}


def test_one_action_is_one_call_and_none_is_one_call_alone() -> None:
    for text in (PARIS, NONE):
        routes = parse_routes(text, NAMES, max_calls=3)
        assert routes.calls == (parse_route(text, NAMES),)
        assert routes.text == text


def test_two_equal_calls_are_two_calls() -> None:
    # No grammar of the route can forbid them, and a tool may be meant to run twice.
    assert len(parse_routes(f"[{PARIS},{PARIS}]", NAMES, max_calls=2).calls) == 2


def test_each_call_of_a_route_with_a_reasoning_slot_is_checked_for_it() -> None:
    thought = '{"thought":"two cities","tool":"weather","arguments":{"city":"Paris"}}'
    routes = parse_routes(f"[{thought},{thought}]", NAMES, max_calls=2, thought=20)
    assert [call.thought for call in routes.calls] == ["two cities", "two cities"]
    assert parse_routes(f"[{thought},{PARIS}]", NAMES, max_calls=2, thought=20).error == (
        'call 2 (at character 72) has no "thought" key'
    )


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("[]", 'the reply is an empty array: a decision makes one call or more, or is {"tool":"none"}'),
        (f"[{PARIS}]", "the reply is an array of one call: one call is written as its object alone"),
        (f"[{PARIS},{PING},{LONDON}]", "the reply goes on past 2 calls, its limit (max_calls=2)"),
        (
            f"[{PARIS},{NONE}]",
            'call 2 (at character 49) is "none", which stands alone: a reply that calls tools has no none '
            "among them",
        ),
        ("Paris and London.", "the reply is neither a JSON object nor an array of 2 of them"),
        (f"[{PARIS},{PING}", "the reply ends inside its array, after call 2"),
        (
            f"[{PARIS} {PING}]",
            f"the reply's array goes on after call 1 without a comma: {json.dumps(PING + ']')}",
        ),
        (f"[{PARIS},{PING}] ok", 'the reply has text after the JSON array: " ok"'),
        (f"[{PARIS},]", "call 2 (at character 49) is not a JSON object"),
        (
            f'[{PARIS},{{"tool":"wind","arguments":{{}}}}]',
            'call 2 (at character 49): the tool "wind" is not one of the offered tools',
        ),
        (
            f'[{PARIS},{{"tool":"ping","tool":"ping","arguments":{{}}}}]',
            'call 2 (at character 49) repeats the key "tool"',
        ),
        (
            f'[{PARIS},{{"tool":"ping","arguments":{{"n":NaN}}}}]',
            "call 2 (at character 49) uses NaN, which is not JSON",
        ),
        (
            f'[{PARIS},{{"tool":"ping"}}]',
            'call 2 (at character 49): the action for "ping" has no "arguments"',
        ),
    ],
)
def test_each_refusal_names_what_is_wrong_and_where(reply: str, error: str) -> None:
    assert parse_routes(reply, NAMES, max_calls=2) == Routes(ok=False, error=error)


def test_an_array_is_not_a_reply_at_one_call() -> None:
    assert parse_routes(f"[{PARIS},{PING}]", NAMES).error == "the reply is not a JSON object"


@pytest.mark.parametrize(("calls", "error"), [(0, ValueError), (True, TypeError), (None, TypeError)])
def test_only_a_bad_number_of_calls_raises(calls: Any, error: type) -> None:
    with pytest.raises(error, match="max_calls="):
        parse_routes(PARIS, NAMES, max_calls=calls)


# --- properties -----------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
actions = st.one_of(
    st.builds(lambda city: {"tool": "weather", "arguments": {"city": city}}, st.text(max_size=12)),
    st.just({"tool": "ping", "arguments": {}}),
    st.just({"tool": "none"}),
    st.fixed_dictionaries(
        {"tool": st.sampled_from([*NAMES, "none", "wind"]) | json_values},
        optional={"arguments": json_values, "extra": json_values},
    ),
)
SCHEMA = Draft202012Validator(route_schema(TOOLS, max_calls=3))


@given(st.text(max_size=300), st.integers(min_value=1, max_value=4))
def test_parse_routes_never_raises_and_quotes_little(text: str, calls: int) -> None:
    routes = parse_routes(text, NAMES, max_calls=calls)
    assert routes.ok is (routes.error is None) is bool(routes.calls)
    if routes.error is not None:  # every quote is at most MAX_REPLY_QUOTE characters, escaped
        assert len(routes.error) <= 160 + 6 * MAX_REPLY_QUOTE


@given(
    st.lists(actions, max_size=5), st.sampled_from(["", " ", "\n "]), st.integers(min_value=1, max_value=4)
)
def test_an_array_is_accepted_when_it_holds_two_to_k_tool_actions_parse_route_accepts(
    items: list[dict[str, Any]], pad: str, calls: int
) -> None:
    texts = [json.dumps(item) for item in items]
    reply = pad + "[" + ("," + pad).join(texts) + "]" + pad
    routes = parse_routes(reply, NAMES, max_calls=calls)
    one_by_one = [parse_route(text, NAMES) for text in texts]
    expected = 2 <= len(items) <= calls and all(r.ok and r.tool != "none" for r in one_by_one)
    assert routes.ok is expected, routes.error
    if routes.ok:
        assert routes.calls == tuple(one_by_one)
    for cut in (len(reply) // 2, len(reply) - 1):  # a reply cut short is refused, unless only padding went
        if parse_routes(reply[:cut], NAMES, max_calls=calls).ok:
            assert reply[:cut].strip() == reply.strip()


@given(st.text(max_size=200) | actions.map(json.dumps))
def test_at_one_call_parse_routes_gives_parse_routes_verdict(text: str) -> None:
    route, routes = parse_route(text, NAMES), parse_routes(text, NAMES)
    assert routes.error == route.error
    assert routes.calls == ((route,) if route.ok else ())


@given(st.lists(actions, min_size=1, max_size=4) | actions)
def test_what_the_schema_allows_parse_routes_accepts(value: Any) -> None:
    assume(SCHEMA.is_valid(value))
    routes = parse_routes(json.dumps(value), NAMES, max_calls=3)
    assert routes.ok, routes.error
    assert [call.tool for call in routes.calls] == [
        item["tool"] for item in (value if isinstance(value, list) else [value])
    ]


# --- the embedded model under the route of several calls ----------------------------------------------


@pytest.mark.model
@pytest.mark.parametrize("grammar", ["ours", "server"])
@pytest.mark.parametrize("only_arrays", [False, True], ids=["route", "its array alone"])
def test_the_embedded_model_writes_whole_replies_of_up_to_k_calls(grammar: Any, only_arrays: bool) -> None:
    # Forced tokens over our grammar, or llama.cpp's grammar sampler over its converter's: either
    # way every reply parses and ends before a cap one token above the longest reply. The small
    # model seldom writes an array of its own accord, so the route's array alone is asked for too.
    from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS, guaranteed_cap

    from toolrouting import EmbeddedLlama, Settings, catalogue_prompt, routed_backend

    schema = route_schema(TOOLS, max_calls=3)
    if only_arrays:
        schema = schema["anyOf"][-1]
    longest = route_grammar(schema, bounded=True).max_bytes
    assert longest is not None
    cap = longest + 1 if grammar == "ours" else guaranteed_cap(schema)
    settings = Settings(temperature=TEST_TEMPERATURE, seed=TEST_SEED, grammar=grammar)
    messages: list[Any] = [
        {"role": "system", "content": catalogue_prompt(TOOLS)},
        {"role": "user", "content": "The weather in Paris and in London, then play Adele for 20 minutes."},
    ]
    with EmbeddedLlama(settings=settings, n_threads=TEST_THREADS) as backend:
        routed = routed_backend(backend, schema, cap)
        for seed in range(3):
            completion = routed.clone(settings=routed.settings.clone(seed=TEST_SEED + seed)).complete(
                messages
            )
            assert (completion.finish_reason, completion.truncated) == ("stop", False), completion.text
            assert parse_routes(completion.text, NAMES, max_calls=3).ok, completion.text
