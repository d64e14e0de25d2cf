"""Tools from live MCP servers, as a tool provider for the routing loop.

::

    with MCPTools("uvx mcp-server-time", "http://127.0.0.1:8000/mcp") as tools:
        RoutingLoop(backend, tools).run(messages)

``MCPTools`` starts (or reaches) every server at once, lists their tools page by page and
offers them as one catalogue. A tool keeps its own name unless two servers offer the same
one, or ``namespace=True`` asks: then it is ``SERVER__TOOL`` (``origin()`` maps it back).
A server whose list changes says so (``notifications/tools/list_changed``); its list is read
again then, and after each call to it, so the loop's next round offers the new list.
The sessions live on one background event loop (``mcp_bridge``); each is an ``MCPSession``
(``mcp_session``), which async code may use directly. ``acall`` awaits a call from asyncio
code (an :class:`AsyncRoutingLoop`) without blocking the caller's loop.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import fnmatch
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from .._catalogue_checks import shown_name
from .._errors import CatalogueError, ToolServerError
from .._limits import (
    DEFAULT_MCP_CALL_TIMEOUT,
    MAX_TOOL_RESULT_CHARS,
    MCP_CLOSE_TIMEOUT,
    MCP_CONNECT_TIMEOUT,
    SHOWN_LIST_CHARS,
)
from .._provider import ToolOutput, unknown_tool
from .adapters import tools_from_mcp
from .mcp_bridge import LoopThread
from .mcp_servers import MCPHTTPServer, MCPServerSpec, mcp_server
from .mcp_session import MCPSession

__all__ = ["MCP_NAME_SEPARATOR", "MCPTools"]

#: What joins a server's name and its tool's in a namespaced name: ``time__get_current_time``.
MCP_NAME_SEPARATOR = "__"

#: Seconds a sync call waits beyond the session's own deadline, so the bridge never outwaits it
#: by accident and never waits forever.
_BRIDGE_GRACE = 5.0


@dataclasses.dataclass(frozen=True)
class _Offered:
    session: MCPSession
    server: str
    tool: str
    declaration: dict[str, Any]


class MCPTools:
    """A tool provider over the tools of one or more MCP servers.

    Each server is a command line (``"uvx mcp-server-git --repository ."``), a URL
    (``"http://127.0.0.1:8000/mcp"``), an :class:`MCPStdioServer` or an :class:`MCPHTTPServer`.
    ``allow`` and ``deny`` are glob patterns matched against a tool's own name and its
    namespaced one (``git__*``): a tool is offered when ``allow`` (if given) matches it and
    ``deny`` does not.

    ``call`` never raises for what a server or a tool did: a tool's error, a server's refusal,
    a call past ``call_timeout`` and a server that has exited all come back as error results; a
    server that has exited offers no tools from then on. A server that cannot be started,
    reached or listed is a ``ToolServerError`` here, when the provider is made.

    A server that declares ``tools.listChanged`` is listed again when it says its list changed
    and after each call to it: ``tools_for_llm()`` then offers the new list, a tool keeps the
    name it was first offered under, and a call to a tool the server no longer lists is an
    error result that says so. A new list with a tool the route refuses is a ``CatalogueError``
    from the next ``tools_for_llm()``, as at the start; a ``tools/list`` that fails leaves the
    last list on offer until a later reading succeeds.
    """

    def __init__(
        self,
        *servers: str | MCPServerSpec,
        namespace: bool = False,
        allow: Iterable[str] | None = None,
        deny: Iterable[str] = (),
        call_timeout: float = DEFAULT_MCP_CALL_TIMEOUT,
        connect_timeout: float = MCP_CONNECT_TIMEOUT,
        max_result_chars: int = MAX_TOOL_RESULT_CHARS,
        errlog: TextIO | None = None,
    ) -> None:
        if not servers:
            raise ValueError("MCPTools needs at least one server: a command line, a URL or a server spec")
        specs = [mcp_server(server) for server in servers]
        self.call_timeout = call_timeout
        self._connect_timeout = connect_timeout
        self._allow = None if allow is None else tuple(allow)
        self._deny = tuple(deny)
        self._sessions = [
            MCPSession(
                spec,
                call_timeout=call_timeout,
                connect_timeout=connect_timeout,
                max_result_chars=max_result_chars,
                errlog=errlog,
            )
            for spec in specs
        ]
        self._bridge = LoopThread()
        self._namespace = namespace
        self._offered: dict[str, _Offered] = {}
        # Names offered once and no longer, each with its server: a call to one says why it fails.
        self._withdrawn: dict[str, str] = {}
        self._listed: list[list[dict[str, Any]]] = [[] for _ in self._sessions]
        # How many changes each server has announced, and how many its list as read reflects.
        self._announced = [0] * len(self._sessions)
        self._reflected = [0] * len(self._sessions)
        self._reading: dict[int, asyncio.Task[None]] = {}
        self._problem: CatalogueError | None = None
        for index, session in enumerate(self._sessions):
            session.on_tools_changed = functools.partial(self._announce, index)
        try:
            self._listed = self._bridge.run(self._open_all(), connect_timeout * 2 + _BRIDGE_GRACE)
            self._offered = self._catalogue(self._listed, namespace, {})
        except BaseException:
            self.close()
            raise

    async def _open_all(self) -> list[list[dict[str, Any]]]:
        async def one(session: MCPSession) -> list[dict[str, Any]]:
            await session.open()
            return await session.list_tools()

        results = await asyncio.gather(*(one(s) for s in self._sessions), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return [result for result in results if not isinstance(result, BaseException)]

    def _catalogue(
        self, listed: Sequence[list[dict[str, Any]]], namespace: bool, before: Mapping[str, _Offered]
    ) -> dict[str, _Offered]:
        """The offered tools of ``listed``; a tool offered ``before`` keeps its name there."""
        names = _server_names(self._sessions)
        kept = [
            (session, server, tool)
            for session, server, tools in zip(self._sessions, names, listed, strict=True)
            for tool in tools
            if self._wanted(str(tool.get("name")), server)
        ]
        counts: dict[str, int] = {}
        for _, _, tool in kept:
            counts[str(tool.get("name"))] = counts.get(str(tool.get("name")), 0) + 1
        # A name the model has seen stays the tool's, even when a newcomer shares its own name.
        given = {(o.session, o.tool): name for name, o in before.items()}
        taken = {given[key] for key in ((s, str(t.get("name"))) for s, _, t in kept) if key in given}
        offered: dict[str, _Offered] = {}
        for session, server, tool in kept:
            own = str(tool.get("name"))
            name = given.get((session, own)) or (
                f"{server}{MCP_NAME_SEPARATOR}{own}" if namespace or counts[own] > 1 or own in taken else own
            )
            try:
                (declaration,) = tools_from_mcp([{**tool, "name": name}])
            except CatalogueError as error:
                raise CatalogueError(
                    len(offered),
                    f"the tool {shown_name(own)} of the MCP server {server}: {error.reason}; "
                    "leave it out with deny",
                ) from None
            if name in offered:
                raise CatalogueError(len(offered), f"the MCP server {server} lists {shown_name(own)} twice")
            offered[name] = _Offered(session, server, own, dict(declaration))
        return offered

    def _wanted(self, tool: str, server: str) -> bool:
        names = (tool, f"{server}{MCP_NAME_SEPARATOR}{tool}")

        def matches(patterns: Sequence[str]) -> bool:
            return any(fnmatch.fnmatchcase(name, pattern) for name in names for pattern in patterns)

        return (self._allow is None or matches(self._allow)) and not matches(self._deny)

    @property
    def servers(self) -> tuple[str, ...]:
        """The servers' names, in the order given: what namespaced tool names begin with."""
        return tuple(_server_names(self._sessions))

    def origin(self, name: str) -> tuple[str, str]:
        """The server and the server's own name of the offered tool ``name``; ``KeyError`` if none."""
        offered = self._offered[name]
        return offered.server, offered.tool

    def tools_for_llm(self) -> list[dict[str, Any]]:
        """The catalogue in tools-for-llm shape, without the tools of a server that has exited.

        The servers' latest lists: a list that changed to one the route refuses is raised here.
        """
        if self._problem is not None:
            raise self._problem
        return [_copied(o.declaration) for o in self._offered.values() if o.session.alive]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        """Call the tool offered as ``name`` on its server; every failure is an error result."""
        offered = self._offered.get(name)
        if offered is None or self._bridge.closed:
            return self._not_called(name)
        try:
            return self._bridge.run(self._calling(offered, arguments), self._call_limit)
        except TimeoutError:
            return self._timed_out(name)

    async def acall(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        """:meth:`call` for asyncio code (what :class:`AsyncRoutingLoop` awaits).

        The session still works on the provider's own loop thread, where it was opened; the
        caller's loop goes on meanwhile, and cancelling the caller cancels the call there.
        """
        offered = self._offered.get(name)
        if offered is None or self._bridge.closed:
            return self._not_called(name)
        try:
            return await self._bridge.arun(self._calling(offered, arguments), self._call_limit)
        except TimeoutError:
            return self._timed_out(name)

    @property
    def _call_limit(self) -> float:
        # The call, then perhaps a reading of its server's list (each page within connect_timeout).
        return self.call_timeout + self._connect_timeout + _BRIDGE_GRACE

    async def _calling(self, offered: _Offered, arguments: dict[str, Any]) -> ToolOutput:
        """The call's output, once the list of a server that may change it reflects the call.

        A change a call makes reaches us on another stream than its result (a listen stream,
        another HTTP response), in no order we can rely on, so the list is read again here:
        the next round offers what the server lists after the call.
        """
        output = await offered.session.call_tool(offered.tool, arguments)
        if offered.session.tools_may_change and offered.session.alive:
            index = self._sessions.index(offered.session)
            self._announce(index)
            await asyncio.shield(self._reading[index])
        return output

    def _announce(self, index: int) -> None:
        """Server ``index`` says its tool list changed: read it again (on the bridge's loop)."""
        self._announced[index] += 1
        reading = self._reading.get(index)
        if reading is None or reading.done():
            self._reading[index] = asyncio.ensure_future(self._read_again(index))

    async def _read_again(self, index: int) -> None:
        """Read server ``index``'s list until it reflects every change announced, and offer it."""
        session = self._sessions[index]
        while self._reflected[index] < self._announced[index] and session.alive:
            announced = self._announced[index]
            try:
                listed = await session.list_tools()
            except ToolServerError:
                # The last list read stays on offer, and the next change or call reads again: a
                # call to a tool it no longer has is the server's error result, which says why
                # (a server that has gone takes its tools with it, as ever).
                return
            self._listed[index], self._reflected[index] = listed, announced
            try:
                offered = self._catalogue(self._listed, self._namespace, self._offered)
            except CatalogueError as error:
                self._problem = error
                return
            withdrawn = {**self._withdrawn, **{n: o.server for n, o in self._offered.items()}}
            self._withdrawn = {n: server for n, server in withdrawn.items() if n not in offered}
            self._offered = offered

    def _not_called(self, name: str) -> ToolOutput:
        if name in self._withdrawn and name not in self._offered:
            return ToolOutput(
                f"the MCP server {self._withdrawn[name]} no longer offers {name}: its tool list changed "
                f"during the run, and {name} was not called; the tools now are: "
                f"{', '.join(self._offered)[:SHOWN_LIST_CHARS]}",
                is_error=True,
            )
        if name not in self._offered:
            return unknown_tool(name, self._offered)
        return ToolOutput(f"the MCP tools are closed; {name} was not called", is_error=True)

    def _timed_out(self, name: str) -> ToolOutput:
        return ToolOutput(
            f"{name} did not answer within {self.call_timeout:g} s (call_timeout)", is_error=True
        )

    def close(self) -> None:
        """End every session and stop every stdio server; a second call does nothing."""
        if self._bridge.closed:
            return
        try:
            self._bridge.run(_close_all(self._sessions), MCP_CLOSE_TIMEOUT * 2 + _BRIDGE_GRACE)
        except (TimeoutError, RuntimeError):
            pass  # the bridge's close cancels what is left
        finally:
            self._bridge.close()

    def __enter__(self) -> MCPTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MCPTools({', '.join(repr(s.label) for s in self._sessions)})"


async def _close_all(sessions: Sequence[MCPSession]) -> None:
    await asyncio.gather(*(session.aclose() for session in sessions), return_exceptions=True)


def _server_names(sessions: Sequence[MCPSession]) -> list[str]:
    """Each server's name as tool names carry it: its given name, the name it gives itself, or its
    command's; only letters, digits, ``_`` and ``-``; a repeated one numbered (``time-2``)."""
    names: list[str] = []
    for session in sessions:
        server = session.server
        name = server.name or session.server_name or _fallback_name(server)
        name = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "server"
        unique, number = name, 2
        while unique in names:
            unique, number = f"{name}-{number}", number + 1
        names.append(unique)
    return names


def _fallback_name(server: MCPServerSpec) -> str:
    if isinstance(server, MCPHTTPServer):
        return server.url.split("://", 1)[-1].split("/", 1)[0]
    return server.command.replace("\\", "/").rsplit("/", 1)[-1]


def _copied(declaration: Mapping[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(dict(declaration))
