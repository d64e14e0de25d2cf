"""The MCP servers the tests start: real ones from PyPI over stdio, and our own on loopback HTTP.

mcp-server-time and mcp-server-git come with the dev extra; ``tests/support/mcp_test_server.py`` is
written on the SDK's own server. Every one runs as ``sys.executable -m ...`` or
``sys.executable PATH``, so the tests find them in the venv that runs the tests.
"""

from __future__ import annotations

import importlib.util
import shlex
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from support.llama_server import ServerStartError, start_on_free_port
from support.processes import stop

__all__ = [
    "TEST_SERVER",
    "git_server",
    "http_test_server",
    "needs",
    "stdio_test_server",
    "time_server",
]

TEST_SERVER = Path(__file__).resolve().with_name("mcp_test_server.py")

#: Seconds our HTTP test server gets to listen (it imports the SDK and uvicorn: about 2 s).
START_LIMIT = 60.0


def needs(*modules: str) -> None:
    """Skip the test when a module is missing, naming the extra that brings it."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}: pip install -e '.[dev]'")


def time_server() -> str:
    """mcp-server-time's command line, on a fixed local zone so its answers do not depend on the machine."""
    needs("mcp", "mcp_server_time")
    return shlex.join([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])


def git_server(repository: Path) -> str:
    """mcp-server-git's command line, confined to ``repository``."""
    needs("mcp", "mcp_server_git")
    return shlex.join([sys.executable, "-m", "mcp_server_git", "--repository", str(repository)])


def stdio_test_server(*options: str) -> str:
    """Our test server over stdio: every tool, or ``--bounded`` ones only."""
    needs("mcp")
    return shlex.join([sys.executable, str(TEST_SERVER), "--stdio", *options])


def _listening(url: str) -> bool:
    httpx.get(f"{url}/mcp", timeout=2.0)  # any answer: a request without a session is refused
    return True


@contextmanager
def http_test_server(*options: str) -> Iterator[str]:
    """Our test server over streamable HTTP on a free loopback port: its MCP URL, until the block ends.

    A port taken between the probe and the server's bind is retried on another
    (support/llama_server.py's ``start_on_free_port``).
    """
    needs("mcp", "uvicorn")
    with tempfile.TemporaryDirectory() as work:
        try:
            process, url = start_on_free_port(
                lambda port: [sys.executable, str(TEST_SERVER), "--port", str(port), *options],
                Path(work) / "server.log",
                _listening,
                what="the test MCP server",
                limit=START_LIMIT,
            )
        except ServerStartError as error:
            pytest.fail(str(error))
        try:
            yield f"{url}/mcp"
        finally:
            stop(process, grace=10)
