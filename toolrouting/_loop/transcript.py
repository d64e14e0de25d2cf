"""The JSON Lines transcript: a header line, then one message a line, on disk before the run goes on.

The header, ``{"transcript":"toolrouting","version":2,"caller_messages":N}``, says that the
first ``N`` messages are the caller's, so resume knows where the run's own messages begin
even when a caller's message looks like one the loop writes. A transcript without it
(version 1, written before the header existed) is still read; where its caller's messages
end is then inferred.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import IO, Any

from .._backends import ROLES, Message
from .._errors import TranscriptError
from .._json import is_count
from .._limits import MAX_REPLY_QUOTE

__all__ = [
    "TRANSCRIPT_VERSION",
    "TranscriptRead",
    "TranscriptWriter",
    "drop_torn_line",
    "encode_header",
    "encode_message",
    "read_transcript",
]

#: The transcript format this version writes: 2 heads the file with a header line; 1 had none.
TRANSCRIPT_VERSION = 2

_HEADER_KEYS = ("transcript", "version", "caller_messages")


def encode_header(caller_messages: int) -> bytes:
    """The first line of a transcript whose first ``caller_messages`` messages are the caller's."""
    record = {"transcript": "toolrouting", "version": TRANSCRIPT_VERSION, "caller_messages": caller_messages}
    return json.dumps(record, separators=(",", ":")).encode("ascii") + b"\n"


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
    at any point leaves at most one torn last line, which :func:`read_transcript` drops. The
    first commit to a new file is the caller's conversation, and goes under the header that
    counts it.
    """

    def __init__(self, path: str | os.PathLike[str], *, append: bool = False) -> None:
        self.path = os.fspath(path)
        self._headed = append
        try:
            self._file: IO[bytes] = open(self.path, "ab" if append else "wb")  # noqa: SIM115 (see close())
        except OSError as error:
            raise TranscriptError(self.path, 0, f"cannot be written ({error.strerror or error})") from error

    def append(self, *messages: Message) -> None:
        """Commit ``messages`` in one write and one fsync, and return once they are on disk.

        A kill leaves all of them or none, unless the kernel tears the write itself, which
        leaves a torn last line like any other. A failure is a :class:`TranscriptError`.
        """
        header = b"" if self._headed else encode_header(len(messages))
        try:
            self._file.write(header + b"".join(encode_message(message) for message in messages))
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as error:
            raise TranscriptError(
                self.path, 0, f"a message could not be committed ({error.strerror or error})"
            ) from error
        self._headed = True

    def close(self) -> None:
        self._file.close()


@dataclasses.dataclass(frozen=True, kw_only=True)
class TranscriptRead:
    """What a transcript file holds: its committed ``messages`` and the byte length they take."""

    messages: tuple[Message, ...]
    """The conversation's messages only, the header not among them."""
    committed_bytes: int
    torn_line: str | None
    """The start (at most 64 characters) of a torn last line, ``None`` when the file ends cleanly."""
    version: int = TRANSCRIPT_VERSION
    """The format read: 2 with a header line, 1 without (an older transcript, or an empty file)."""
    caller_messages: int | None = None
    """How many of ``messages`` the header says are the caller's; ``None`` in a version 1 file."""


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
    lines = data[:end].split(b"\n")[:-1]
    header = _decode_header(name, lines[0]) if lines else None
    first = 1 if header is None else 2
    messages = [_decode_line(name, number, line) for number, line in enumerate(lines[first - 1 :], first)]
    torn_line = torn.decode("utf-8", "replace")[:MAX_REPLY_QUOTE] if torn else None
    return TranscriptRead(
        messages=tuple(messages),
        committed_bytes=end,
        torn_line=torn_line,
        version=1 if header is None else TRANSCRIPT_VERSION,
        caller_messages=header,
    )


def _decode_header(path: str, line: bytes) -> int | None:
    """The caller's message count a header line gives, or ``None`` when the line is not a header."""
    try:
        record: Any = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None  # not JSON at all: the message decoder says so
    if not isinstance(record, dict) or record.get("transcript") != "toolrouting":
        return None
    version = record.get("version")
    if is_count(version, TRANSCRIPT_VERSION + 1):
        raise TranscriptError(
            path,
            1,
            f"was written by a newer toolrouting (transcript version {version}); upgrade to resume it",
        )
    if (
        list(record) != list(_HEADER_KEYS)
        or version != TRANSCRIPT_VERSION
        or not is_count(record["caller_messages"], 1)
    ):
        raise TranscriptError(
            path, 1, 'is not a header {"transcript": "toolrouting", "version": 2, "caller_messages": N}'
        )
    count: int = record["caller_messages"]
    return count


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


def drop_torn_line(path: str, read: TranscriptRead) -> None:
    """Cut the torn last line ``read`` found off ``path``, before anything is appended after it."""
    if read.torn_line is None:
        return
    try:
        os.truncate(path, read.committed_bytes)
    except OSError as error:
        raise TranscriptError(path, 0, f"cannot drop its torn last line ({error})") from error
