"""A fake model server on 127.0.0.1 that answers slowly, for killing a batch while runs are in flight.

It is a fake: it speaks the OpenAI chat-completions wire, and its reply depends only on the
conversation (read the note on the latch by its title, then hand off; a plain answer when no schema is sent),
so any run of it, killed and resumed or not, is the same run. Each answer waits ``delay``
seconds, and with ``hold_after`` the later requests wait until ``release()``, so a batch has
runs in flight when a test kills it. Every request is recorded with
the question it belongs to (the text after ``QUESTION_MARK`` in the user's first message).
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from typing import Any

from support.fault_server import completion_body

__all__ = ["QUESTION_MARK", "READ", "SlowModelServer"]

#: What a question's text starts with, followed by its id, so the server can tell runs apart.
QUESTION_MARK = "Question "

#: The one tool call: the demo store as ``toolrouting`` makes it offers its notes by title.
READ = '{"tool": "memory_read", "arguments": {"title": "The storage-room latch"}}'


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: SlowModelServer

    def do_POST(self) -> None:
        body: dict[str, Any] = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        messages = body["messages"]
        question = next(m["content"] for m in messages if m["role"] == "user")
        results = sum(1 for m in messages if m["role"] == "user" and m["content"].startswith("Tool result"))
        with self.server.lock:
            self.server.requests.append(question.removeprefix(QUESTION_MARK).split(":")[0])
            held = self.server.hold_after is not None and len(self.server.requests) > self.server.hold_after
            self.server.held += held
        time.sleep(self.server.delay)
        if held:
            self.server.released.wait()
        routed = "response_format" in body or "json_schema" in body or "grammar" in body
        text = (READ if results == 0 else '{"tool": "none"}') if routed else "The latch holds the door."
        reply = completion_body(text)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests assert on what the client saw."""


class SlowModelServer(http.server.ThreadingHTTPServer):
    """The server, listening at once, in a daemon thread; ``requests`` has each request's question id."""

    daemon_threads = True

    def __init__(self, delay: float, *, hold_after: int | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.delay = delay
        #: Requests past this many are held until :meth:`release`, so a test can stop a batch
        #: while runs are surely in flight, however slowly the machine lets the test look.
        self.hold_after = hold_after
        self.held = 0
        self.released = threading.Event()
        self.lock = threading.Lock()
        self.requests: list[str] = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client killed mid-request closes its connection, which is what the tests do."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def release(self) -> None:
        """Answer the held requests and every later one."""
        self.hold_after = None
        self.released.set()

    def close(self) -> None:
        self.release()
        self.shutdown()
        self.server_close()
