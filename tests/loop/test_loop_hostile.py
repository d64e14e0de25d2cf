"""The run's own guarantees under backends, tools and files that misbehave, in both drivers.

Each test is a reproducer of a way the loop once broke: a reply cut by its finish reason
alone, a commit torn between its lines, two writers on one transcript, a lone surrogate on
the wire, a tool's SystemExit, a backend that lies about its completion. The backends are the
library's scripted ones (fault injection: no real server lies on purpose), except for the wire,
where a real HTTP server on loopback reads what was sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.catalogues import NONE, QUESTION, lookup, tool
from support.drivers import Driver
from support.fault_server import FaultServer, ok

from toolrouting import (
    AsyncRoutingLoop,
    AsyncScriptedBackend,
    BackendResponseError,
    Completion,
    OpenAICompatible,
    RepairRequested,
    RoutingLoop,
    ScriptedBackend,
    ToolOutput,
    ToolReturned,
    TranscriptError,
    Usage,
)
from toolrouting._loop.tool_calls import tool_exception
from toolrouting._loop.transcript_reader import read_transcript


class Tools:
    """One tool, ``lookup``, that answers ``output`` or raises ``raises``, and records its calls."""

    def __init__(self, output: object = None, raises: BaseException | None = None) -> None:
        self.output = ToolOutput("found it") if output is None else output
        self.raises = raises
        self.calls: list[dict[str, Any]] = []

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return [tool("lookup", word={"type": "string"})]

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        self.calls.append(arguments)
        if self.raises is not None:
            raise self.raises
        return self.output


def _loop(driver: Driver, backend: Any, provider: Any, **options: Any) -> Any:
    return driver.loop(backend, provider, sleep=lambda seconds: None, **options)


def test_one_truncation_rule_either_field_cuts_a_completion() -> None:
    assert Completion(text="x", finish_reason="length").truncated
    assert Completion(text="x", finish_reason="stop", truncated=True).truncated
    assert not Completion(text="x", finish_reason="stop").truncated


@pytest.mark.parametrize("streamed", [False, True])
def test_a_reply_cut_by_its_finish_reason_alone_is_never_dispatched(driver: Driver, streamed: bool) -> None:
    # A backend written to the protocol that sets finish_reason and leaves truncated alone.
    tools = Tools()
    backend = ScriptedBackend([Completion(text=lookup("x"), finish_reason="length"), NONE])
    events: list[object] = []
    result = _loop(driver, backend, tools, stream_decisions=streamed, on_event=events.append).run(QUESTION)
    assert tools.calls == []
    assert [a.tool for a in result.actions] == ["none"]
    repairs = [e for e in events if isinstance(e, RepairRequested)]
    assert len(repairs) == 1
    assert "cut off at the completion cap" in repairs[0].problem


def test_a_refusal_and_its_repair_cut_between_their_lines_is_asked_again(
    driver: Driver, tmp_path: Path
) -> None:
    # The refused reply (a whole-looking action the cap cut) and its repair are one commit of two
    # lines; a kill after the first line's newline must not leave the action to be run on resume.
    whole = tmp_path / "whole.jsonl"
    cut = Completion(text=lookup("x"), finish_reason="length")
    _loop(driver, ScriptedBackend([cut, NONE]), Tools(), transcript=whole).run(QUESTION)
    data = whole.read_bytes()
    lines = data.splitlines(keepends=True)
    assert json.loads(lines[3]) == {"role": "assistant", "content": lookup("x"), "commit": 2}
    killed = tmp_path / "killed.jsonl"
    killed.write_bytes(b"".join(lines[:4]))  # up to the refused reply's newline
    tools = Tools()
    events: list[object] = []
    result = _loop(
        driver, ScriptedBackend([cut, NONE]), tools, transcript=killed, on_event=events.append
    ).resume()
    assert tools.calls == []
    assert result.torn_line is not None
    assert result.torn_line.startswith('{"role":"assistant"')
    assert killed.read_bytes() == data


def test_a_second_writer_on_a_held_transcript_is_refused_at_once(driver: Driver, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    first = RoutingLoop(ScriptedBackend([lookup("x"), NONE]), Tools(), transcript=path)
    events = first.iter_run(QUESTION)
    next(events)  # the first run holds the transcript from here
    held = path.read_bytes()
    second = _loop(driver, ScriptedBackend([NONE]), Tools(), transcript=path)
    holder = f"is being written by process {os.getpid()} \\(this one\\)"
    with pytest.raises(TranscriptError, match=holder):
        second.run(QUESTION)
    with pytest.raises(TranscriptError, match=holder):
        second.resume()
    assert path.read_bytes() == held
    for _ in events:  # the first run finishes undisturbed
        pass
    assert [m["role"] for m in read_transcript(path).messages][-1] == "assistant"
    # Once it has ended, its lock is gone.
    resumed = _loop(driver, ScriptedBackend([]), Tools(), transcript=path).resume()
    assert resumed.reason == "handoff"


def test_a_lone_surrogate_goes_to_the_server_as_a_replacement_character(
    driver: Driver, tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"
    tools = Tools(ToolOutput("bad \ud800 byte"))
    with FaultServer() as server, OpenAICompatible(server.url, timeout=30) as backend:
        server.script.extend([ok(lookup("x")), ok(NONE)])
        loop = _loop(driver, backend, tools, transcript=path)
        result = loop.run(QUESTION)
        last = server.last_messages()
    assert result.reason == "handoff"
    assert last is not None
    assert last[-1]["content"].endswith("bad \ufffd byte")
    # The transcript keeps the text as the tool gave it.
    assert read_transcript(path).messages[-2]["content"].endswith("bad \ud800 byte")


@pytest.mark.parametrize(
    "error", [SystemExit(5), GeneratorExit(), asyncio.CancelledError(), StopIteration()], ids=repr
)
def test_a_tools_exit_or_cancellation_is_its_tool_error(driver: Driver, error: BaseException) -> None:
    events: list[object] = []
    tools = Tools(raises=error)
    result = _loop(driver, ScriptedBackend([lookup("x"), NONE]), tools, on_event=events.append).run(QUESTION)
    assert result.reason == "handoff"
    (returned,) = [e for e in events if isinstance(e, ToolReturned)]
    assert returned.is_error
    assert type(error).__name__ in returned.content


def test_a_keyboard_interrupt_in_a_tool_still_ends_the_run() -> None:
    loop = RoutingLoop(ScriptedBackend([lookup("x"), NONE]), Tools(raises=KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        loop.run(QUESTION)


def test_an_async_tools_own_cancelled_error_is_its_tool_error() -> None:
    class Cancelled(Tools):
        async def acall(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
            raise asyncio.CancelledError  # a future the tool awaited was cancelled, not the run

    loop = AsyncRoutingLoop(AsyncScriptedBackend([lookup("x"), NONE]), Cancelled())
    result = anyio.run(loop.run, QUESTION)
    assert result.reason == "handoff"
    assert "Tool error" in result.messages[-2]["content"]
    assert "CancelledError" in result.messages[-2]["content"]


def _returns_none(request: object) -> None:
    return None


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (Completion(text=NONE, usage=None), "usage of type NoneType"),  # type: ignore[arg-type]
        (Completion(text=NONE, usage=Usage(prompt_tokens="5")), "usage.prompt_tokens='5'"),  # type: ignore[arg-type]
        (Completion(text=NONE, usage=Usage(completion_tokens=-3)), "usage.completion_tokens=-3"),
        (Completion(text=5), "text of type int"),  # type: ignore[arg-type]
        (Completion(text=NONE, truncated="no"), "truncated='no'"),  # type: ignore[arg-type]
        (Completion(text=NONE, finish_reason=7), "finish_reason of type int"),  # type: ignore[arg-type]
        (_returns_none, "is NoneType; a reply is a str or a Completion"),
        (StopIteration(), "raised StopIteration"),
    ],
    ids=[
        "usage None",
        "usage str",
        "usage negative",
        "text int",
        "truncated str",
        "finish int",
        "None",
        "stop",
    ],
)
def test_a_backend_that_lies_is_a_backend_response_error(driver: Driver, reply: object, problem: str) -> None:
    with pytest.raises(BackendResponseError, match=re.escape(problem)):
        _loop(driver, ScriptedBackend([reply]), Tools(), retries=0).run(QUESTION)  # type: ignore[list-item]


class Shown(str):
    """A str whose ``__str__`` says something else than its value."""

    __slots__ = ()

    def __str__(self) -> str:
        return "SOMETHING ELSE"


@pytest.mark.parametrize(
    ("output", "content"),
    [
        (ToolOutput(b"x"), "the tool returned a ToolOutput whose content is bytes, not str"),  # type: ignore[arg-type]
        (ToolOutput("x", is_error="yes"), "the tool returned a ToolOutput whose is_error is str, not bool"),  # type: ignore[arg-type]
        ("x", "the tool returned str, not a ToolOutput"),
    ],
)
def test_a_bad_tool_output_is_named(driver: Driver, output: object, content: str) -> None:
    events: list[object] = []
    _loop(driver, ScriptedBackend([lookup("x"), NONE]), Tools(output), on_event=events.append).run(QUESTION)
    (returned,) = [e for e in events if isinstance(e, ToolReturned)]
    assert (returned.content, returned.is_error) == (content, True)


def test_a_str_subclass_shows_and_commits_one_text(driver: Driver) -> None:
    events: list[object] = []
    result = _loop(
        driver,
        ScriptedBackend([lookup("x"), NONE]),
        Tools(ToolOutput(Shown("the value"))),
        on_event=events.append,
    ).run(QUESTION)
    (returned,) = [e for e in events if isinstance(e, ToolReturned)]
    assert type(returned.content) is str
    assert returned.content == "the value"
    assert result.messages[-2]["content"].endswith("\nthe value")
    assert "SOMETHING ELSE" not in json.dumps(result.messages)


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no words")


def test_a_tool_exception_that_cannot_print_itself_is_still_reported() -> None:
    assert (
        tool_exception(Unprintable()) == "the tool failed: Unprintable: (its message could not be rendered)"
    )
    assert len(tool_exception(ValueError("x" * 10_000))) < 600
