"""What the grammar allows, parse_route accepts: replies drawn from the compiled GBNF itself.

For every catalogue of the corpora (tests/catalogues, the MCP corpus, the decision benchmark's)
and every hostile catalogue that becomes a route (tests/support/hostile_catalogues.py), texts
are drawn from each mode's grammar by a walk biased toward the edges, confirmed grammar-valid
by llguidance's GBNF engine, and handed to parse_route, which must accept each one. The
reverse rewrites them in ways that change nothing a JSON reader sees, which the grammar must
still accept. The same holds for the route of up to three calls (``max_calls=3``), read by
parse_routes, and no text drawn is longer than the longest reply the grammar computes. Each
hostile catalogue that does not become a route must be refused with our errors, naming the
place, within a stated time and memory, in a process of its own.

The longer campaign with figures: ``python fuzz/grammar_campaign.py`` (docs/reliability.md).
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from support.differential import Figures, GrammarCheck, corpus, forward, hostile_outcome, reverse
from support.hostile_catalogues import HOSTILE, tool
from support.model import TEST_THREADS
from support.pydantic_models import Order

from toolrouting import (
    CatalogueError,
    Completion,
    EmbeddedLlama,
    GrammarError,
    RepairsExhaustedError,
    Route,
    RoutingLoop,
    ScriptedBackend,
    Settings,
    ToolOutput,
    parse_route,
    route_grammar,
    route_schema,
)

CORPUS = corpus()
#: Replies drawn per catalogue and grammar mode in the fast run; the campaign draws more.
REPLIES = 8


@pytest.fixture(scope="module")
def check() -> GrammarCheck:
    return GrammarCheck()


@pytest.mark.parametrize("name", CORPUS)
def test_every_reply_the_grammar_allows_is_accepted(name: str, check: GrammarCheck) -> None:
    figures = Figures()
    drawn = forward(CORPUS[name], name, figures, replies=REPLIES, seed=22, check=check)
    assert figures.not_derived == []  # the walk writes only what the grammar derives
    assert figures.refused == []
    assert figures.too_long == []
    reverse(CORPUS[name], name, drawn[:REPLIES], figures, check)
    assert figures.unequal == []


@pytest.mark.parametrize("name", CORPUS)
def test_every_reply_of_up_to_three_calls_the_grammar_allows_is_accepted(
    name: str, check: GrammarCheck
) -> None:
    # route_schema(tools, max_calls=3): one action, or an array of two or three; none of them
    # longer than the longest reply the grammar computes, on which the completion cap rests.
    figures = Figures()
    forward(CORPUS[name], name, figures, replies=REPLIES, seed=31, check=check, max_calls=3)
    assert figures.not_derived == []
    assert figures.refused == []
    assert figures.too_long == []
    assert set(figures.calls) - {1} <= {2, 3}
    assert figures.calls.get(2, 0) + figures.calls.get(3, 0) > 0  # the arrays were drawn


def test_the_corpus_covers_every_family_and_every_source() -> None:
    sources = {name.split("/")[0] for name in CORPUS}
    assert sources == {"tests", "mcp", "benchmarks", "hostile"}
    families = {family for family, _ in HOSTILE.values()}
    routed = {HOSTILE[name.split("/", 1)[1]][0] for name in CORPUS if name.startswith("hostile/")}
    assert families - routed <= {"wrong types", "shared sub-dicts"}


#: Answers the route's none may hold: bounded fields, any object (json_object), and a pydantic
#: model whose $defs join the route's beside the tools' own.
ANSWERS: dict[str, dict[str, Any]] = {
    "note": {
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 30},
            "mood": {"enum": ["good", "bad"]},
            "tags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3},
        },
        "required": ["title", "mood"],
        "additionalProperties": False,
    },
    "object": {"type": "object"},
    "pydantic": Order.model_json_schema(),
}


@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("name", ["benchmarks/serve-notes", "tests/shop_refs", "mcp/mcp-server-time"])
def test_every_reply_with_an_answer_the_grammar_allows_is_accepted_and_valid(
    name: str, answer: str, check: GrammarCheck
) -> None:
    # route_schema(tools, answer_schema=S): none holds a required answer, read back as written.
    figures = Figures()
    schema = ANSWERS[answer]
    drawn = forward(CORPUS[name], name, figures, replies=REPLIES, seed=47, check=check, answer_schema=schema)
    assert (figures.not_derived, figures.refused, figures.too_long) == ([], [], [])
    names = [tool["function"]["name"] for tool in CORPUS[name]]
    answered = [route for route in (parse_route(text, names, answer=True) for text in drawn) if route.answer]
    assert answered  # the none alternative was drawn
    for route in answered:
        assert route.text is not None
        assert route.answer is not None
        assert route.answer in route.text
        assert Draft202012Validator(schema).is_valid(json.loads(route.answer)), route.answer


def test_a_none_with_an_answer_is_refused_where_the_route_holds_none() -> None:
    assert parse_route('{"tool":"none","answer":{}}', ["t"]).error == (
        'the "none" action carries other keys: "answer"'
    )
    assert parse_route('{"tool":"none"}', ["t"], answer=True).error == 'the "none" action has no "answer"'
    assert parse_route('{"answer": [1, "}"] ,"tool":"none"}', ["t"], answer=True).answer == '[1, "}"]'


# --- the free-keys class: a repeated key where keys are free -----------------------------------

REPEATED = '{"tool":"t","arguments":{"x":{"":-0,"":"Z","":false}}}'


def test_a_repeated_key_where_keys_are_free_is_grammar_valid_and_keeps_its_last_value(
    check: GrammarCheck,
) -> None:
    tools = [tool({"type": "object", "properties": {"x": True}})]
    assert check.accepts(route_grammar(route_schema(tools)).gbnf, REPEATED)
    accepted = parse_route(REPEATED, ["t"])
    assert accepted.ok, accepted.error
    assert accepted.arguments == {"x": {"": False}}
    assert accepted.text == REPEATED


@pytest.mark.parametrize(
    "reply",
    [
        '{"tool":"none","tool":"none"}',
        '{"tool":"t","arguments":{},"arguments":{}}',
        '{"tool":"t","tool":"t","arguments":{"a":{"b":1,"b":2}}}',
    ],
)
def test_a_repeated_key_in_the_action_itself_is_refused(reply: str) -> None:
    refused = parse_route(reply, ["t"])
    assert not refused.ok
    assert str(refused.error).startswith("the reply repeats the key")


class _Grades:
    """A provider of one tool whose argument is an object with free keys."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return [tool({"type": "object", "properties": {"gradeDict": {"type": "object"}}})]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        self.calls.append(arguments)
        return ToolOutput("recorded")


def test_a_run_whose_model_repeats_a_free_key_goes_on() -> None:
    reply = '{"tool":"t","arguments":{"gradeDict":{"math":90,"math":85}}}'
    grades = _Grades()
    backend = ScriptedBackend([reply, '{"tool":"none"}'])
    try:
        result = RoutingLoop(backend, grades, max_repairs=0).run([{"role": "user", "content": "grades"}])
    except RepairsExhaustedError as error:
        pytest.fail(f"a grammar-valid reply ended the run: {error}")
    assert grades.calls == [{"gradeDict": {"math": 85}}]
    assert [action.tool for action in result.actions] == ["t", "none"]


# --- each hostile catalogue: a route, or our error naming the place -----------------------------

#: Seconds and bytes of address space one hostile catalogue gets, in a process of its own.
SECONDS, MEMORY = 60, 2 * 1024**3

#: What each refused hostile catalogue's message must name: the place, or the catalogue's type.
REFUSED = {
    "items-500": "/parameters/properties/x/items/items",
    "enum-900": "/parameters/properties/x/enum/0/0/0",
    "self-reference": "/parameters/properties/loop/properties/loop",
    "shared-22": "JSON values",
    "shared-40": "JSON values",
    "pattern-python-only": "/parameters/properties/s/pattern is not an ECMA-262 regular expression",
    "generator": "not generator",
    "dict": "not dict",
}


@pytest.mark.parametrize("name", HOSTILE)
def test_every_hostile_catalogue_ends_in_a_route_or_our_error(name: str) -> None:
    outcome = hostile_outcome(name, SECONDS, MEMORY)
    if name in REFUSED:
        assert not outcome["ok"], outcome
        assert outcome["type"] == "CatalogueError"
        assert REFUSED[name] in outcome["message"]
    else:
        assert outcome["ok"], outcome


def test_a_shared_sub_dict_is_refused_in_a_stated_time() -> None:
    import time

    schema: dict[str, Any] = {"type": "string"}
    for _ in range(60):
        schema = {"anyOf": [schema, schema]}
    started = time.perf_counter()
    with pytest.raises(CatalogueError, match="more than 200,000 JSON values"):
        route_schema([tool({"type": "object", "properties": {"x": schema}})])
    assert time.perf_counter() - started < 2


def test_the_tool_past_a_size_limit_is_named_among_small_ones() -> None:
    small = tool({"type": "object", "properties": {"q": {"type": "string"}}})
    shared: dict[str, Any] = {"type": "string"}
    for _ in range(30):
        shared = {"anyOf": [shared, shared]}
    deep: Any = {"type": "string"}
    for _ in range(300):
        deep = {"type": "array", "items": deep}
    for bad, reason in ((shared, "JSON values"), (deep, "past 256 levels of JSON")):
        catalogue = [dict(small), tool({"type": "object", "properties": {"x": bad}}, name="u"), small]
        catalogue[2] = tool({"type": "object", "properties": {"q": {"type": "string"}}}, name="v")
        with pytest.raises(CatalogueError, match=reason) as caught:
            route_schema(catalogue)
        assert caught.value.index == 1


def test_route_schema_and_parse_route_answer_frozen_values() -> None:
    assert isinstance(parse_route(REPEATED, ["t"]), Route)
    with pytest.raises((CatalogueError, GrammarError)):
        route_schema(t for t in [tool({"type": "object"})])  # type: ignore[arg-type]


def test_repairs_run_out_on_a_cut_reply_without_blaming_the_backend() -> None:
    cut = Completion(text='{"tool":"t","arguments":{"gradeDict":{', finish_reason="length", truncated=True)
    loop = RoutingLoop(ScriptedBackend([cut]), _Grades(), max_repairs=0)
    with pytest.raises(RepairsExhaustedError) as caught:
        loop.run([{"role": "user", "content": "grades"}])
    assert "raise the routing completion cap (cap=)" in str(caught.value)
    assert "enforces the route schema" not in str(caught.value)
    again = pickle.loads(pickle.dumps(caught.value))
    assert (str(again), again.truncated) == (str(caught.value), True)
    refused = RepairsExhaustedError(1, "the reply is not a JSON object", 1)
    assert "check that the backend enforces the route schema" in str(refused)


@pytest.mark.model
@pytest.mark.parametrize("name", ["optional-244", "optional-600", "items-60", "max-1e300", "escapes"])
@pytest.mark.parametrize("grammar", ["ours", "server"])
def test_the_embedded_backend_completes_or_refuses_each_hostile_route(name: str, grammar: Any) -> None:
    # What once raised RecursionError in EmbeddedLlama.complete: each grammar choice either
    # decodes under the route or refuses it as a GrammarError; a reply it writes parses.
    schema = route_schema(HOSTILE[name][1]())
    settings = Settings(json_schema=schema, max_tokens=24, grammar=grammar)
    backend = EmbeddedLlama(n_threads=TEST_THREADS, settings=settings)
    refusal: GrammarError | None = None
    try:
        completion = backend.complete([{"role": "user", "content": "Call t."}])
    except GrammarError as error:  # llama-cpp-python's converter may refuse; ours compiles all
        refusal = error
    if refusal is not None:
        assert grammar == "server", refusal
    else:
        assert completion.truncated or parse_route(completion.text, ["t"]).ok
