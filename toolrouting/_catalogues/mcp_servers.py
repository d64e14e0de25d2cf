"""Where MCP servers are: a command to start over stdio, or a URL to reach over streamable HTTP.

::

    MCPStdioServer("uvx", ["mcp-server-time"])
    MCPHTTPServer("http://127.0.0.1:8000/mcp", headers={"Authorization": "Bearer ..."})
    mcp_server("uvx mcp-server-git --repository .")       # a command line, or a URL
    mcp_servers_from_config("claude_desktop_config.json")  # the mcpServers format

The ``mcpServers`` format is the one Claude Desktop, Cursor and most MCP clients read
(``{"mcpServers": {NAME: {"command", "args", "env", "cwd"} | {"url", "headers"}}}``); VS Code's
``{"servers": {NAME: {"type": "stdio" | "http", ...}}}`` is read too. Nothing here starts a server.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._errors import ToolServerError
from .._limits import MAX_CAUSE_QUOTE

__all__ = ["MCPHTTPServer", "MCPServerSpec", "MCPStdioServer", "mcp_server", "mcp_servers_from_config"]


@dataclasses.dataclass(frozen=True)
class MCPStdioServer:
    """An MCP server started as a subprocess, spoken to over its stdin and stdout."""

    command: str
    """The program to run (``uvx``, ``npx``, ``python``, a path)."""
    args: Sequence[str] = ()
    """Its arguments."""
    _: dataclasses.KW_ONLY
    env: Mapping[str, str] | None = dataclasses.field(default=None, repr=False)
    """Variables set for it, over the SDK's safe defaults (``PATH``, ``HOME``, ...); may hold keys."""
    cwd: str | None = None
    """Its working directory (default: ours)."""
    name: str | None = None
    """The name its tools are namespaced under (default: the name the server gives itself)."""

    @property
    def label(self) -> str:
        """How errors name it: its name, else its command line."""
        return self.name or shlex.join([self.command, *self.args])


@dataclasses.dataclass(frozen=True)
class MCPHTTPServer:
    """An MCP server reached over streamable HTTP at ``url`` (``http://host:port/mcp``)."""

    url: str
    """The server's MCP endpoint."""
    _: dataclasses.KW_ONLY
    headers: Mapping[str, str] | None = dataclasses.field(default=None, repr=False)
    """Headers sent with every request (``Authorization``, say); never shown."""
    name: str | None = None
    """The name its tools are namespaced under (default: the name the server gives itself)."""

    @property
    def label(self) -> str:
        """How errors name it: its name, else its URL."""
        return self.name or self.url


#: Either kind of server.
MCPServerSpec = MCPStdioServer | MCPHTTPServer


def mcp_server(spec: str | MCPServerSpec) -> MCPServerSpec:
    """A server from one string: an ``http(s)://`` URL, else a command line, split as a shell would."""
    if isinstance(spec, MCPStdioServer | MCPHTTPServer):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"an MCP server is a command line, a URL or a server spec, not {type(spec).__name__}")
    text = spec.strip()
    if text.startswith(("http://", "https://")):
        return MCPHTTPServer(text)
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise ToolServerError(text[:MAX_CAUSE_QUOTE], f"the command line cannot be split: {error}") from None
    if not words:
        raise ToolServerError(
            repr(spec), "the command line is empty: give the command that starts the server"
        )
    return MCPStdioServer(words[0], tuple(words[1:]))


def mcp_servers_from_config(config: Mapping[str, Any] | str | os.PathLike[str]) -> list[MCPServerSpec]:
    """The servers of an ``mcpServers`` config (a mapping, or the path of its JSON file), in its order.

    Entries with ``"disabled": true`` are left out. A server this library cannot reach (SSE, an
    entry with neither ``command`` nor ``url``) is a :class:`ToolServerError` naming it.
    """
    where = "the config"
    if not isinstance(config, Mapping):
        where = str(config)
        try:
            config = json.loads(Path(config).read_text(encoding="utf-8"))
        except OSError as error:
            raise ToolServerError(where, f"cannot read the config: {error.strerror or error}") from None
        except ValueError as error:  # UnicodeDecodeError is one
            raise ToolServerError(where, f"the config is not JSON: {error}") from None
    if not isinstance(config, Mapping):
        raise ToolServerError(where, 'the config is not a JSON object with "mcpServers"')
    servers = config.get("mcpServers", config.get("servers"))
    if not isinstance(servers, Mapping):
        raise ToolServerError(where, 'the config has no "mcpServers" object (nor VS Code\'s "servers")')
    found = []
    for name, entry in servers.items():
        if not isinstance(entry, Mapping):
            raise ToolServerError(str(name), "its config entry is not an object")
        if entry.get("disabled") is True:
            continue
        found.append(_configured(str(name), entry))
    return found


def _configured(name: str, entry: Mapping[str, Any]) -> MCPServerSpec:
    kind = entry.get("type", entry.get("transport"))
    if kind in ("sse",):
        raise ToolServerError(
            name, "SSE is the old MCP transport and is not supported: use its streamable HTTP URL"
        )
    if "url" in entry or kind in ("http", "streamable-http", "streamableHttp"):
        url = entry.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ToolServerError(name, '"url" is an http:// or https:// URL')
        return MCPHTTPServer(url, headers=_strings(name, entry, "headers"), name=name)
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolServerError(name, 'an entry has a "command" (stdio) or a "url" (streamable HTTP)')
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise ToolServerError(name, '"args" is a list of strings')
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ToolServerError(name, '"cwd" is a path')
    return MCPStdioServer(command, tuple(args), env=_strings(name, entry, "env"), cwd=cwd, name=name)


def _strings(name: str, entry: Mapping[str, Any], key: str) -> dict[str, str] | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ToolServerError(name, f'"{key}" maps names to strings')
    return dict(value)
