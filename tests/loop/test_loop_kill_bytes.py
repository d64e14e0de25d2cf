"""Kill a routing run inside a commit: at each line boundary of a commit of several lines, mid-way
through each of its lines, and at any byte; every transcript resumes to the same bytes, or is
refused by name.

One write never tore under SIGKILL (tests/loop/test_loop_kill.py), so the kills that land inside a
commit are made two more ways: a driver stopped at each line boundary inside a commit of several
lines, and mid-way through each of its lines, and SIGKILLed there; and a resume from the file cut
at every line boundary, the bytes beside each and every 61st byte (about 5 s a driver). Every
byte offset, in the thousands, with (about 4 minutes a driver on shared cores):

    KILL_EVERY_BYTE=1 .venv/bin/python -m pytest tests/loop/test_loop_kill_bytes.py -k any_byte -q -s
"""
# ruff: noqa: F811 - the fork server imported from support.kills is the tests' parameter

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.context
import os
import signal
import time
from pathlib import Path

import pytest
from support import kill_driver
from support.drivers import DriverName
from support.kills import (  # noqa: F401 - the fork server the driver processes start from
    CALLS,
    Driver,
    Tally,
    forkserver,
)

from toolrouting._errors import TranscriptError

#: ``KILL_EVERY_BYTE=1`` resumes from every byte offset of the transcript (thousands); without
#: it, from every line boundary, the bytes on either side of each, and every STRIDE-th byte.
EVERY_BYTE = os.environ.get("KILL_EVERY_BYTE") == "1"
STRIDE = 61


def _line_ends(data: bytes) -> list[int]:
    """The offset after each line of a transcript."""
    return [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]


def _commits(data: bytes) -> list[tuple[int, int]]:
    """Each commit after the header: the index of its first line and how many lines it holds."""
    return [(index, json.loads(line).get("commit", 1)) for index, line in enumerate(data.splitlines()[1:], 1)]


def _boundaries(data: bytes) -> tuple[list[int], list[int]]:
    """Every line end of a transcript, and those that fall inside a commit of several lines."""
    ends = _line_ends(data)
    inside = [end for index, count in _commits(data) for end in ends[index : index + count - 1]]
    return ends, inside


def _middles(data: bytes) -> list[int]:
    """The middle byte of every line of every commit of several lines."""
    starts = [0, *_line_ends(data)]
    return [
        (starts[n] + starts[n + 1]) // 2
        for index, count in _commits(data)
        if count > 1
        for n in range(index, index + count)
    ]


def _ran_last(ran: list[str], called: list[str], kind: DriverName, max_calls: int) -> bool:
    """Whether a resume ran the run's last calls: in its order, or, where the async driver runs a
    decision's calls concurrently, the same calls in an order that may differ."""
    last = called[len(called) - len(ran) :]
    if kind == "async" and max_calls > 1:
        return sorted(ran) == sorted(last)
    return ran == last


@CALLS
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_kill_at_any_byte_resumes_to_the_same_bytes_or_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: DriverName, max_calls: int, shortlist: bool
) -> None:
    # What a kill at byte N leaves is the file's first N bytes, whatever was being written: a
    # torn line, or a commit of several lines cut at one of its line boundaries. Each resumes to
    # the run left alone, running none but the calls that run made, in its order; only a file
    # holding none of the run's own messages yet (header and caller's messages cut) is refused.
    monkeypatch.setattr(kill_driver, "TOOL_SECONDS", 0.0)
    monkeypatch.setattr(kill_driver, "MODEL_SECONDS", 0.0)
    whole = tmp_path / "whole.jsonl"
    commits = kill_driver.drive(
        "run", str(whole), lambda line: None, kind, max_calls=max_calls, shortlist=shortlist
    )
    called = list(kill_driver.CALLED)
    data = whole.read_bytes()
    ends, inside = _boundaries(data)
    # The caller's two messages, two refusals with their repairs, and at two calls a decision
    # the results of each of its three decisions of two calls.
    assert len(inside) >= (3 if max_calls == 1 else 6)
    if EVERY_BYTE:
        offsets = list(range(len(data)))
    else:
        near = {end + step for end in ends for step in (-1, 0, 1)}
        offsets = sorted(cut for cut in {0, *near, *range(0, len(data), STRIDE)} if cut < len(data))
    path = tmp_path / "killed.jsonl"
    resumed = refused = 0
    started = time.monotonic()
    for cut in offsets:
        path.write_bytes(data[:cut])
        if cut < commits[0]:  # the caller's messages not all on disk: there is no run to resume
            with pytest.raises(TranscriptError, match="does not hold a routing run"):
                kill_driver.drive(
                    "resume", str(path), lambda line: None, kind, max_calls=max_calls, shortlist=shortlist
                )
            refused += 1
            continue
        kill_driver.drive(
            "resume", str(path), lambda line: None, kind, max_calls=max_calls, shortlist=shortlist
        )
        assert path.read_bytes() == data, f"resumed from byte {cut}"
        ran = kill_driver.CALLED
        assert _ran_last(ran, called, kind, max_calls), f"byte {cut}: ran {ran}, not the run's calls"
        resumed += 1
    seconds = time.monotonic() - started
    print(
        f"\n{kind}, max_calls={max_calls}: {len(offsets)} kill points of {len(data)} bytes "
        f"({len(inside)} line boundaries inside commits): {resumed} resumed byte for byte, "
        f"{refused} refused, {seconds:.1f} s"
    )
    assert resumed + refused == len(offsets)


@CALLS
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_sigkill_at_each_line_boundary_inside_a_commit_resumes_exactly(
    tmp_path: Path,
    forkserver: multiprocessing.context.ForkServerContext,
    kind: DriverName,
    max_calls: int,
    shortlist: bool,
) -> None:
    # A real SIGKILL, landing where one write of several lines would tear: at a line boundary
    # inside the commit, or in the middle of one of its lines. The driver writes the commit's
    # bytes up to there, fsyncs them, and waits to be killed.
    whole = tmp_path / "whole.jsonl"
    commits = kill_driver.drive(
        "run", str(whole), lambda line: None, kind, max_calls=max_calls, shortlist=shortlist
    )
    called = list(kill_driver.CALLED)
    data = whole.read_bytes()
    _, inside = _boundaries(data)
    stops = sorted({*inside, *_middles(data)})
    # Commits of two lines, a boundary and two middles each: the caller's messages, two refusals
    # with their repairs, and at two calls a decision the results of three decisions of two calls.
    two_line_commits = 3 if max_calls == 1 else 6
    assert len(stops) == 3 * two_line_commits
    for stop in stops:
        path = tmp_path / f"killed-{stop}.jsonl"
        driver = Driver(forkserver, "run", path, kind, stop_at=stop, max_calls=max_calls, shortlist=shortlist)
        driver.wait_for("stopped")
        driver.process.kill()
        assert driver.finish(Tally()) == -signal.SIGKILL
        assert path.read_bytes() == data[:stop]
        if stop < commits[0]:  # the caller's messages cut: nothing of the run to resume
            with pytest.raises(TranscriptError, match="does not hold a routing run"):
                kill_driver.drive(
                    "resume", str(path), lambda line: None, kind, max_calls=max_calls, shortlist=shortlist
                )
            continue
        events: list[str] = []
        kill_driver.drive("resume", str(path), events.append, kind, max_calls=max_calls, shortlist=shortlist)
        assert path.read_bytes() == data, f"killed at byte {stop}"
        assert any(line.startswith("torn ") for line in events), "the cut commit was not dropped"
        ran = kill_driver.CALLED
        assert _ran_last(ran, called, kind, max_calls), f"byte {stop}: ran {ran}"
