"""``toolrouting serve`` started as a user starts it, a process of its own on a free port."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from support.processes import ROOT, stop


def _unreachable() -> str:
    # A port that was free a moment ago: nothing answers there, so the upstream fails to connect.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


@contextlib.contextmanager
def _serving(upstream: str, *options: str, **env: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``toolrouting serve`` in front of ``upstream`` with ``options`` (and ``env`` added to its
    environment): the process and its URL."""
    environment = {k: v for k, v in os.environ.items() if k not in ("TOOLROUTING_API_KEY", "OPENAI_API_KEY")}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolrouting",
            "serve",
            "--base-url",
            upstream,
            "--model",
            "m",
            "--port",
            "0",
            *options,
        ],
        cwd=ROOT,
        env={**environment, "TOOLROUTING_SERVE_KEY": "sesame", **env},
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    try:  # stopped and waited for even when it never says where it serves
        line = process.stderr.readline()
        served = re.fullmatch(r"toolrouting: serving (http://127\.0\.0\.1:\d+/v1)\n", line)
        assert served, line
        yield process, served.group(1)
    finally:
        if process.poll() is None:
            stop(process, 10)  # type: ignore[arg-type]
        process.stderr.close()


@pytest.fixture
def serve() -> Iterator[tuple[subprocess.Popen[str], str]]:
    with _serving(_unreachable()) as started:
        yield started
