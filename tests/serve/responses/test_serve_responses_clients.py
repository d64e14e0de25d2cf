"""The Responses front through real clients on loopback: the openai SDK (``responses.create``,
``responses.stream``, continuing by ``previous_response_id``), the OpenAI Agents SDK's default
model, pydantic-ai's ``OpenAIResponsesModel`` and LangChain's ``ChatOpenAI(use_responses_api=True)``.

On the scripted backend they assert what the backend is sent and what each client rebuilds,
and that one conversation sent through chat completions and through Responses reaches the
backend as the same messages and settings; the ``model`` tests serve the embedded default model
and assert the contract only (shapes, tool_choice's semantics, arguments valid against the schema).
"""

# ruff: noqa: F811 - the fixtures imported from support.serve_clients are the tests' parameters
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import jsonschema
import openai
import pytest
from openai.types.responses import ResponseFunctionToolCall
from openai.types.responses.response_input_param import FunctionCallOutput
from support.serve import TOOLS, drained
from support.serve_clients import embedded, scripted  # noqa: F401 - the scripted backend and the model, on loopback

from toolrouting import AsyncScriptedBackend

#: The notes catalogue as the Responses API declares tools: flat.
FLAT: list[Any] = [{"type": "function", **tool["function"]} for tool in TOOLS]
SCHEMAS = {tool["name"]: tool["parameters"] for tool in FLAT}
QUESTION = "What does the latch on the storage-room door do?"
ACTION = '{"tool":"search","arguments":{"query":"latch"}}'


@pytest.fixture
def backend(scripted: tuple[AsyncScriptedBackend, str]) -> Iterator[AsyncScriptedBackend]:
    with drained(scripted[0]) as backend:
        yield backend


def answered(call: ResponseFunctionToolCall, output: str) -> FunctionCallOutput:
    """The input item that gives a call's result back."""
    return {"type": "function_call_output", "call_id": call.call_id, "output": output}


def checked_call(output: list[Any], names: set[str]) -> Any:
    """The one function call of a response's output, checked against the contract."""
    [call] = output
    assert call.type == "function_call"
    assert call.name in names
    assert call.call_id.startswith("route-")
    jsonschema.validate(json.loads(call.arguments), SCHEMAS[call.name])
    return call


def test_the_sdk_creates_streams_and_continues_a_response(
    scripted: tuple[AsyncScriptedBackend, str], backend: AsyncScriptedBackend
) -> None:
    url = scripted[1]
    backend.enqueue(ACTION, ACTION, '{"tool":"none"}', "It holds the door shut.")
    with openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client:
        whole = client.responses.create(model="scripted", input=QUESTION, tools=FLAT)
        with client.responses.stream(model="scripted", input=QUESTION, tools=FLAT) as stream:
            deltas = [
                event.delta for event in stream if event.type == "response.function_call_arguments.delta"
            ]
            final = stream.get_final_response()
        call = checked_call(whole.output, {"search"})
        rebuilt = checked_call(final.output, {"search"})
        assert (rebuilt.call_id, rebuilt.name, rebuilt.arguments) == (call.call_id, call.name, call.arguments)
        assert "".join(deltas) == call.arguments
        assert final.usage is not None
        assert whole.usage is not None
        assert final.usage.total_tokens == whole.usage.total_tokens
        result = answered(call, "M1: the latch")
        after = client.responses.create(
            model="scripted",
            previous_response_id=final.id,
            input=[result],
            tools=FLAT,
        )
        assert after.output_text == "It holds the door shut."
        assert client.responses.retrieve(after.id).output_text == after.output_text
        client.responses.delete(after.id)
        with pytest.raises(openai.NotFoundError):
            client.responses.retrieve(after.id)
        with pytest.raises(openai.BadRequestError) as caught:
            client.responses.create(model="scripted", input=QUESTION, tools=[{"type": "local_shell"}])
        assert (caught.value.code, caught.value.param) == ("unsupported_tool", "tools[0].type")


def test_the_async_sdk_streams_an_answer(
    scripted: tuple[AsyncScriptedBackend, str], backend: AsyncScriptedBackend
) -> None:
    url = scripted[1]
    backend.enqueue("The latch holds the door shut.")

    async def ask() -> tuple[list[str], Any]:
        async with (
            openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0) as client,
            client.responses.stream(model="scripted", input=QUESTION, instructions="Be brief.") as stream,
        ):
            texts = [event.delta async for event in stream if event.type == "response.output_text.delta"]
            return texts, await stream.get_final_response()

    texts, final = anyio.run(ask)
    assert "".join(texts) == final.output_text == "The latch holds the door shut."
    assert final.status == "completed"


def test_a_conversation_reaches_the_backend_as_the_same_bytes_through_chat_and_responses(
    scripted: tuple[AsyncScriptedBackend, str], backend: AsyncScriptedBackend
) -> None:
    url = scripted[1]
    chat_messages: list[Any] = [
        {"role": "system", "content": "Answer from the notes."},
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"query":"latch"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "M1: the latch holds the door."},
    ]
    items: list[Any] = [
        {"role": "user", "content": [{"type": "input_text", "text": QUESTION}]},
        {"type": "function_call", "call_id": "c1", "name": "search", "arguments": '{"query":"latch"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "M1: the latch holds the door."},
    ]
    for _ in range(2):
        backend.enqueue('{"tool":"none"}', "It holds the door.")
    with openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client:
        client.chat.completions.create(
            model="scripted", messages=chat_messages, tools=TOOLS, max_tokens=40, temperature=0.5, top_p=0.9
        )
        client.responses.create(
            model="scripted",
            instructions="Answer from the notes.",
            input=items,
            tools=FLAT,
            max_output_tokens=40,
            temperature=0.5,
            top_p=0.9,
        )
    by_chat, by_responses = backend.requests[:2], backend.requests[2:]
    for chat_sent, responses_sent in zip(by_chat, by_responses, strict=True):
        assert chat_sent.messages == responses_sent.messages
        assert chat_sent.settings == responses_sent.settings


def test_the_agents_sdks_default_model_runs_a_function_tool(
    scripted: tuple[AsyncScriptedBackend, str], backend: AsyncScriptedBackend
) -> None:
    from agents import (
        Agent,
        Runner,
        function_tool,
        set_default_openai_api,
        set_default_openai_client,
        set_tracing_disabled,
    )

    url = scripted[1]
    looked_up: list[str] = []

    @function_tool
    def search(query: str) -> str:
        """Search the notes."""
        looked_up.append(query)
        return "M1: the latch holds the door shut."

    set_tracing_disabled(True)
    set_default_openai_api("responses")
    backend.enqueue(*[ACTION, '{"tool":"none"}', "It holds the door shut."] * 2)
    agent = Agent(name="notes", instructions="Answer from the notes.", tools=[search])

    async def run() -> tuple[Any, Any]:
        async with openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0) as client:
            set_default_openai_client(client)  # the default model, on its default API: responses
            whole = await Runner.run(agent, QUESTION)
            streamed = Runner.run_streamed(agent, QUESTION)
            async for _ in streamed.stream_events():
                pass
            return whole, streamed

    whole, streamed = anyio.run(run)
    assert looked_up == ["latch", "latch"]
    assert whole.final_output == streamed.final_output == "It holds the door shut."
    assert backend.requests[2].messages[-1]["content"].startswith("What was found:")
    assert backend.requests[5].messages == backend.requests[2].messages


def test_pydantic_ai_runs_a_tool_through_its_responses_model(
    scripted: tuple[AsyncScriptedBackend, str], backend: AsyncScriptedBackend
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    url = scripted[1]
    agent = Agent(instructions="Answer from the notes.")
    looked_up: list[str] = []

    @agent.tool_plain
    def search(query: str) -> str:
        """Search the notes."""
        looked_up.append(query)
        return "M1: the latch holds the door shut."

    backend.enqueue(ACTION, '{"tool":"none"}', "It holds the door shut.")

    async def run() -> Any:
        # run_sync would leave its event loop, and the client's connection, open past the test.
        async with openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0) as client:
            model = OpenAIResponsesModel("scripted", provider=OpenAIProvider(openai_client=client))
            return await agent.run(QUESTION, model=model)

    result = anyio.run(run)
    assert looked_up == ["latch"]
    assert result.output == "It holds the door shut."


def test_langchain_chat_openai_on_the_responses_api(
    scripted: tuple[AsyncScriptedBackend, str], backend: AsyncScriptedBackend
) -> None:
    from langchain_core.messages import AIMessageChunk
    from langchain_openai import ChatOpenAI

    url = scripted[1]
    llm = ChatOpenAI(model="scripted", base_url=url, api_key="unused", use_responses_api=True, max_retries=0)
    backend.enqueue(ACTION, ACTION, "It holds the door shut.")
    bound = llm.bind_tools(FLAT, tool_choice="required")
    message = bound.invoke(QUESTION)
    assert [(call["name"], call["args"], call["id"]) for call in message.tool_calls] == [
        ("search", {"query": "latch"}, "route-1")
    ]
    chunks = list(bound.stream(QUESTION))
    assert all(isinstance(chunk, AIMessageChunk) for chunk in chunks)
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole = whole + chunk  # type: ignore[assignment]  # AIMessageChunk + AIMessageChunk is one
    assert isinstance(whole, AIMessageChunk)
    assert [(call["name"], call["args"]) for call in whole.tool_calls] == [("search", {"query": "latch"})]
    assert llm.invoke(QUESTION).text == "It holds the door shut."


@pytest.mark.model
def test_the_model_through_responses_makes_one_valid_call_and_continues(embedded: str) -> None:
    with openai.OpenAI(base_url=embedded, api_key="unused", max_retries=0) as client:
        first = client.responses.create(model="smollm2", input=QUESTION, tools=FLAT, tool_choice="required")
        call = checked_call(first.output, {"search", "read"})
        with client.responses.stream(
            model="smollm2", input=QUESTION, tools=FLAT, tool_choice={"type": "function", "name": "read"}
        ) as stream:
            checked_call(stream.get_final_response().output, {"read"})
        result = answered(call, "M1: the latch holds the door.")
        after = client.responses.create(
            model="smollm2",
            previous_response_id=first.id,
            input=[result],
            tools=FLAT,
            tool_choice="none",
            max_output_tokens=16,
        )
    assert after.status in ("completed", "incomplete")
    assert [item.type for item in after.output] == ["message"]
    assert after.usage is not None
    assert 0 < after.usage.output_tokens <= 16


def test_langchain_continues_by_previous_response_id(
    scripted: tuple[AsyncScriptedBackend, str], backend: AsyncScriptedBackend
) -> None:
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_openai import ChatOpenAI

    url = scripted[1]
    llm = ChatOpenAI(
        model="scripted",
        base_url=url,
        api_key="unused",
        use_responses_api=True,
        use_previous_response_id=True,
        max_retries=0,
    ).bind_tools(FLAT)
    backend.enqueue(ACTION, '{"tool":"none"}', "It holds the door shut.")
    question = HumanMessage(QUESTION)
    called = llm.invoke([question])
    [call] = called.tool_calls
    result = ToolMessage("M1: the latch holds the door shut.", tool_call_id=call["id"])
    # Only the tool message goes out, after the first response's id: the server holds the rest.
    assert llm.invoke([question, called, result]).text == "It holds the door shut."
    assert backend.requests[-1].messages[-1]["content"].startswith("What was found:\nM1: the latch")
