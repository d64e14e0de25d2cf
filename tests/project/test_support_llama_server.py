"""The test servers' start on a free port: a port taken between the probe and the bind is retried.

A port is found free by binding it and closing it; the server binds it a moment later (seconds
later for ``python -m llama_cpp.server``, which loads its model first). These tests take the
first port on purpose, with a socket that listens on it, and check that the start moves on to
another port, keeps the clash in its log, and returns only once the answer comes from its own
process rather than from whoever holds the port.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.llama_server import (
    START_ATTEMPTS,
    ServerStartError,
    free_port,
    listens_on,
    llama_server_binary,
    start_llama_cpp_server,
    start_llama_server,
    start_on_free_port,
)
from support.model import TEST_THREADS
from support.processes import stop


@pytest.fixture
def taken() -> Iterator[int]:
    """A loopback port another program holds: a socket listening on it for the test's length."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def _http_server(port: int) -> list[str]:
    # A real server that fails to bind as any does: Python's own, on loopback.
    return [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]


def _late_http_server(port: int) -> list[str]:
    # The same, binding only after a while, as python -m llama_cpp.server does after its model loads.
    code = (
        "import runpy, sys, time; time.sleep(1.5); "
        f"sys.argv = ['http.server', '{port}', '--bind', '127.0.0.1']; "
        "runpy.run_module('http.server', run_name='__main__')"
    )
    return [sys.executable, "-c", code]


def _answers(url: str) -> bool:
    return httpx.get(url, timeout=2.0).status_code == 200


def test_a_taken_port_is_retried_on_another(taken: int, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    process, url = start_on_free_port(
        _http_server, log, _answers, what="http.server", limit=30, ports=[taken]
    )
    try:
        port = int(url.rsplit(":", 1)[1])
        assert port != taken
        assert listens_on(process.pid, port)
        assert not listens_on(process.pid, taken)
        assert "Address already in use" in log.read_text()  # the first attempt's clash, kept
        assert httpx.get(url, timeout=5.0).status_code == 200
    finally:
        stop(process, grace=10)


def test_a_port_taken_every_time_ends_in_a_named_error(taken: int, tmp_path: Path) -> None:
    with pytest.raises(ServerStartError, match=f"found its port taken {START_ATTEMPTS} times in a row"):
        start_on_free_port(
            _http_server, tmp_path / "server.log", _answers, what="http.server", limit=30,
            ports=[taken] * START_ATTEMPTS,
        )  # fmt: skip


def test_an_answer_from_the_program_holding_the_port_is_not_taken_for_ours(tmp_path: Path) -> None:
    # Another server answers on the port all the while ours is still starting; ours must not be
    # reported started because of it, and moves on once its own bind fails.
    port = free_port()
    other = start_on_free_port(
        _http_server, tmp_path / "other.log", _answers, what="other", limit=30, ports=[port]
    )
    try:
        process, url = start_on_free_port(
            _late_http_server, tmp_path / "ours.log", _answers, what="ours", limit=30, ports=[port]
        )
        try:
            assert url != f"http://127.0.0.1:{port}"
            assert listens_on(process.pid, int(url.rsplit(":", 1)[1]))
        finally:
            stop(process, grace=10)
    finally:
        stop(other[0], grace=10)


def test_a_server_that_fails_for_another_reason_is_not_retried(tmp_path: Path) -> None:
    def failing(port: int) -> list[str]:
        return [sys.executable, "-c", f"import sys; print('no model at port {port}'); sys.exit(4)"]

    log = tmp_path / "server.log"
    with pytest.raises(ServerStartError, match="exited with 4") as failed:
        start_on_free_port(failing, log, _answers, what="failing", limit=30)
    assert "no model at port" in str(failed.value)
    assert log.read_text().count("no model at port") == 1


@pytest.mark.model
def test_llama_server_moves_off_a_taken_port(taken: int, tmp_path: Path) -> None:
    from toolrouting._backends.embedded.backend import default_model_path

    if not llama_server_binary().is_file():
        pytest.skip(
            f"no llama-server at {llama_server_binary()}: build it with sh scripts/build-llama-server.sh"
        )
    log = tmp_path / "server.log"
    process, url = start_llama_server(default_model_path(), TEST_THREADS, log, ports=[taken])
    try:
        assert url != f"http://127.0.0.1:{taken}"
        assert "couldn't bind" in log.read_text()  # llama-server's own words for the clash
        assert httpx.get(f"{url}/health", timeout=5.0).status_code == 200
    finally:
        stop(process, grace=15)


@pytest.mark.model
def test_llama_cpp_server_moves_off_a_taken_port(taken: int, tmp_path: Path) -> None:
    from toolrouting._backends.embedded.backend import default_model_path

    pytest.importorskip("llama_cpp.server")
    log = tmp_path / "server.log"
    process, url = start_llama_cpp_server(default_model_path(), TEST_THREADS, log, ports=[taken])
    try:
        assert url != f"http://127.0.0.1:{taken}"
        assert "address already in use" in log.read_text().lower()  # uvicorn's words, after the model loaded
        assert httpx.get(f"{url}/v1/models", timeout=5.0).status_code == 200
    finally:
        stop(process, grace=15)
