"""The transcript read back: its committed messages, each round's recorded offer, and a torn tail.

What follows the last whole commit (a torn last line, a commit cut short at a line boundary) is
dropped and reported; any other line that is not of ``transcript_format``'s shapes is a
:class:`TranscriptError` that names it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from .._backends import ROLES, Message
from .._errors import TranscriptError
from .._json import is_count
from .._limits import MAX_REPLY_QUOTE
from .._names import NONE_TOOL, tool_name_problem
from .transcript_format import HEADED_VERSIONS, HEADER_KEYS, OFFER_KEYS, OFFERS_VERSION, TRANSCRIPT_VERSION

__all__ = ["RecordedOffer", "TranscriptRead", "read_transcript"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class RecordedOffer:
    """A round's offer as a version 4 transcript records it (a run with ``shortlist=``)."""

    at: int
    """How many messages were committed before it: the round it opens begins there."""
    offered: tuple[str, ...]
    """The tools offered, ``none`` aside, in the order the instructions and the route listed them."""
    catalogue: int
    """How many tools the provider's catalogue held that round."""
    line: int
    """The line of the file it is on (1-based), for an error that names it."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class TranscriptRead:
    """What a transcript file holds: its committed ``messages`` and the byte length they take."""

    messages: tuple[Message, ...]
    """The conversation's messages only, the header not among them."""
    committed_bytes: int
    torn_line: str | None
    """The start (at most 64 characters) of what follows the last whole commit (a torn last line,
    or a commit cut short at a line boundary), ``None`` when the file ends cleanly."""
    version: int = TRANSCRIPT_VERSION
    """The format read: 4 (offers recorded), 3 or 2 with a header line, 1 without (an older
    transcript, or an empty file)."""
    caller_messages: int | None = None
    """How many of ``messages`` the header says are the caller's; ``None`` in a version 1 file."""
    offers: tuple[RecordedOffer, ...] = ()
    """Each round's offer, in a version 4 file (a run with ``shortlist=``); none in an older one."""


def read_transcript(path: str | os.PathLike[str]) -> TranscriptRead:
    """Read a transcript back; what follows the last whole commit (a torn last line, a commit cut
    short) is dropped and reported, any other bad line is a :class:`TranscriptError`."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as file:
            data = file.read()
    except OSError as error:
        raise TranscriptError(name, 0, f"cannot be read ({error.strerror or error})") from error
    lines = data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]
    header = _decode_header(name, lines[0]) if lines else None
    version = 1 if header is None else header[0]
    first = 1 if header is None else 2
    offset = 0 if header is None else len(lines[0]) + 1
    committed, kept, owed, opened = offset, 0, 0, 0
    messages: list[Message] = []
    offers: list[RecordedOffer] = []
    for number, line in enumerate(lines[first - 1 :], first):
        if version >= OFFERS_VERSION and line.startswith(b'{"offered":'):
            if owed:
                raise TranscriptError(name, number, f"records an offer inside the commit of line {opened}")
            offers.append(_decode_offer(name, number, line, len(messages)))
            offset += len(line) + 1
            committed = offset  # a commit of its own, never inside another (refused above)
            continue
        message, count = _decode_line(name, number, line, counted=version >= 3)
        if count is not None and owed:
            raise TranscriptError(name, number, f"begins a commit inside the commit of line {opened}")
        if count is not None:
            owed, opened = count, number
        messages.append(message)
        offset += len(line) + 1
        owed = max(owed - 1, 0)
        if not owed:  # the end of a commit: everything up to here is the run's
            committed, kept = offset, len(messages)
    torn = data[committed:]
    return TranscriptRead(
        messages=tuple(messages[:kept]),
        committed_bytes=committed,
        torn_line=torn.decode("utf-8", "replace")[:MAX_REPLY_QUOTE] if torn else None,
        version=version,
        caller_messages=None if header is None else header[1],
        offers=tuple(offers),
    )


def _decode_header(path: str, line: bytes) -> tuple[int, int] | None:
    """The version and the caller's message count a header line gives, ``None`` for no header."""
    try:
        record: Any = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None  # not JSON at all: the message decoder says so
    if not isinstance(record, dict) or record.get("transcript") != "toolrouting":
        return None
    version = record.get("version")
    if is_count(version, OFFERS_VERSION + 1):
        raise TranscriptError(
            path,
            1,
            f"was written by a newer toolrouting (transcript version {version}); upgrade to resume it",
        )
    if (
        list(record) != list(HEADER_KEYS)
        or version not in HEADED_VERSIONS
        or isinstance(version, bool)
        or not is_count(record["caller_messages"], 1)
    ):
        raise TranscriptError(
            path,
            1,
            f'is not a header {{"transcript": "toolrouting", "version": {TRANSCRIPT_VERSION}, '
            '"caller_messages": N}',
        )
    return version, record["caller_messages"]


def _decode_line(path: str, number: int, line: bytes, *, counted: bool) -> tuple[Message, int | None]:
    """A line's message, and the message count of the commit it begins when it says one."""
    try:
        record: Any = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise TranscriptError(path, number, f"is not a JSON line ({error})") from error
    keys = (
        ["role", "content", "commit"] if counted and isinstance(record, dict) and "commit" in record else None
    )
    if (
        not isinstance(record, dict)
        or (list(record) != keys if keys else set(record) != {"role", "content"})
        or record["role"] not in ROLES
        or not isinstance(record["content"], str)
        or (keys is not None and not is_count(record["commit"], 2))
    ):
        raise TranscriptError(path, number, 'is not a message {"role": ..., "content": "..."}')
    return Message(role=record["role"], content=record["content"]), record.get("commit")


def _decode_offer(path: str, number: int, line: bytes, at: int) -> RecordedOffer:
    """A line recording a round's offer, read back: distinct tool names and the catalogue's size."""
    try:
        record: Any = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise TranscriptError(path, number, f"is not a JSON line ({error})") from error
    offered = record.get("offered") if isinstance(record, dict) else None
    if (
        not isinstance(record, dict)
        or list(record) != OFFER_KEYS
        or not isinstance(offered, list)
        or not all(isinstance(tool, str) and tool_name_problem(tool) is None for tool in offered)
        or NONE_TOOL in offered
        or len(set(offered)) != len(offered)
        or not is_count(record["catalogue"], len(offered))
    ):
        raise TranscriptError(
            path, number, 'is not an offer {"offered": ["tool", ...], "catalogue": N} of distinct tools'
        )
    return RecordedOffer(at=at, offered=tuple(offered), catalogue=record["catalogue"], line=number)
