"""The SDK's client for one MCP server, over stdio or streamable HTTP, not yet entered.

The SDK is imported here, when a session opens, so ``import toolrouting`` never does. Over
HTTP the client gets an HTTP client of ours, which sets the server's headers and keeps the
status of every response that refused our credentials: the SDK turns a 401 or 403 into a bare
"Server returned an error response", and the status is what tells a wrong key from a wrong URL.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from .._errors import ToolServerError
from .mcp_servers import MCPHTTPServer, MCPServerSpec, MCPStdioServer

__all__ = ["HTTPClient", "refusal", "refused_statuses", "sdk_client"]

#: What a missing SDK says: the extra that brings it.
_INSTALL = "the MCP SDK is not installed: pip install 'toolrouting[mcp]'"

#: HTTP statuses that refuse a request's credentials, as a refusal names them.
_REFUSED = {401: "401 Unauthorized", 403: "403 Forbidden"}


def sdk_client(server: MCPServerSpec, errlog: TextIO | None, heard: Any) -> Any:
    """The SDK's client for ``server``, not yet entered; ``heard`` is its message handler.

    A stdio server's stderr goes to ``errlog`` (see :func:`_error_log`).
    """
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
        return Client(stdio_client(parameters, errlog=_error_log(errlog)), cache=None, message_handler=heard)
    assert isinstance(server, MCPHTTPServer)
    import httpx2  # the SDK's own HTTP client; headers are set on it

    refused: list[int] = []

    async def record(response: Any) -> None:
        if response.status_code in _REFUSED:
            refused.append(response.status_code)

    http = httpx2.AsyncClient(
        headers=dict(server.headers or {}),
        timeout=httpx2.Timeout(30.0, read=300.0),
        event_hooks={"response": [record]},
    )
    client = Client(streamable_http_client(server.url, http_client=http), cache=None, message_handler=heard)
    return HTTPClient(client, http, refused)


def refused_statuses(client: Any) -> list[int]:
    """The statuses of the responses that refused our credentials so far: none over stdio."""
    return client.refused if isinstance(client, HTTPClient) else []


def refusal(status: int) -> str:
    """What a session says of a response that refused its credentials."""
    return (
        f"the server refused the credentials (HTTP {_REFUSED[status]}); check the key or token in the "
        "headers given for it"
    )


class HTTPClient:
    """The SDK's client over HTTP, closing the connection pool it was given when it closes.

    ``refused`` holds the status of every response that refused our credentials, in order.
    """

    def __init__(self, client: Any, http: Any, refused: list[int]) -> None:
        self._client = client
        self._http = http
        self.refused = refused

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
