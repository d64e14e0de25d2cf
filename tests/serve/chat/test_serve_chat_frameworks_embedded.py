"""Typed output through the agent frameworks on the embedded default model, served by toolrouting serve.

The frameworks of tests/serve/chat/test_serve_chat_frameworks.py, each on the model: the contract,
not what the model writes. Every whole answer asked under a format is valid under the schema the
framework sent (an object for ``json_object``), and each framework builds its typed value from it;
the one other outcome is an answer its cap cut, whatever the framework raises then. The model
loads once (a module-scoped server) and each answer's cap is small. A run with tools is made of
known length (a forced call, then no tools or ``none``), so a model that would call again cannot
make it loop.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from support.frameworks import (
    SEARCHED,
    Note,
    Wire,
    agents_run,
    instructor_note,
    langchain_agent_run,
    langchain_structured,
    langgraph_run,
    pydantic_ai_run,
    typed_or_cut,
)
from support.serve import served_embedded

pytestmark = pytest.mark.model

#: The answer's cap where a request sets none (LangGraph's structured response sets none).
ANSWER_TOKENS = 96


@pytest.fixture(scope="module")
def embedded() -> Iterator[str]:
    with served_embedded(model="smollm2", answer_tokens=ANSWER_TOKENS) as url:
        yield url


searches: list[str] = []


def search(query: str) -> str:
    """Search the notes for a word."""
    searches.append(query)
    return SEARCHED


@pytest.fixture(autouse=True)
def fresh_searches() -> None:
    searches.clear()


@pytest.mark.parametrize("method", ["json_schema", "json_mode", "function_calling"])
def test_langchains_structured_output(embedded: str, method: Any) -> None:
    wire = Wire()
    # A cut answer is LangChain's parsing error, or for json_mode the openai SDK's LengthFinishReasonError.
    result = typed_or_cut(
        wire, lambda: langchain_structured(embedded, wire, method, max_tokens=ANSWER_TOKENS)
    )
    if result is None or wire.cut():
        return
    if method == "json_mode":
        # json_object holds the answer to an object; the model's keys are its own.
        assert isinstance(json.loads(result["raw"].content), dict)
        assert wire.checked_answers() == 1
        return
    assert result["parsing_error"] is None
    assert isinstance(result["parsed"], Note)
    if method == "function_calling":  # a forced call: its arguments are the route grammar's
        [call] = result["raw"].tool_calls
        assert call["name"] == "Note"
    else:
        assert wire.checked_answers() == 1


def test_langgraphs_response_format(embedded: str) -> None:
    wire = Wire()
    state = typed_or_cut(wire, lambda: langgraph_run(embedded, wire, [search], ["required", "none"]))
    assert len(searches) == 1  # the forced call, its arguments valid under the tool's schema
    assert wire.checked_answers() == (0 if state is None else 1)  # the structured response's
    if state is not None:
        assert isinstance(state["structured_response"], Note)


@pytest.mark.parametrize("strategy", ["auto", "provider"])
def test_langchains_create_agent(embedded: str, strategy: Any) -> None:
    # Without tools of its own: the output tool is the one call the model must make (auto), or
    # the answer is asked under the schema (provider).
    wire = Wire()
    state = typed_or_cut(wire, lambda: langchain_agent_run(embedded, wire, [], strategy))
    assert wire.checked_answers() == (1 if strategy == "provider" and state is not None else 0)
    if state is not None:
        assert isinstance(state["structured_response"], Note)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_the_agents_sdks_output_type(embedded: str, api: Any) -> None:
    from agents import function_tool

    # The first turn must call the tool, which then leaves the catalogue: the second turn is the
    # answer, asked under the schema.
    tool = function_tool(search, is_enabled=lambda context, agent: not searches)
    wire = Wire()
    result = typed_or_cut(wire, lambda: anyio.run(agents_run, embedded, wire, api, [tool], "required"))
    assert len(searches) == 1
    assert wire.checked_answers() == (0 if result is None else 1)
    if result is not None:
        assert isinstance(result.final_output, Note)


@pytest.mark.parametrize("output", ["native", "tool"])
def test_pydantic_ais_native_and_tool_output(embedded: str, output: Any) -> None:
    wire = Wire()
    result = typed_or_cut(wire, lambda: anyio.run(pydantic_ai_run, embedded, wire, output))
    wire.checked_answers()
    if result is not None:
        assert isinstance(result, Note)


def test_pydantic_ais_prompted_output_is_held_to_an_object(embedded: str) -> None:
    from pydantic_ai.exceptions import UnexpectedModelBehavior

    # The schema reaches the model as words, the format as json_object: serve holds the answer
    # to an object; whether its keys are the model's is the model's (pydantic-ai asks again).
    wire = Wire()
    try:
        result = anyio.run(pydantic_ai_run, embedded, wire, "prompted")
    except UnexpectedModelBehavior:
        result = None
    assert wire.checked_answers() >= 1 or wire.cut()
    if result is not None:
        assert isinstance(result, Note)


@pytest.mark.parametrize("mode", ["JSON_SCHEMA", "TOOLS"])
def test_instructors_json_schema_and_tools_modes(embedded: str, mode: Any) -> None:
    pytest.importorskip("instructor")
    wire = Wire()
    note = typed_or_cut(wire, lambda: instructor_note(embedded, wire, mode))
    assert wire.checked_answers() == (1 if mode == "JSON_SCHEMA" and note is not None else 0)
    if note is not None:
        assert isinstance(note, Note)
