"""The JSON Lines transcript: a header line, then one message a line, on disk before the run goes on.

The header, ``{"transcript":"toolrouting","version":3,"caller_messages":N}``, says that the
first ``N`` messages are the caller's, so resume knows where the run's own messages begin
even when a caller's message looks like one the loop writes. A commit of more than one
message (the caller's conversation, a refused reply and its repair) says so in its first
line, ``{"role":...,"content":...,"commit":K}``, so a commit cut at a line boundary is known
as cut, and dropped like a torn line: a kill at any byte leaves whole commits and a tail that
resume cuts off. Version 2 files (no commit counts) and version 1 files (no header, where the
caller's messages end is inferred) are still read, and resumed in their own format.
A run with ``shortlist=`` writes version 4: version 3 with one more kind of line, each round's
offer, ``{"offered":["name",...],"catalogue":N}``, a commit of its own on disk before the
round's first request, so a resume sends the tools the run offered whatever a ranker says now.

One process writes a transcript at a time: a writer holds an exclusive ``flock`` on the file
for the whole run or resume, and a second writer is refused at once, naming the holder.
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import json
import os
from collections.abc import Sequence
from typing import Any

from .._backends import ROLES, Message
from .._errors import TranscriptError
from .._json import is_count
from .._limits import MAX_REPLY_QUOTE
from .._names import NONE_TOOL, tool_name_problem

__all__ = [
    "OFFERS_VERSION",
    "TRANSCRIPT_VERSION",
    "RecordedOffer",
    "TranscriptRead",
    "TranscriptWriter",
    "drop_torn_line",
    "encode_commit",
    "encode_header",
    "encode_message",
    "encode_offer",
    "read_transcript",
]

#: The transcript format this version writes: 3 counts the lines of each multi-line commit, 2 heads
#: the file with a header line, 1 had none.
TRANSCRIPT_VERSION = 3

#: The format of a run with ``shortlist=``: version 3, and a line recording each round's offer.
OFFERS_VERSION = 4

#: The header versions read: 2 (commits not counted), 3, and 4 (offers recorded).
_HEADED = (2, 3, 4)

_HEADER_KEYS = ("transcript", "version", "caller_messages")
_OFFER_KEYS = ["offered", "catalogue"]

_LOCKS = "/proc/locks"


def encode_header(caller_messages: int, version: int = TRANSCRIPT_VERSION) -> bytes:
    """The first line of a transcript whose first ``caller_messages`` messages are the caller's."""
    record = {"transcript": "toolrouting", "version": version, "caller_messages": caller_messages}
    return json.dumps(record, separators=(",", ":")).encode("ascii") + b"\n"


def encode_message(message: Message, commit: int | None = None) -> bytes:
    """One transcript line: compact JSON with the keys in a fixed order, so a replay's bytes match.

    ``commit`` is the message count of the commit this line begins, written when it is over one.
    """
    record: dict[str, Any] = {"role": message["role"], "content": message["content"]}
    if commit is not None:
        record["commit"] = commit
    try:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate cannot be UTF-8; escaped, the line stays valid JSON and valid UTF-8.
        line = json.dumps(record, separators=(",", ":")).encode("ascii")
    return line + b"\n"


def encode_commit(messages: Sequence[Message], version: int = TRANSCRIPT_VERSION) -> bytes:
    """The lines of one commit; from version 3 the first counts them when there is more than one."""
    counted = version >= 3 and len(messages) > 1
    return b"".join(
        encode_message(message, len(messages) if counted and index == 0 else None)
        for index, message in enumerate(messages)
    )


def encode_offer(offered: Sequence[str], catalogue: int) -> bytes:
    """The line recording a round's offer: the tool names it offered (``none`` aside), in the
    order offered, and how many tools the catalogue held."""
    record = {"offered": list(offered), "catalogue": catalogue}
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


class TranscriptWriter:
    """Appends messages to a transcript file; they are flushed and fsync'd before ``append`` returns.

    A commit is on disk once its last line, newline included, is: a run killed at any byte
    leaves whole commits and a torn tail, which :func:`read_transcript` drops. The first
    commit to a new file is the caller's conversation, and goes under the header that counts
    it. The writer holds the file's exclusive lock from when it is made until :meth:`close`;
    ``version`` is the format it appends in (a resumed file's own).
    """

    def __init__(
        self, path: str | os.PathLike[str], *, append: bool = False, version: int = TRANSCRIPT_VERSION
    ) -> None:
        self.path = os.fspath(path)
        self.version = version
        self._headed = append
        # Opened without emptying it, and a resumed file never made: the lock comes first.
        flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | (0 if append else os.O_CREAT)
        try:
            descriptor = os.open(self.path, flags, 0o666)
        except OSError as error:
            what = "resumed" if append else "written"
            raise TranscriptError(self.path, 0, f"cannot be {what} ({error.strerror or error})") from error
        # A file object, so a writer dropped unclosed (an iterator never started) still lets go.
        self._file = os.fdopen(descriptor, "ab", buffering=0)
        try:
            _lock(descriptor, self.path)
            if not append:  # emptied only once it is ours: a refused writer leaves the file alone
                os.ftruncate(descriptor, 0)
        except BaseException:
            self._file.close()
            raise

    def append(self, *messages: Message) -> None:
        """Commit ``messages`` in one write and one fsync, and return once they are on disk.

        A kill leaves all of them or a commit resume knows to be cut short, whatever byte it
        lands on. A failure is a :class:`TranscriptError`.
        """
        header = b"" if self._headed else encode_header(len(messages), self.version)
        self._write(header + encode_commit(messages, self.version), "a message")
        self._headed = True

    def offer(self, offered: Sequence[str], catalogue: int) -> None:
        """Commit the line recording a round's offer (:func:`encode_offer`), in one write and one
        fsync, after the commits before it; only a transcript of version 4 holds one."""
        if self.version < OFFERS_VERSION or not self._headed:
            raise TranscriptError(self.path, 0, f"a version {self.version} transcript records no offers")
        self._write(encode_offer(offered, catalogue), "an offer")

    def _write(self, data: bytes, what: str) -> None:
        """Write ``data`` whole and fsync it; a failure is a :class:`TranscriptError` naming ``what``."""
        try:
            while data:
                data = data[self._file.write(data) or 0 :]
            os.fsync(self._file.fileno())
        except OSError as error:
            raise TranscriptError(
                self.path, 0, f"{what} could not be committed ({error.strerror or error})"
            ) from error

    def drop_after(self, committed_bytes: int) -> None:
        """Cut the file to its first ``committed_bytes`` bytes (what a kill left uncommitted goes)."""
        try:
            os.ftruncate(self._file.fileno(), committed_bytes)
        except OSError as error:
            raise TranscriptError(self.path, 0, f"cannot drop its torn end ({error})") from error

    def close(self) -> None:
        self._file.close()  # which releases the lock


def _lock(descriptor: int, path: str) -> None:
    """Take the file's exclusive lock, or refuse at once with a TranscriptError naming its holder."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise TranscriptError(
            path,
            0,
            f"is being written by {_holder(descriptor)}; one run or resume writes a transcript at a time",
        ) from None
    except OSError as error:  # a file system without flock: the run goes on unguarded, as before
        if error.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
            raise TranscriptError(path, 0, f"cannot be locked ({error.strerror or error})") from error


def _holder(descriptor: int) -> str:
    """Who holds the file's lock: ``process PID`` from the kernel's lock table, where there is one."""
    inode = str(os.fstat(descriptor).st_ino)
    try:
        with open(_LOCKS, encoding="ascii", errors="replace") as table:
            rows = [row.split() for row in table]
    except OSError:
        return "another writer"
    for row in rows:
        # "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF"; a "->" row is a waiter, not the holder.
        if len(row) >= 6 and row[1] == "FLOCK" and row[5].rsplit(":", 1)[-1] == inode:
            return f"process {row[4]}" + (" (this one)" if row[4] == str(os.getpid()) else "")
    return "another writer"


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
        list(record) != list(_HEADER_KEYS)
        or version not in _HEADED
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
        or list(record) != _OFFER_KEYS
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


def drop_torn_line(writer: TranscriptWriter, read: TranscriptRead) -> None:
    """Cut what ``read`` found after the last whole commit off the file ``writer`` holds, before
    anything is appended after it."""
    if read.torn_line is not None:
        writer.drop_after(read.committed_bytes)
