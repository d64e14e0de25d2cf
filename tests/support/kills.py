"""The forked driver processes the kill tests start, and the tally of what each kill left."""

from __future__ import annotations

import collections
import dataclasses
import multiprocessing
import multiprocessing.context
import signal
from pathlib import Path

import pytest

from support import kill_driver
from support.drivers import DriverName

#: A driver process that has not ended this long after it was killed or started is hung.
PROCESS_LIMIT = 60.0


@dataclasses.dataclass
class Tally:
    kills: int = 0
    nothing_committed: int = 0
    finished_first: int = 0
    torn_seen: int = 0
    torn_dropped: int = 0
    chains: int = 0
    processes: int = 0
    at: collections.Counter[int] = dataclasses.field(default_factory=collections.Counter)
    """Kills by the number of messages the transcript held when the kill landed."""


@pytest.fixture(scope="module")
def forkserver() -> multiprocessing.context.ForkServerContext:
    # Each run is a process forked from a server that has imported toolrouting once, so a
    # kill costs milliseconds, not an interpreter start; the process is as separate as any.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["toolrouting", "support.kill_driver"])
    return context


class Driver:
    """One driver process and the lines it has reported."""

    def __init__(
        self,
        context: multiprocessing.context.ForkServerContext,
        mode: str,
        path: Path,
        kind: DriverName,
        stop_at: int | None = None,
        max_calls: int = 1,
        shortlist: bool = False,
    ) -> None:
        self._reports, sending = context.Pipe(duplex=False)
        self.process = context.Process(
            target=kill_driver.child, args=(mode, str(path), sending, kind, stop_at, max_calls, shortlist)
        )
        self.process.start()
        sending.close()  # the child holds the only sending end: its exit ends the reports
        self.lines: list[str] = []

    def read(self, count: int) -> None:
        """Wait for ``count`` more reports, or for the end of them."""
        for _ in range(count):
            if not self._reports.poll(PROCESS_LIMIT):
                pytest.fail(f"the driver reported nothing for {PROCESS_LIMIT:g} s")
            try:
                self.lines.append(self._reports.recv())
            except EOFError:
                return

    def wait_for(self, report: str) -> None:
        """Wait until the driver reports ``report``."""
        while report not in self.lines:
            count = len(self.lines)
            self.read(1)
            if len(self.lines) == count:
                pytest.fail(f"the driver ended without reporting {report!r}: {self.lines}")

    def finish(self, tally: Tally) -> int | None:
        self.process.join(PROCESS_LIMIT)
        while self._reports.poll():
            try:
                self.lines.append(self._reports.recv())
            except EOFError:
                break
        self._reports.close()
        tally.processes += 1
        tally.torn_dropped += sum(line.startswith("torn ") for line in self.lines)
        errors = [line for line in self.lines if line.startswith("error ")]
        if errors or self.process.exitcode not in (0, -signal.SIGKILL):
            pytest.fail(f"the driver exited with {self.process.exitcode}: {errors}")
        return self.process.exitcode


#: The runs killed: one call a decision, decisions of up to two calls, and one call a decision
#: with ``shortlist=2`` over the run's two tools hidden among distractors (each round's offer a
#: line of the transcript of its own).
CALLS = pytest.mark.parametrize(
    ("max_calls", "shortlist"),
    [(1, False), (2, False), (1, True)],
    ids=["one-call", "two-calls", "shortlist"],
)
