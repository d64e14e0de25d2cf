"""toolrouting serve through real clients on loopback: the official openai SDK, sync, async and streaming.

The first tests serve the scripted fake (the package's own), so that the same reply can be
asked for twice, whole and streamed, and a fault injected; the tests marked ``model`` serve the
embedded default model and assert the contract only: shapes, finish reasons, tool_choice's
semantics, arguments valid against the tool's schema. Never which tool the model picks.
"""

# ruff: noqa: F811 - the fixtures imported from support.serve_clients are the tests' parameters
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import jsonschema
import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.chat import ChatCompletionMessageFunctionToolCall as FunctionCall
from support.serve import SEARCH, TOOLS, served
from support.serve_clients import embedded, scripted  # noqa: F401 - fixtures shared with other tests

from toolrouting import AsyncScriptedBackend, ScriptedRequest
from toolrouting._serve import serve_app

SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
QUESTION: list[Any] = [{"role": "user", "content": "What does the latch on the storage-room door do?"}]
ACTION = '{"tool":"search","arguments":{"query":"latch"}}'


def checked_call(completion: ChatCompletion, names: set[str]) -> Any:
    """The one tool call of a reply, checked against the contract."""
    [choice] = completion.choices
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    [call] = choice.message.tool_calls
    assert call.type == "function"
    assert call.function.name in names
    jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])
    return call


def test_the_sdk_reads_a_tool_call_and_the_stream_rebuilds_it(
    scripted: tuple[AsyncScriptedBackend, str],
) -> None:
    backend, url = scripted
    backend.enqueue(ACTION, ACTION)
    with openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client:
        raw = client.chat.completions.with_raw_response.create(
            model="scripted", messages=QUESTION, tools=TOOLS
        )
        whole = ChatCompletion.model_validate(raw.http_response.json())  # the SDK's types accept it
        call = checked_call(whole, {"search", "read"})
        with client.chat.completions.stream(
            model="scripted", messages=QUESTION, tools=TOOLS, stream_options={"include_usage": True}
        ) as stream:
            final = stream.get_final_completion()
    assert final.choices[0].finish_reason == "tool_calls"
    assert final.choices[0].message.tool_calls is not None
    rebuilt = final.choices[0].message.tool_calls[0]
    assert (rebuilt.id, rebuilt.function.name, rebuilt.function.arguments) == (
        call.id,
        call.function.name,
        call.function.arguments,
    )
    assert final.usage is not None
    assert final.usage.total_tokens == whole.usage.total_tokens  # type: ignore[union-attr]


def test_every_chunk_is_one_the_sdks_types_accept(scripted: tuple[AsyncScriptedBackend, str]) -> None:
    backend, url = scripted
    backend.enqueue('{"tool":"none"}', "The latch holds the door shut.")
    body = {"model": "scripted", "messages": QUESTION, "tools": TOOLS, "stream": True}
    with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=30) as response:
        events = [line.removeprefix("data: ") for line in response.iter_lines() if line]
    assert events[-1] == "[DONE]"
    chunks = [ChatCompletionChunk.model_validate(json.loads(event)) for event in events[:-1]]
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "The latch holds the door shut."
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_the_async_sdk_and_a_conversation_of_two_turns(scripted: tuple[AsyncScriptedBackend, str]) -> None:
    backend, url = scripted
    backend.enqueue(ACTION, '{"tool":"none"}', "It holds the door.")

    async def converse() -> tuple[ChatCompletion, ChatCompletion]:
        async with openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0) as client:
            first = await client.chat.completions.create(model="scripted", messages=QUESTION, tools=TOOLS)
            message = first.choices[0].message
            assert message.tool_calls is not None
            result = {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "M1: the latch"}
            history = [*QUESTION, message.model_dump(exclude_none=True), result]
            second = await client.chat.completions.create(model="scripted", messages=history, tools=TOOLS)
            return first, second

    first, second = anyio.run(converse)
    checked_call(first, {"search", "read"})
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == "It holds the door."


def test_the_sdk_raises_openais_errors_and_the_server_goes_on(
    scripted: tuple[AsyncScriptedBackend, str],
) -> None:
    backend, url = scripted
    with openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client:
        twice: list[Any] = [SEARCH, SEARCH]
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="scripted", messages=QUESTION, tools=twice)
        assert caught.value.status_code == 400
        assert caught.value.param == "tools[1]"
        assert caught.value.code == "invalid_tools"
        backend.enqueue("still here")
        assert (
            client.chat.completions.create(model="s", messages=QUESTION).choices[0].message.content
            == "still here"
        )


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_that_disconnects_cancels_the_backend_request(
    scripted: tuple[AsyncScriptedBackend, str], stream: bool
) -> None:
    backend, url = scripted
    started, cancelled = threading.Event(), threading.Event()

    async def endless(request: ScriptedRequest) -> str:
        started.set()
        try:
            await anyio.sleep(3600)
        finally:
            cancelled.set()
        return ACTION  # pragma: no cover

    backend.enqueue(endless)
    body = {"model": "scripted", "messages": QUESTION, "tools": TOOLS, "stream": stream}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{url}/chat/completions", json=body, timeout=httpx.Timeout(30, read=0.5))
    assert started.is_set()
    assert cancelled.wait(10), "the backend request went on after the client left"


@pytest.mark.model
@pytest.mark.parametrize(
    ("tool_choice", "names"),
    [
        ("required", {"search", "read"}),
        ({"type": "function", "function": {"name": "read"}}, {"read"}),
    ],
)
def test_the_model_makes_one_valid_call_when_the_choice_demands_one(
    embedded: str, tool_choice: Any, names: set[str]
) -> None:
    with openai.OpenAI(base_url=embedded, api_key="unused", max_retries=0) as client:
        raw = client.chat.completions.with_raw_response.create(
            model="smollm2", messages=QUESTION, tools=TOOLS, tool_choice=tool_choice
        )
    checked_call(ChatCompletion.model_validate(raw.http_response.json()), names)


@pytest.mark.model
def test_the_model_under_auto_calls_a_tool_or_answers_and_none_answers(embedded: str) -> None:
    with openai.OpenAI(base_url=embedded, api_key="unused", max_retries=0) as client:
        auto = client.chat.completions.create(model="smollm2", messages=QUESTION, tools=TOOLS, max_tokens=16)
        text = client.chat.completions.create(
            model="smollm2", messages=QUESTION, tools=TOOLS, tool_choice="none", max_tokens=16
        )
    [choice] = auto.choices
    if choice.finish_reason == "tool_calls":
        checked_call(auto, {"search", "read"})
    else:
        assert choice.finish_reason in ("stop", "length")
        assert choice.message.tool_calls is None
        assert isinstance(choice.message.content, str)
    assert text.choices[0].finish_reason in ("stop", "length")
    assert text.choices[0].message.tool_calls is None
    assert text.usage is not None
    assert 0 < text.usage.completion_tokens <= 16


@pytest.mark.model
def test_the_models_streamed_call_is_rebuilt_as_one_valid_call(embedded: str) -> None:
    # That the stream rebuilds exactly the whole reply is tested on the scripted backend, which
    # can answer the same twice; a model's two samplings need not agree, so this asserts the contract.
    ask: dict[str, Any] = {
        "model": "smollm2",
        "messages": QUESTION,
        "tools": TOOLS,
        "tool_choice": "required",
    }
    with openai.OpenAI(base_url=embedded, api_key="unused", max_retries=0) as client:
        whole = client.chat.completions.create(**ask)
        with client.chat.completions.stream(**ask, stream_options={"include_usage": True}) as stream:
            final = stream.get_final_completion()
    call = checked_call(whole, {"search", "read"})
    rebuilt = checked_call(final, {"search", "read"})
    assert rebuilt.id == call.id == "route-1"
    assert final.usage is not None
    assert final.usage.completion_tokens > 0


@pytest.mark.model
def test_pydantic_ai_runs_a_multi_step_tool_task_on_the_model(embedded: str) -> None:
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.messages import ModelResponse, RetryPromptPart, ToolCallPart
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.settings import ModelSettings

    ran: list[tuple[str, dict[str, Any]]] = []

    def search(query: str) -> str:
        """Search the notes for a word."""
        ran.append(("search", {"query": query}))
        return "M1: the latch on the storage-room door"

    def read(id: str) -> str:
        """Read one note by its id."""
        ran.append(("read", {"id": id}))
        return "The latch keeps the storage-room door shut in a draught."

    def per_step(ctx: RunContext[None]) -> ModelSettings:
        # A search, then a read, then the answer: three requests whatever the model would prefer,
        # each under another tool_choice (a named tool twice, then none).
        choice: Any = {1: ["search"], 2: ["read"]}.get(ctx.run_step, "none")
        return ModelSettings(tool_choice=choice, max_tokens=32, temperature=0.0)

    async def run() -> Any:
        # A client of our own, closed at the end: the provider's shared one outlives the test.
        async with openai.AsyncOpenAI(base_url=embedded, api_key="unused", max_retries=0) as client:
            provider = OpenAIProvider(openai_client=client)
            agent = Agent(
                OpenAIChatModel("smollm2", provider=provider), tools=[search, read], model_settings=per_step
            )
            return await agent.run(QUESTION[0]["content"])

    result = anyio.run(run)

    assert [name for name, _ in ran] == ["search", "read"]
    assert isinstance(result.output, str)
    responses = [m for m in result.all_messages() if isinstance(m, ModelResponse)]
    assert len(responses) == 3
    calls = [part for response in responses for part in response.parts if isinstance(part, ToolCallPart)]
    assert [call.tool_name for call in calls] == ["search", "read"]
    assert len({call.tool_call_id for call in calls}) == 2  # unique within the conversation
    retries = [
        p for m in result.all_messages() for p in getattr(m, "parts", []) if isinstance(p, RetryPromptPart)
    ]
    assert retries == []  # every call's arguments fit the tool's schema


@pytest.mark.model
def test_a_server_backend_is_served_streamed_and_whole(llama_cpp_server: str) -> None:
    from toolrouting import AsyncOpenAICompatible, Settings

    backend = AsyncOpenAICompatible(
        f"{llama_cpp_server}/v1",
        model="default",
        dialect="llama-cpp-python",
        settings=Settings(temperature=0.0),
    )
    ask: dict[str, Any] = {"model": "m", "messages": QUESTION, "tools": TOOLS, "tool_choice": "required"}
    # owned: the backend's connections belong to the server's event loop, which closes them.
    with (
        served(serve_app(backend, owned=True)) as url,
        openai.OpenAI(base_url=url, api_key="unused") as client,
    ):
        whole = client.chat.completions.create(**ask)
        with client.chat.completions.stream(**ask) as stream:
            final = stream.get_final_completion()
    call = checked_call(whole, {"search", "read"})
    rebuilt = final.choices[0].message.tool_calls
    assert final.choices[0].finish_reason == "tool_calls"
    assert rebuilt is not None
    assert rebuilt[0].id == call.id
    jsonschema.validate(json.loads(rebuilt[0].function.arguments), SCHEMAS[rebuilt[0].function.name])


@pytest.fixture(scope="module")
def scripted_calls() -> Iterator[tuple[AsyncScriptedBackend, str]]:
    """The scripted fake served with decisions of up to three calls."""
    backend = AsyncScriptedBackend()
    with served(serve_app(backend, model="scripted", max_calls=3)) as url:
        yield backend, url


def test_parallel_tool_calls_give_one_tool_calls_entry_per_call_whole_and_streamed(
    scripted_calls: tuple[AsyncScriptedBackend, str],
) -> None:
    backend, url = scripted_calls
    two = '[{"tool":"search","arguments":{"query":"latch"}},{"tool":"read","arguments":{"id":"M1"}}]'
    backend.enqueue(two, two)
    with openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client:
        whole = client.chat.completions.create(model="scripted", messages=QUESTION, tools=TOOLS)
        with client.chat.completions.stream(model="scripted", messages=QUESTION, tools=TOOLS) as stream:
            chunks = [event.chunk for event in stream if event.type == "chunk"]
            final = stream.get_final_completion()
    [choice] = whole.choices
    assert choice.finish_reason == "tool_calls"
    calls = [c for c in choice.message.tool_calls or [] if isinstance(c, FunctionCall)]
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("route-1", "search", '{"query":"latch"}'),
        ("route-2", "read", '{"id":"M1"}'),
    ]
    for call in calls:
        jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])
    # Streamed, each call's entries carry its index, 0 then 1, and the SDK rebuilds both calls.
    indexes = [
        entry.index for chunk in chunks for choice in chunk.choices for entry in choice.delta.tool_calls or []
    ]
    assert indexes == sorted(indexes)
    assert set(indexes) == {0, 1}
    rebuilt = [c for c in final.choices[0].message.tool_calls or [] if isinstance(c, FunctionCall)]
    assert len(rebuilt) == len(final.choices[0].message.tool_calls or [])
    assert [(c.id, c.function.name, c.function.arguments) for c in rebuilt] == [
        (c.id, c.function.name, c.function.arguments) for c in calls
    ]
    assert final.choices[0].finish_reason == "tool_calls"
    # The route offered took up to three calls, as OpenAI's default (parallel_tool_calls absent) allows.
    offered = backend.requests[-1].settings.json_schema
    assert offered is not None
    assert offered["anyOf"][-1]["maxItems"] == 3


def test_parallel_tool_calls_false_makes_the_decision_one_call(
    scripted_calls: tuple[AsyncScriptedBackend, str],
) -> None:
    backend, url = scripted_calls
    backend.enqueue(ACTION)
    with openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client:
        whole = client.chat.completions.create(
            model="scripted", messages=QUESTION, tools=TOOLS, parallel_tool_calls=False
        )
    checked_call(whole, {"search", "read"})
    offered = backend.requests[-1].settings.json_schema
    assert offered is not None
    assert all(alternative.get("type") == "object" for alternative in offered["anyOf"])
    # The array a server of one call answers with is not a valid action: a 502 that says why.
    backend.enqueue(
        '[{"tool":"search","arguments":{"query":"a"}},{"tool":"search","arguments":{"query":"b"}}]'
    )
    with (
        openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client,
        pytest.raises(openai.InternalServerError, match="not a valid action"),
    ):
        client.chat.completions.create(
            model="scripted", messages=QUESTION, tools=TOOLS, parallel_tool_calls=False
        )
