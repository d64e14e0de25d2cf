"""The tools of ``toolrouting run``: MCP servers and Python callables instead of the demo store.

``--mcp`` and ``--mcp-config`` start or reach MCP servers (``MCPTools``), ``--tools`` imports
callables (``FunctionTools``); ``--allow`` and ``--deny`` filter what is offered, ``--confirm``
asks on the terminal before each call, and every result longer than ``MAX_TOOL_RESULT_CHARS``
is cut around a marker. Without any of these options the run uses the demo store.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import importlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any, TextIO

from .._catalogue_checks import shown_name
from .._catalogues import FunctionTools, MCPServerSpec, MCPTools, mcp_server, mcp_servers_from_config
from .._errors import CatalogueError
from .._limits import DEFAULT_MCP_CALL_TIMEOUT, MAX_TOOL_RESULT_CHARS
from .._provider import ToolOutput, ToolProvider, cut_middle, unknown_tool
from .arguments import UsageError, non_negative

__all__ = ["RunTools", "add_tool_options", "asks", "run_tools", "uses_tools"]


def add_tool_options(parser: argparse.ArgumentParser) -> None:
    """``--mcp``, ``--mcp-config``, ``--tools``, ``--allow``, ``--deny``, ``--confirm`` and friends."""
    group = parser.add_argument_group("tools (instead of the demo notes)")
    group.add_argument(
        "--mcp",
        action="append",
        default=[],
        metavar="COMMAND",
        help='an MCP server: a command line that starts one over stdio ("uvx mcp-server-time"), or the '
        "URL of one over streamable HTTP; repeat for more",
    )
    group.add_argument(
        "--mcp-config",
        metavar="FILE",
        help='the MCP servers of a JSON config in the "mcpServers" format of Claude Desktop and most '
        'clients (VS Code\'s "servers" too)',
    )
    group.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="MODULE:NAME",
        help="Python tools: a FunctionTools, a tool provider, a function or a list of functions, imported "
        "from MODULE (the current directory comes first on the path); repeat for more",
    )
    group.add_argument(
        "--allow",
        action="append",
        metavar="PATTERN",
        help="offer only the tools whose name matches this glob pattern (an MCP tool also by SERVER__TOOL); "
        "repeat for more",
    )
    group.add_argument(
        "--deny",
        action="append",
        default=[],
        metavar="PATTERN",
        help="never offer the tools whose name matches this glob pattern; repeat for more",
    )
    group.add_argument(
        "--namespace",
        action="store_true",
        help="name every MCP tool SERVER__TOOL (tools two servers share are always named so)",
    )
    group.add_argument(
        "--confirm",
        action="store_true",
        help="ask on the terminal before each tool call; a no is an error result",
    )
    group.add_argument(
        "--tool-timeout",
        type=non_negative,
        default=DEFAULT_MCP_CALL_TIMEOUT,
        metavar="SECONDS",
        help="how long an MCP tool call may take before it is an error result (default: %(default)g)",
    )


def uses_tools(args: argparse.Namespace) -> bool:
    """Whether this command line names tools of its own, so the demo store is not used."""
    return bool(args.mcp or args.mcp_config or args.tools)


@contextlib.contextmanager
def run_tools(args: argparse.Namespace, *, errlog: TextIO) -> Iterator[RunTools]:
    """The run's tools, every MCP server closed on the way out, however the run ends."""
    if args.db is not None:
        raise UsageError(
            "--db names the demo store's notes; with --mcp, --mcp-config or --tools there is none"
        )
    confirm = None
    if args.confirm:
        if sys.stdin is None or not sys.stdin.isatty():
            raise UsageError("--confirm asks on the terminal before each call, and stdin is not a terminal")
        confirm = asks(sys.stdin, sys.stderr)
    functions = [_imported(spec) for spec in args.tools]
    servers = _servers(args)
    with contextlib.ExitStack() as stack:
        providers: list[ToolProvider] = []
        if servers:
            providers.append(
                stack.enter_context(
                    MCPTools(
                        *servers,
                        namespace=args.namespace,
                        allow=args.allow,
                        deny=args.deny,
                        call_timeout=args.tool_timeout,
                        errlog=errlog,
                    )
                )
            )
        providers.extend(functions)
        tools = RunTools(providers, allow=args.allow, deny=args.deny, confirm=confirm)
        tools.tools_for_llm()  # two providers offering one name is a usage error now, not in round 1
        yield tools


class RunTools:
    """The providers of one run as one: filtered by name, confirmed if asked, every result cut to size."""

    def __init__(
        self,
        providers: Sequence[ToolProvider],
        *,
        allow: Sequence[str] | None = None,
        deny: Sequence[str] = (),
        confirm: Callable[[str, dict[str, Any]], bool] | None = None,
        limit: int = MAX_TOOL_RESULT_CHARS,
    ) -> None:
        self._providers = list(providers)
        self._allow = allow
        self._deny = deny
        self._confirm = confirm
        self._limit = limit
        self._owners: dict[str, ToolProvider] = {}

    def tools_for_llm(self) -> list[dict[str, Any]]:
        """Every provider's catalogue, filtered; a name two providers offer is a :class:`CatalogueError`."""
        tools: list[dict[str, Any]] = []
        owners: dict[str, ToolProvider] = {}
        for provider in self._providers:
            for tool in provider.tools_for_llm():
                name = str(tool.get("function", {}).get("name"))
                if not self._wanted(name):
                    continue
                if name in owners:
                    raise CatalogueError(
                        len(tools), f"two tool providers offer a tool named {shown_name(name)}"
                    )
                owners[name] = provider
                tools.append(tool)
        self._owners = owners
        return tools

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        """Call ``name`` on the provider that offers it, once confirmed; the result cut to the limit."""
        provider = self._owners.get(name)
        if provider is None:
            return unknown_tool(name, self._owners)
        if self._confirm is not None and not self._confirm(name, arguments):
            return ToolOutput(f"the user declined the call of {name}; it was not run", is_error=True)
        output = provider.call(name, arguments)
        return ToolOutput(cut_middle(output.content, self._limit), is_error=output.is_error)

    def _wanted(self, name: str) -> bool:
        def matches(patterns: Sequence[str]) -> bool:
            return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)

        return (self._allow is None or matches(self._allow)) and not matches(self._deny)


def asks(answers: IO[str], prompts: IO[str]) -> Callable[[str, dict[str, Any]], bool]:
    """A confirmation that shows the call on ``prompts`` and takes ``y`` or ``yes`` from ``answers``."""

    def confirm(name: str, arguments: dict[str, Any]) -> bool:
        shown = json.dumps(arguments, ensure_ascii=False)
        print(f"  ? call {name} {shown} [y/N] ", end="", file=prompts, flush=True)
        answer = answers.readline()
        if not answer:  # end of input: nobody is there to say yes
            print(file=prompts)
        return answer.strip().lower() in ("y", "yes")

    return confirm


def _servers(args: argparse.Namespace) -> list[MCPServerSpec]:
    servers = [mcp_server(spec) for spec in args.mcp]
    if args.mcp_config:
        if not os.path.isfile(args.mcp_config):
            raise UsageError(f"--mcp-config {args.mcp_config}: no such file")
        servers.extend(mcp_servers_from_config(args.mcp_config))
    return servers


def _imported(spec: str) -> ToolProvider:
    """The provider ``--tools MODULE:NAME`` names."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise UsageError(f"--tools {spec}: name the module and the attribute, as MODULE:NAME")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does, so a tools.py beside the user is found
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise UsageError(f"--tools {spec}: cannot import {module_name} ({error})") from error
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise UsageError(f"--tools {spec}: {module_name} has no attribute {attribute}")
        value = getattr(value, part)
    if isinstance(value, ToolProvider):
        return value
    if isinstance(value, list | tuple):
        return FunctionTools(*value)
    if callable(value) and not isinstance(value, type):
        return FunctionTools(value)
    raise UsageError(
        f"--tools {spec}: a {type(value).__name__} is not tools: give a FunctionTools, a tool provider, a "
        "function or a list of functions"
    )
