"""Typed output through the agent frameworks, served by toolrouting serve over the scripted fake.

LangChain's ``with_structured_output`` (``json_schema``, ``json_mode``, ``function_calling``),
LangGraph's ``create_react_agent(..., response_format=...)``, the OpenAI Agents SDK's
``Agent(output_type=...)`` on chat completions and on Responses, pydantic-ai's ``NativeOutput``,
``PromptedOutput`` and tool output, and instructor's ``Mode.JSON_SCHEMA``. The fake answers as
scripted, so these tests read what each framework sent, what the backend was asked (the answer's
schema, its name and strictness; the decision's route) and the typed value the framework built.
tests/serve/chat/test_serve_chat_frameworks_embedded.py runs the same on the embedded model.
"""

# ruff: noqa: F811 - the fixture imported from support.anthropic_served is the tests' parameter
from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import anyio
import openai
import pytest
from pydantic import BaseModel, Field
from support.anthropic_served import backend  # noqa: F401 - drained, on this module's own scripted
from support.frameworks import (
    ASK,
    SEARCHED,
    Note,
    Wire,
    agents_run,
    instructor_note,
    langchain_agent_run,
    langchain_structured,
    langgraph_run,
    pydantic_ai_run,
)
from support.serve import served

from toolrouting import AsyncOpenAICompatible, AsyncScriptedBackend
from toolrouting._serve import serve_app

NOTE = Note(title="A latch", stars=4)
ANSWER = NOTE.model_dump_json()
SEARCH = '{"tool":"search","arguments":{"query":"latch"}}'
NONE = '{"tool":"none"}'
#: The none of a route that holds the answer: with tools and a response_format, one request.
ANSWERED = '{"tool":"none","answer":' + ANSWER + "}"


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[AsyncScriptedBackend, str]]:
    backend = AsyncScriptedBackend()
    with served(serve_app(backend, model="scripted")) as url:
        yield backend, url


@pytest.fixture
def url(scripted: tuple[AsyncScriptedBackend, str]) -> str:
    return scripted[1]


def search(query: str) -> str:
    """Search the notes for a word."""
    searches.append(query)
    return SEARCHED


searches: list[str] = []


@pytest.fixture(autouse=True)
def fresh_searches() -> None:
    searches.clear()


def offered(schema: Any) -> set[str]:
    """The tool names a route schema offers (``none`` among them when it is offered)."""
    if isinstance(schema, list):
        return set().union(*(offered(item) for item in schema))
    if not isinstance(schema, dict):
        return set()
    tool = schema.get("properties", {}).get("tool", {})
    found = {tool["const"]} if isinstance(tool, dict) and "const" in tool else set()
    return found.union(*(offered(value) for value in schema.values()))


def asked_schema(backend: AsyncScriptedBackend) -> tuple[Any, str | None, bool]:
    """The last request's schema, its name and strictness."""
    settings = backend.requests[-1].settings
    return settings.json_schema, settings.json_schema_name, settings.json_schema_strict


def held_schema(backend: AsyncScriptedBackend) -> Any:
    """The schema the last request's route holds the answer under: its none's ``answer``."""
    route = backend.requests[-1].settings.json_schema
    assert route is not None
    assert backend.requests[-1].settings.json_schema_name == "tool_route"
    (none,) = [alt for alt in route["anyOf"] if alt["properties"]["tool"].get("const") == "none"]
    return none["properties"]["answer"]


def test_langchain_json_schema_is_the_answer_under_the_models_schema(
    backend: AsyncScriptedBackend, url: str
) -> None:
    backend.enqueue(ANSWER)
    wire = Wire()
    result = langchain_structured(url, wire, "json_schema")
    assert result["parsed"] == NOTE
    assert wire.sent[-1]["response_format"]["type"] == "json_schema"
    assert asked_schema(backend) == (Note.model_json_schema() | {"additionalProperties": False}, "Note", True)


# LangChain's streamed message carries the parsed value in a field its type declares None, and
# pydantic warns when it is serialised: LangChain's own, whatever the server.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
def test_langchains_structured_output_streams_the_same_value(backend: AsyncScriptedBackend, url: str) -> None:
    from langchain_openai import ChatOpenAI

    backend.enqueue(ANSWER)
    model = ChatOpenAI(base_url=url, api_key="unused", model="local", max_retries=0, timeout=30)
    assert list(model.with_structured_output(Note).stream("Write a note."))[-1] == NOTE
    assert asked_schema(backend)[1:] == ("Note", True)


def test_langchain_json_mode_is_any_object(backend: AsyncScriptedBackend, url: str) -> None:
    backend.enqueue(ANSWER)
    result = langchain_structured(url, Wire(), "json_mode")
    assert result["parsed"] == NOTE
    assert asked_schema(backend) == ({"type": "object"}, "json_object", False)


def test_langchain_function_calling_is_a_forced_call_of_the_models_tool(
    backend: AsyncScriptedBackend, url: str
) -> None:
    # LangChain declares the model as a tool and names it in tool_choice: the decision is that
    # tool alone, without none, and its arguments are the typed value.
    backend.enqueue('{"tool":"Note","arguments":' + ANSWER + "}")
    wire = Wire()
    result = langchain_structured(url, wire, "function_calling")
    assert result["parsed"] == NOTE
    sent = wire.sent[-1]
    assert (sent["tool_choice"], sent["parallel_tool_calls"]) == (
        {"type": "function", "function": {"name": "Note"}},
        False,
    )
    [decision] = backend.requests
    assert decision.settings.json_schema_name == "tool_route"
    assert offered(decision.settings.json_schema) == {"Note"}


def test_langgraph_routes_the_loop_and_asks_the_structured_response_under_the_schema(
    backend: AsyncScriptedBackend, url: str
) -> None:
    backend.enqueue(SEARCH, NONE, "It keeps the door shut.", ANSWER)
    state = langgraph_run(url, Wire(), [search])
    assert state["structured_response"] == NOTE
    assert searches == ["latch"]
    first, second, answer, structured = backend.requests
    assert offered(first.settings.json_schema) == offered(second.settings.json_schema) == {"search", "none"}
    assert answer.settings.json_schema is None  # the loop's own answer is free text
    # The structured response is one more request without tools: the whole conversation as it
    # went, then the answer under the schema.
    assert asked_schema(backend)[1:] == ("Note", True)
    assert structured.messages[-1] == {"role": "assistant", "content": "It keeps the door shut."}


def test_langchains_create_agent_makes_the_model_call_its_output_tool(
    backend: AsyncScriptedBackend, url: str
) -> None:
    # For a model name it does not know, create_agent gives the output a tool of its own and
    # demands a call every turn: each decision is without none, the last the output tool's.
    backend.enqueue(SEARCH, '{"tool":"Note","arguments":' + ANSWER + "}")
    wire = Wire()
    state = langchain_agent_run(url, wire, [search], "auto")
    assert state["structured_response"] == NOTE
    assert searches == ["latch"]
    assert [sent["tool_choice"] for sent in wire.sent] == ["required", "required"]
    assert all(offered(r.settings.json_schema) == {"search", "Note"} for r in backend.requests)


def test_langchains_create_agent_provider_strategy_is_the_answer_in_none_under_the_schema(
    backend: AsyncScriptedBackend, url: str
) -> None:
    backend.enqueue(SEARCH, ANSWERED)
    wire = Wire()
    state = langchain_agent_run(url, wire, [search], "provider")
    assert state["structured_response"] == NOTE
    assert searches == ["latch"]
    form = wire.sent[-1]["response_format"]["json_schema"]
    assert held_schema(backend) == form["schema"]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_the_agents_sdks_output_type_is_the_answer_in_none_under_the_schema(
    backend: AsyncScriptedBackend, url: str, api: Any, stream: bool
) -> None:
    from agents import function_tool

    backend.enqueue(SEARCH, ANSWERED)
    wire = Wire()
    result = anyio.run(functools.partial(agents_run, url, wire, api, [function_tool(search)], stream=stream))
    assert bool(wire.sent[-1].get("stream")) is stream
    assert result.final_output == NOTE
    assert searches == ["latch"]
    sent = wire.sent[-1]
    form = sent["response_format"]["json_schema"] if api == "chat" else sent["text"]["format"]
    assert (form["name"], form["strict"]) == ("final_output", True)
    _, again = backend.requests  # the second decision is the answer too
    assert offered(again.settings.json_schema) == {"search", "none"}
    assert held_schema(backend) == form["schema"]


@pytest.mark.parametrize("stream", [False, True])
def test_pydantic_ais_native_output_is_the_answer_in_none_under_the_schema(
    backend: AsyncScriptedBackend, url: str, stream: bool
) -> None:
    backend.enqueue(SEARCH, ANSWERED)
    wire = Wire()
    note = anyio.run(functools.partial(pydantic_ai_run, url, wire, "native", [search], stream=stream))
    assert note == NOTE
    assert bool(wire.sent[-1].get("stream")) is stream
    assert searches == ["latch"]
    form = wire.sent[-1]["response_format"]
    assert form["type"] == "json_schema"
    assert held_schema(backend) == form["json_schema"]["schema"]


def test_pydantic_ais_prompted_output_is_any_object_with_the_schema_in_the_prompt(
    backend: AsyncScriptedBackend, url: str
) -> None:
    backend.enqueue(SEARCH, ANSWERED)
    result = anyio.run(pydantic_ai_run, url, Wire(), "prompted", [search])
    assert result == NOTE
    # The schema reaches the model as words only: what serve can hold the answer to is an object.
    assert held_schema(backend) == {"type": "object"}
    # The decision that answers keeps the client's system prompt, and with it the schema's words.
    system, *_ = backend.requests[-1].messages
    assert system["role"] == "system"
    assert '"title"' in system["content"]


def test_pydantic_ais_tool_output_is_a_forced_call_of_its_final_result_tool(
    backend: AsyncScriptedBackend, url: str
) -> None:
    backend.enqueue('{"tool":"final_result","arguments":' + ANSWER + "}")
    wire = Wire()
    result = anyio.run(pydantic_ai_run, url, wire, "tool")
    assert result == NOTE
    assert wire.sent[-1]["tool_choice"] == "required"
    assert offered(backend.requests[-1].settings.json_schema) == {"final_result"}


def test_instructors_json_schema_mode_is_the_answer_under_the_schema(
    backend: AsyncScriptedBackend, url: str
) -> None:
    # instructor is not in the dev extra: every release pins jiter below the version the openai
    # SDK the other clients need requires (docs/serve.md); scripts/setup.sh installs it unpinned.
    pytest.importorskip("instructor")
    backend.enqueue(ANSWER)
    note = instructor_note(url, Wire())
    assert isinstance(note, Note)
    assert note.model_dump() == NOTE.model_dump()
    assert asked_schema(backend) == (Note.model_json_schema(), "Note", False)


def test_instructors_tools_mode_is_a_forced_call_of_the_models_tool(
    backend: AsyncScriptedBackend, url: str
) -> None:
    pytest.importorskip("instructor")
    backend.enqueue('{"tool":"Note","arguments":' + ANSWER + "}")
    wire = Wire()
    note = instructor_note(url, wire, "TOOLS")
    assert note.model_dump() == NOTE.model_dump()
    assert wire.sent[-1]["tool_choice"] == {"type": "function", "function": {"name": "Note"}}
    assert offered(backend.requests[-1].settings.json_schema) == {"Note"}


class Rated(BaseModel):
    """A model whose range our grammar holds to sign and digits only, so cannot guarantee."""

    stars: int = Field(ge=1, le=5)


def test_a_schema_the_grammar_cannot_guarantee_reaches_the_framework_as_a_400_naming_the_keyword() -> None:
    from langchain_openai import ChatOpenAI

    # A llama.cpp server's backend decodes under our grammar: the schema is refused before any
    # request is made (nothing listens on port 9).
    backend = AsyncOpenAICompatible("http://127.0.0.1:9", dialect="llama.cpp")
    with served(serve_app(backend)) as base:
        model = ChatOpenAI(base_url=base, api_key="unused", model="local", max_retries=0, timeout=30)
        with pytest.raises(openai.BadRequestError) as caught:
            model.with_structured_output(Rated, method="json_schema").invoke("Rate the latch.")
    assert caught.value.param == "response_format.json_schema.schema.properties.stars.minimum"
    assert caught.value.code == "unsupported_schema"


def test_pydantic_ais_openai_model_string_reaches_the_server_by_its_environment(
    backend: AsyncScriptedBackend, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pydantic_ai import Agent

    # "openai:NAME" builds its client from OPENAI_BASE_URL and OPENAI_API_KEY, as a user sets them.
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    backend.enqueue(SEARCH, NONE, "It keeps the door shut.")

    async def run() -> str:
        agent = Agent("openai:local", tools=[search])
        try:
            output: str = (await agent.run(ASK)).output
            return output
        finally:
            await agent.model.client.close()  # type: ignore[union-attr]  # its connections, now

    assert anyio.run(run) == "It keeps the door shut."
    assert searches == ["latch"]
