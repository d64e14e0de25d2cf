"""A fake OpenAI-compatible server on loopback and a ``toolrouting`` process that talks to it, for
the command line's tests of the HTTP backend (the fake says so: it answers what the test sets)."""

from __future__ import annotations

import collections
import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from support.processes import python_m

QUESTION = "What does the latch on the storage-room door do?"
READ = '{"tool": "memory_read", "arguments": {"title": "The storage-room latch"}}'
NONE = '{"tool": "none"}'


MODELS = ["smollm2-135m", "qwen2.5-0.5b"]


class LoopbackServer(http.server.ThreadingHTTPServer):
    """A model server on 127.0.0.1: ``replies`` answer chat completions in turn, ``requests`` records."""

    def __init__(self, key: str | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.key = key
        self.replies: collections.deque[tuple[int, str]] = collections.deque()
        self.requests: list[dict[str, Any]] = []
        self.received = threading.Event()
        self.release = threading.Event()
        self.hold = False
        self.url = f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client interrupted mid-request (the Ctrl-C test) leaves a broken pipe: expected.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def chat_bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]


class _Handler(http.server.BaseHTTPRequestHandler):
    server: LoopbackServer

    def log_message(self, format: str, *args: Any) -> None:  # keep the test output clean
        pass

    def do_GET(self) -> None:
        if not self._authorised(None):
            return
        if self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in MODELS]})
        elif self.path == "/api/tags":
            self._json(200, {"models": [{"name": f"{m}:latest", "size": 1} for m in MODELS]})
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not self._authorised(body):
            return
        self.server.received.set()
        if self.server.hold:
            self.server.release.wait(30)
        status, text = self.server.replies.popleft() if self.server.replies else (200, NONE)
        if status != 200:
            self._json(status, {"error": {"message": text}})
            return
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        self._json(200, {"object": "chat.completion", "choices": [choice], "usage": {}})

    def _authorised(self, body: Any) -> bool:
        given = self.headers.get("Authorization")
        self.server.requests.append({"path": self.path, "authorization": given, "body": body})
        if self.server.key is None or given == f"Bearer {self.server.key}":
            return True
        # OpenAI's own 401 quotes the key it was given; the command line must not show it.
        self._json(401, {"error": {"message": f"Incorrect API key provided: {given}"}})
        return False

    def _json(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _serve(key: str | None) -> Iterator[LoopbackServer]:
    server = LoopbackServer(key)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    yield from _serve(None)


@pytest.fixture(autouse=True)
def no_ambient_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # A developer's own OPENAI_API_KEY must not change what these tests send.
    monkeypatch.delenv("TOOLROUTING_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def toolrouting_process(
    *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return python_m(*args, stdin=stdin, env=env, timeout=120)


def run_argv(url: str, *more: str) -> list[str]:
    return ["run", QUESTION, "--base-url", url, *more]
