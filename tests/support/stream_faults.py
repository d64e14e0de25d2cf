"""Streamed answers for the fault server (tests/support/fault_server.py): good ones in each shape, and bad.

The fault server is a fake: it speaks the streaming wire shapes of servers that are not on this
machine (OpenAI's and llama-server's server-sent events with usage, Ollama's JSON lines) and the
faults no real server shows on demand. Each behaviour writes its answer an event at a time,
flushed, so the client reads it in pieces as it would from a model.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from support.fault_server import HOLD_LIMIT, Behaviour, Handler

__all__ = [
    "EVENT_STREAM",
    "JSON_LINES",
    "chat_chunks",
    "endless_stream",
    "events",
    "ollama_lines",
    "stream_then_close",
    "stream_then_stall",
    "streamed",
    "trickled_stream",
]

EVENT_STREAM = "text/event-stream"
JSON_LINES = "application/x-ndjson"


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice], **extra}


def chat_chunks(
    pieces: list[str], finish: str = "stop", usage: str = "separate", used: int | None = None
) -> list[Any]:
    """A chat completion as chunks: a role chunk, one per piece, the finish chunk, and the usage.

    ``usage`` is ``"separate"`` (OpenAI with include_usage: a last chunk with no choices),
    ``"in finish"`` (llama-server: the usage rides on the finish chunk) or ``"none"``
    (llama-cpp-python, KoboldCpp).
    """
    counts = {"prompt_tokens": 30, "completion_tokens": len(pieces) if used is None else used}
    chunks: list[Any] = [_chunk({"role": "assistant"})]
    chunks += [_chunk({"content": piece}) for piece in pieces]
    chunks.append(_chunk({}, finish, **({"usage": counts} if usage == "in finish" else {})))
    if usage == "separate":
        chunks.append({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": counts})
    return chunks


def events(chunks: list[Any], *, done: bool = True, newline: str = "\n") -> list[bytes]:
    """Each chunk as one server-sent event (``data: ...`` and a blank line), then ``data: [DONE]``."""
    data = [json.dumps(chunk) if not isinstance(chunk, str) else chunk for chunk in chunks]
    if done:
        data.append("[DONE]")
    return [f"data: {item}{newline}{newline}".encode() for item in data]


def ollama_lines(pieces: list[str], done_reason: str = "stop", used: int | None = None) -> list[bytes]:
    """Ollama's /api/chat stream: one JSON object per line, the last one done with the counts."""
    lines = [
        {"model": "smollm2", "message": {"role": "assistant", "content": p}, "done": False} for p in pieces
    ]
    last = {
        "model": "smollm2",
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": done_reason,
        "prompt_eval_count": 30,
        "eval_count": len(pieces) if used is None else used,
    }
    return [json.dumps(line).encode() + b"\n" for line in [*lines, last]]


def _headers(handler: Handler, content_type: str, length: int) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(length))
    handler.end_headers()
    handler.wfile.flush()


def _write(handler: Handler, part: bytes) -> None:
    handler.wfile.write(part)
    handler.wfile.flush()


def streamed(parts: list[bytes], content_type: str = EVENT_STREAM) -> Behaviour:
    """A whole streamed answer, a part at a time."""

    def behaviour(handler: Handler) -> None:
        _headers(handler, content_type, sum(map(len, parts)))
        for part in parts:
            _write(handler, part)

    return behaviour


def stream_then_close(parts: list[bytes], sent: int) -> Behaviour:
    """Promise every part, send the first ``sent``, then hang up: a server that died mid-stream."""

    def behaviour(handler: Handler) -> None:
        _headers(handler, EVENT_STREAM, sum(map(len, parts)))
        for part in parts[:sent]:
            _write(handler, part)
        handler.close_connection = True
        handler.connection.shutdown(socket.SHUT_RDWR)

    return behaviour


def stream_then_stall(parts: list[bytes], sent: int) -> Behaviour:
    """Send the first ``sent`` parts, then nothing until the test releases the server."""

    def behaviour(handler: Handler) -> None:
        _headers(handler, EVENT_STREAM, sum(map(len, parts)))
        for part in parts[:sent]:
            _write(handler, part)
        handler.server.release.wait(HOLD_LIMIT)
        handler.close_connection = True

    return behaviour


def trickled_stream(parts: list[bytes], gap: float) -> Behaviour:
    """One part every ``gap`` seconds: each read is quick, the whole stream is not."""

    def behaviour(handler: Handler) -> None:
        _headers(handler, EVENT_STREAM, sum(map(len, parts)))
        for part in parts:
            _write(handler, part)
            if handler.server.release.wait(gap):
                break
        handler.close_connection = True

    return behaviour


def endless_stream(handler: Handler) -> None:
    """Promise a terabyte of events and send pieces until the client hangs up (or a 64 MB backstop)."""
    _headers(handler, EVENT_STREAM, 10**12)
    block = b"".join(events([_chunk({"content": "x" * 200})], done=False)) * 256
    for _ in range(64 * 2**20 // len(block)):
        _write(handler, block)
    handler.close_connection = True
