"""MCP servers whose tool list changes under a run: ``notifications/tools/list_changed`` followed.

``tests/support/mcp_test_server.py --changing`` is a real server on the SDK: ``retire`` takes a tool off
its list, now or some seconds later (out of band: no call of ours is under way then), ``hire``
puts a new one on, and each says so. A 2026-07-28 server says it on the ``subscriptions/listen``
stream the client keeps open; ``--legacy`` serves only the handshake era, where the notification
travels on its own. The runs here are real ``RoutingLoop`` and ``AsyncRoutingLoop`` runs over
the real server with a ``ScriptedBackend`` choosing the actions: what is under test is the
catalogue each round offers and what a call to a withdrawn tool answers, not a model's choices.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.catalogues import tool_names
from support.drivers import Driver
from support.mcp_servers import http_test_server, stdio_test_server

from toolrouting import (
    CatalogueError,
    Event,
    MCPTools,
    RepairRequested,
    RoundStarted,
    ScriptedBackend,
    ScriptedRequest,
    ToolOutput,
    read_transcript,
)

#: Seconds a change made out of band gets to reach the catalogue (it takes milliseconds).
FOLLOW_LIMIT = 15.0

TRANSPORTS = ["stdio", "stdio-handshake-era", "http"]


@contextlib.contextmanager
def _server(transport: str) -> Iterator[str]:
    """A fresh changing server (the changes are the server's state, so no test shares one)."""
    if transport == "http":
        with http_test_server("--changing") as url:
            yield url
    else:
        era = ["--legacy"] if transport == "stdio-handshake-era" else []
        yield stdio_test_server("--changing", *era)


def _until(condition: Callable[[], bool], what: str) -> float:
    """Seconds until ``condition()`` holds; fails after FOLLOW_LIMIT."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > FOLLOW_LIMIT:
            pytest.fail(f"{what} within {FOLLOW_LIMIT:g} s")
        time.sleep(0.02)
    return time.monotonic() - started


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_list_a_call_changes_is_offered_as_the_call_returns(transport: str) -> None:
    with _server(transport) as server, MCPTools(server) as tools:
        assert {"echo", "retire", "hire"} <= set(tool_names(tools))
        assert "welcome" not in tool_names(tools)
        assert tools.call("retire", {"name": "echo"}) == ToolOutput("echo is retired")
        assert "echo" not in tool_names(tools)  # at once: the next round never offers it
        gone = tools.call("echo", {"text": "hi"})
        assert gone.is_error
        assert gone.content.startswith(
            "the MCP server toolrouting-tests no longer offers echo: its tool list changed during the "
            "run, and echo was not called; the tools now are: lookup, shout, fail"
        )
        assert tools.call("hire", {}) == ToolOutput("welcome is hired")
        assert tool_names(tools)[-1] == "welcome"
        assert tools.call("welcome", {"name": "Ann"}) == ToolOutput("welcome, Ann")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_change_made_out_of_band_is_followed_from_the_notification(transport: str) -> None:
    with _server(transport) as server, MCPTools(server) as tools:
        assert tools.call("retire", {"name": "shout", "after": 2.0}) == ToolOutput("shout retires in 2 s")
        assert "shout" in tool_names(tools)  # the list as read after the call: still there
        # Nothing of ours calls the server from here on: only its notification can bring the change.
        _until(lambda: "shout" not in tool_names(tools), "the notification did not take shout off the list")
        assert tools.call("shout", {"word": "door"}).content.startswith(
            "the MCP server toolrouting-tests no longer offers shout"
        )


def test_a_new_tool_the_route_refuses_is_a_catalogue_error_as_at_the_start() -> None:
    with MCPTools(stdio_test_server("--changing")) as tools:
        assert tools.call("hire", {"name": "none"}) == ToolOutput("none is hired")  # the handoff's name
        with pytest.raises(
            CatalogueError, match=r"the tool 'none' of the MCP server toolrouting-tests: .*deny"
        ):
            tools.tools_for_llm()
    with MCPTools(stdio_test_server("--changing"), deny=["none"]) as tools:
        assert tools.call("hire", {"name": "none"}) == ToolOutput("none is hired")
        assert "none" not in tool_names(tools)  # left out, as deny leaves it out at the start


def test_a_routing_loop_offers_each_round_the_servers_list_and_resumes_exactly(
    driver: Driver, tmp_path: Path
) -> None:
    # Through both drivers: the sync loop calls MCPTools.call, the async one awaits MCPTools.acall.
    rounds: dict[int, tuple[str, ...]] = {}
    repairs: list[int] = []

    def seen(event: Event) -> None:
        if isinstance(event, RoundStarted):
            rounds.setdefault(event.round, event.choices)  # a round's first request: its catalogue
        elif isinstance(event, RepairRequested):
            repairs.append(event.round)

    with http_test_server("--changing") as url, MCPTools(url) as tools, MCPTools(url) as other:

        def echo_retired_while_deciding(request: ScriptedRequest) -> str:
            # Another client of the server retires echo after this round offered it; the run
            # hears of it from the server before the chosen call is made.
            assert other.call("retire", {"name": "echo"}) == ToolOutput("echo is retired")
            _until(lambda: "echo" not in tool_names(tools), "the notification did not take echo off the list")
            return '{"tool": "echo", "arguments": {"text": "hi"}}'

        backend = ScriptedBackend(
            [
                '{"tool": "retire", "arguments": {"name": "shout"}}',
                '{"tool": "shout", "arguments": {"word": "door"}}',  # no longer offered: a repair
                '{"tool": "hire", "arguments": {}}',
                echo_retired_while_deciding,
                '{"tool": "welcome", "arguments": {"name": "Ann"}}',
                '{"tool": "none"}',
            ]
        )
        whole = tmp_path / "whole.jsonl"
        result = driver.loop(backend, tools, transcript=whole, on_event=seen).run(
            [{"role": "user", "content": "Tidy the tools, then greet Ann."}]
        )

        assert result.reason == "handoff"
        assert "shout" in rounds[1]
        assert "welcome" not in rounds[1]
        assert "shout" not in rounds[2]  # retired by round 1's call: never offered again
        assert repairs == [2]  # the reply naming it is refused, not called
        assert "welcome" in rounds[3]
        assert "echo" in rounds[3]
        assert "echo" not in rounds[4]
        assert "welcome" in rounds[4]
        results = [m["content"] for m in result.messages if m["content"].startswith("Tool ")]
        assert results[2].startswith(
            "Tool error for echo (call route-3):\n"
            "the MCP server toolrouting-tests no longer offers echo: its tool list changed during the run"
        )
        assert results[3] == "Tool result for welcome (call route-4):\nwelcome, Ann"

        # Resume from the transcript cut after the withdrawn tool's error result: it replays the
        # calls from the messages alone (nothing is called again), and with the server listing
        # what it listed then, the file ends byte for byte as the uninterrupted run's.
        lines = whole.read_text(encoding="utf-8").splitlines(keepends=True)
        cut = next(i for i, line in enumerate(lines) if "Tool error for echo" in line) + 1
        resumed = tmp_path / "resumed.jsonl"
        resumed.write_text("".join(lines[:cut]), encoding="utf-8")
        again = ScriptedBackend(['{"tool": "welcome", "arguments": {"name": "Ann"}}', '{"tool": "none"}'])
        with MCPTools(url) as fresh:
            driver.loop(again, fresh, transcript=resumed).resume()
        assert resumed.read_bytes() == whole.read_bytes()
        assert read_transcript(resumed).messages == result.messages
