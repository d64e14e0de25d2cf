"""One MCP server's session, async: start or reach it, list its tools page by page, call one.

This module and ``mcp_transport`` are the only ones that touch the ``mcp`` SDK, which they
import when a session opens, so ``import toolrouting`` never does. An async caller awaits a
session on its own event loop; ``MCPTools`` drives the same sessions from sync code through one
background loop (``mcp_bridge``).

The SDK's client is an async context manager whose task groups must be left by the task that
entered them, so each session has one task that holds it open (``_hold``) until ``aclose``;
calls run in other tasks and never wait on a server that has gone: each races the call
against the session's end and its own deadline.

A server that declares ``tools.listChanged`` is followed: a handshake-era server sends
``notifications/tools/list_changed`` on its own, a 2026-07-28 one only on a
``subscriptions/listen`` stream, which the holder keeps open (``_listen``). Either way the SDK
hands the notification to ``_heard``, which tells ``on_tools_changed``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any, TextIO, cast

from .._errors import ToolServerError
from .._limits import (
    DEFAULT_MCP_CALL_TIMEOUT,
    MAX_CAUSE_QUOTE,
    MAX_TOOL_RESULT_CHARS,
    MCP_CLOSE_TIMEOUT,
    MCP_CONNECT_TIMEOUT,
    MCP_MAX_TOOL_PAGES,
)
from .._provider import ToolOutput, exception_text, shortened
from .mcp_results import tool_output
from .mcp_servers import MCPHTTPServer, MCPServerSpec
from .mcp_transport import refusal, refused_statuses, sdk_client

__all__ = ["MCPSession"]

#: The JSON-RPC error code the SDK answers a request with when its connection closed under it.
_CONNECTION_CLOSED = -32000

#: The notification a server sends when its tool list changed.
_TOOLS_CHANGED = "notifications/tools/list_changed"

#: Times a lost ``subscriptions/listen`` stream is opened again before changes go unfollowed.
_RELISTENS = 3


class MCPSession:
    """An open session with one MCP server, for async callers.

    ``async with MCPSession(server) as session:`` starts (or reaches) the server and agrees a
    protocol; ``await session.list_tools()`` reads every page of ``tools/list``;
    ``await session.call_tool(name, arguments)`` answers a :class:`ToolOutput` and never raises
    for what the server or the tool did: an error result, a server error, a timeout and a
    server that has exited all come back as error results.
    """

    def __init__(
        self,
        server: MCPServerSpec,
        *,
        call_timeout: float = DEFAULT_MCP_CALL_TIMEOUT,
        connect_timeout: float = MCP_CONNECT_TIMEOUT,
        max_result_chars: int = MAX_TOOL_RESULT_CHARS,
        errlog: TextIO | None = None,
    ) -> None:
        self.server = server
        self.call_timeout = call_timeout
        self.connect_timeout = connect_timeout
        self.max_result_chars = max_result_chars
        self._errlog = errlog
        self._transport: Any = None
        self._client: Any = None
        self._closing: asyncio.Event | None = None
        self._holder: asyncio.Task[None] | None = None
        self._ended: BaseException | None = None
        self._gone = False
        self.server_name: str | None = None
        """The name the server gave itself, once open (``None`` if it gave none)."""
        self.tools_may_change = False
        """Whether the server declares that its tool list may change (``tools.listChanged``), once open."""
        self.on_tools_changed: Callable[[], None] | None = None
        """Called on the session's event loop each time the server says its tool list changed."""

    @property
    def label(self) -> str:
        """How errors name the server."""
        return self.server.label

    @property
    def alive(self) -> bool:
        """Whether the session is open and its server has not gone."""
        return (
            not self._gone
            and self._client is not None
            and self._holder is not None
            and not self._holder.done()
        )

    async def __aenter__(self) -> MCPSession:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Start or reach the server and agree a protocol; :class:`ToolServerError` if it cannot be done."""
        if self._holder is not None:
            raise RuntimeError("an MCPSession opens once")
        client = self._transport = sdk_client(self.server, self._errlog, self._heard)
        self._closing = asyncio.Event()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._holder = asyncio.create_task(self._hold(client, ready), name=f"mcp {self.label}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.connect_timeout)
        except TimeoutError:
            await self.aclose()
            raise ToolServerError(
                self.label, f"did not start and answer within {self.connect_timeout:g} s (connect_timeout)"
            ) from None
        except asyncio.CancelledError:
            await self.aclose()
            raise
        except Exception as error:
            await self.aclose()
            hint = (
                "; check the URL and the headers it needs" if isinstance(self.server, MCPHTTPServer) else ""
            )
            raise ToolServerError(self.label, self._refusal(0) or _why(error) + hint) from error
        info = getattr(self._client, "server_info", None)
        self.server_name = getattr(info, "name", None) or None
        tools = getattr(getattr(self._client, "server_capabilities", None), "tools", None)
        self.tools_may_change = bool(getattr(tools, "list_changed", False))

    async def _hold(self, client: Any, ready: asyncio.Future[None]) -> None:
        assert self._closing is not None
        try:
            async with client:
                self._client = client
                ready.set_result(None)
                listener = asyncio.create_task(self._listen(client), name=f"mcp {self.label} listen")
                try:
                    await self._closing.wait()
                finally:  # the stream ends before the client does: it lives in the client's task group
                    listener.cancel()
                    await asyncio.wait({listener}, timeout=MCP_CLOSE_TIMEOUT)
        except BaseException as error:  # the server went, or never came: either is the session's end
            self._ended = error
            if not ready.done() and not isinstance(error, asyncio.CancelledError):
                ready.set_exception(error if isinstance(error, Exception) else ConnectionError(str(error)))
            if not isinstance(error, Exception):
                raise
        finally:
            self._client = None

    async def _listen(self, client: Any) -> None:
        """Keep a ``subscriptions/listen`` stream for tool-list changes open, on a server that has one.

        Its events reach ``_heard`` through the SDK's message handler, which sees every
        notification; the stream only has to be open and drained. A handshake-era server has no
        such stream and needs none. A stream lost while the session lives is opened again, and
        the list read again (the stream does not replay what it missed).
        """
        from mcp.client.subscriptions import ListenNotSupportedError

        tools = getattr(client.server_capabilities, "tools", None)
        if not getattr(tools, "list_changed", False):
            return
        for _ in range(_RELISTENS):
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    async for _event in subscription:
                        pass
                return  # the server closed it on purpose
            except ListenNotSupportedError:
                return
            except Exception:  # the stream lost, or refused: it costs the following, never the session
                if not self.alive:
                    return
                self._heard_change()

    async def _heard(self, message: Any) -> None:
        """The SDK's message handler: notifications, and transport errors it reports on the side."""
        if getattr(message, "method", None) == _TOOLS_CHANGED:
            self._heard_change()

    def _heard_change(self) -> None:
        if self.on_tools_changed is not None:
            self.on_tools_changed()

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool the server lists, as on the wire (``name``, ``description``, ``inputSchema``, ...)."""
        client = self._open_client()
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MCP_MAX_TOOL_PAGES):
            try:
                page = await self._racing(client.list_tools(cursor=cursor), self.connect_timeout)
            except TimeoutError:
                raise ToolServerError(
                    self.label, f"did not list its tools within {self.connect_timeout:g} s (connect_timeout)"
                ) from None
            except Exception as error:
                raise ToolServerError(self.label, f"tools/list failed: {_why(error)}") from error
            tools.extend(_wire(tool) for tool in page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools
            if cursor in seen:
                raise ToolServerError(
                    self.label, f"tools/list repeats the cursor {cursor[:MAX_CAUSE_QUOTE]!r}"
                )
            seen.add(cursor)
        raise ToolServerError(
            self.label, f"tools/list goes on past {MCP_MAX_TOOL_PAGES} pages (MCP_MAX_TOOL_PAGES)"
        )

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, timeout: float | None = None
    ) -> ToolOutput:
        """Call the server's tool ``name``: its result, or an error result saying what went wrong."""
        if not self.alive:
            return ToolOutput(f"the MCP server {self.label} is not running{self._ending()}", is_error=True)
        limit = self.call_timeout if timeout is None else timeout
        refusals = self._refusals()
        try:
            result = await self._racing(self._client.call_tool(name, dict(arguments)), limit)
        except TimeoutError:
            return ToolOutput(
                f"{name} did not answer within {limit:g} s (call_timeout); the call was cancelled",
                is_error=True,
            )
        except ConnectionError as error:
            self._lost(error)
            return ToolOutput(shortened(f"the MCP server {self.label} {error}"), is_error=True)
        except Exception as error:  # a JSON-RPC error (an unknown tool, bad params), a malformed result
            if getattr(error, "code", None) == _CONNECTION_CLOSED:
                self._lost(error)
                return ToolOutput(
                    shortened(f"the MCP server {self.label} closed the connection mid-call: {_why(error)}"),
                    is_error=True,
                )
            refused = self._refusal(refusals)
            if refused is not None:
                said = f"the MCP server {self.label}: {refused}; {name} was not called"
                return ToolOutput(shortened(said), is_error=True)
            return ToolOutput(shortened(f"the MCP server refused the call: {_why(error)}"), is_error=True)
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return tool_output(cast(dict[str, Any], dumped), self.max_result_chars)

    async def aclose(self) -> None:
        """End the session and stop a stdio server (the SDK closes its stdin, then terminates it).

        A server still starting is cancelled; so is one whose session does not end within
        ``MCP_CLOSE_TIMEOUT``. A second call does nothing.
        """
        if self._closing is not None:
            self._closing.set()
        holder = self._holder
        if holder is None or holder.done():
            return
        if self._client is None:  # still starting: nothing to close politely
            holder.cancel()
        _, pending = await asyncio.wait({holder}, timeout=MCP_CLOSE_TIMEOUT)
        if pending:
            holder.cancel()
            await asyncio.wait({holder}, timeout=MCP_CLOSE_TIMEOUT)

    def _refusals(self) -> int:
        """How many responses so far refused our credentials (HTTP 401 or 403)."""
        return len(refused_statuses(self._transport))

    def _refusal(self, before: int) -> str | None:
        """What to say when a response after the first ``before`` refused our credentials, else ``None``."""
        refused = refused_statuses(self._transport)
        return refusal(refused[-1]) if len(refused) > before else None

    def _open_client(self) -> Any:
        if not self.alive:
            raise ToolServerError(self.label, f"the session is not open{self._ending()}")
        return self._client

    async def _racing(self, call: Any, timeout: float) -> Any:
        """``await call``, unless the session ends first (``ConnectionError``) or ``timeout`` passes."""
        assert self._holder is not None
        task = asyncio.ensure_future(call)
        try:
            done, _ = await asyncio.wait(
                {task, self._holder}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        except BaseException:
            task.cancel()
            raise
        if task in done:
            return task.result()
        task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait({task}, timeout=1.0)
        if self._holder.done():
            raise ConnectionError(f"exited mid-call{self._ending()}")
        raise TimeoutError

    def _lost(self, error: BaseException) -> None:
        """The connection is gone: the session is not alive from now on, and its holder lets go."""
        if self._ended is None:
            self._ended = error
        self._gone = True
        if self._closing is not None:
            self._closing.set()

    def _ending(self) -> str:
        return f" ({_why(self._ended)})" if self._ended is not None else ""


def _wire(tool: Any) -> dict[str, Any]:
    """A tool as the wire names its fields (``inputSchema``, not the SDK's ``input_schema``)."""
    return cast(dict[str, Any], tool.model_dump(by_alias=True, mode="json", exclude_none=True))


def _why(error: BaseException | None) -> str:
    """The innermost cause of ``error``, one line: task groups wrap the one that matters."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if error is None:
        return "no reason given"
    if isinstance(error, OSError) and error.filename is not None:
        return shortened(f"cannot run {error.filename}: {error.strerror or error}")
    message = getattr(error, "message", None)  # the SDK's MCPError carries the server's message
    if isinstance(message, str) and message:
        return shortened(message)
    return exception_text(error)
