"""Tools from Python callables, called: arguments converted to the hints or refused, results rendered,
failures as error results, and async tools in both loops."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import threading
from typing import Any

import pytest
from support.functions import Colour, add, search_notes

from toolrouting import (
    AsyncRoutingLoop,
    AsyncScriptedBackend,
    AsyncToolProvider,
    FunctionTools,
    Message,
    RoutingLoop,
    ScriptedBackend,
    ToolOutput,
    ToolProvider,
    split_routed_result,
)


def test_arguments_are_converted_to_the_hinted_types() -> None:
    seen: list[Any] = []

    def take(c: Colour, s: set[int], t: tuple[str, ...], x: float, o: int | None = None) -> str:
        seen.extend([c, s, t, x, o])
        return "ok"

    assert FunctionTools(take).call("take", {"c": "blue", "s": [1, 2, 1], "t": ["a"], "x": 2}) == ToolOutput(
        content="ok"
    )
    assert seen == [Colour.BLUE, {1, 2}, ("a",), 2.0, None]
    assert isinstance(seen[3], float)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "missing argument 'query'"),
        ({"query": "q", "lmit": 3}, "unknown argument 'lmit'"),
        ({"query": 3}, "query should be a string, not an integer"),
        ({"query": "q", "limit": True}, "limit should be an integer, not a boolean"),
        ({"query": "q", "limit": 2.5}, "limit should be an integer, not a number"),
        ({"query": "q", "mode": "slow"}, "mode is a string, not one of ['fast', 'deep']"),
        ({"query": "q", "colour": "green"}, "colour is a string, not one of ['red', 'blue']"),
        ({"query": "q", "tags": "door"}, "tags is a string, which fits none of"),
        ({"query": "q", "tags": ["door", 3]}, "fits none of"),
        ({"query": "q", "weights": {"a": "heavy"}}, "fits none of"),
    ],
)
def test_arguments_that_do_not_fit_are_an_error_result(arguments: dict[str, Any], message: str) -> None:
    output = FunctionTools(search_notes).call("search_notes", arguments)
    assert output.is_error
    assert output.content.startswith("the arguments do not fit search_notes: ")
    assert message in output.content


def test_an_exception_is_a_short_error_result() -> None:
    def explode(path: str) -> str:
        raise OSError(f"cannot read {path}: " + "x" * 2000)

    output = FunctionTools(explode).call("explode", {"path": "/a"})
    assert output.is_error
    assert output.content.startswith("OSError: cannot read /a: xxx")
    assert len(output.content) == 500


def test_an_unknown_tool_is_an_error_result() -> None:
    output = FunctionTools(search_notes, add).call("delete_all", {})
    assert output == ToolOutput(
        content="there is no tool named 'delete_all'; the tools are: search_notes, add", is_error=True
    )


def test_return_values_are_rendered() -> None:
    @dataclasses.dataclass
    class Note:
        id: str
        when: datetime.date

    def note() -> Note:
        return Note("M1", datetime.date(2026, 11, 30))

    def nothing() -> None:
        return None

    def text() -> str:
        return "plain ünïcode"

    def unrenderable() -> object:
        return object()

    tools = FunctionTools(note, nothing, text, unrenderable)
    assert tools.call("note", {}) == ToolOutput(content='{"id":"M1","when":"2026-11-30"}')
    assert tools.call("nothing", {}) == ToolOutput(content="null")
    assert tools.call("text", {}) == ToolOutput(content="plain ünïcode")
    bad = tools.call("unrenderable", {})
    assert bad.is_error
    assert "not JSON" in bad.content


# --- async tools -------------------------------------------------------------------------


async def fetch_note(id: str) -> dict[str, str]:
    """Fetch one note by its id.

    Args:
        id: The note's id, as a search listed it.
    """
    await asyncio.sleep(0)
    if id == "M0":
        raise LookupError("no note M0")
    return {"id": id, "thread": threading.current_thread().name}


def where_am_i() -> str:
    """The thread a plain tool runs in."""
    return threading.current_thread().name


def test_an_async_tool_is_declared_like_a_plain_one() -> None:
    (declared,) = FunctionTools(fetch_note).tools_for_llm()
    assert declared["function"]["parameters"]["properties"]["id"] == {
        "description": "The note's id, as a search listed it.",
        "type": "string",
    }
    assert isinstance(FunctionTools(fetch_note), AsyncToolProvider)
    assert isinstance(FunctionTools(fetch_note), ToolProvider)


def test_acall_awaits_an_async_tool_and_runs_a_plain_one_in_a_worker_thread() -> None:
    tools = FunctionTools(fetch_note, where_am_i)

    async def main() -> list[ToolOutput]:
        return [
            await tools.acall("fetch_note", {"id": "M4"}),
            await tools.acall("fetch_note", {"id": "M0"}),
            await tools.acall("where_am_i", {}),
            await tools.acall("fetch_note", {"id": 4}),
            await tools.acall("nothing", {}),
        ]

    fetched, failed, thread, mismatch, unknown = asyncio.run(main())
    assert json.loads(fetched.content) == {"id": "M4", "thread": threading.current_thread().name}
    assert failed == ToolOutput("LookupError: no note M0", is_error=True)
    assert thread.content != threading.current_thread().name  # not on the event loop's thread
    assert mismatch.is_error
    assert "the arguments do not fit fetch_note" in mismatch.content
    assert unknown.is_error


def test_call_runs_an_async_tool_on_a_loop_of_its_own_and_refuses_inside_one() -> None:
    tools = FunctionTools(fetch_note)
    assert json.loads(tools.call("fetch_note", {"id": "M4"}).content)["id"] == "M4"
    assert tools.call("fetch_note", {"id": "M0"}) == ToolOutput("LookupError: no note M0", is_error=True)

    async def inside() -> ToolOutput:
        return tools.call("fetch_note", {"id": "M4"})

    refused = asyncio.run(inside())
    assert refused.is_error
    assert "fetch_note is async and this thread runs an event loop: await acall()" in refused.content


def test_async_tools_in_both_loops() -> None:
    replies = ['{"tool": "fetch_note", "arguments": {"id": "M4"}}', '{"tool": "none"}']
    question: list[Message] = [{"role": "user", "content": "What does M4 say?"}]
    synced = RoutingLoop(ScriptedBackend(replies), FunctionTools(fetch_note)).run(question)
    awaited = asyncio.run(
        AsyncRoutingLoop(AsyncScriptedBackend(replies), FunctionTools(fetch_note)).run(question)
    )
    assert synced.actions == awaited.actions
    # The same result, but for the thread each ran in: its own loop's, and the caller's loop's.
    # (messages[0] is the loop's instructions, then the question and the action.)
    assert json.loads(split_routed_result(awaited.messages[3]["content"])[1])["thread"] == "MainThread"  # type: ignore[index]


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no words")


def scale(x: float) -> float:
    """Scale a number."""
    return x * 2


def tags(t: set[Any]) -> int:
    """Count tags."""
    return len(t)


def broken() -> None:
    """Fail without words."""
    raise Unprintable()


def test_arguments_that_do_not_fit_are_error_results() -> None:
    tools = FunctionTools(scale, tags, broken)
    assert tools.call("scale", {"x": 10**400}).is_error
    assert tools.call("tags", {"t": [[1]]}).is_error
    output = tools.call("broken", {})
    assert output.is_error
    assert "could not be rendered" in output.content
