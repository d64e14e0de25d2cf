"""An MCP server the tests start, on the SDK's own server (``MCPServer``, FastMCP before mcp 2).

Its tools are the failures a real server can show a client: a tool error, a slow tool, a
process that exits mid-call, a result too large to show, an image, a result that is only
structured content, and a name (``get_current_time``) that clashes with mcp-server-time's.
``--page-size N`` splits ``tools/list`` into pages of N; ``--token T`` refuses requests
without ``Authorization: Bearer T``. ``--stdio`` serves over stdio instead of HTTP;
``--bounded`` serves only the tools whose every string has a ``maxLength``, for the model
tests (a routed reply then has a longest form, and a cap can stay above it).

    python tests/mcp_test_server.py --port 8123 --page-size 2 --token secret
    python tests/mcp_test_server.py --stdio --bounded
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import dataclasses
import os
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ImageContent, TextContent
from pydantic import Field

#: A 1x1 transparent PNG: the image tool's picture.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

#: The bounded tools' notes: what lookup finds.
NOTES = {"latch": "The latch sticks in winter.", "hinge": "Oil the hinge."}


def bounded(server: Any) -> None:
    """Tools whose every argument is bounded, so the grammar has a longest reply."""

    @server.tool()
    def lookup(word: Annotated[str, Field(max_length=12)]) -> str:
        """Look a word up in the notes."""
        return NOTES.get(word.strip().lower(), f"no note mentions {word!r}")

    @server.tool()
    def shout(word: Literal["latch", "hinge", "door"]) -> str:
        """Say a word loudly."""
        return word.upper() + "!"


def faulty(server: Any) -> None:
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
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"no token"})
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
    args = parser.parse_args()

    middleware = [_paginated(args.page_size)] if args.page_size else []
    server = MCPServer("toolrouting-tests", log_level="WARNING", middleware=middleware)
    bounded(server)
    if not args.bounded:
        faulty(server)
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
