"""The JSON Lines transcript's format: a header line, then one message a line, and each line's bytes.

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

``transcript_writer`` appends these lines, under ``transcript_lock``'s lock, and
``transcript_reader`` reads them back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._backends import Message

__all__ = [
    "HEADED_VERSIONS",
    "HEADER_KEYS",
    "OFFERS_VERSION",
    "OFFER_KEYS",
    "TRANSCRIPT_VERSION",
    "encode_commit",
    "encode_header",
    "encode_message",
    "encode_offer",
]

#: The transcript format this version writes: 3 counts the lines of each multi-line commit, 2 heads
#: the file with a header line, 1 had none.
TRANSCRIPT_VERSION = 3

#: The format of a run with ``shortlist=``: version 3, and a line recording each round's offer.
OFFERS_VERSION = 4

#: The header versions read: 2 (commits not counted), 3, and 4 (offers recorded).
HEADED_VERSIONS = (2, 3, 4)

#: The keys of a header line, in the order written and read.
HEADER_KEYS = ("transcript", "version", "caller_messages")
#: The keys of an offer's line, in the order written and read.
OFFER_KEYS = ["offered", "catalogue"]


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
