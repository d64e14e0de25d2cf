"""A real misbehaving HTTP server on 127.0.0.1, shared by the fault tests and support/fault_table.py.

It is http.server in a thread. Each request is answered by the next queued behaviour (a
good completion when none is queued), and every request body it reads is kept, so a test
can compare what the client last sent with what it committed. A slow answer waits on an
Event the test sets, so nothing waits on a clock it has to guess.
"""

from __future__ import annotations

import collections
import dataclasses
import http.server
import json
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

__all__ = [
    "ACTION",
    "ANSWERED_TIMEOUT",
    "HELD_TIMEOUT",
    "HOLD_LIMIT",
    "Behaviour",
    "Fault",
    "FaultServer",
    "Handler",
    "answer_then_go_down",
    "close_mid_body",
    "completion_body",
    "endless_body",
    "held",
    "ok",
    "reset",
    "reset_mid_body",
    "stall_mid_body",
    "status",
    "trickle",
]

ACTION = '{"tool": "none"}'

#: The longest a held handler waits for its release: a failed test must not hang the suite.
HOLD_LIMIT = 30.0

#: A client's timeout for a request the server answers: far beyond a loopback answer on a loaded machine.
ANSWERED_TIMEOUT = 30.0
#: A client's timeout for a request the server holds: it passes whatever the load, so it can be short.
HELD_TIMEOUT = 0.3

Behaviour = Callable[["Handler"], None]


@dataclasses.dataclass(frozen=True)
class Fault:
    """A behaviour marked as an injected fault, so the server can count the faults it served."""

    kind: str
    behaviour: Behaviour

    def __call__(self, handler: Handler) -> None:
        self.behaviour(handler)


def completion_body(text: str = ACTION, finish_reason: str = "stop") -> bytes:
    return json.dumps(
        {
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {"prompt_tokens": 9, "completion_tokens": 6},
        }
    ).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    """Reads the request, then does whatever the test queued (a good completion when nothing is)."""

    protocol_version = "HTTP/1.1"  # keep-alive, so a fault also tests the connection pool
    # TCP_NODELAY: each write leaves at once, so a body is not held some 40 ms for the client's
    # delayed ACK of the headers, and a partial body or a trickled byte is on the wire when sent.
    disable_nagle_algorithm = True
    server: FaultServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.server.lock:
            self.server.paths.append(self.path)
            self.server.bodies.append(json.loads(body) if body else None)
            behaviour = self.server.script.popleft() if self.server.script else ok()
            if isinstance(behaviour, Fault):
                self.server.faults_served[behaviour.kind] += 1
        behaviour(self)

    def reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def headers_for(self, length: int) -> None:
        """A 200 promising ``length`` bytes of JSON; the body is the behaviour's business."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(length))
        self.end_headers()
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests assert on what the client saw."""


class FaultServer(http.server.ThreadingHTTPServer):
    """The server; with ``listening=False`` its port is bound but refuses connections until :meth:`start`."""

    daemon_threads = True

    def __init__(self, *, listening: bool = True) -> None:
        # Bound at once, so the port is ours; a bound socket that does not listen makes the
        # kernel refuse connections to it, which is the "server not up yet" fault.
        super().__init__(("127.0.0.1", 0), Handler, bind_and_activate=False)
        self.server_bind()
        self.lock = threading.Lock()
        self.script: collections.deque[Behaviour] = collections.deque()
        self.paths: list[str] = []
        self.bodies: list[Any] = []
        self.faults_served: collections.Counter[str] = collections.Counter()
        self.release = threading.Event()
        self._thread: threading.Thread | None = None
        if listening:
            self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def clear(self) -> None:
        """Forget the script, the paths and bodies read, and arm a new release, for the next test."""
        self.script.clear()
        self.paths.clear()
        self.bodies.clear()
        self.release = threading.Event()

    @property
    def listening(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        """Listen and serve in a thread; after :meth:`go_down`, on the same port again."""
        if self.socket.fileno() == -1:
            self.socket = socket.socket(self.address_family, self.socket_type)
            self.server_bind()  # HTTPServer sets SO_REUSEADDR, so the port is free at once
        self.server_activate()
        # A short poll, so stop() returns at once rather than after the default half second.
        self._thread = threading.Thread(target=self.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    def go_down(self) -> None:
        """Stop listening and close the port, as a crashed server would; connections already
        accepted (the one a handler is answering) stay open."""
        if self._thread is not None:
            self.shutdown()
            self._thread.join()
            self._thread = None
        self.socket.close()

    def stop(self) -> None:
        """Release whatever is held, stop serving and close the port."""
        self.release.set()
        if self._thread is not None:
            self.shutdown()
            self._thread.join()
        self.server_close()

    def __enter__(self) -> FaultServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def last_messages(self) -> list[dict[str, Any]] | None:
        """The messages of the last request the server read, ``None`` before any."""
        with self.lock:
            return list(self.bodies[-1]["messages"]) if self.bodies else None

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a timeout) leaves a broken pipe here; that is expected."""


def ok(text: str = ACTION, finish_reason: str = "stop") -> Behaviour:
    return lambda handler: handler.reply(200, completion_body(text, finish_reason))


def status(code: int, body: bytes, headers: dict[str, str] | None = None) -> Behaviour:
    return lambda handler: handler.reply(code, body, headers)


def close_mid_body(handler: Handler) -> None:
    """Promise 500 bytes, send 20, hang up."""
    handler.headers_for(500)
    handler.wfile.write(b'{"object": "chat.com')
    handler.wfile.flush()
    handler.close_connection = True
    handler.connection.shutdown(socket.SHUT_RDWR)


def _abort(handler: Handler) -> None:
    # SO_LINGER 0: close() sends RST instead of FIN.
    handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    handler.close_connection = True
    handler.connection.close()


def reset(handler: Handler) -> None:
    """Abort the connection (RST) instead of answering."""
    _abort(handler)


def reset_mid_body(handler: Handler) -> None:
    """Promise a whole completion, send its first 20 bytes, then abort the connection (RST)."""
    body = completion_body()
    handler.headers_for(len(body))
    handler.wfile.write(body[:20])
    handler.wfile.flush()
    _abort(handler)


def held(handler: Handler) -> None:
    """Answer only once the test releases the server: a response slower than any short timeout."""
    handler.server.release.wait(HOLD_LIMIT)
    handler.reply(200, completion_body())


def stall_mid_body(handler: Handler) -> None:
    """Headers and the start of the body, then nothing until the test releases the server."""
    body = completion_body()
    handler.headers_for(len(body))
    handler.wfile.write(body[:20])
    handler.wfile.flush()
    handler.server.release.wait(HOLD_LIMIT)
    handler.wfile.write(body[20:])


def trickle(gap: float) -> Behaviour:
    """Headers, then the body one byte every ``gap`` seconds: each read is quick, the whole is not.

    ``gap`` is well under the client's timeout, so only a deadline on the whole answer stops
    the client; it stops early once the test releases the server or the client hangs up.
    """

    def dribble(handler: Handler) -> None:
        body = completion_body()
        handler.headers_for(len(body))
        for index in range(len(body)):
            handler.wfile.write(body[index : index + 1])
            handler.wfile.flush()
            if handler.server.release.wait(gap):
                break
        handler.close_connection = True

    return dribble


def endless_body(handler: Handler) -> None:
    """Promise a terabyte and send blocks until the client hangs up (or a 64 MB backstop)."""
    handler.headers_for(10**12)
    block = b" " * 65536
    for _ in range(1024):
        handler.wfile.write(block)
    handler.close_connection = True


def answer_then_go_down(text: str) -> Behaviour:
    """Go down (nothing listens on the port any more), then answer this last request."""

    def behaviour(handler: Handler) -> None:
        handler.server.go_down()
        handler.close_connection = True
        handler.reply(200, completion_body(text), {"Connection": "close"})

    return behaviour
