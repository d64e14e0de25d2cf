"""The transcript format: a versioned header that counts the caller's messages, then one message a line.

Older transcripts (version 1, no header) are still read and resumed as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.catalogues import NONE, QUESTION
from support.drivers import Driver

from toolrouting import Message, ScriptedBackend
from toolrouting._errors import TranscriptError
from toolrouting._loop.repair_feedback import repair_message
from toolrouting._loop.transcript_format import (
    TRANSCRIPT_VERSION,
    encode_commit,
    encode_header,
    encode_message,
)
from toolrouting._loop.transcript_reader import read_transcript
from toolrouting._loop.transcript_writer import TranscriptWriter
from toolrouting.demo.store import MemoryStore


def test_the_first_commit_goes_under_a_header_that_counts_it(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    writer = TranscriptWriter(path)
    writer.append(*QUESTION)
    writer.append({"role": "assistant", "content": NONE})
    writer.close()
    assert path.read_bytes() == (
        b'{"transcript":"toolrouting","version":3,"caller_messages":2}\n'
        + encode_message(QUESTION[0], commit=2)  # the first line of a commit counts its lines
        + encode_message(QUESTION[1])
        + b'{"role":"assistant","content":"{\\"tool\\": \\"none\\"}"}\n'
    )
    assert encode_commit(QUESTION) == encode_message(QUESTION[0], commit=2) + encode_message(QUESTION[1])
    read = read_transcript(path)
    assert (read.version, read.caller_messages) == (TRANSCRIPT_VERSION, 2)
    assert read.messages == (*QUESTION, {"role": "assistant", "content": NONE})
    assert read.committed_bytes == len(path.read_bytes())
    # Appending to a transcript adds no second header.
    again = TranscriptWriter(path, append=True)
    again.append({"role": "user", "content": "more"})
    again.close()
    assert path.read_bytes().count(b'"transcript"') == 1


def test_a_transcript_without_a_header_is_read_as_version_1(driver: Driver, tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_bytes(b"".join(encode_message(m) for m in QUESTION) + b'{"role":"assi')
    read = read_transcript(path)
    assert (read.version, read.caller_messages) == (1, None)
    assert read.messages == tuple(QUESTION)
    assert read.torn_line == '{"role":"assi'
    # And it resumes as before: the split after the last user message.
    result = driver.loop(ScriptedBackend([NONE]), MemoryStore.sample(), transcript=path).resume()
    assert [a.tool for a in result.actions] == ["none"]
    assert path.read_bytes() == b"".join(encode_message(m) for m in result.messages)


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        (b'{"transcript":"toolrouting","version":5,"caller_messages":2}', "line 1: was written by a newer"),
        (b'{"transcript":"toolrouting","version":2,"caller_messages":0}', "line 1: is not a header"),
        (b'{"transcript":"toolrouting","version":2,"caller_messages":true}', "line 1: is not a header"),
        (b'{"transcript":"toolrouting","version":2}', "line 1: is not a header"),
        (b'{"transcript":"toolrouting","version":"2","caller_messages":2}', "line 1: is not a header"),
        (b'{"transcript":"other","version":2,"caller_messages":2}', "line 1: is not a message"),
    ],
)
def test_a_bad_header_is_a_transcript_error(tmp_path: Path, header: bytes, problem: str) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(header + b"\n" + b"".join(encode_message(m) for m in QUESTION))
    with pytest.raises(TranscriptError, match=problem):
        read_transcript(path)


def test_a_header_is_only_a_header_on_the_first_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(encode_header(2) + encode_message(QUESTION[0]) + encode_header(2))
    with pytest.raises(TranscriptError, match="line 3: is not a message"):
        read_transcript(path)


def test_a_header_counting_more_messages_than_were_committed_is_not_a_run(
    driver: Driver, tmp_path: Path
) -> None:
    # What a torn first commit would leave: the header, and only part of the caller's messages.
    path = tmp_path / "run.jsonl"
    path.write_bytes(encode_header(2) + encode_message(QUESTION[0]) + b'{"role":"us')
    loop = driver.loop(ScriptedBackend([NONE]), MemoryStore.sample(), transcript=path)
    with pytest.raises(TranscriptError, match="counts 2 messages of the caller's and only 1 were committed"):
        loop.resume()


def test_the_header_decides_where_the_run_begins(driver: Driver, tmp_path: Path) -> None:
    # The caller's conversation ends in a refused reply and its repair, as if a run had begun;
    # under the header it is the caller's, so the run starts at round 1 with no repair used.
    conversation: list[Message] = [
        *QUESTION,
        {"role": "assistant", "content": "prose"},
        {"role": "user", "content": repair_message("the reply is not a JSON object", [])},
    ]
    path = tmp_path / "run.jsonl"
    path.write_bytes(encode_header(len(conversation)) + b"".join(encode_message(m) for m in conversation))
    result = driver.loop(
        ScriptedBackend(["still prose", NONE]), MemoryStore.sample(), transcript=path
    ).resume()
    assert [a.round for a in result.actions] == [1]  # one repair was still left in round 1
    assert json.loads(path.read_bytes().splitlines()[0])["caller_messages"] == len(conversation)


def _line(role: str, content: str, **more: object) -> bytes:
    return json.dumps({"role": role, "content": content, **more}, separators=(",", ":")).encode() + b"\n"


def test_a_commit_cut_at_a_line_boundary_is_dropped_like_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    whole = encode_header(2) + encode_commit(QUESTION)
    refused = _line("assistant", "prose", commit=2)
    path.write_bytes(whole + refused)  # the repair that shared its commit never landed
    read = read_transcript(path)
    assert read.messages == tuple(QUESTION)
    assert read.committed_bytes == len(whole)
    assert read.torn_line == refused.decode()[:64]
    # The whole commit reads, and its count is not part of the message.
    path.write_bytes(whole + refused + _line("user", "repair"))
    assert read_transcript(path).messages == (
        *QUESTION,
        {"role": "assistant", "content": "prose"},
        {"role": "user", "content": "repair"},
    )


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (
            [_line("assistant", "a", commit=3), _line("user", "b"), _line("assistant", "c", commit=2)],
            "line 5: begins a commit inside the commit of line 3",
        ),
        ([_line("assistant", "a", commit=1)], "line 3: is not a message"),
        ([_line("assistant", "a", commit=True)], "line 3: is not a message"),
        ([_line("assistant", "a", commit="2")], "line 3: is not a message"),
        ([b'{"commit":2,"role":"assistant","content":"a"}\n'], "line 3: is not a message"),
    ],
)
def test_a_bad_commit_count_is_a_transcript_error(tmp_path: Path, lines: list[bytes], problem: str) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(encode_header(1) + encode_message(QUESTION[1]) + b"".join(lines))
    with pytest.raises(TranscriptError, match=problem):
        read_transcript(path)


def test_a_version_2_transcript_is_read_and_resumed_in_its_own_format(driver: Driver, tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    header = encode_header(len(QUESTION), version=2)
    assert header == b'{"transcript":"toolrouting","version":2,"caller_messages":2}\n'
    path.write_bytes(header + b"".join(encode_message(m) for m in QUESTION))
    result = driver.loop(ScriptedBackend(["prose", NONE]), MemoryStore.sample(), transcript=path).resume()
    assert [a.tool for a in result.actions] == ["none"]
    read = read_transcript(path)
    assert (read.version, read.messages) == (2, result.messages)
    assert b'"commit"' not in path.read_bytes()  # a refusal and its repair, written as version 2 wrote them
    # A commit count has no place in a version 2 file.
    path.write_bytes(header + _line("user", "q", commit=2) + _line("user", "r"))
    with pytest.raises(TranscriptError, match="line 2: is not a message"):
        read_transcript(path)
