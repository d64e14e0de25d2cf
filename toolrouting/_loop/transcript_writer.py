"""The transcript written: each commit flushed and fsync'd before the run goes on, under the file's lock.

The format is ``transcript_format``'s; the lock, ``transcript_lock``'s, is held from when a
writer is made until it is closed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .._backends import Message
from .._errors import TranscriptError
from .transcript_format import OFFERS_VERSION, TRANSCRIPT_VERSION, encode_commit, encode_header, encode_offer
from .transcript_lock import lock_transcript
from .transcript_reader import TranscriptRead

__all__ = ["TranscriptWriter", "drop_torn_line"]


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
            lock_transcript(descriptor, self.path)
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


def drop_torn_line(writer: TranscriptWriter, read: TranscriptRead) -> None:
    """Cut what ``read`` found after the last whole commit off the file ``writer`` holds, before
    anything is appended after it."""
    if read.torn_line is not None:
        writer.drop_after(read.committed_bytes)
