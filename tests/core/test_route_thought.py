"""The route's bounded reasoning slot: ``thought`` before ``tool``, parsed, kept, resumed.

The loop tests use the scripted backend, a fake by design (it chooses exactly what the model
says); the grammar and model tests drive llama.cpp's real grammar engine and the real model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.catalogues import NONE, QUESTION, tool
from support.compilers import LlamaCpp
from support.drivers import Driver
from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS, guaranteed_cap

from toolrouting import (
    ScriptedBackend,
    Settings,
    ToolOutput,
    parse_route,
    route_grammar,
    route_schema,
    route_tool_names,
    routed_backend,
)
from toolrouting._loop.run import RoutingLoop
from toolrouting._loop.system_instructions import THOUGHT_NOTE

TOOLS = [tool("lookup", word={"type": "string", "maxLength": 20})]
THOUGHT = '{"thought": "the latch is a word", "tool": "lookup", "arguments": {"word": "latch"}}'
HANDOFF = '{"thought": "done", "tool": "none"}'


def test_the_slot_is_off_by_default_and_first_in_every_alternative_when_on() -> None:
    assert route_schema(TOOLS) == json.loads(json.dumps(route_schema(TOOLS)))
    assert "thought" not in json.dumps(route_schema(TOOLS))
    schema = route_schema(TOOLS, thought=30)
    for alternative in schema["anyOf"]:
        assert next(iter(alternative["properties"])) == "thought"
        assert alternative["properties"]["thought"] == {"type": "string", "maxLength": 30}
        assert alternative["required"][:2] == ["thought", "tool"]
    # Everything else is the schema without the slot.
    for plain, slotted in zip(route_schema(TOOLS)["anyOf"], schema["anyOf"], strict=True):
        slotted["properties"].pop("thought")
        slotted["required"].remove("thought")
        assert slotted == plain


@pytest.mark.parametrize(("value", "error"), [(0, ValueError), (True, TypeError), ("8", TypeError)])
def test_a_bad_slot_length_is_refused(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="thought="):
        route_schema(TOOLS, thought=value)
    with pytest.raises(error, match="thought="):
        RoutingLoop(ScriptedBackend(), Desk(), thought=value)


def test_the_parser_returns_the_thought_and_holds_it_to_its_bound() -> None:
    route = parse_route(THOUGHT, ["lookup"], thought=30)
    assert route.ok
    assert (route.thought, route.tool, route.arguments) == (
        "the latch is a word",
        "lookup",
        {"word": "latch"},
    )
    assert route.text == THOUGHT
    assert parse_route(HANDOFF, [], thought=30).thought == "done"
    assert parse_route(NONE, [], thought=30).error == 'the reply has no "thought" key'
    assert parse_route(THOUGHT, ["lookup"], thought=5).error == (
        'the "thought" has 19 characters, over its limit of 5'
    )
    assert parse_route('{"thought": 1, "tool": "none"}', [], thought=5).error == (
        'the "thought" value is not a string'
    )
    # Without the slot, a thought is a key too many, as before.
    assert not parse_route(HANDOFF, []).ok
    assert parse_route(NONE, []).thought is None


@pytest.mark.model
def test_both_grammar_compilers_write_the_thought_first() -> None:
    llama = LlamaCpp()
    schema = route_schema(TOOLS, thought=30)
    ours = route_grammar(schema).gbnf
    for grammar in (llama.gbnf(schema), ours):
        sampler = _Accepting(llama, grammar)
        assert sampler('{"thought":"x","tool":"none"}')
        assert sampler('{"thought":"x","tool":"lookup","arguments":{"word":"latch"}}')
        assert not sampler('{"tool":"none","thought":"x"}')
        assert not sampler('{"tool":"none"}')
        assert not sampler('{"thought":"' + "x" * 31 + '","tool":"none"}')


class _Accepting:
    """Whether llama.cpp's grammar engine lets the default model's vocabulary write a text."""

    def __init__(self, llama: LlamaCpp, gbnf: str) -> None:
        self.llama, self.gbnf = llama, gbnf

    def __call__(self, text: str) -> bool:
        llama = self.llama
        original = llama.gbnf
        llama.gbnf = lambda schema: self.gbnf  # type: ignore[method-assign]
        try:
            return llama.accepts({}, text)
        finally:
            llama.gbnf = original  # type: ignore[method-assign]


class Desk:
    def tools_for_llm(self) -> list[dict[str, Any]]:
        return TOOLS

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput(f"{arguments['word']}: a fastening.")


def test_the_loop_routes_with_the_slot_and_resumes_with_it(tmp_path: Path, driver: Driver) -> None:
    whole = tmp_path / "whole.jsonl"
    backend = ScriptedBackend([THOUGHT, HANDOFF])
    result = driver.loop(backend, Desk(), thought=30, transcript=whole).run(QUESTION)
    assert [(a.tool, a.thought) for a in result.actions] == [
        ("lookup", "the latch is a word"),
        ("none", "done"),
    ]
    request = backend.requests[0]
    assert request.settings.json_schema == route_schema(TOOLS, thought=30)
    assert THOUGHT_NOTE in request.messages[0]["content"]
    assert result.messages[len(request.messages)]["content"] == THOUGHT  # committed as written
    # Killed after round 1, resumed with the same slot: the same bytes.
    lines = whole.read_bytes().splitlines(keepends=True)
    killed = tmp_path / "killed.jsonl"
    killed.write_bytes(b"".join(lines[:5]))
    resumed = driver.loop(ScriptedBackend([HANDOFF]), Desk(), thought=30, transcript=killed).resume()
    assert killed.read_bytes() == whole.read_bytes()
    assert resumed.actions == result.actions


def test_a_repair_shows_the_thought_the_route_demands(driver: Driver) -> None:
    # A reply without the thought is refused; the repair's shapes lead with the slot.
    backend = ScriptedBackend(['{"tool": "none"}', HANDOFF])
    result = driver.loop(backend, Desk(), thought=30).run(QUESTION)
    repair = backend.requests[1].messages[-1]["content"]
    assert '{"thought": "...", "tool": "lookup", "arguments": {"word": ...}}' in repair
    assert '{"thought": "...", "tool": "none"} when no tool call is needed' in repair
    assert [a.tool for a in result.actions] == ["none"]


@pytest.mark.model
def test_a_real_models_reply_with_the_slot_parses() -> None:
    from toolrouting import EmbeddedLlama as Model

    schema = route_schema(TOOLS, thought=40)
    cap = guaranteed_cap(schema)
    settings = Settings(temperature=TEST_TEMPERATURE, seed=TEST_SEED, max_tokens=cap)
    with Model(settings=settings, n_threads=TEST_THREADS, seed=TEST_SEED) as model:
        completion = routed_backend(model, schema, cap).complete(QUESTION)
    route = parse_route(completion.text, route_tool_names(TOOLS), thought=40)
    assert route.ok, (completion.text, route.error)
    assert not completion.truncated
    assert isinstance(route.thought, str)
    assert len(route.thought) <= 40
    assert list(json.loads(completion.text))[:2] == ["thought", "tool"]
