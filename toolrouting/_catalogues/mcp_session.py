"""One MCP server's session, async: start or reach it, list its tools page by page, call one.

This is the only module that touches the ``mcp`` SDK, and it imports it when a session opens,
so ``import toolrouting`` never does. An async caller (the async loop to come) awaits a
session on its own event loop; ``MCPTools`` drives the same sessions from sync code through one
background loop (``mcp_bridge``).

The SDK's client is an async context manager whose task groups must be left by the task that
entered them, so each session has one task that holds it open (``_hold``) until ``aclose``;
calls run in other tasks and never wait on a server that has gone: each races the call
against the session's end and its own deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Mapping
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
from .mcp_servers import MCPHTTPServer, MCPServerSpec, MCPStdioServer

__all__ = ["MCPSession"]

#: The JSON-RPC error code the SDK answers a request with when its connection closed under it.
_CONNECTION_CLOSED = -32000

#: What a missing SDK says: the extra that brings it.
_INSTALL = "the MCP SDK is not installed: pip install 'toolrouting[mcp]'"


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
        self._client: Any = None
        self._closing: asyncio.Event | None = None
        self._holder: asyncio.Task[None] | None = None
        self._ended: BaseException | None = None
        self._gone = False
        self.server_name: str | None = None
        """The name the server gave itself, once open (``None`` if it gave none)."""

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
        client = _client(self.server, _error_log(self._errlog))
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
            raise ToolServerError(self.label, _why(error) + hint) from error
        info = getattr(self._client, "server_info", None)
        self.server_name = getattr(info, "name", None) or None

    async def _hold(self, client: Any, ready: asyncio.Future[None]) -> None:
        assert self._closing is not None
        try:
            async with client:
                self._client = client
                ready.set_result(None)
                await self._closing.wait()
        except BaseException as error:  # the server went, or never came: either is the session's end
            self._ended = error
            if not ready.done() and not isinstance(error, asyncio.CancelledError):
                ready.set_exception(error if isinstance(error, Exception) else ConnectionError(str(error)))
            if not isinstance(error, Exception):
                raise
        finally:
            self._client = None

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


def _client(server: MCPServerSpec, errlog: TextIO) -> Any:
    """The SDK's client for ``server``, not yet entered."""
    try:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client
    except ImportError as error:
        raise ToolServerError(server.label, f"{_INSTALL} ({error})") from None
    if isinstance(server, MCPStdioServer):
        parameters = StdioServerParameters(
            command=server.command,
            args=list(server.args),
            env=None if server.env is None else dict(server.env),
            cwd=server.cwd,
        )
        return Client(stdio_client(parameters, errlog=errlog), cache=None)
    assert isinstance(server, MCPHTTPServer)
    import httpx2  # the SDK's own HTTP client; headers are set on it

    http = httpx2.AsyncClient(headers=dict(server.headers or {}), timeout=httpx2.Timeout(30.0, read=300.0))
    return _HTTPClient(Client(streamable_http_client(server.url, http_client=http), cache=None), http)


class _HTTPClient:
    """The SDK's client over HTTP, closing the connection pool it was given when it closes."""

    def __init__(self, client: Any, http: Any) -> None:
        self._client = client
        self._http = http

    async def __aenter__(self) -> Any:
        try:
            return await self._client.__aenter__()
        except BaseException:
            await self._http.aclose()
            raise

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self._client.__aexit__(*exc)
        finally:
            await self._http.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def _error_log(errlog: TextIO | None) -> TextIO:
    """Where a stdio server's stderr goes: ``errlog``, else ours, else the process's own.

    The subprocess needs a file descriptor; a stream put in stderr's place (a test's capture, an
    IDE's console) may have none, and then the process's own stderr takes the server's logs.
    """
    for stream in (errlog or sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    raise ToolServerError("stderr", "no stream with a file descriptor takes the server's log: pass errlog=")


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
