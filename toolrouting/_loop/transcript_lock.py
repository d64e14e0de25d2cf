"""One process writes a transcript at a time: a writer holds an exclusive ``flock`` on the file
for the whole run or resume, and a second writer is refused at once, naming the holder.
"""

from __future__ import annotations

import errno
import fcntl
import os

from .._errors import TranscriptError

__all__ = ["lock_transcript"]

_LOCKS = "/proc/locks"


def lock_transcript(descriptor: int, path: str) -> None:
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
