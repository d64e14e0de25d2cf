"""Anthropic's structured output through serve: ``output_config.format`` served as chat's
``response_format`` is, by the anthropic SDK's ``messages.parse``, LangChain's ``create_agent``
with a Claude model name (its ``ProviderStrategy``, chosen by the name) and pydantic-ai's
``NativeOutput`` on ``AnthropicModel`` (which pydantic-ai allows only for a Claude name).

The scripted fake answers as scripted, so these tests read what each client sent, what the
backend was asked (the answer's schema; with tools, the route whose ``none`` holds the answer,
one request) and the typed value the client built; the test marked ``model`` asks the embedded
model and asserts the guarantee only: the text parses under the schema, or the answer was cut.
"""

# ruff: noqa: F811 - the fixtures imported from support.anthropic_served are the tests' parameters
from __future__ import annotations

import json
from typing import Any

import anthropic
import anyio
import httpx2
import pytest
from support.anthropic_served import backend, root, scripted  # noqa: F401 - the fixtures
from support.frameworks import ASK, SEARCHED, Note
from support.serve import served_embedded

from toolrouting import AsyncScriptedBackend

#: A Claude model name: the frameworks choose their native structured output by it.
CLAUDE = "claude-sonnet-5-5"
NOTE = Note(title="A latch", stars=4)
ANSWER = NOTE.model_dump_json()
SEARCH = '{"tool":"search","arguments":{"query":"latch"}}'
ANSWERED = '{"tool":"none","answer":' + ANSWER + "}"


def search(query: str) -> str:
    """Search the notes for a word."""
    return SEARCHED


class Sent:
    """The request bodies a client sent, in order (an httpx event hook reads them)."""

    def __init__(self) -> None:
        self.bodies: list[Any] = []

    def hook(self, request: httpx2.Request) -> None:
        self.bodies.append(json.loads(request.content or b"null"))

    async def async_hook(self, request: httpx2.Request) -> None:
        self.hook(request)


def held_schema(backend: AsyncScriptedBackend) -> Any:
    """The schema the last decision's ``none`` holds the answer under."""
    route = backend.requests[-1].settings.json_schema
    assert route is not None
    (none,) = [alt for alt in route["anyOf"] if alt["properties"]["tool"].get("const") == "none"]
    return none["properties"]["answer"]


@pytest.mark.parametrize("stream", [False, True])
def test_the_sdks_parse_sends_output_config_and_reads_the_answer_under_the_schema(
    backend: AsyncScriptedBackend, root: str, stream: bool
) -> None:
    backend.enqueue(ANSWER)
    sent = Sent()
    http = httpx2.Client(event_hooks={"request": [sent.hook]})
    with anthropic.Anthropic(base_url=root, api_key="unused", max_retries=0, http_client=http) as client:
        ask: dict[str, Any] = {
            "model": CLAUDE,
            "max_tokens": 256,
            "messages": [{"role": "user", "content": ASK}],
        }
        if stream:
            with client.messages.stream(**ask, output_format=Note) as events:
                parsed = events.get_final_message().parsed_output
        else:
            parsed = client.messages.parse(**ask, output_format=Note).parsed_output
    assert parsed == NOTE
    form = sent.bodies[0]["output_config"]["format"]
    [request] = backend.requests
    assert request.settings.json_schema == form["schema"]


def test_with_tools_the_routes_none_holds_the_answer_in_one_request(
    backend: AsyncScriptedBackend, root: str
) -> None:
    backend.enqueue(ANSWERED)
    with anthropic.Anthropic(base_url=root, api_key="unused", max_retries=0) as client:
        tool: Any = {
            "name": "search",
            "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
        }
        message = client.messages.parse(
            model=CLAUDE,
            max_tokens=256,
            messages=[{"role": "user", "content": ASK}],
            tools=[tool],
            output_format=Note,
        )
    assert message.parsed_output == NOTE
    assert message.stop_reason == "end_turn"
    assert held_schema(backend)["properties"]["stars"]["type"] == "integer"
    assert len(backend.requests) == 1


def test_langchains_create_agent_with_a_claude_name_is_the_answer_in_none_under_the_schema(
    backend: AsyncScriptedBackend, root: str
) -> None:
    from langchain.agents import create_agent
    from langchain_anthropic import ChatAnthropic

    backend.enqueue(SEARCH, ANSWERED)
    model = ChatAnthropic(model=CLAUDE, base_url=root, api_key="unused", max_retries=0)
    agent = create_agent(model, [search], response_format=Note)
    state = agent.invoke({"messages": [{"role": "user", "content": ASK}]})
    assert state["structured_response"] == NOTE
    # LangChain chose the native way by the name: both decisions carried the tools and the
    # format, so each route's none holds the answer under the model's schema.
    for request in backend.requests:
        assert request.settings.json_schema is not None
        (none,) = [
            a for a in request.settings.json_schema["anyOf"] if a["properties"]["tool"]["const"] == "none"
        ]
        assert set(none["properties"]["answer"]["properties"]) == {"title", "stars"}


@pytest.mark.parametrize("stream", [False, True])
def test_pydantic_ais_native_output_on_anthropic_model_is_the_answer_in_none(
    backend: AsyncScriptedBackend, root: str, stream: bool
) -> None:
    from pydantic_ai import Agent, NativeOutput
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    backend.enqueue(SEARCH, ANSWERED)
    sent = Sent()

    async def run() -> Note:
        async with (
            httpx2.AsyncClient(event_hooks={"request": [sent.async_hook]}) as http,
            anthropic.AsyncAnthropic(
                base_url=root, api_key="unused", max_retries=0, http_client=http
            ) as client,
        ):
            model = AnthropicModel(CLAUDE, provider=AnthropicProvider(anthropic_client=client))
            agent = Agent(model, output_type=NativeOutput(Note), tools=[search], retries=1)
            if not stream:
                return (await agent.run(ASK)).output
            async with agent.run_stream(ASK) as streamed:
                return await streamed.get_output()

    assert anyio.run(run) == NOTE
    assert sent.bodies[-1]["output_config"]["format"]["type"] == "json_schema"
    assert held_schema(backend) == sent.bodies[-1]["output_config"]["format"]["schema"]


@pytest.mark.parametrize(
    ("given", "param"),
    [
        ({"output_config": {"format": {"type": "text"}}}, "output_config.format.type"),
        ({"output_config": {"format": {"type": "json_schema"}}}, "output_config.format.schema"),
        (
            {
                "output_format": {"type": "json_schema", "schema": {"type": "object"}},
                "output_config": {"format": {"type": "json_schema", "schema": {"type": "array"}}},
            },
            "output_format",
        ),
        (
            {
                "output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}},
                "stop_sequences": ["}"],
            },
            "stop_sequences",
        ),
    ],
)
def test_a_bad_format_is_a_400_naming_its_field(root: str, given: dict[str, Any], param: str) -> None:
    body = {"model": CLAUDE, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}], **given}
    reply = httpx2.post(f"{root}/v1/messages", json=body)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["message"].startswith(f"{param}: ")


@pytest.mark.model
def test_the_sdks_parse_on_the_model_is_valid_under_the_schema_or_cut() -> None:
    with (
        served_embedded() as url,
        anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="unused", max_retries=0) as client,
    ):
        message = client.messages.create(
            model=CLAUDE,
            max_tokens=64,
            messages=[{"role": "user", "content": ASK}],
            output_config={"format": {"type": "json_schema", "schema": Note.model_json_schema()}},
        )
    [block] = message.content
    assert block.type == "text"
    if message.stop_reason != "max_tokens":
        Note.model_validate_json(block.text)


def test_pydantic_ais_tool_output_on_anthropic_model_is_a_forced_call_of_its_final_result_tool(
    backend: AsyncScriptedBackend, root: str
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    backend.enqueue(SEARCH, '{"tool":"final_result","arguments":' + ANSWER + "}")

    async def run() -> Note:
        async with anthropic.AsyncAnthropic(base_url=root, api_key="unused", max_retries=0) as client:
            model = AnthropicModel("local", provider=AnthropicProvider(anthropic_client=client))
            return (await Agent(model, output_type=Note, tools=[search]).run(ASK)).output

    assert anyio.run(run) == NOTE
    offered = backend.requests[-1].settings.json_schema
    assert offered is not None
    assert "final_result" in [alternative["properties"]["tool"]["const"] for alternative in offered["anyOf"]]
