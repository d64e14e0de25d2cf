"""The embedded model streamed, and from async code, on the real default model (SmolLM2-135M-Instruct).

The model is loaded once for the module per decoder, forced tokens (the default) and the grammar
sampler (``forced_tokens=False``), and every test runs on both; each test wraps a clone of it,
so closing a test's backend retires only that clone. The tests assert what the grammar, the cap
and the backends guarantee (a routed reply is a whole action, the pieces make up the completion,
requests take turns, the event loop runs on), never which action the model picks.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.catalogues import QUESTION
from support.embedded_cases import MEMORY, REQUESTS, conversation
from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS, demo_cap, guaranteed_cap

from toolrouting import (
    AsyncEmbeddedLlama,
    AsyncRoutingLoop,
    AsyncStreamingBackend,
    BackendError,
    Completion,
    EmbeddedLlama,
    Message,
    Settings,
    StreamingBackend,
    TextDelta,
    parse_route,
    read_transcript,
    route_schema,
    route_tool_names,
    routed_backend,
)
from toolrouting.demo import MemoryStore

pytestmark = [pytest.mark.model, pytest.mark.anyio]

SAMPLING_CAP = 64
SAMPLING = Settings(max_tokens=SAMPLING_CAP, temperature=TEST_TEMPERATURE, seed=TEST_SEED)
SCHEMA = route_schema(MEMORY)
CAP = guaranteed_cap(SCHEMA)
NAMES = route_tool_names(MEMORY)
ROUTING = conversation(MEMORY, REQUESTS[0][1])
#: A request whose answer takes a while whatever the model writes: its grammar asks for one
#: string of 300 characters, so it runs to the cap or to dozens of tokens.
POEM: list[Message] = [{"role": "user", "content": "Write a long poem about the sea."}]
LONG = SAMPLING.clone(json_schema={"type": "string", "minLength": 300, "maxLength": 300})


@pytest.fixture(scope="module", params=[True, False], ids=["forced", "sampler"])
def model(request: pytest.FixtureRequest) -> Iterator[EmbeddedLlama]:
    forced = request.param
    with EmbeddedLlama(
        settings=SAMPLING, n_threads=TEST_THREADS, seed=TEST_SEED, forced_tokens=forced
    ) as loaded:
        yield loaded


@pytest.fixture
def backend(model: EmbeddedLlama) -> AsyncEmbeddedLlama:
    return AsyncEmbeddedLlama(model.clone())


def whole(items: list[Any]) -> Completion:
    """The stream's last item, once checked to be the completion of the pieces before it."""
    *pieces, last = items
    assert isinstance(last, Completion)
    assert all(isinstance(piece, TextDelta) and piece.text for piece in pieces)
    assert "".join(piece.text for piece in pieces) == last.text
    return last


def routed_action(completion: Completion) -> None:
    assert parse_route(completion.text, NAMES).ok, completion.text
    assert (completion.finish_reason, completion.truncated) == ("stop", False)


# --- EmbeddedLlama.stream -----------------------------------------------------------------------


def test_the_stream_is_the_completion_in_pieces(model: EmbeddedLlama) -> None:
    assert isinstance(model, StreamingBackend)
    items = list(routed_backend(model, SCHEMA, CAP).stream(ROUTING))
    completion = whole(items)
    routed_action(completion)
    if model.forced_tokens:  # each forced run is one piece; the tokens are counted as written
        assert completion.usage.completion_tokens >= len(items) - 1
        assert completion.usage.prompt_tokens > 0
    else:
        assert completion.usage.completion_tokens == len(items) - 1  # counted: one per piece
    assert len(items) > 2


def test_a_stream_cut_at_the_cap_is_truncated(model: EmbeddedLlama) -> None:
    completion = whole(list(routed_backend(model, SCHEMA, 1).stream(ROUTING)))
    assert (completion.finish_reason, completion.truncated) == ("length", True)
    assert completion.text.startswith("{")


def test_a_stream_closed_early_frees_the_model(model: EmbeddedLlama) -> None:
    with contextlib.closing(model.clone(settings=LONG).stream(POEM)) as pieces:
        assert isinstance(next(pieces), TextDelta)
    routed_action(routed_backend(model, SCHEMA, CAP).complete(ROUTING))


# --- AsyncEmbeddedLlama -----------------------------------------------------------------------------


async def test_async_complete_and_stream(backend: AsyncEmbeddedLlama) -> None:
    assert isinstance(backend, AsyncStreamingBackend)
    routed = routed_backend(backend, SCHEMA, CAP)
    assert routed.backend.settings.max_tokens == CAP
    assert backend.settings == SAMPLING
    routed_action(await routed.complete(ROUTING))
    routed_action(whole([item async for item in routed.stream(ROUTING)]))


async def test_two_streams_take_turns_on_the_model(backend: AsyncEmbeddedLlama) -> None:
    order: list[str] = []
    finished: dict[str, Completion] = {}

    async def read(name: str, messages: list[Message]) -> None:
        items = []
        async for item in backend.stream(messages):
            order.append(name)
            items.append(item)
        finished[name] = whole(items)

    async with anyio.create_task_group() as group:
        group.start_soon(read, "first", conversation(MEMORY, REQUESTS[1][1]))
        group.start_soon(read, "second", conversation(MEMORY, REQUESTS[2][1]))
    assert set(finished) == {"first", "second"}
    # One stream holds the model from its first piece to its last: no interleaving.
    assert order == sorted(order, key=order.index)


async def test_two_requests_at_once_both_finish(backend: AsyncEmbeddedLlama) -> None:
    routed = routed_backend(backend, SCHEMA, CAP)
    replies: list[Completion] = []

    async def ask(prompt: str) -> None:
        replies.append(await routed.complete(conversation(MEMORY, prompt)))

    async with anyio.create_task_group() as group:
        for _, prompt in REQUESTS[:2]:
            group.start_soon(ask, prompt)
    assert len(replies) == 2
    for reply in replies:
        routed_action(reply)


async def test_the_event_loop_runs_while_the_model_generates(backend: AsyncEmbeddedLlama) -> None:
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    async with anyio.create_task_group() as group:
        group.start_soon(tick)
        started = time.monotonic()
        completion = await backend.clone(settings=LONG).complete(POEM)
        took = time.monotonic() - started
        group.cancel_scope.cancel()
    assert completion.usage.completion_tokens > 8  # 300 characters, or the cap: dozens of tokens
    # A blocked loop would not tick at all while the completion ran; it ticks about every 10 ms.
    assert ticks >= min(5, int(took / 0.01) // 4), (ticks, took)


async def test_a_cancelled_request_returns_and_the_model_stays_whole(backend: AsyncEmbeddedLlama) -> None:
    with anyio.move_on_after(0.05) as scope:
        await backend.clone(settings=LONG).complete(POEM)
    assert scope.cancelled_caught
    # The cancelled native call finishes in its thread; the next request waits for it, then runs.
    routed_action(await routed_backend(backend, SCHEMA, CAP).complete(ROUTING))

    with anyio.move_on_after(0.05) as scope:
        async for _ in backend.clone(settings=LONG).stream(POEM):
            pass
    assert scope.cancelled_caught
    routed_action(whole([item async for item in routed_backend(backend, SCHEMA, CAP).stream(ROUTING)]))


async def test_closing(model: EmbeddedLlama) -> None:
    with pytest.raises(TypeError, match="wraps an EmbeddedLlama, not str"):
        AsyncEmbeddedLlama("model.gguf")  # type: ignore[arg-type]
    async with AsyncEmbeddedLlama(model.clone()) as owner:
        clone = owner.clone(settings=SAMPLING.clone(max_tokens=4))
        await clone.aclose()
        with pytest.raises(BackendError, match="closed"):
            await clone.complete(POEM)
        assert (await owner.complete(POEM)).usage.completion_tokens <= SAMPLING_CAP
    with pytest.raises(BackendError, match="closed"):
        await owner.complete(POEM)
    with pytest.raises(TypeError, match="clone takes reasoning_budget, settings, not seed"):
        owner.clone(seed=1)
    routed_action(routed_backend(model, SCHEMA, CAP).complete(ROUTING))  # the model the clone shared is open


async def test_the_async_loop_runs_on_it(model: EmbeddedLlama, tmp_path: Path) -> None:
    # A cap no demo action reaches: every reply is whole, so none is cut and repaired for length.
    cap = demo_cap()
    path = tmp_path / "run.jsonl"
    async with AsyncEmbeddedLlama(model.clone(settings=SAMPLING.clone(max_tokens=cap))) as backend:
        result = await AsyncRoutingLoop(backend, MemoryStore.sample(), cap=cap, transcript=path).run(QUESTION)
    assert result.actions[-1].tool == "none"  # a handoff, or a limit that left only none
    assert read_transcript(path).messages == result.messages
