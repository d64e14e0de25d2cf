"""An MCP server the tests start, on the SDK's own server (``MCPServer``, FastMCP before mcp 2).

Its tools are the failures a real server can show a client: a tool error, a slow tool, a
process that exits mid-call, a result too large to show, an image, a result that is only
structured content, and a name (``get_current_time``) that clashes with mcp-server-time's.
``--page-size N`` splits ``tools/list`` into pages of N; ``--token T`` refuses requests
without ``Authorization: Bearer T`` (401 with none, 403 with another), and ``--revocable``
adds a tool that revokes T from then on. ``--stdio`` serves over stdio instead of HTTP;
``--bounded`` serves only the tools whose every string has a ``maxLength``, for the model
tests (a routed reply then has a longest form, and a cap can stay above it). ``--changing``
adds tools that change the list under a run (``retire``, ``hire``) and say so with
``notifications/tools/list_changed``; ``--legacy`` (with ``--stdio``) serves only the
handshake-era protocol, where that notification travels on its own rather than on a
``subscriptions/listen`` stream; ``--static`` declares a list that never changes.

    python tests/support/mcp_test_server.py --port 8123 --page-size 2 --token secret
    python tests/support/mcp_test_server.py --stdio --bounded
    python tests/support/mcp_test_server.py --stdio --changing --legacy
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import dataclasses
import os
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.subscriptions import InMemorySubscriptionBus, ToolsListChanged
from mcp_types import CallToolResult, ImageContent, TextContent
from pydantic import Field

#: A 1x1 transparent PNG: the image tool's picture.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

#: The bounded tools' notes: what lookup finds.
NOTES = {"latch": "The latch sticks in winter.", "hinge": "Oil the hinge."}


def bounded(server: MCPServer) -> None:
    """Tools whose every argument is bounded, so the grammar has a longest reply."""

    @server.tool()
    def lookup(word: Annotated[str, Field(max_length=12)]) -> str:
        """Look a word up in the notes."""
        return NOTES.get(word.strip().lower(), f"no note mentions {word!r}")

    @server.tool()
    def shout(word: Literal["latch", "hinge", "door"]) -> str:
        """Say a word loudly."""
        return word.upper() + "!"


def faulty(server: MCPServer) -> None:
    """The tools that fail, stall, die, flood and draw."""

    @server.tool()
    def echo(text: str) -> str:
        """Answer the text."""
        return text

    @server.tool()
    def fail(reason: str = "broken on purpose") -> str:
        """Always fails."""
        raise ToolError(reason)

    @server.tool()
    async def slow(seconds: float) -> str:
        """Answer after a while."""
        await asyncio.sleep(seconds)
        return f"slept {seconds:g} s"

    @server.tool()
    def die() -> str:
        """The server process exits while this call is under way."""
        os._exit(3)

    @server.tool()
    def huge(characters: int) -> str:
        """A result of that many characters: a head, a middle of dots, a tail."""
        return "HEAD" + "." * max(characters - 8, 0) + "TAIL"

    @server.tool()
    def picture() -> CallToolResult:
        """A caption and an image."""
        image = ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png")
        return CallToolResult(content=[TextContent(type="text", text="a transparent pixel"), image])

    @server.tool()
    def measure() -> CallToolResult:
        """Structured content only, no text block."""
        return CallToolResult(content=[], structured_content={"width": 3, "unit": "m"})

    @server.tool()
    def get_current_time(timezone: str) -> str:
        """A clock that shares its name with mcp-server-time's tool."""
        return f"noon in {timezone}"


#: Where the changing tools publish a change for ``subscriptions/listen`` streams (2026-07-28).
BUS = InMemorySubscriptionBus()

#: Whether ``revoke`` has run: the token is refused from then on (403).
REVOKED: list[bool] = []

#: Tasks that outlive the call that made them (a change made later); held so none is collected.
TASKS: set[asyncio.Task[None]] = set()


def changing(server: MCPServer) -> None:
    """Tools that change the server's tool list, and tell its clients so."""

    async def changed(ctx: Context) -> None:
        # Both eras: a 2026-07-28 client hears it on its listen stream (the bus), a
        # handshake-era one as a bare notification (the SDK drops that copy on a modern one).
        await BUS.publish(ToolsListChanged())
        await ctx.session.send_tool_list_changed()

    async def later(seconds: float, ctx: Context, change: Any) -> None:
        await asyncio.sleep(seconds)
        change()
        await changed(ctx)

    def welcome(name: str) -> str:
        """Greet someone by name."""
        return f"welcome, {name}"

    @server.tool()
    async def retire(name: str, ctx: Context, after: float = 0) -> str:
        """Take a tool off the list, now or after some seconds."""
        if after > 0:  # out of band: the list changes when no call of this client is under way
            TASKS.add(
                asyncio.get_running_loop().create_task(later(after, ctx, lambda: server.remove_tool(name)))
            )
            return f"{name} retires in {after:g} s"
        server.remove_tool(name)
        await changed(ctx)
        return f"{name} is retired"

    @server.tool()
    async def hire(ctx: Context, name: str = "welcome") -> str:
        """Put a new tool on the list: welcome, under this name."""
        server.add_tool(welcome, name=name)
        await changed(ctx)
        return f"{name} is hired"


def revocable(server: MCPServer) -> None:
    """A tool that makes the server refuse the token it was started with (``--token``)."""

    @server.tool()
    def revoke() -> str:
        """Refuse the token from now on, as a key that expires mid-run."""
        REVOKED.append(True)
        return "the token is revoked"


def _serve_handshake_era_stdio(server: MCPServer) -> None:
    """Serve over stdio in the handshake era only, as a server written before 2026-07-28 does.

    ``MCPServer.run("stdio")`` serves both eras, and the client's probe then opens the new one;
    this drives the SDK's handshake-only loop instead (``serve_loop``, what its HTTP manager
    runs), declaring ``tools.listChanged`` as such a server must for its notifications.
    """
    import anyio
    from mcp.server.lowlevel.server import NotificationOptions
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async reaches it the same way
    options = lowlevel.create_initialization_options(NotificationOptions(tools_changed=True))

    async def serve() -> None:
        async with stdio_server() as (read, write), lowlevel.lifespan(lowlevel) as state:
            await serve_loop(lowlevel, read, write, lifespan_state=state, init_options=options)

    anyio.run(serve)


def _paginated(page_size: int) -> Any:
    """A middleware that splits tools/list into pages, the cursor being the next page's offset."""

    async def middleware(ctx: Any, call_next: Any) -> Any:
        if ctx.method != "tools/list":
            return await call_next(ctx)
        params = ctx.params or {}
        start = int(params.get("cursor") or 0)
        result = await call_next(
            dataclasses.replace(ctx, params={k: v for k, v in params.items() if k != "cursor"})
        )
        data = result if isinstance(result, dict) else result.model_dump(by_alias=True, exclude_none=True)
        tools = data["tools"]
        page = {**data, "tools": tools[start : start + page_size]}
        if start + page_size < len(tools):
            page["nextCursor"] = str(start + page_size)
        else:
            page.pop("nextCursor", None)
        return page

    return middleware


def _with_token(app: Any, token: str) -> Any:
    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization")
            if given != f"Bearer {token}".encode() or REVOKED:
                status = 401 if given is None else 403  # no credentials, or refused ones
                await send({"type": "http.response.start", "status": status, "headers": []})
                await send(
                    {"type": "http.response.body", "body": b"no token" if given is None else b"refused"}
                )
                return
        await app(scope, receive, send)

    return guarded


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    parser.add_argument("--stdio", action="store_true")
    parser.add_argument("--bounded", action="store_true")
    parser.add_argument("--page-size", type=int)
    parser.add_argument("--token")
    parser.add_argument("--revocable", action="store_true")
    parser.add_argument("--changing", action="store_true")
    parser.add_argument("--legacy", action="store_true")
    parser.add_argument("--static", action="store_true")
    args = parser.parse_args()

    middleware = [_paginated(args.page_size)] if args.page_size else []
    # --static: no subscriptions/listen, so the server declares a list that never changes.
    bus: InMemorySubscriptionBus | Literal[False] = False if args.static else BUS
    server = MCPServer("toolrouting-tests", log_level="WARNING", middleware=middleware, subscriptions=bus)
    bounded(server)
    if not args.bounded:
        faulty(server)
    if args.changing:
        changing(server)
    if args.revocable:
        revocable(server)
    if args.stdio and args.legacy:
        _serve_handshake_era_stdio(server)
        return
    if args.stdio:
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    if args.token:
        app = _with_token(app, args.token)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
