"""AsyncOpenAICompatible, and the streams of both HTTP backends, against a real `python -m llama_cpp.server`.

The server comes from the session fixture ``llama_cpp_server`` in tests/conftest.py, with the
default SmolLM2 model on loopback. It streams server-sent events and reports no usage in them,
so a streamed completion's tokens are counted (one per piece). The tests assert what the
grammar, the cap and the backend guarantee, never which action the model writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path

import anyio
import pytest
from support.catalogues import QUESTION
from support.llama_cpp_server_cases import NAMES, OWN_CAP, PROMPTS, ROUTE_CAP, TOOLS, ask
from support.model import TEST_SEED, TEST_TEMPERATURE, demo_cap
from support.replies import whole

from toolrouting import (
    AsyncOpenAICompatible,
    AsyncRoutingLoop,
    Message,
    OpenAICompatible,
    Settings,
    TextDelta,
    parse_route,
    read_transcript,
    route_schema,
    routed_backend,
)
from toolrouting.demo import MemoryStore

pytestmark = [pytest.mark.model, pytest.mark.anyio]

SETTINGS = Settings(max_tokens=OWN_CAP, temperature=TEST_TEMPERATURE, seed=TEST_SEED)
#: An answer of many pieces whatever the model writes: its grammar asks for 200 characters.
LONG = SETTINGS.clone(json_schema={"type": "string", "minLength": 200, "maxLength": 200})
POEM: list[Message] = [{"role": "user", "content": "Write a long poem."}]


@pytest.fixture
async def backend(llama_cpp_server: str) -> AsyncIterator[AsyncOpenAICompatible]:
    async with AsyncOpenAICompatible(llama_cpp_server, dialect="llama-cpp-python", settings=SETTINGS) as http:
        yield http


async def test_a_routed_request_is_a_whole_action(backend: AsyncOpenAICompatible) -> None:
    routed = routed_backend(backend, route_schema(TOOLS), ROUTE_CAP)
    completion = await routed.complete(ask(PROMPTS[0]))
    assert parse_route(completion.text, NAMES).ok, completion.text
    assert (completion.finish_reason, completion.truncated) == ("stop", False)
    assert completion.usage.prompt_tokens > 0
    assert 0 < completion.usage.completion_tokens < ROUTE_CAP


async def test_a_routed_stream_ends_with_the_whole_action(backend: AsyncOpenAICompatible) -> None:
    routed = routed_backend(backend, route_schema(TOOLS), ROUTE_CAP)
    items = [item async for item in routed.stream(ask(PROMPTS[1]))]
    completion = whole(items)
    assert parse_route(completion.text, NAMES).ok, completion.text
    assert (completion.finish_reason, completion.truncated) == ("stop", False)
    # llama-cpp-python's stream reports no usage: one token counted per piece, the prompt unknown.
    assert completion.usage.completion_tokens == len(items) - 1
    assert completion.usage.prompt_tokens == 0


async def test_an_answer_streams_piece_by_piece_up_to_the_cap(backend: AsyncOpenAICompatible) -> None:
    items = [item async for item in backend.clone(settings=LONG).stream(POEM)]
    completion = whole(items)
    assert len(items) > 2  # pieces as the model wrote them, not the whole answer at once
    assert completion.truncated == (completion.finish_reason == "length")
    assert completion.usage.completion_tokens <= OWN_CAP


def test_the_sync_stream_ends_with_the_whole_action(llama_cpp_server: str) -> None:
    with OpenAICompatible(llama_cpp_server, dialect="llama-cpp-python", settings=SETTINGS) as sync_backend:
        routed = routed_backend(sync_backend, route_schema(TOOLS), ROUTE_CAP)
        completion = whole(list(routed.stream(ask(PROMPTS[2]))))
    assert parse_route(completion.text, NAMES).ok, completion.text


async def test_concurrent_requests_all_finish(backend: AsyncOpenAICompatible) -> None:
    routed = routed_backend(backend, route_schema(TOOLS), ROUTE_CAP)
    replies: list[str] = []

    async def ask_one(prompt: str) -> None:
        replies.append((await routed.complete(ask(prompt))).text)

    async with anyio.create_task_group() as group:
        for prompt in PROMPTS:
            group.start_soon(ask_one, prompt)
    assert len(replies) == len(PROMPTS)
    assert all(parse_route(reply, NAMES).ok for reply in replies), replies


async def test_a_stream_left_early_leaves_the_server_serving(backend: AsyncOpenAICompatible) -> None:
    stream = backend.clone(settings=LONG).stream(POEM)
    assert isinstance(stream, AsyncGenerator)  # an async generator, which can be closed
    async with contextlib.aclosing(stream) as pieces:
        async for item in pieces:
            assert isinstance(item, TextDelta)
            break
    routed = routed_backend(backend, route_schema(TOOLS), ROUTE_CAP)
    assert parse_route((await routed.complete(ask(PROMPTS[0]))).text, NAMES).ok


async def test_the_async_loop_runs_on_it(llama_cpp_server: str, tmp_path: Path) -> None:
    cap = demo_cap()  # no demo action reaches it: every reply is whole
    path = tmp_path / "run.jsonl"
    settings = SETTINGS.clone(max_tokens=cap)
    async with AsyncOpenAICompatible(llama_cpp_server, dialect="llama-cpp-python", settings=settings) as http:
        result = await AsyncRoutingLoop(http, MemoryStore.sample(), cap=cap, transcript=path).run(QUESTION)
    assert result.actions[-1].tool == "none"  # a handoff, or a limit that left only none
    assert read_transcript(path).messages == result.messages
