"""``toolrouting batch`` stopped mid-way, by SIGKILL or by Ctrl-C: started again, it finishes every
question once, never redoing a finished one and resuming those cut short.

The model is a slow fake server on loopback (tests/support/slow_model.py), so that runs are in
flight when the process is stopped.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.batch_files import questions_file, results_in
from support.processes import ROOT
from support.slow_model import SlowModelServer

from toolrouting._batch import RESULT_SUFFIX

#: Seconds the fake server takes for each answer: long enough that runs are in flight at a kill.
ANSWER_SECONDS = 0.3


#: A batch process that has not ended this long after its start is hung.
BATCH_LIMIT = 120.0


def _batch_process(questions: Path, out: Path, url: str) -> subprocess.Popen[str]:
    command = [
        sys.executable, "-m", "toolrouting", "batch", str(questions), "--out", str(out),
        "--base-url", url, "--model", "fake", "--concurrency", "3"
    ]  # fmt: skip
    environment = {k: v for k, v in os.environ.items() if k not in ("TOOLROUTING_API_KEY", "OPENAI_API_KEY")}
    return subprocess.Popen(
        command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.parametrize(
    ("stop", "status"), [(signal.SIGKILL, -signal.SIGKILL), (signal.SIGINT, 130)], ids=["SIGKILL", "SIGINT"]
)
def test_a_batch_stopped_mid_way_finishes_every_question_once(
    tmp_path: Path, stop: signal.Signals, status: int
) -> None:
    """SIGKILL, or Ctrl-C (SIGINT), which exits at once without waiting for the runs in flight."""
    questions = questions_file(tmp_path / "q.jsonl", 9)
    out = tmp_path / "out"
    # Five requests answered, the rest held: with three runs at a time the fourth request is a
    # second decision, so at least one run finishes, and a run whose request is held cannot.
    server = SlowModelServer(ANSWER_SECONDS, hold_after=5)
    try:
        process = _batch_process(questions, out, server.url)
        deadline = time.monotonic() + BATCH_LIMIT
        while True:
            finished_now = set(results_in(out)) if out.exists() else set()
            # A run in flight has committed its question (one write, at its start).
            begun = {p.stem for p in out.glob("*.jsonl") if p.stat().st_size} if out.exists() else set()
            in_flight = begun - finished_now
            with server.lock:
                held = server.held
            if finished_now and in_flight and held:
                break
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the batch never had runs finished and in flight at once"
            time.sleep(0.01)
        process.send_signal(stop)
        _, stopped = process.communicate(timeout=ANSWER_SECONDS * 10)  # at once, not after the runs
        assert process.returncode == status, stopped
        finished = results_in(out)  # the results on disk once it is dead
        kept = {id: (out / f"{id}{RESULT_SUFFIX}").read_bytes() for id in finished}
        torn = {
            p.stem: p.read_bytes()[: p.read_bytes().rfind(b"\n") + 1]
            for p in out.glob("*.jsonl")
            if p.stem not in finished
        }
        with server.lock:
            asked_before = len(server.requests)
        server.release()

        process = _batch_process(questions, out, server.url)
        stdout, stderr = process.communicate(timeout=BATCH_LIMIT)
        assert process.returncode == 0, stderr
    finally:
        server.close()

    results = results_in(out)
    assert sorted(results) == [f"q{n}" for n in range(9)]  # every question, one result each
    assert {r["status"] for r in results.values()} == {"done"}
    for id, data in kept.items():
        assert (out / f"{id}{RESULT_SUFFIX}").read_bytes() == data  # never redone
    assert not set(server.requests[asked_before:]) & set(kept)
    for id, committed in torn.items():
        if committed:  # a run cut short goes on from what it had committed
            assert (out / f"{id}.jsonl").read_bytes().startswith(committed)
    assert sum(r["resumed"] for r in results.values()) >= 1
    assert f"9/9 done, 0 failed, 0 running ({len(kept)} skipped" in stdout
    assert "runs/s" in stderr  # the progress bar
