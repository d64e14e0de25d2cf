"""MCPTools and MCPSession against real MCP servers: two from PyPI over stdio, ours over HTTP.

mcp-server-time and mcp-server-git run as their users run them; ``tests/support/mcp_test_server.py``
(on the SDK's own server) shows the failures: a tool error, a slow tool, a process that exits
mid-call, pages of tools, a huge result, an image, structured content, a clashing name.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.catalogues import tool_names
from support.mcp_servers import git_server, http_test_server, needs, stdio_test_server, time_server

from toolrouting import (
    AsyncRoutingLoop,
    AsyncScriptedBackend,
    AsyncToolProvider,
    MCPHTTPServer,
    MCPSession,
    MCPStdioServer,
    MCPTools,
    Message,
    RoutingLoop,
    RunResult,
    ScriptedBackend,
    ToolOutput,
    ToolServerError,
    route_schema,
)

TOKEN = "test-token"


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """Our test server on loopback, listing its tools three to a page and asking for a token."""
    with http_test_server("--page-size", "3", "--token", TOKEN) as url:
        yield url


@pytest.fixture(scope="module")
def http_tools(http_url: str) -> Iterator[MCPTools]:
    server = MCPHTTPServer(http_url, headers={"Authorization": f"Bearer {TOKEN}"})
    with MCPTools(server, call_timeout=2.0) as tools:
        yield tools


def _children() -> set[int]:
    """Our own live child processes, from /proc (Linux): a stdio server is one while it runs."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text(encoding="ascii", errors="replace")
            except OSError:
                continue  # it ended while we looked
            state, parent = stat.rsplit(")", 1)[1].split()[:2]
            if int(parent) == os.getpid() and state != "Z":
                found.add(int(entry.name))
    return found


def test_mcp_server_time_over_stdio_offers_its_tools_with_their_parameters() -> None:
    with MCPTools(time_server()) as tools:
        catalogue = tools.tools_for_llm()
        assert [t["function"]["name"] for t in catalogue] == ["get_current_time", "convert_time"]
        parameters = catalogue[0]["function"]["parameters"]
        assert parameters["required"] == ["timezone"]  # the wire's inputSchema, not a lost one
        assert set(parameters["properties"]) == {"timezone"}
        route_schema(catalogue)  # a catalogue the route accepts
        answer = tools.call("get_current_time", {"timezone": "Asia/Tokyo"})
        assert not answer.is_error
        assert json.loads(answer.content)["timezone"] == "Asia/Tokyo"
        refused = tools.call("get_current_time", {"timezone": "Nowhere/Nothing"})
        assert refused.is_error
        assert "Nowhere/Nothing" in refused.content
        assert tools.origin("convert_time") == ("mcp-time", "convert_time")


def test_mcp_server_git_on_a_temporary_repository(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    repository.mkdir()
    git = ["git", "-C", str(repository), "-c", "user.name=T", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (repository / "notes.txt").write_text("the latch sticks\n", encoding="utf-8")
    subprocess.run([*git, "add", "notes.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Add the latch note"], check=True)
    (repository / "notes.txt").write_text("the latch sticks in winter\n", encoding="utf-8")
    with MCPTools(git_server(repository), deny=["git_commit", "git_reset", "git_create_branch"]) as tools:
        names = tool_names(tools)
        assert {"git_status", "git_log", "git_diff_unstaged"} <= set(names)
        assert not {"git_commit", "git_reset", "git_create_branch"} & set(names)
        status = tools.call("git_status", {"repo_path": str(repository)})
        assert not status.is_error, status.content
        assert "notes.txt" in status.content
        log = tools.call("git_log", {"repo_path": str(repository)})
        assert "Add the latch note" in log.content
        diff = tools.call("git_diff_unstaged", {"repo_path": str(repository)})
        assert "+the latch sticks in winter" in diff.content


def test_streamable_http_with_headers_and_pages(http_url: str, http_tools: MCPTools) -> None:
    names = tool_names(http_tools)
    assert names[:3] == ["lookup", "shout", "echo"]
    assert len(names) == 10  # four pages of three: every page read
    assert http_tools.call("echo", {"text": "hi"}).content == "hi"

    async def first_page() -> tuple[int, str | None]:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
            Client(streamable_http_client(http_url, http_client=http), cache=None) as client,
        ):
            page = await client.list_tools()
            return len(page.tools), page.next_cursor

    assert asyncio.run(first_page()) == (3, "3")  # the server does paginate


@pytest.mark.parametrize(
    ("headers", "status"),
    [({}, "HTTP 401 Unauthorized"), ({"Authorization": "Bearer wrong"}, "HTTP 403 Forbidden")],
    ids=["no key", "a wrong key"],
)
def test_a_server_that_refuses_our_credentials_says_so(
    http_url: str, headers: dict[str, str], status: str
) -> None:
    # The SDK reports a 401 or 403 only as "Server returned an error response"; the status comes
    # from our HTTP client's record of the response.
    with pytest.raises(ToolServerError) as refused:
        MCPTools(MCPHTTPServer(http_url, headers=headers, name="guarded"))
    assert refused.value.server == "guarded"
    assert str(refused.value) == (
        f"MCP server guarded: the server refused the credentials ({status}); check the key or token in "
        "the headers given for it"
    )


def test_a_wrong_path_is_not_read_as_refused_credentials(http_url: str) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with pytest.raises(ToolServerError) as refused:
        MCPTools(MCPHTTPServer(http_url.replace("/mcp", "/nothing"), headers=headers))
    assert "credentials" not in str(refused.value)
    assert str(refused.value).endswith("; check the URL and the headers it needs")


def test_credentials_refused_mid_run_are_an_error_result_that_says_so() -> None:
    with (
        http_test_server("--token", TOKEN, "--revocable") as url,
        MCPTools(MCPHTTPServer(url, headers={"Authorization": f"Bearer {TOKEN}"}, name="keyed")) as tools,
    ):
        assert tools.call("echo", {"text": "before"}).content == "before"
        assert tools.call("revoke", {}).content == "the token is revoked"  # as a key that expires
        refused = tools.call("echo", {"text": "after"})
    assert refused == ToolOutput(
        "the MCP server keyed: the server refused the credentials (HTTP 403 Forbidden); check the key or "
        "token in the headers given for it; echo was not called",
        is_error=True,
    )


def test_tool_errors_timeouts_and_results_become_tool_outputs(http_tools: MCPTools) -> None:
    failed = http_tools.call("fail", {"reason": "the latch is jammed"})
    assert failed.is_error
    assert "the latch is jammed" in failed.content
    started = time.monotonic()
    slow = http_tools.call("slow", {"seconds": 30})
    assert time.monotonic() - started < 10
    assert slow.is_error
    assert "did not answer within 2 s (call_timeout)" in slow.content
    assert http_tools.call("echo", {"text": "still here"}).content == "still here"
    assert http_tools.call("picture", {}).content == "a transparent pixel\n[image: image/png, 70 bytes]"
    assert json.loads(http_tools.call("measure", {}).content) == {"width": 3, "unit": "m"}
    refused = http_tools.call("echo", {"wrong": 1})
    assert refused.is_error
    unknown = http_tools.call("nothing", {})
    assert unknown.is_error
    assert unknown.content.startswith("there is no tool named 'nothing'; the tools are: lookup, shout")


def test_a_huge_result_keeps_its_head_and_tail(http_tools: MCPTools) -> None:
    out = http_tools.call("huge", {"characters": 100_000})
    assert len(out.content) <= 4000  # MAX_TOOL_RESULT_CHARS
    assert out.content.startswith("HEAD")
    assert out.content.endswith("TAIL")
    assert "characters cut ...]" in out.content


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_server_that_exits_mid_call_is_an_error_result_and_its_tools_go(transport: str) -> None:
    context = http_test_server() if transport == "http" else _nothing(stdio_test_server())
    with context as server, MCPTools(server) as tools:
        assert "die" in tool_names(tools)
        started = time.monotonic()
        died = tools.call("die", {})
        assert died.is_error
        assert "mid-call" in died.content
        assert time.monotonic() - started < 10
        assert tools.tools_for_llm() == []  # only none is offered now
        after = tools.call("echo", {"text": "x"})
        assert after.is_error
        assert "is not running" in after.content


class _nothing:
    def __init__(self, value: str) -> None:
        self.value = value

    def __enter__(self) -> str:
        return self.value

    def __exit__(self, *exc: object) -> None:
        return None


def test_clashing_names_are_namespaced_and_map_back(http_url: str) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with MCPTools(
        time_server(), MCPHTTPServer(http_url, headers=headers, name="tests"), deny=["die"]
    ) as tools:
        names = tool_names(tools)
        assert names[:2] == ["mcp-time__get_current_time", "convert_time"]
        assert "tests__get_current_time" in names
        assert "echo" in names  # only the clashing name is spaced
        assert tools.origin("tests__get_current_time") == ("tests", "get_current_time")
        assert tools.call("tests__get_current_time", {"timezone": "Lisbon"}).content == "noon in Lisbon"
        assert tools.servers == ("mcp-time", "tests")
    with MCPTools(time_server(), namespace=True, allow=["*current*"]) as tools:
        assert tool_names(tools) == ["mcp-time__get_current_time"]


def test_servers_that_cannot_start_are_named_errors_and_leave_nothing_running() -> None:
    before = _children()
    with pytest.raises(ToolServerError, match="cannot run no-such-mcp-server"):
        MCPTools("no-such-mcp-server --port 1")
    with pytest.raises(ToolServerError, match="Connection closed"):
        MCPTools(MCPStdioServer(sys.executable, ["-c", "import sys; sys.exit(3)"], name="quitter"))
    started = time.monotonic()
    with pytest.raises(ToolServerError, match=r"within 2 s \(connect_timeout\)"):
        MCPTools(MCPStdioServer(sys.executable, ["-c", "import time; time.sleep(60)"]), connect_timeout=2)
    assert time.monotonic() - started < 15
    assert _children() <= before


def test_sessions_close_on_every_exit_path() -> None:
    before = _children()
    running: set[int] = set()

    def fails(tools: MCPTools) -> None:
        running.update(_children() - before)
        raise RuntimeError("the caller failed")

    with pytest.raises(RuntimeError), MCPTools(time_server()) as tools:
        fails(tools)  # the block ends in an exception: the server still stops
    assert running  # the server ran inside the block
    assert _children() <= before
    tools.close()  # a second close does nothing
    assert tools.call("get_current_time", {"timezone": "UTC"}).is_error


def test_a_routing_loop_over_a_live_server() -> None:
    backend = ScriptedBackend(
        ['{"tool": "get_current_time", "arguments": {"timezone": "Europe/Paris"}}', '{"tool": "none"}']
    )
    with MCPTools(time_server()) as tools:
        result = RoutingLoop(backend, tools).run([{"role": "user", "content": "What time is it in Paris?"}])
    assert result.reason == "handoff"
    assert '"timezone": "Europe/Paris"' in result.messages[3]["content"]  # the result, after the instructions


def test_an_async_routing_loop_over_a_live_server_awaits_its_calls() -> None:
    backend = AsyncScriptedBackend(
        ['{"tool": "get_current_time", "arguments": {"timezone": "Europe/Paris"}}', '{"tool": "none"}']
    )
    question: list[Message] = [{"role": "user", "content": "What time is it in Paris?"}]

    async def main(tools: MCPTools) -> tuple[RunResult, int]:
        ticks = 0

        async def ticking() -> None:  # the caller's loop goes on while the server answers
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        ticker = asyncio.create_task(ticking())
        try:
            result = await AsyncRoutingLoop(backend, tools).run(question)
        finally:
            ticker.cancel()
        return result, ticks

    with MCPTools(time_server()) as tools:
        assert isinstance(tools, AsyncToolProvider)
        result, ticks = asyncio.run(main(tools))
    assert result.reason == "handoff"
    assert '"timezone": "Europe/Paris"' in result.messages[3]["content"]  # the result, after the instructions
    assert ticks > 1


def test_a_cancelled_acall_stops_at_once_and_the_session_goes_on() -> None:
    async def main(tools: MCPTools) -> tuple[float, ToolOutput]:
        call = asyncio.create_task(tools.acall("slow", {"seconds": 30}))
        await asyncio.sleep(0.5)
        started = time.monotonic()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        waited = time.monotonic() - started
        return waited, await tools.acall("echo", {"text": "still here"})

    with MCPTools(stdio_test_server(), call_timeout=60.0) as tools:
        waited, after = asyncio.run(main(tools))
    assert waited < 5.0
    assert after == ToolOutput("still here")


def test_an_async_caller_uses_a_session_directly() -> None:
    async def main() -> tuple[list[str], str]:
        async with MCPSession(MCPStdioServer(sys.executable, ["-m", "mcp_server_time"])) as session:
            tools = await session.list_tools()
            out = await session.call_tool("get_current_time", {"timezone": "UTC"})
            return [tool["name"] for tool in tools], out.content

    needs("mcp_server_time")
    names, content = asyncio.run(main())
    assert names == ["get_current_time", "convert_time"]
    assert json.loads(content)["timezone"] == "UTC"


def test_import_toolrouting_does_not_import_the_sdk_and_a_missing_sdk_names_the_extra() -> None:
    code = (
        "import sys, toolrouting\n"
        "assert 'mcp' not in sys.modules\n"
        "sys.modules['mcp'] = None\n"
        "try:\n"
        "    toolrouting.MCPTools('anything')\n"
        "except toolrouting.ToolServerError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "the MCP SDK is not installed: pip install 'toolrouting[mcp]'" in done.stdout
