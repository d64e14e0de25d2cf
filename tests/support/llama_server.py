"""llama.cpp's own ``llama-server``, as scripts/build-llama-server.sh builds and caches it.

The set-up builds it once (up to an hour on two cores) into a cache outside the virtual
environment; the tests and benchmarks find it there and start it on loopback.

A server is told a port, and no server here can take a socket bound for it, so a free port is
found by binding one and closing it: between that and the server's own bind, another program
may take it. :func:`start_on_free_port` closes that race by retrying: a server whose log shows
its bind failed is started again on another port, and a server counts as started only once the
answer comes from its own socket, not from whoever took the port.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import httpx

from support.processes import stop

__all__ = [
    "LLAMA_CPP_SERVER",
    "LLAMA_SERVER_START_LIMIT",
    "START_ATTEMPTS",
    "ServerStartError",
    "free_port",
    "listens_on",
    "llama_server_binary",
    "running",
    "running_llama_server",
    "start_llama_cpp_server",
    "start_llama_server",
    "start_on_free_port",
    "wait_until_healthy",
]

#: Seconds llama-server gets to load the default model and answer /health (about one here).
LLAMA_SERVER_START_LIMIT = 120.0

#: llama-cpp-python's server, started through the file that decides its weight repacking as the
#: embedded backend does (off where llama.cpp's build uses AMX, whose kernels crash).
LLAMA_CPP_SERVER = Path(__file__).with_name("llama_cpp_server.py")

#: Ports a start tries before it gives up: each retry needs another program to take the port
#: in the moment between our probe and the server's bind, so five clashes in a row is no race.
START_ATTEMPTS = 5

#: What a server's log says when its port was taken before it bound: llama-server's own words,
#: uvicorn's (python -m llama_cpp.server) and Python's socket error.
_PORT_TAKEN = re.compile(r"couldn't bind|address already in use|errno 98\b|eaddrinuse", re.IGNORECASE)

#: A TCP socket in the LISTEN state, in /proc/net/tcp's hex.
_LISTEN = "0A"


class ServerStartError(RuntimeError):
    """A server that exited, or did not answer in time, for a reason other than a taken port."""


def llama_server_binary() -> Path:
    """Where scripts/build-llama-server.sh caches the binary (it honours the same variables)."""
    cache = os.environ.get("LLAMA_SERVER_CACHE")
    if not cache:
        home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        cache = str(Path(home) / "toolrouting" / "llama-server-11434")
    return Path(cache) / "llama-server"


def free_port() -> int:
    """A loopback port free at this moment; nothing holds it for the caller (see the module's note)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _fresh_ports() -> Iterator[int]:
    while True:
        yield free_port()


def start_on_free_port(
    command: Callable[[int], Sequence[str]],
    log_path: Path,
    ready: Callable[[str], bool],
    *,
    what: str,
    limit: float,
    ports: Iterable[int] | None = None,
    env: dict[str, str] | None = None,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``command(port)`` on a free loopback port; its process and base URL once ``ready(url)``.

    A start whose log shows its port was taken (another program bound it after our probe) is
    retried on a new port, up to :data:`START_ATTEMPTS` in all; the log keeps every attempt.
    ``ports`` gives the ports to try, in order, before fresh ones (a test takes the first on
    purpose). Any other failure is a :class:`ServerStartError` with the log's tail.
    """
    given = iter(ports or ())
    fresh = _fresh_ports()
    clashes: list[int] = []
    for _ in range(START_ATTEMPTS):
        port = next(given, None) or next(fresh)
        with open(log_path, "ab") as log:
            start = log.tell()
            process = subprocess.Popen(
                list(command(port)),
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "OMP_WAIT_POLICY": "passive", **(env or {})},
            )
        url = f"http://127.0.0.1:{port}"
        try:
            outcome = _wait(process, url, port, ready, limit)
        except BaseException:
            stop(process, grace=15)
            raise
        if outcome == "ready":
            return process, url
        said = _log_since(log_path, start)
        if outcome == "exited" and _PORT_TAKEN.search(said):
            clashes.append(port)
            continue
        stop(process, grace=15)
        if outcome == "exited":
            raise ServerStartError(f"{what} exited with {process.returncode}:\n{said[-2000:]}")
        raise ServerStartError(f"{what} did not answer within {limit:g} s:\n{said[-2000:]}")
    raise ServerStartError(
        f"{what} found its port taken {len(clashes)} times in a row ({', '.join(map(str, clashes))}): "
        f"something else is taking loopback ports as fast as they are freed\n"
        f"{_log_since(log_path, 0)[-2000:]}"
    )


def _wait(
    process: subprocess.Popen[bytes], url: str, port: int, ready: Callable[[str], bool], limit: float
) -> str:
    """``"ready"`` once ``process`` itself answers, ``"exited"`` when it ends, ``"late"`` at the limit."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return "exited"
        try:
            # An answer is ours only from our process's socket: another program that took the
            # port answers too, while our server still loads its model before failing to bind.
            if ready(url) and process.poll() is None and listens_on(process.pid, port):
                return "ready"
        except httpx.TransportError:
            pass  # not listening yet
        time.sleep(0.2)
    return "exited" if process.poll() is not None else "late"


def listens_on(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds the socket listening on loopback ``port``.

    Read from /proc (Linux); where it cannot be read, ``True``: the retry then rests on the
    exit and the log alone.
    """
    try:
        table = Path("/proc/net/tcp").read_text(encoding="ascii").splitlines()[1:]
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:  # no /proc, or not ours to read: nothing to tell by
        return True
    inodes = set()
    for row in table:
        fields = row.split()
        if len(fields) > 9 and fields[3] == _LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
            inodes.add(f"socket:[{fields[9]}]")
    for fd in fds:
        try:
            if os.readlink(fd) in inodes:
                return True
        except OSError:
            continue  # closed while we looked
    return False


def _log_since(log_path: Path, offset: int) -> str:
    with open(log_path, "rb") as log:
        log.seek(offset)
        return log.read().decode("utf-8", "replace")


def _healthy(url: str) -> bool:
    return httpx.get(f"{url}/health", timeout=2.0).status_code == 200


def start_llama_server(
    model: Path,
    threads: int,
    log_path: Path,
    ctx_size: int = 2048,
    *,
    ports: Iterable[int] | None = None,
    extra: Sequence[str] = (),
) -> tuple[subprocess.Popen[bytes], str]:
    """Start the cached llama-server on loopback with ``model``: the process and its base URL,
    once /health answers from it (:func:`start_on_free_port`); :class:`ServerStartError` if not.

    ``extra`` are more command-line options (``--jinja`` for the server's own tool calling)."""

    def command(port: int) -> list[str]:
        return [
            str(llama_server_binary()), "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
            "--ctx-size", str(ctx_size), "--parallel", "1",
            "--threads", str(threads), "--threads-batch", str(threads),
            "--no-webui", *extra,
        ]  # fmt: skip

    return start_on_free_port(
        command, log_path, _healthy, what="llama-server", limit=LLAMA_SERVER_START_LIMIT, ports=ports
    )


def _models_listed(url: str) -> bool:
    return httpx.get(f"{url}/v1/models", timeout=2.0).status_code == 200


def start_llama_cpp_server(
    model: Path,
    threads: int,
    log_path: Path,
    *,
    n_ctx: int = 2048,
    limit: float = LLAMA_SERVER_START_LIMIT,
    ports: Iterable[int] | None = None,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``python -m llama_cpp.server`` on loopback with ``model``, weight repacking decided as the
    embedded backend decides (:data:`LLAMA_CPP_SERVER`): the process and its base URL, once
    /v1/models answers from it. It binds its port only after loading the model, so its
    window for a clash is the load's seconds, not a moment (:func:`start_on_free_port`)."""

    def command(port: int) -> list[str]:
        return [
            sys.executable, str(LLAMA_CPP_SERVER), "--model", str(model),
            "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--n_threads_batch", str(threads),
        ]  # fmt: skip

    return start_on_free_port(
        command, log_path, _models_listed, what="python -m llama_cpp.server", limit=limit, ports=ports
    )


def wait_until_healthy(process: subprocess.Popen[bytes], url: str, log_path: Path) -> str | None:
    """``None`` once /health answers 200, else why not (the process died, or the limit passed).

    :func:`start_llama_server` returns only once it is healthy; this stays for callers that
    check again.
    """
    deadline = time.monotonic() + LLAMA_SERVER_START_LIMIT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return f"llama-server exited with {process.returncode}:\n{log_path.read_text()[-2000:]}"
        try:
            if _healthy(url):
                return None
        except httpx.TransportError:
            pass  # not listening yet
        time.sleep(0.2)
    return (
        f"llama-server did not answer within {LLAMA_SERVER_START_LIMIT:g} s:\n{log_path.read_text()[-2000:]}"
    )


@contextlib.contextmanager
def running(start: Callable[[], tuple[subprocess.Popen[bytes], str]]) -> Iterator[str]:
    """The server ``start`` starts, for a fixture: its base URL, stopped at the end; a server that
    does not start fails the test."""
    import pytest

    try:
        process, url = start()
    except ServerStartError as error:
        pytest.fail(str(error))
    try:
        yield url
    finally:
        stop(process, grace=15)


@contextlib.contextmanager
def running_llama_server(folder: Path, extra: Sequence[str] = ()) -> Iterator[str]:
    """The cached llama-server with the default model and ``extra`` options, its log in ``folder``
    (:func:`running`). Skipped only when the binary is absent (``sh scripts/build-llama-server.sh``
    builds it, and ``make setup`` runs that); a binary that is there but does not start fails."""
    import pytest

    from support.model import TEST_THREADS
    from toolrouting._backends.embedded.backend import default_model_path

    binary = llama_server_binary()
    if not binary.is_file():
        pytest.skip(f"no llama-server at {binary}: build it with sh scripts/build-llama-server.sh")
    model = default_model_path()
    with running(lambda: start_llama_server(model, TEST_THREADS, folder / "server.log", extra=extra)) as url:
        yield url
