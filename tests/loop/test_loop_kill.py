"""Kill a routing run with SIGKILL at random points: every transcript stays valid, and resume finishes it.

The run is tests/support/kill_driver.py in its own process (a fake model, tools that take a little
real time), forked from a server that has imported toolrouting once, so a kill costs
milliseconds rather than an interpreter start; the run never killed, which every chain must
match, is the driver's command line in a fresh interpreter. Each chain starts a run, kills
it after it has reported a random number of committed messages plus a random instant,
resumes it in a new process, kills that too, and so on, then lets the last resume finish;
its transcript must equal the reference byte for byte. A longer campaign (it prints the tally):

    KILLS=500 .venv/bin/python -m pytest tests/loop/test_loop_kill.py -q -s

``KILL_SEED`` picks another sequence of kill points. Both drivers are killed: the sync
``RoutingLoop`` and the ``AsyncRoutingLoop``, and both must match the sync reference. Each
test runs three times: on the run of one call a decision; on a run with ``max_calls=2`` whose
decisions make two calls at once (kill_driver.model_of_calls), where a kill between a
decision and its results, or inside the commit of its results, must resume the same way; and
on a run with ``shortlist=2`` whose transcript records each round's offer on a line of its own,
where a kill just after an offer must resume offering it.

One write never tore under SIGKILL, so the kills that land inside a commit are made in
tests/loop/test_loop_kill_bytes.py, at each line boundary of a commit and at any byte. A second
writer of the same transcript is refused while the first holds it.
"""

# ruff: noqa: F811 - the fixtures imported from support.kills are the tests' parameters
from __future__ import annotations

import json
import multiprocessing
import multiprocessing.context
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import kill_driver
from support.drivers import DriverName
from support.kill_driver import QUESTION
from support.kills import (
    CALLS,
    Driver,
    Tally,
    forkserver,  # noqa: F401 - fixtures shared with other tests
)
from support.paths import TESTS

from toolrouting._errors import TranscriptError
from toolrouting._loop.transcript_format import encode_message
from toolrouting._loop.transcript_reader import read_transcript

#: The driver's command line, run from tests/ so that ``support`` is importable.
DRIVER = [sys.executable, "-m", "support.kill_driver"]
KILLS = int(os.environ.get("KILLS", "50"))
SEED = int(os.environ.get("KILL_SEED", "2026"))
#: Kills in one chain before its last resume is left to finish.
KILLS_PER_CHAIN = 3
#: The longest random instant between the last committed line read and the kill, in seconds:
#: about one tool call, so a kill lands before, inside or after the next one.
KILL_DELAY = 0.02


def _kill_at_random(driver: Driver, rng: random.Random, tally: Tally, remaining: int, fresh: bool) -> bool:
    """Kill after a random number of the ``remaining`` commits and a random instant more.

    ``False`` when the run ended first. A fresh run is killed the moment it starts one time in four.
    """
    if not (fresh and rng.random() < 0.25):
        driver.read(rng.randrange(0, max(remaining, 1)))
        time.sleep(rng.uniform(0, KILL_DELAY))  # the kill point itself, not a wait for anything
    driver.process.kill()  # SIGKILL; a no-op on a process that already ended
    return driver.finish(tally) == -signal.SIGKILL


def _check_killed(path: Path, reference: tuple[object, ...], tally: Tally) -> int:
    """Check what a kill left, and count the messages committed (0: nothing, start afresh)."""
    data = path.read_bytes() if path.exists() else b""
    *lines, torn = data.split(b"\n")
    for number, line in enumerate(lines[1:], start=2):  # after the header
        record = json.loads(line)
        kinds = (["role", "content"], ["role", "content", "commit"], ["offered", "catalogue"])
        assert list(record) in kinds, f"line {number}"
    tally.torn_seen += bool(torn)
    messages = read_transcript(path).messages if data else ()
    assert messages == reference[: len(messages)], "the killed run committed something else"
    # The caller's messages are one commit: all of them are on disk, or none.
    assert not messages or len(messages) >= len(QUESTION)
    tally.at[len(messages)] += 1
    if not messages:
        tally.nothing_committed += 1
    return len(messages)


def _reference(directory: Path, max_calls: int = 1, shortlist: bool = False) -> bytes:
    """The transcript of a run never killed, from a fresh interpreter running the driver's command line."""
    path = directory / "reference.jsonl"
    calls = (["calls"] if max_calls > 1 else []) + (["shortlist"] if shortlist else [])
    subprocess.run(
        [*DRIVER, "run", str(path), *calls], cwd=TESTS, capture_output=True, check=True, timeout=60
    )
    return path.read_bytes()


@CALLS
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_sigkill_at_random_points_then_resume_writes_the_same_bytes(
    tmp_path: Path,
    forkserver: multiprocessing.context.ForkServerContext,
    kind: DriverName,
    max_calls: int,
    shortlist: bool,
) -> None:
    reference = _reference(tmp_path, max_calls, shortlist)
    messages = read_transcript(tmp_path / "reference.jsonl").messages
    rng = random.Random(SEED)
    tally = Tally()
    while tally.kills < KILLS:
        path = tmp_path / f"chain-{tally.chains}.jsonl"
        tally.chains += 1
        mode, committed = "run", 0
        for _ in range(KILLS_PER_CHAIN):
            driver = Driver(forkserver, mode, path, kind, max_calls=max_calls, shortlist=shortlist)
            if _kill_at_random(driver, rng, tally, len(messages) - committed, fresh=mode == "run"):
                tally.kills += 1
                committed = _check_killed(path, messages, tally)
                mode = "resume" if committed else "run"
            else:
                tally.finished_first += 1
                mode, committed = "resume", len(messages)  # resume must find nothing left to do
        assert (
            Driver(forkserver, mode, path, kind, max_calls=max_calls, shortlist=shortlist).finish(tally) == 0
        )
        assert path.read_bytes() == reference, f"chain {tally.chains}: resumed bytes differ"
    print(f"\n{tally}")
    assert tally.kills >= KILLS
    assert tally.torn_dropped <= tally.torn_seen


@CALLS
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_resume_from_every_commit_point_writes_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: DriverName, max_calls: int, shortlist: bool
) -> None:
    # Random kills land where the time goes (the tools, the model); this visits every commit
    # point, and each with a torn line after it, in process and unpaced.
    monkeypatch.setattr(kill_driver, "TOOL_SECONDS", 0.0)
    monkeypatch.setattr(kill_driver, "MODEL_SECONDS", 0.0)
    whole = tmp_path / "whole.jsonl"
    commits = kill_driver.drive(
        "run", str(whole), lambda line: None, kind, max_calls=max_calls, shortlist=shortlist
    )
    data = whole.read_bytes()
    assert len(commits) < data.count(b"\n")  # some commits hold more than one message
    for cut in sorted({*commits, *(end + 7 for end in commits[:-1])}):
        path = tmp_path / f"cut-{cut}.jsonl"
        path.write_bytes(data[:cut])
        kill_driver.drive(
            "resume", str(path), lambda line: None, kind, max_calls=max_calls, shortlist=shortlist
        )
        assert path.read_bytes() == data, f"resumed from byte {cut}"


def test_part_of_the_callers_messages_is_not_a_run(tmp_path: Path) -> None:
    # What a kill between the caller's messages would leave, were they not one commit.
    path = tmp_path / "part.jsonl"
    path.write_bytes(encode_message(QUESTION[0]))
    with pytest.raises(TranscriptError, match="does not hold a routing run"):
        kill_driver.loop(str(path)).resume()


def test_a_second_writer_is_refused_and_the_file_is_left_intact(
    tmp_path: Path, forkserver: multiprocessing.context.ForkServerContext
) -> None:
    whole = tmp_path / "whole.jsonl"
    commits = kill_driver.drive("run", str(whole), lambda line: None)
    path = tmp_path / "shared.jsonl"
    # The first writer holds the transcript, stopped inside its third commit.
    first = Driver(forkserver, "run", path, "sync", stop_at=commits[2] + 5)
    try:
        first.wait_for("stopped")
        before = path.read_bytes()
        for mode in ("run", "resume"):
            second = subprocess.run(
                [*DRIVER, mode, str(path)],
                cwd=TESTS,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert second.returncode == 1, second.stderr
            assert second.stderr == (
                f"TranscriptError: transcript {path}: is being written by process {first.process.pid}; "
                "one run or resume writes a transcript at a time\n"
            )
            assert second.stdout == ""
            assert path.read_bytes() == before
    finally:
        first.process.kill()
        first.finish(Tally())
    # Once the first is gone its lock is too, and the run resumes to the undisturbed bytes.
    kill_driver.drive("resume", str(path), lambda line: None)
    assert path.read_bytes() == whole.read_bytes()
