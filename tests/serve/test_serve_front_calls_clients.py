"""Several calls in one decision through the frameworks built on the SDKs, on a server of up to
three calls a decision: the OpenAI Agents SDK's default model (the Responses API) and pydantic-ai's
``AnthropicModel`` (the Messages API) each run both calls of one reply and send their results back,
which reach the backend as the decision a run commits. The ``model`` tests serve the embedded
default model and assert only what the grammar guarantees: one to three calls, each valid, each
under its own id, never which tools.
"""

# ruff: noqa: F811 - the fixtures imported from support.front_calls are the tests' parameters
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import anyio
import jsonschema
import openai
import pytest
from support.anthropic_served import backend  # noqa: F401 - drained, on the module's scripted server
from support.front_calls import (  # noqa: F401 - the scripted server of three calls
    ANSWER,
    ANTHROPIC_TOOLS,
    FLAT,
    QUESTION,
    RESULTS,
    TWO,
    function_calls,
    scripted,
)
from support.serve import served_embedded

from toolrouting import AsyncScriptedBackend

SCHEMAS = {tool["name"]: tool["parameters"] for tool in FLAT}


def both_results_follow_the_decision(backend: AsyncScriptedBackend) -> None:
    """The decision after a client ran both calls of ``TWO``: the array, then each result in order."""
    decision = [message["content"] for message in backend.requests[1].messages]
    assert decision[-3:] == [
        TWO,
        f"Tool result for search (call route-1):\n{RESULTS['search']}",
        f"Tool result for read (call route-2):\n{RESULTS['read']}",
    ]


def test_the_agents_sdk_runs_both_calls_of_a_response_and_sends_them_back(
    scripted: tuple[AsyncScriptedBackend, str], backend: AsyncScriptedBackend
) -> None:
    import agents
    from agents import function_tool

    ran: list[str] = []

    @function_tool
    def search(query: str) -> str:
        """Search the notes for a word."""
        ran.append("search")
        return RESULTS["search"]

    @function_tool
    def read(id: str) -> str:
        """Read one note by its id."""
        ran.append("read")
        return RESULTS["read"]

    agents.set_tracing_disabled(True)
    backend.enqueue(TWO, '{"tool":"none"}', ANSWER)

    async def run() -> Any:
        async with openai.AsyncOpenAI(
            base_url=f"{scripted[1]}/v1", api_key="unused", max_retries=0
        ) as client:
            # The default model, on its default API (responses), from this run's client alone.
            config = agents.RunConfig(model_provider=agents.OpenAIProvider(openai_client=client))
            agent = agents.Agent(name="notes", tools=[search, read])
            return await agents.Runner.run(agent, QUESTION, run_config=config)

    assert anyio.run(run).final_output == ANSWER
    assert sorted(ran) == ["read", "search"]
    both_results_follow_the_decision(backend)


def test_pydantic_ais_anthropic_model_runs_both_tool_uses_and_sends_them_back(
    scripted: tuple[AsyncScriptedBackend, str], backend: AsyncScriptedBackend
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    ran: list[str] = []

    def search(query: str) -> str:
        """Search the notes for a word."""
        ran.append("search")
        return RESULTS["search"]

    def read(id: str) -> str:
        """Read one note by its id."""
        ran.append("read")
        return RESULTS["read"]

    backend.enqueue(TWO, '{"tool":"none"}', ANSWER)

    async def run() -> Any:
        async with anthropic.AsyncAnthropic(base_url=scripted[1], api_key="unused", max_retries=0) as client:
            model = AnthropicModel("scripted", provider=AnthropicProvider(anthropic_client=client))
            return await Agent(model, tools=[search, read]).run(QUESTION)

    assert anyio.run(run).output == ANSWER
    assert sorted(ran) == ["read", "search"]
    both_results_follow_the_decision(backend)


@pytest.fixture(scope="module")
def embedded() -> Iterator[str]:
    """The embedded default model, served with decisions of up to three calls; the base URL
    without ``/v1``."""
    with served_embedded(model="smollm2", answer_tokens=32, max_calls=3) as url:
        yield url.removesuffix("/v1")


def checked(calls: list[tuple[str, str, Any]]) -> None:
    """One to three calls, each of an offered tool, its input valid, each under the next call id."""
    assert 1 <= len(calls) <= 3
    assert [call_id for call_id, _, _ in calls] == [f"route-{n}" for n in range(1, len(calls) + 1)]
    for _, name, arguments in calls:
        jsonschema.validate(arguments, SCHEMAS[name])


@pytest.mark.model
def test_the_model_through_responses_makes_one_to_three_valid_calls(embedded: str) -> None:
    with openai.OpenAI(base_url=f"{embedded}/v1", api_key="unused", max_retries=0) as client:
        ask: dict[str, Any] = {
            "model": "smollm2",
            "input": QUESTION,
            "tools": FLAT,
            "tool_choice": "required",
        }
        whole = client.responses.create(**ask)
        with client.responses.stream(**ask) as stream:
            final = stream.get_final_response()
    for response in (whole, final):
        checked([(c, name, json.loads(arguments)) for c, name, arguments in function_calls(response.output)])


@pytest.mark.model
def test_the_model_through_messages_makes_one_to_three_valid_tool_uses(embedded: str) -> None:
    with anthropic.Anthropic(base_url=embedded, api_key="unused", max_retries=0) as client:
        ask: dict[str, Any] = {
            "model": "smollm2",
            "max_tokens": 32,
            "messages": [{"role": "user", "content": QUESTION}],
            "tools": ANTHROPIC_TOOLS,
            "tool_choice": {"type": "any"},
        }
        whole = client.messages.create(**ask)
        with client.messages.stream(**ask) as stream:
            rebuilt = stream.get_final_message()
    for message in (whole, rebuilt):
        assert message.stop_reason == "tool_use"
        uses = [block for block in message.content if isinstance(block, anthropic.types.ToolUseBlock)]
        assert len(uses) == len(message.content)
        checked([(use.id, use.name, use.input) for use in uses])
