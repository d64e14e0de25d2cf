"""Ctrl-C on ``toolrouting run``: a real process, interrupted with SIGINT while a request is in flight.

The model is a slow fake server on loopback (tests/support/slow_model.py): its answer depends
only on the conversation, so the resumed run is the run the interruption cut short.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.processes import ROOT, python_m
from support.slow_model import QUESTION_MARK, SlowModelServer

from toolrouting import read_transcript
from toolrouting._cli.exits import INTERRUPTED

#: Seconds the fake server takes for each answer: a request is surely in flight at the signal.
ANSWER_SECONDS = 2.0
#: Seconds within which an interrupted run must have exited: well under one answer's wait.
PROMPTLY = 1.5
#: A run that has not committed its first round this long after its start is hung.
RUN_LIMIT = 60.0


def _run(*args: str) -> subprocess.Popen[str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("TOOLROUTING_API_KEY", "OPENAI_API_KEY")}
    return subprocess.Popen(
        [sys.executable, "-m", "toolrouting", "run", *args],
        cwd=ROOT,
        env={**environment, "OMP_WAIT_POLICY": "passive"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_ctrl_c_mid_run_exits_at_once_and_the_transcript_resumes(tmp_path: Path) -> None:
    transcript = tmp_path / "run.jsonl"
    server = SlowModelServer(ANSWER_SECONDS)
    model = ("--base-url", server.url, "--model", "fake", "--answer", "--transcript", str(transcript))
    try:
        process = _run(f"{QUESTION_MARK}r1: what does the latch do?", *model)
        deadline = time.monotonic() + RUN_LIMIT
        # The search's result committed and the second decision asked for: a request in flight.
        while b"Tool result" not in (transcript.read_bytes() if transcript.exists() else b"") or len(
            server.requests
        ) < len(["search", "second decision"]):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the run never asked for its second decision"
            time.sleep(0.01)
        committed = transcript.read_bytes()

        interrupted = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=RUN_LIMIT)
        took = time.monotonic() - interrupted

        assert process.returncode == INTERRUPTED, err
        assert took < PROMPTLY, f"the run took {took:.1f} s to stop"
        assert "interrupted" in err
        assert "--resume" in err  # it says how to go on
        assert out == ""  # no outcome: the run did not end
        assert transcript.read_bytes() == committed  # nothing unfinished was committed
        assert read_transcript(transcript).torn_line is None

        resumed = python_m("run", "--resume", *model, timeout=RUN_LIMIT)
    finally:
        server.close()

    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.startswith("resumed at round 2 after 4 messages")
    assert resumed.stdout == "The latch holds the door.\nended: handoff after 2 rounds, 1 tool call\n"
    assert transcript.read_bytes().startswith(committed)
    tools = [m for m in read_transcript(transcript).messages if m["content"].startswith("Tool result")]
    assert len(tools) == 1  # the search was not run again
