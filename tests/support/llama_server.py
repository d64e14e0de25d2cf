"""llama.cpp's own ``llama-server``, as scripts/build-llama-server.sh builds and caches it.

The set-up builds it once (up to an hour on two cores) into a cache outside the virtual
environment; the tests and benchmarks find it there and start it on loopback.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

__all__ = [
    "LLAMA_SERVER_START_LIMIT",
    "free_port",
    "llama_server_binary",
    "start_llama_server",
    "wait_until_healthy",
]

#: Seconds llama-server gets to load the default model and answer /health (about one here).
LLAMA_SERVER_START_LIMIT = 120.0


def llama_server_binary() -> Path:
    """Where scripts/build-llama-server.sh caches the binary (it honours the same variables)."""
    cache = os.environ.get("LLAMA_SERVER_CACHE")
    if not cache:
        home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        cache = str(Path(home) / "toolrouting" / "llama-server-11434")
    return Path(cache) / "llama-server"


def free_port() -> int:
    with socket.socket() as probe:  # a free port; the server binds it a moment later
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_llama_server(
    model: Path, threads: int, log_path: Path, ctx_size: int = 2048, extra: Sequence[str] = ()
) -> tuple[subprocess.Popen[bytes], str]:
    """Start the cached llama-server on loopback with ``model``: the process and its base URL.

    ``extra`` are more command-line options (``--jinja`` for the server's own tool calling)."""
    port = free_port()
    command = [
        str(llama_server_binary()), "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
        "--ctx-size", str(ctx_size), "--parallel", "1",
        "--threads", str(threads), "--threads-batch", str(threads),
        "--no-webui", *extra,
    ]  # fmt: skip
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "OMP_WAIT_POLICY": "passive"}
        )
    return process, f"http://127.0.0.1:{port}"


def wait_until_healthy(process: subprocess.Popen[bytes], url: str, log_path: Path) -> str | None:
    """``None`` once /health answers 200, else why not (the process died, or the limit passed)."""
    deadline = time.monotonic() + LLAMA_SERVER_START_LIMIT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return f"llama-server exited with {process.returncode}:\n{log_path.read_text()[-2000:]}"
        try:
            if httpx.get(f"{url}/health", timeout=2.0).status_code == 200:
                return None
        except httpx.TransportError:
            pass  # not listening yet
        time.sleep(0.2)
    return (
        f"llama-server did not answer within {LLAMA_SERVER_START_LIMIT:g} s:\n{log_path.read_text()[-2000:]}"
    )
