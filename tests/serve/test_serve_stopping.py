"""``toolrouting serve`` stopped (SIGINT, as Ctrl-C sends; SIGTERM, as a service manager does)
while requests are in flight: one that ends within the grace is answered as ever, one still
running past it is answered 503 ``server_stopping`` in its API's shape (a stream: the front's
failure event, which ends it), the server ends as the signal says (130 for Ctrl-C), and its log
has the line of each request and no traceback.

The upstream is the fault server (tests/support/fault_server.py), a fake by design: it holds an
answer until the test releases it, which no real model does on demand.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from support.fault_server import HOLD_LIMIT, FaultServer, held
from support.serve_process import _serving
from support.stream_faults import chat_chunks, events, stream_then_stall

from toolrouting._limits import SERVE_STOP_GRACE

pytest.importorskip("uvicorn")

KEY = {"Authorization": "Bearer sesame"}
QUESTION = [{"role": "user", "content": "What does the latch do?"}]


def _in_thread(call: Callable[[], httpx.Response]) -> tuple[threading.Thread, list[Any]]:
    got: list[Any] = []

    def run() -> None:
        try:
            got.append(call())
        except Exception as error:  # the assertion names it
            got.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, got


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + HOLD_LIMIT
    while not condition():
        assert time.monotonic() < deadline, "the upstream was never asked"
        time.sleep(0.02)


#: How the server ends, by the signal that stops it: Ctrl-C's documented 130, and SIGTERM's own
#: end, as a service manager expects of a process it stopped.
EXITS = {signal.SIGINT: 130, signal.SIGTERM: -signal.SIGTERM}


def _stopped(process: subprocess.Popen[str], sig: signal.Signals, *, sent: bool = False) -> str:
    """The log of ``process`` once ``sig`` (sent here unless ``sent``) has stopped it, within the
    grace and uvicorn's two seconds more."""
    if not sent:
        process.send_signal(sig)
    assert process.wait(timeout=SERVE_STOP_GRACE + 15) == EXITS[sig]
    assert process.stderr is not None
    log = process.stderr.read()
    assert "Traceback" not in log
    assert "500" not in log
    return log


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_whole_reply_still_running_past_the_grace_is_answered_503_in_its_apis_shape(
    sig: signal.Signals,
) -> None:
    with FaultServer() as upstream, _serving(f"{upstream.url}/v1") as (process, url):
        upstream.script.extend([held, held])
        chat, chat_got = _in_thread(
            lambda: httpx.post(
                f"{url}/chat/completions", json={"model": "m", "messages": QUESTION}, headers=KEY, timeout=60
            )
        )
        messages, messages_got = _in_thread(
            lambda: httpx.post(
                f"{url}/messages",
                json={"model": "m", "max_tokens": 64, "messages": QUESTION},
                headers=KEY,
                timeout=60,
            )
        )
        _until(lambda: len(upstream.bodies) == 2)
        began = time.monotonic()
        log = _stopped(process, sig)
        chat.join(30)
        messages.join(30)
        upstream.release.set()
    waited = time.monotonic() - began
    [chat_reply], [messages_reply] = chat_got, messages_got
    assert chat_reply.status_code == 503
    assert chat_reply.headers["retry-after"] == "2"
    error = chat_reply.json()["error"]
    assert (error["type"], error["code"]) == ("server_error", "server_stopping")
    assert "the server is stopping" in error["message"]
    assert messages_reply.status_code == 503
    body = messages_reply.json()
    assert body["type"] == "error"
    assert body["error"]["type"] == "api_error"
    assert "the server is stopping" in body["error"]["message"]
    assert waited >= SERVE_STOP_GRACE  # the grace was given before the answer
    assert "chat 503 decision=failed:server_stopping" in log
    assert "messages 503 decision=failed:server_stopping" in log


def test_a_reply_that_ends_within_the_grace_is_answered_as_ever() -> None:
    with FaultServer() as upstream, _serving(f"{upstream.url}/v1") as (process, url):
        upstream.script.append(held)
        chat, got = _in_thread(
            lambda: httpx.post(
                f"{url}/chat/completions", json={"model": "m", "messages": QUESTION}, headers=KEY, timeout=60
            )
        )
        _until(lambda: len(upstream.bodies) == 1)
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        upstream.release.set()  # the upstream answers well within the grace
        chat.join(30)
        log = _stopped(process, signal.SIGINT, sent=True)
    [reply] = got
    assert reply.status_code == 200, reply.text
    assert "chat 200" in log


def test_a_stream_still_running_past_the_grace_ends_with_the_fronts_failure_event() -> None:
    parts = events(chat_chunks(["The latch ", "holds the door."]))
    with FaultServer() as upstream, _serving(f"{upstream.url}/v1") as (process, url):
        upstream.script.append(stream_then_stall(parts, 2))  # the role and the first piece
        body = {"model": "m", "messages": QUESTION, "stream": True}
        with httpx.stream("POST", f"{url}/chat/completions", json=body, headers=KEY, timeout=60) as reply:
            assert reply.status_code == 200
            lines = reply.iter_lines()
            first = next(line for line in lines if line.startswith("data: "))
            assert "The latch" in first or '"role"' in first
            process.send_signal(signal.SIGINT)
            rest = [line for line in lines if line.startswith("data: ")]
        upstream.release.set()
        log = _stopped(process, signal.SIGINT, sent=True)
    assert json.loads(rest[-1].removeprefix("data: "))["error"]["code"] == "server_stopping"
    assert "chat 200 stream decision=failed:server_stopping" in log
