"""The scripted backends shipped for tests and docs, sync and async, whole and streamed."""

from __future__ import annotations

import collections

import anyio
import pytest

from toolrouting import (
    AsyncScriptedBackend,
    AsyncStreamingBackend,
    Backend,
    BackendConnectError,
    BackendError,
    Completion,
    ScriptedBackend,
    ScriptedRequest,
    Settings,
    StreamingBackend,
    TextDelta,
    Usage,
)

HI = [{"role": "user", "content": "hi there"}]


def test_replies_in_order_and_requests_recorded() -> None:
    backend = ScriptedBackend(["one", "two"])
    assert isinstance(backend, Backend)
    assert backend.complete(HI).text == "one"  # type: ignore[arg-type]
    backend.enqueue("three")
    assert [backend.complete(HI).text for _ in range(2)] == ["two", "three"]  # type: ignore[arg-type]
    assert len(backend.requests) == 3
    assert backend.requests[0].messages == ({"role": "user", "content": "hi there"},)
    assert backend.pending == 0


def test_usage_counts_words_and_the_cap_truncates() -> None:
    backend = ScriptedBackend(["a b c d e"], settings=Settings(max_tokens=3))
    completion = backend.complete(HI)  # type: ignore[arg-type]
    assert completion.text == "a b c"
    assert (completion.finish_reason, completion.truncated) == ("length", True)
    assert completion.usage == Usage(prompt_tokens=2, completion_tokens=3)
    assert ScriptedBackend(["a b"], settings=Settings(max_tokens=3)).complete(HI).truncated is False  # type: ignore[arg-type]


def test_completions_exceptions_and_callables() -> None:
    canned = Completion(text="{}", finish_reason="length", truncated=True)
    backend = ScriptedBackend(
        [canned, BackendConnectError("refused"), lambda request: request.settings.json_schema_name]
    )
    assert backend.complete(HI) is canned  # type: ignore[arg-type]
    with pytest.raises(BackendConnectError):
        backend.complete(HI)  # type: ignore[arg-type]
    assert backend.complete(HI).text == "response"  # type: ignore[arg-type]


def test_an_empty_queue_is_a_clear_error() -> None:
    with pytest.raises(BackendError, match="no reply for request 1; queue one with enqueue"):
        ScriptedBackend().complete(HI)  # type: ignore[arg-type]


def test_clones_share_queue_and_record_but_not_settings() -> None:
    backend = ScriptedBackend(["x", "y"])
    with backend.clone(settings=Settings(max_tokens=7)) as clone:
        assert clone.complete(HI).text == "x"  # type: ignore[arg-type]
    assert backend.complete(HI).text == "y"  # type: ignore[arg-type]
    assert [r.settings.max_tokens for r in backend.requests] == [7, None]
    with pytest.raises(TypeError, match="only settings"):
        backend.clone(model="x")


def test_a_stream_hands_the_reply_over_a_word_at_a_time() -> None:
    backend = ScriptedBackend(['{"tool": "none"}  ', "a b c d e"], settings=Settings(max_tokens=3))
    assert isinstance(backend, StreamingBackend)
    items = list(backend.stream(HI))  # type: ignore[arg-type]
    assert items[:-1] == [TextDelta('{"tool": '), TextDelta('"none"}  ')]
    assert items[-1] == Completion(
        text='{"tool": "none"}  ', finish_reason="stop", usage=Usage(prompt_tokens=2, completion_tokens=2)
    )
    *pieces, cut = backend.stream(HI)  # type: ignore[arg-type]
    assert pieces == [TextDelta("a "), TextDelta("b "), TextDelta("c")]
    assert isinstance(cut, Completion)
    assert (cut.text, cut.truncated) == ("a b c", True)
    assert len(backend.requests) == 2


# --- AsyncScriptedBackend -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_async_replies_in_order_record_and_stream() -> None:
    canned = Completion(text="{}", finish_reason="length", truncated=True)
    backend = AsyncScriptedBackend(["one two", canned, BackendConnectError("refused")])
    assert isinstance(backend, AsyncStreamingBackend)
    assert not isinstance(backend, Backend)
    assert [item async for item in backend.stream(HI)] == [  # type: ignore[arg-type]
        TextDelta("one "),
        TextDelta("two"),
        Completion(text="one two", finish_reason="stop", usage=Usage(prompt_tokens=2, completion_tokens=2)),
    ]
    assert await backend.complete(HI) is canned  # type: ignore[arg-type]
    with pytest.raises(BackendConnectError):
        await backend.complete(HI)  # type: ignore[arg-type]
    with pytest.raises(BackendError, match="no reply for request 4; queue one with enqueue"):
        await backend.complete(HI)  # type: ignore[arg-type]
    assert [request.messages for request in backend.requests] == [
        ({"role": "user", "content": "hi there"},)
    ] * 4


@pytest.mark.anyio
async def test_an_async_reply_may_wait_and_requests_overlap() -> None:
    release = anyio.Event()
    waiting: list[int] = []

    async def slow(request: ScriptedRequest) -> str:
        waiting.append(len(waiting))
        await release.wait()
        return f"done {request.settings.max_tokens}"

    backend = AsyncScriptedBackend([slow, slow])
    replies: list[str] = []

    async def ask(cap: int) -> None:
        async with backend.clone(settings=Settings(max_tokens=cap)) as clone:
            replies.append((await clone.complete(HI)).text)  # type: ignore[arg-type]

    async with anyio.create_task_group() as group:
        group.start_soon(ask, 5)
        group.start_soon(ask, 6)
        while len(waiting) < 2:  # both requests are in flight at once
            await anyio.sleep(0)
        release.set()
    assert sorted(replies) == ["done 5", "done 6"]
    assert backend.pending == 0
    caps = [request.settings.max_tokens for request in backend.requests]
    assert collections.Counter(caps) == collections.Counter([5, 6])
    with pytest.raises(TypeError, match="only settings"):
        backend.clone(model="x")
