"""The JSON Lines transcript: one message a line, on disk before the run goes on."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import IO, Any

from .._backends import ROLES, Message
from .._errors import TranscriptError
from .._limits import MAX_REPLY_QUOTE

__all__ = ["TranscriptRead", "TranscriptWriter", "encode_message", "read_transcript"]


def encode_message(message: Message) -> bytes:
    """One transcript line: compact JSON with the keys in a fixed order, so a replay's bytes match."""
    record = {"role": message["role"], "content": message["content"]}
    try:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate cannot be UTF-8; escaped, the line stays valid JSON and valid UTF-8.
        line = json.dumps(record, separators=(",", ":")).encode("ascii")
    return line + b"\n"


class TranscriptWriter:
    """Appends messages to a transcript file; they are flushed and fsync'd before ``append`` returns.

    A message is committed once its whole line, newline included, is on disk: a run killed
    at any point leaves at most one torn last line, which :func:`read_transcript` drops.
    """

    def __init__(self, path: str | os.PathLike[str], *, append: bool = False) -> None:
        self.path = os.fspath(path)
        try:
            self._file: IO[bytes] = open(self.path, "ab" if append else "wb")  # noqa: SIM115 (see close())
        except OSError as error:
            raise TranscriptError(self.path, 0, f"cannot be written ({error.strerror or error})") from error

    def append(self, *messages: Message) -> None:
        """Commit ``messages`` in one write and one fsync, and return once they are on disk.

        A kill leaves all of them or none, unless the kernel tears the write itself, which
        leaves a torn last line like any other. A failure is a :class:`TranscriptError`.
        """
        try:
            self._file.write(b"".join(encode_message(message) for message in messages))
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as error:
            raise TranscriptError(
                self.path, 0, f"a message could not be committed ({error.strerror or error})"
            ) from error

    def close(self) -> None:
        self._file.close()


@dataclasses.dataclass(frozen=True)
class TranscriptRead:
    """What a transcript file holds: its committed ``messages`` and the byte length they take."""

    messages: tuple[Message, ...]
    committed_bytes: int
    torn_line: str | None
    """The start (at most 64 characters) of a torn last line, ``None`` when the file ends cleanly."""


def read_transcript(path: str | os.PathLike[str]) -> TranscriptRead:
    """Read a transcript back; a torn last line (no newline) is dropped and reported, any other bad line
    is a :class:`TranscriptError`."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as file:
            data = file.read()
    except OSError as error:
        raise TranscriptError(name, 0, f"cannot be read ({error.strerror or error})") from error
    end = data.rfind(b"\n") + 1
    torn = data[end:]
    messages: list[Message] = []
    for number, line in enumerate(data[:end].split(b"\n")[:-1], start=1):
        messages.append(_decode_line(name, number, line))
    torn_line = torn.decode("utf-8", "replace")[:MAX_REPLY_QUOTE] if torn else None
    return TranscriptRead(tuple(messages), end, torn_line)


def _decode_line(path: str, number: int, line: bytes) -> Message:
    try:
        record: Any = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise TranscriptError(path, number, f"is not a JSON line ({error})") from error
    if (
        not isinstance(record, dict)
        or set(record) != {"role", "content"}
        or record["role"] not in ROLES
        or not isinstance(record["content"], str)
    ):
        raise TranscriptError(path, number, 'is not a message {"role": ..., "content": "..."}')
    return Message(role=record["role"], content=record["content"])
