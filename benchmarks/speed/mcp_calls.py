"""What following an MCP server's tool-list changes costs a call: the list read again after it.

Run: OMP_WAIT_POLICY=passive .venv/bin/python -m benchmarks.speed.mcp_calls [--calls 200]

``MCPTools`` reads a server's ``tools/list`` again after each call when the server declares
``tools.listChanged``, so the next round offers what the call changed. The baseline is the same
server declaring a list that never changes (``tests/support/mcp_test_server.py --static``, run as a
program, not imported), where no
list is read. Both run in one process, over stdio and over streamable HTTP on loopback, and the
figures are the median and 90th percentile of ``--calls`` calls of ``echo``, after 20 calls to
warm up. The two kinds alternate in blocks of 25 calls, so drift on a shared machine falls on both.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import httpx

from benchmarks.common.corpus import ROOT
from benchmarks.common.servers import started
from toolrouting import MCPSession, MCPTools, mcp_server

#: The tests' MCP server, run as a program (over stdio, or HTTP with ``--port``); ``--static``
#: makes it declare a tool list that never changes.
TEST_SERVER = ROOT / "tests" / "support" / "mcp_test_server.py"

KINDS = {"declares listChanged": (), "static (baseline)": ("--static",)}
BLOCK = 25
WARM_UP = 20


@contextmanager
def served(transport: str, options: tuple[str, ...]) -> Iterator[str]:
    """The test server's MCP URL over HTTP on loopback, or its command line over stdio."""
    if transport == "http":
        command = lambda port: [sys.executable, str(TEST_SERVER), "--port", str(port), *options]  # noqa: E731
        with started("the test MCP server", command, _listening) as url:
            yield f"{url}/mcp"
    else:
        yield shlex.join([sys.executable, str(TEST_SERVER), "--stdio", *options])


def _listening(url: str) -> bool:
    try:
        httpx.get(f"{url}/mcp", timeout=2.0)  # any answer: a request without a session is refused
    except httpx.TransportError:
        return False
    return True


def declares_changes(server: str) -> bool:
    async def read() -> bool:
        async with MCPSession(mcp_server(server)) as session:
            return session.tools_may_change

    return asyncio.run(read())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    print("| transport | server | declares listChanged | calls | median ms | p90 ms |")
    print("|---|---|---|---:|---:|---:|")
    for transport in ("stdio", "http"):
        with ExitStack() as stack:
            servers = {
                kind: stack.enter_context(served(transport, options)) for kind, options in KINDS.items()
            }
            tools = {kind: stack.enter_context(MCPTools(server)) for kind, server in servers.items()}
            times: dict[str, list[float]] = {kind: [] for kind in KINDS}
            for kind in KINDS:
                for _ in range(WARM_UP):
                    tools[kind].call("echo", {"text": "warm"})
            while min(len(t) for t in times.values()) < args.calls:
                for kind in KINDS:
                    for _ in range(BLOCK):
                        started = time.perf_counter()
                        out = tools[kind].call("echo", {"text": "x"})
                        times[kind].append((time.perf_counter() - started) * 1000)
                        assert out.content == "x", out
            for kind, server in servers.items():
                taken = sorted(times[kind][: args.calls])
                p90 = taken[int(0.9 * (len(taken) - 1))]
                declared = "yes" if declares_changes(server) else "no"
                print(
                    f"| {transport} | {kind} | {declared} | {len(taken)} "
                    f"| {statistics.median(taken):.1f} | {p90:.1f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
