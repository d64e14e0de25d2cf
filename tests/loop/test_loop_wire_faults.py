"""The routing loop on the HTTP backend against a real misbehaving server on loopback.

Each case of tests/support/wire_faults.py queues faults and the model's answers on a threaded
http.server at 127.0.0.1 and runs a whole RoutingLoop through OpenAICompatible. The loop's
``sleep`` records the waits instead of waiting, and slow answers are held on Events, so no
test depends on how fast the machine is: a stalled or trickled answer cannot finish before
the client's short timeout (load only delays the timeout), and every other request has a
timeout no loopback answer comes near. ``python -m support.fault_table``, run from tests/, prints
the same matrix as a table.
Each case runs through both drivers; the async one through ``AsyncOpenAICompatible`` on the
same server (tests/support/drivers.py makes it from the sync backend's endpoint).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.drivers import Driver
from support.fault_server import Fault, FaultServer, completion_body, ok, trickle
from support.wire_faults import (
    CASES,
    GIVE_UP,
    LOOKUP,
    NONE,
    QUESTION,
    TIMEOUT,
    TRICKLE_GAP,
    Case,
    Desk,
    run_case,
    summary,
)

from toolrouting._backends.http import OpenAICompatible
from toolrouting._errors import BackendTimeout, RepairsExhaustedError
from toolrouting._loop.run import RoutingLoop
from toolrouting._loop.transcript_reader import read_transcript


@pytest.mark.parametrize("case", CASES, ids=[case.kind for case in CASES])
def test_the_loop_retries_or_fails_clearly_and_keeps_its_transcript(
    driver: Driver, case: Case, tmp_path: Path
) -> None:
    outcome = run_case(case, tmp_path, driver)

    assert outcome.problems == ()
    faults = sum(isinstance(step, Fault) for step in case.script)
    assert outcome.injected == faults + min(case.refusals, case.retries + 1)
    assert outcome.retried == len(case.delays)
    assert outcome.recovered == (case.error is None)
    assert outcome.failed_clearly == (case.error is not None)
    assert outcome.transcript_intact


def _undisturbed(path: Path) -> bytes:
    with FaultServer() as server, OpenAICompatible(server.url, timeout=TIMEOUT) as backend:
        server.script.extend([ok(LOOKUP), ok(NONE)])
        RoutingLoop(backend, Desk(), transcript=path, instructions=False).run(QUESTION)
    return path.read_bytes()


@pytest.mark.parametrize(
    "case",
    [case for case in CASES if case.error is not None and case.error is not RepairsExhaustedError],
    ids=lambda case: case.kind,
)
def test_a_run_that_failed_on_the_wire_resumes_to_the_undisturbed_bytes(
    driver: Driver, case: Case, tmp_path: Path
) -> None:
    # Nothing committed is lost and nothing half-received is committed: resumed against a
    # healthy server, the failed run writes exactly what a run without the fault wrote.
    outcome = run_case(case, tmp_path, driver)
    before = read_transcript(outcome.transcript).messages
    with FaultServer() as server, OpenAICompatible(server.url, timeout=TIMEOUT) as backend:
        done = (len(before) - len(QUESTION)) // 2  # rounds the transcript already holds
        server.script.extend([ok(LOOKUP), ok(NONE)][done:])
        result = driver.loop(backend, Desk(), transcript=outcome.transcript).resume()
        assert [dict(m) for m in result.messages[:-1]] == server.last_messages()
    assert result.reason == "handoff"
    assert outcome.transcript.read_bytes() == _undisturbed(tmp_path / "undisturbed.jsonl")


def test_a_trickle_is_stopped_by_the_deadline_not_by_a_read() -> None:
    # Each byte comes well within the read timeout; only the whole answer overruns it (the
    # trickle cannot finish sooner on a loaded machine, only later). "still arriving" is the
    # deadline's message: a read that timed out would say "did not answer".
    assert len(completion_body()) * TRICKLE_GAP > 3 * GIVE_UP
    with FaultServer() as server, OpenAICompatible(server.url, timeout=GIVE_UP) as backend:
        server.script.append(trickle(TRICKLE_GAP))
        deadline = rf"did not finish its answer within the timeout of {GIVE_UP:g} s \(it was still arriving"
        with pytest.raises(BackendTimeout, match=deadline) as caught:
            backend.complete(QUESTION)
        assert caught.value.retryable
        server.release.set()
        assert backend.complete(QUESTION).text == NONE


def test_the_summary_has_a_row_per_kind_and_the_totals(tmp_path: Path) -> None:
    outcomes = [run_case(case, tmp_path) for case in CASES[:2]]
    table = summary(outcomes).splitlines()
    cells = [[cell.strip() for cell in row.split("|")[1:-1]] for row in table]
    assert cells[0] == [
        "kind",
        "runs",
        "injected",
        "retried",
        "recovered",
        "failed clearly",
        "transcript intact",
    ]
    assert [row[0] for row in cells[2:]] == [CASES[0].kind, CASES[1].kind, "total"]
    assert cells[-1][1:] == ["2", str(outcomes[0].injected + outcomes[1].injected), "4", "1", "1", "2"]
