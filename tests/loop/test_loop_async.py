"""What only the async driver has: its face, what each driver refuses, and many runs at once.

Its behaviour round by round is the sync loop's, checked by running the loop's tests through
both drivers (the ``driver`` fixture); here are the parts of it those tests cannot reach. The
backend is the library's async scripted fake, ``AsyncScriptedBackend``.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
from support.catalogues import NONE, QUESTION, lookup, tool

from toolrouting import (
    AsyncRoutingLoop,
    AsyncScriptedBackend,
    Event,
    RoundStarted,
    RoutingLoop,
    RunFinished,
    ScriptedBackend,
    ScriptedRequest,
    ToolOutput,
    read_transcript,
    split_routed_result,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class AsyncDesk:
    """An async provider only: it has ``acall`` and no ``call``."""

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return [tool("lookup", word={"type": "string"})]

    async def acall(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        await asyncio.sleep(0)
        return ToolOutput(f"{arguments['word']}: a fastening.")


def _reply(request: ScriptedRequest) -> str:
    results = sum(1 for m in request.messages if m["role"] == "user" and split_routed_result(m["content"]))
    return [lookup("latch"), lookup("door"), NONE][min(results, 2)]


async def test_each_loop_refuses_the_other_kind_of_backend_and_provider() -> None:
    scripted = ScriptedBackend()
    with pytest.raises(
        TypeError, match=r"^AsyncScriptedBackend is an async backend .*drive it with AsyncRoutingLoop"
    ):
        RoutingLoop(AsyncScriptedBackend(), _SyncDesk())  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"^AsyncDesk is not a tool provider: it needs tools_for_llm\(\) and call"
    ):
        RoutingLoop(scripted, AsyncDesk())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^ScriptedBackend.complete\(\) is not a coroutine: .*RoutingLoop"):
        AsyncRoutingLoop(scripted, AsyncDesk())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^object is not a tool provider: .*acall\(\) \(async\) or call\(\)"):
        AsyncRoutingLoop(AsyncScriptedBackend(), object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sync_tools is 'thread' or 'inline', not 'pool'"):
        AsyncRoutingLoop(AsyncScriptedBackend(), AsyncDesk(), sync_tools="pool")  # type: ignore[arg-type]


async def test_iter_run_gives_the_events_and_checks_the_messages_at_once(tmp_path: Path) -> None:
    seen: list[Event] = []
    loop = AsyncRoutingLoop(AsyncScriptedBackend([_reply] * 3), AsyncDesk(), on_event=seen.append)
    with pytest.raises(ValueError, match="end with a user message"):
        loop.iter_run([{"role": "assistant", "content": "hi"}])
    events = [event async for event in loop.iter_run(QUESTION)]
    assert events == seen
    assert isinstance(events[0], RoundStarted)
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert [a.tool for a in finished.result.actions] == ["lookup", "lookup", "none"]


async def test_leaving_iter_run_early_commits_only_what_was_done(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    loop = AsyncRoutingLoop(AsyncScriptedBackend([_reply] * 3), AsyncDesk(), transcript=path)
    events = loop.iter_run(QUESTION)
    async with contextlib.aclosing(events):  # type: ignore[type-var]
        async for event in events:
            if isinstance(event, RoundStarted) and event.round == 2:
                break
    assert len(read_transcript(path).messages) == len(QUESTION) + 2
    whole = await AsyncRoutingLoop(AsyncScriptedBackend([_reply] * 3), AsyncDesk(), transcript=path).resume()
    assert [a.tool for a in whole.actions] == ["lookup", "lookup", "none"]


async def test_many_runs_at_once_each_write_the_sync_loops_bytes(tmp_path: Path) -> None:
    reference = tmp_path / "sync.jsonl"
    RoutingLoop(ScriptedBackend([_reply] * 3), _SyncDesk(), transcript=reference).run(QUESTION)
    paths = [tmp_path / f"run-{n}.jsonl" for n in range(50)]

    async def one(path: Path) -> None:
        await AsyncRoutingLoop(AsyncScriptedBackend([_reply] * 3), AsyncDesk(), transcript=path).run(QUESTION)

    await asyncio.gather(*(one(path) for path in paths))
    assert {path.read_bytes() for path in paths} == {reference.read_bytes()}


class _SyncDesk(AsyncDesk):
    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput(f"{arguments['word']}: a fastening.")
