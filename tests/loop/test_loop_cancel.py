"""Cancelling a run stops it at once and leaves a transcript that resumes to the undisturbed bytes.

An async run is cancelled (``task.cancel()``) at each await it makes: waiting for a decision,
for a tool, for a retry. The awaited request or tool call sees the cancellation (it is
abandoned, not left running), nothing half-done is committed (no reply not received, no
result of a call cut short), and resuming writes exactly what a run left alone wrote. The
sync loop's KeyboardInterrupt (the command line's Ctrl-C) leaves the same kind of file.

The backend and the tools are fakes: the tests choose where each one stalls.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import anyio
import anyio.to_thread
import pytest
from support.catalogues import NONE, QUESTION, lookup, tool

from toolrouting._backends.base import Completion, Message
from toolrouting._backends.scripted import ScriptedBackend, ScriptedRequest
from toolrouting._errors import BackendConnectError
from toolrouting._loop.async_run import AsyncRoutingLoop
from toolrouting._loop.run import RoutingLoop
from toolrouting._loop.transcript_format import encode_header, encode_message
from toolrouting._loop.transcript_reader import read_transcript
from toolrouting._provider import RecordedCall, ToolOutput
from toolrouting._result_messages import split_routed_result
from toolrouting._settings import Settings

pytestmark = pytest.mark.anyio

WORDS = ("latch", "door")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # task.cancel() is asyncio's


def reply(messages: Sequence[Message], settings: Settings) -> str:
    """The fake model: two lookups, the handoff, then the answer; chosen from the conversation."""
    if settings.json_schema is None:
        return "The latch keeps the door shut."
    results = sum(1 for m in messages if m["role"] == "user" and split_routed_result(m["content"]))
    return lookup(WORDS[results]) if results < len(WORDS) else NONE


class Shared:
    """What a model's clones share: requests so far, where to stall or fail, what happened."""

    def __init__(self, stall_at: int = 0, fail_at: int = 0) -> None:
        self.requests = 0
        self.stall_at, self.fail_at = stall_at, fail_at
        self.stalled = anyio.Event()
        self.cancelled = False


class Model:
    """An async backend over :func:`reply` that stalls on request ``stall_at`` until cancelled."""

    def __init__(self, shared: Shared, settings: Settings | None = None) -> None:
        self.shared = shared
        self._settings = settings or Settings()

    @property
    def settings(self) -> Settings:
        return self._settings

    def clone(self, **changes: Any) -> Self:
        return type(self)(self.shared, changes.get("settings", self._settings))

    async def complete(self, messages: Sequence[Message]) -> Completion:
        shared = self.shared
        shared.requests += 1
        if shared.requests == shared.stall_at:
            shared.stalled.set()
            try:
                await anyio.sleep_forever()
            except BaseException:
                shared.cancelled = True
                raise
        if shared.requests == shared.fail_at:
            raise BackendConnectError("connection reset")
        return Completion(text=reply(messages, self._settings))

    async def aclose(self) -> None:
        pass


class Desk:
    """An async ``lookup`` tool that stalls on call ``stall_at`` until cancelled; restorable."""

    def __init__(self, stall_at: int = 0) -> None:
        self.stall_at = stall_at
        self.calls: list[str] = []
        self.finished: list[str] = []
        self.stalled = anyio.Event()
        self.cancelled = False
        self.restored: tuple[RecordedCall, ...] | None = None

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return [tool("lookup", word={"type": "string"})]

    async def acall(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        word = arguments["word"]
        self.calls.append(word)
        if len(self.calls) == self.stall_at:
            self.stalled.set()
            try:
                await anyio.sleep_forever()
            except BaseException:
                self.cancelled = True
                raise
        self.finished.append(word)
        return ToolOutput(f"{word}: part of the storage-room door.")

    def restore(self, calls: Sequence[RecordedCall]) -> None:
        self.restored = tuple(calls)


async def _reference(path: Path) -> bytes:
    await AsyncRoutingLoop(Model(Shared()), Desk(), transcript=path, answer=True).run(QUESTION)
    return path.read_bytes()


async def _cancelled(loop: AsyncRoutingLoop, stalled: anyio.Event) -> None:
    """Run ``loop`` as a task and cancel it once ``stalled`` is set; the task must end cancelled."""
    task = asyncio.create_task(loop.run(QUESTION))
    await stalled.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def _resumed_bytes(path: Path) -> tuple[bytes, Desk]:
    desk = Desk()
    await AsyncRoutingLoop(Model(Shared()), desk, transcript=path, answer=True).resume()
    return path.read_bytes(), desk


def _committed(path: Path) -> tuple[Message, ...]:
    return read_transcript(path).messages[len(QUESTION) :]


@pytest.mark.parametrize("request_number", [1, 2, 4])  # a decision in round 1, round 2, and the answer
async def test_cancelled_during_a_decision(tmp_path: Path, request_number: int) -> None:
    reference = await _reference(tmp_path / "whole.jsonl")
    path = tmp_path / "run.jsonl"
    shared = Shared(stall_at=request_number)
    await _cancelled(AsyncRoutingLoop(Model(shared), Desk(), transcript=path, answer=True), shared.stalled)

    assert shared.cancelled  # the request was abandoned, not left to finish
    committed = _committed(path)
    # Each round before the stalled request is whole; the request's reply was never received.
    assert len(committed) == {1: 0, 2: 2, 4: 6}[request_number]
    assert not committed or committed[-1]["role"] == "user"
    assert reference.startswith(path.read_bytes())
    resumed, _ = await _resumed_bytes(path)
    assert resumed == reference


@pytest.mark.parametrize("call_number", [1, 2])
async def test_cancelled_during_a_tool_call(tmp_path: Path, call_number: int) -> None:
    reference = await _reference(tmp_path / "whole.jsonl")
    path = tmp_path / "run.jsonl"
    desk = Desk(stall_at=call_number)
    await _cancelled(AsyncRoutingLoop(Model(Shared()), desk, transcript=path, answer=True), desk.stalled)

    assert desk.cancelled
    committed = _committed(path)
    # The action is committed, its result is not: the call cut short is not recorded as run.
    assert committed[-1] == {"role": "assistant", "content": lookup(WORDS[call_number - 1])}
    resumed, again = await _resumed_bytes(path)
    assert again.restored is not None
    assert [arguments["word"] for _, arguments, _ in again.restored] == list(WORDS[: call_number - 1])
    assert again.calls[0] == WORDS[call_number - 1]  # run again on resume
    assert resumed == reference


async def test_cancelled_during_a_retry_wait(tmp_path: Path) -> None:
    reference = await _reference(tmp_path / "whole.jsonl")
    path = tmp_path / "run.jsonl"
    waiting = anyio.Event()
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        waiting.set()
        await anyio.sleep_forever()

    loop = AsyncRoutingLoop(Model(Shared(fail_at=2)), Desk(), transcript=path, answer=True, sleep=sleep)
    await _cancelled(loop, waiting)

    assert len(waits) == 1
    assert len(_committed(path)) == 2  # round 1; the failed request of round 2 committed nothing
    resumed, _ = await _resumed_bytes(path)
    assert resumed == reference


async def test_a_sync_tool_in_its_thread_does_not_hold_up_the_cancellation(tmp_path: Path) -> None:
    reference = await _reference(tmp_path / "whole.jsonl")
    path = tmp_path / "run.jsonl"
    started, release = threading.Event(), threading.Event()

    class Blocking:
        def tools_for_llm(self) -> list[dict[str, Any]]:
            return [tool("lookup", word={"type": "string"})]

        def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
            started.set()
            release.wait(30)
            return ToolOutput("too late")

    task = asyncio.create_task(AsyncRoutingLoop(Model(Shared()), Blocking(), transcript=path).run(QUESTION))
    await anyio.to_thread.run_sync(started.wait, 30)
    task.cancel()
    with anyio.fail_after(5):  # at once, while the tool's thread is still blocked
        with pytest.raises(asyncio.CancelledError):
            await task
    assert not release.is_set()
    release.set()
    assert _committed(path) == ({"role": "assistant", "content": lookup("latch")},)
    resumed, _ = await _resumed_bytes(path)
    assert resumed == reference


def _sync_reply(request: ScriptedRequest) -> str:
    return reply(request.messages, request.settings)


class Interrupted:
    """A sync ``lookup`` tool on which Ctrl-C lands during call ``interrupt_at``."""

    def __init__(self, interrupt_at: int = 0) -> None:
        self.interrupt_at = interrupt_at
        self.calls = 0

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return [tool("lookup", word={"type": "string"})]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        self.calls += 1
        if self.calls == self.interrupt_at:
            raise KeyboardInterrupt
        return ToolOutput(f"{arguments['word']}: part of the storage-room door.")


@pytest.mark.parametrize("where", ["decision", "tool"])
def test_ctrl_c_in_the_sync_loop_leaves_a_transcript_that_resumes(tmp_path: Path, where: str) -> None:
    whole, path = tmp_path / "whole.jsonl", tmp_path / "run.jsonl"
    RoutingLoop(ScriptedBackend([_sync_reply] * 5), Interrupted(), transcript=whole, answer=True).run(
        QUESTION
    )

    def interrupt(request: ScriptedRequest) -> str:
        raise KeyboardInterrupt

    if where == "decision":
        backend = ScriptedBackend([_sync_reply, interrupt])
        provider = Interrupted()
    else:
        backend = ScriptedBackend([_sync_reply] * 5)
        provider = Interrupted(interrupt_at=2)
    with pytest.raises(KeyboardInterrupt):
        RoutingLoop(backend, provider, transcript=path, answer=True).run(QUESTION)

    committed = _committed(path)
    assert path.read_bytes().startswith(encode_header(len(QUESTION)))
    if where == "decision":
        assert len(committed) == 2  # round 1 whole; round 2's reply never came
    else:
        assert committed[-1] == {"role": "assistant", "content": lookup("door")}  # no result for it
    assert path.read_bytes().endswith(b"".join(encode_message(m) for m in committed[-1:]))  # whole lines
    RoutingLoop(ScriptedBackend([_sync_reply] * 5), Interrupted(), transcript=path, answer=True).resume()
    assert path.read_bytes() == whole.read_bytes()
