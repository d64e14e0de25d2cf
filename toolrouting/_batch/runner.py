"""Many routing runs at once: each question of a batch is its own run, ``concurrency`` in flight.

The batch is an asyncio program: a semaphore bounds the runs in flight, and each run is
driven by ``jobs.drive``: on the event loop for an async backend, in a thread of its own for
a sync one. Either way an HTTP backend sends the runs' requests in parallel, which is what a
serving engine with continuous batching needs; the embedded model serves one at a time.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from .._backends import AsyncBackend, Backend
from .._errors import ToolRoutingError
from .._limits import DEFAULT_BATCH_CONCURRENCY, DEFAULT_RETRIES, DEFAULT_ROUTING_CAP
from .._loop import (
    AbstainPolicy,
    ActionChosen,
    AsyncRoutingLoop,
    Event,
    LoopOptions,
    Ranker,
    RepairRequested,
    RoutingLoop,
    RunLimits,
    RunResult,
)
from .._provider import AsyncToolProvider, ToolOutput, ToolProvider
from .folder import BatchFolder
from .jobs import RunJob, Tracing, drive, is_async_backend
from .questions import BatchQuestion, read_questions

__all__ = ["BatchProgress", "arun_batch", "run_batch"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class BatchProgress:
    """Where a batch stands: counts over all its questions, rates over this start's runs."""

    total: int
    done: int
    """Questions whose run ended (a handoff or a limit), before this start or in it."""
    failed: int
    """Questions whose run raised an error; their result holds it."""
    running: int
    skipped: int
    """Questions finished before this start, left as they were."""
    resumed: int
    """Runs of this start that went on from a transcript a kill had cut short."""
    started: int
    """Runs of this start that began afresh."""
    decisions: int
    """Routed replies judged in this start (accepted or sent back for repair)."""
    seconds: float

    @property
    def finished(self) -> int:
        return self.done + self.failed

    @property
    def runs_per_second(self) -> float:
        """Runs this start finished, per second."""
        return (self.finished - self.skipped) / self.seconds if self.seconds > 0 else 0.0

    @property
    def decisions_per_second(self) -> float:
        return self.decisions / self.seconds if self.seconds > 0 else 0.0


def run_batch(
    questions: str | os.PathLike[str] | Iterable[BatchQuestion],
    out: str | os.PathLike[str],
    *,
    backend: Backend | AsyncBackend,
    tools: Callable[[], ToolProvider | AsyncToolProvider],
    concurrency: int = DEFAULT_BATCH_CONCURRENCY,
    system: str | None = None,
    retry_failed: bool = False,
    cap: int = DEFAULT_ROUTING_CAP,
    limits: RunLimits | None = None,
    retries: int = DEFAULT_RETRIES,
    answer: bool = False,
    max_calls: int = 1,
    shortlist: int | None = None,
    ranker: Ranker | None = None,
    abstain: AbstainPolicy = "off",
    on_progress: Callable[[BatchProgress], object] | None = None,
    on_event: Callable[[str, Event], object] | None = None,
    trace: Tracing | None = None,
) -> BatchProgress:
    """Run every question to its end, ``concurrency`` at a time, and return the final counts.

    :func:`arun_batch` in an event loop of its own; see it for the arguments.
    """
    return asyncio.run(
        arun_batch(
            questions,
            out,
            backend=backend,
            tools=tools,
            concurrency=concurrency,
            system=system,
            retry_failed=retry_failed,
            cap=cap,
            limits=limits,
            retries=retries,
            answer=answer,
            max_calls=max_calls,
            shortlist=shortlist,
            ranker=ranker,
            abstain=abstain,
            on_progress=on_progress,
            on_event=on_event,
            trace=trace,
        )
    )


async def arun_batch(
    questions: str | os.PathLike[str] | Iterable[BatchQuestion],
    out: str | os.PathLike[str],
    *,
    backend: Backend | AsyncBackend,
    tools: Callable[[], ToolProvider | AsyncToolProvider],
    concurrency: int = DEFAULT_BATCH_CONCURRENCY,
    system: str | None = None,
    retry_failed: bool = False,
    cap: int = DEFAULT_ROUTING_CAP,
    limits: RunLimits | None = None,
    retries: int = DEFAULT_RETRIES,
    answer: bool = False,
    max_calls: int = 1,
    shortlist: int | None = None,
    ranker: Ranker | None = None,
    abstain: AbstainPolicy = "off",
    on_progress: Callable[[BatchProgress], object] | None = None,
    on_event: Callable[[str, Event], object] | None = None,
    trace: Tracing | None = None,
) -> BatchProgress:
    """Run every question of ``questions`` (a JSON Lines file, or :class:`BatchQuestion` values) into ``out``.

    Each question is one run of the routing loop over ``backend`` (:class:`AsyncRoutingLoop`
    on this event loop for an async backend, :class:`RoutingLoop` in a thread of its own for a
    sync one), with a provider from ``tools()`` of its own (called once a run, in the thread
    that drives the run, and closed after it if it has ``close()``), its transcript
    ``out/ID.jsonl``, and its result ``out/ID.result.json`` once it ends. Questions finished
    before are skipped; a run a kill cut short is resumed from its transcript; a failed one is
    run again from the start only with ``retry_failed=True``. ``cap``, ``limits``,
    ``retries``, ``answer``, ``max_calls``, ``shortlist``, ``ranker`` and ``abstain`` are every run's, as
    :class:`RoutingLoop` takes them.
    ``on_progress`` gets the counts each time a run starts or ends; ``on_event`` every run's
    events with its question's id, from the thread that drives the run. ``trace`` makes each
    run's tracer (a :class:`RunTracer` a run), entered around it.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an integer of at least 1, not {concurrency!r}")
    if not callable(tools):
        raise TypeError(
            "tools= takes a function that makes one run's tool provider, as lambda: MemoryStore.sample()"
        )
    asked = _questions(questions, system)
    folder = BatchFolder(out)
    options: LoopOptions = {"cap": cap, "limits": limits, "retries": retries, "answer": answer}
    if max_calls != 1:  # one call a decision is the loop's default: the options stay as they were
        options["max_calls"] = max_calls
    if shortlist is not None:  # every tool offered is the loop's default
        options["shortlist"] = shortlist
    if ranker is not None:  # BM25 on SQLite FTS5 is the loop's default
        options["ranker"] = ranker
    if abstain != "off":  # never abstaining is the loop's default
        options["abstain"] = abstain
    # A bad backend or option is refused before any run.
    if is_async_backend(backend):
        AsyncRoutingLoop(backend, _NO_TOOLS, **options)  # type: ignore[arg-type]
    else:
        RoutingLoop(backend, _NO_TOOLS, **options)  # type: ignore[arg-type]
    tally = _Tally(total=len(asked), began=time.monotonic())
    plans = []
    for question in asked:
        stage = folder.stage(question.id)
        if stage == "done" or (stage == "failed" and not retry_failed):
            tally.count(stage)
            tally.skipped += 1
        else:
            plans.append((question, stage == "torn"))
    report = _reporter(tally, on_progress)
    report()
    gate = asyncio.Semaphore(concurrency)

    async def one(question: BatchQuestion, resume: bool) -> None:
        try:
            job = RunJob(
                question=question,
                transcript=str(folder.transcript(question.id)),
                resume=resume,
                backend=backend,
                tools=tools,
                loop_options=options,
                on_event=tally.observer(question.id, on_event),
                trace=trace,
            )
            tally.running += 1
            tally.resumed += resume
            tally.started += not resume
            report()
            try:
                result = await drive(job)
            except ToolRoutingError as error:
                record = _failed(question, error, resume)
            else:
                record = _done(question, result, resume)
            await asyncio.to_thread(folder.write_result, question.id, record)
            tally.count(record["status"])
            tally.running -= 1
            report()
        finally:
            gate.release()

    try:
        async with asyncio.TaskGroup() as group:
            for question, resume in plans:
                await gate.acquire()
                group.create_task(one(question, resume))
    except BaseExceptionGroup as errors:
        # Only an error that is not a run's failure gets here (a bug, a full disk): the runs in
        # flight were stopped, and their questions resume on the next start.
        raise errors.exceptions[0] from None
    return tally.snapshot()


class _NoTools:
    """A provider offering nothing: what the batch checks its loop options against before any run."""

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return []

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput(f"no tool {name}", is_error=True)


_NO_TOOLS = _NoTools()


def _questions(
    questions: str | os.PathLike[str] | Iterable[BatchQuestion], system: str | None
) -> list[BatchQuestion]:
    if isinstance(questions, (str, os.PathLike)):
        return read_questions(questions, system=system)
    asked = list(questions)
    seen: set[str] = set()
    for question in asked:
        if not isinstance(question, BatchQuestion):
            raise TypeError(
                f"questions are a file's path or BatchQuestion values, not {type(question).__name__}"
            )
        if question.id in seen:
            raise ValueError(f"two questions have the id {question.id!r}; each names its own files")
        seen.add(question.id)
    return asked


def _done(question: BatchQuestion, result: RunResult, resumed: bool) -> dict[str, Any]:
    record = result.as_dict()
    del record["messages"]  # the transcript holds them
    return {
        "id": question.id,
        "status": "done",
        **record,
        "error": None,
        "resumed": resumed,
        "meta": question.meta,
    }


def _failed(question: BatchQuestion, error: ToolRoutingError, resumed: bool) -> dict[str, Any]:
    return {
        "id": question.id,
        "status": "failed",
        "error": f"{type(error).__name__}: {error}",
        "resumed": resumed,
        "meta": question.meta,
    }


@dataclasses.dataclass
class _Tally:
    """The counts a batch keeps as it goes; ``decisions`` is counted from the runs' threads."""

    total: int
    began: float
    done: int = 0
    failed: int = 0
    running: int = 0
    skipped: int = 0
    resumed: int = 0
    started: int = 0
    decisions: int = 0
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def count(self, status: str) -> None:
        if status == "failed":
            self.failed += 1
        else:
            self.done += 1

    def observer(self, id: str, on_event: Callable[[str, Event], object] | None) -> Callable[[Event], object]:
        # A decision of several calls gives an ActionChosen a call, all in its round: one decision.
        chosen_in: list[int] = []

        def observe(event: Event) -> None:
            judged = isinstance(event, RepairRequested) or (
                isinstance(event, ActionChosen) and chosen_in != [event.round]
            )
            if isinstance(event, ActionChosen):
                chosen_in[:] = [event.round]
            if judged:
                with self.lock:
                    self.decisions += 1
            if on_event is not None:
                on_event(id, event)

        return observe

    def snapshot(self) -> BatchProgress:
        with self.lock:
            decisions = self.decisions
        return BatchProgress(
            total=self.total,
            done=self.done,
            failed=self.failed,
            running=self.running,
            skipped=self.skipped,
            resumed=self.resumed,
            started=self.started,
            decisions=decisions,
            seconds=time.monotonic() - self.began,
        )


def _reporter(tally: _Tally, on_progress: Callable[[BatchProgress], object] | None) -> Callable[[], None]:
    def report() -> None:
        if on_progress is not None:
            on_progress(tally.snapshot())

    return report
