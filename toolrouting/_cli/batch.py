"""``toolrouting batch``: a file of questions, each its own run and transcript, many in flight at once.

The runs are the ``_batch`` part's; here are the options, the tools each run gets, and the
progress bar on stderr (redrawn in place on a terminal, a line at a time in a log). The
counts go to stdout at the end. The runs are driven by the async loop over the async
backends, a task each on one event loop: a server gets ``--concurrency`` requests at once
from one thread, and Ctrl-C cancels every run in flight at the await it is in.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from .._backends import AsyncBackend
from .._batch import BatchProgress, arun_batch, read_questions
from .._limits import BATCH_PROGRESS_INTERVAL, DEFAULT_BATCH_CONCURRENCY
from .._loop import RunLimits
from .._provider import ToolProvider
from .arguments import Subparsers, UsageError, positive
from .exits import DONE, FAILED
from .http_backend import api_key, explained_refusal, redact
from .ranking import ranker_of
from .run import add_model_options, async_model_backend, demo_store, system_prompt
from .tools import add_tool_options, run_tools, uses_tools

__all__ = ["BAR_WIDTH", "ProgressBar", "add_batch"]

#: Cells of the progress bar: it and its counts fit an 80-column terminal.
BAR_WIDTH = 24


def add_batch(subparsers: Subparsers) -> None:
    """Register ``batch`` and its options."""
    parser = subparsers.add_parser(
        "batch",
        help="answer a file of questions, each its own routing run, many at once",
        description="Run every question of QUESTIONS (JSON Lines, one a line: "
        '{"id": "q1", "question": "..."} or {"id": "q1", "messages": [...]}) as its own routing run, '
        "--concurrency of them in flight. Each writes DIR/ID.jsonl as it goes and DIR/ID.result.json once "
        "it has ended. Run it again after a kill: finished questions are skipped, cut-short runs resume "
        "from their transcripts. A progress bar goes to stderr; the counts to stdout. Exit status 1 when "
        "a question failed (its result holds the error). docs/batch.md says how to drive a serving engine.",
    )
    parser.add_argument("questions", metavar="QUESTIONS.jsonl")
    parser.add_argument("--out", required=True, metavar="DIR", help="the folder of transcripts and results")
    parser.add_argument(
        "--concurrency",
        type=positive,
        default=DEFAULT_BATCH_CONCURRENCY,
        metavar="N",
        help="runs in flight at once; match the server's parallel slots (default: %(default)s)",
    )
    parser.add_argument(
        "--retry-failed",
        action="store_true",
        help="run the questions that failed before again, from the start",
    )
    add_model_options(parser)
    parser.add_argument("--json", action="store_true", help="print the final counts as one JSON object")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    add_tool_options(parser)
    parser.set_defaults(handler=_batch)


def _batch(args: argparse.Namespace) -> int:
    if args.confirm:
        raise UsageError("--confirm asks on the terminal before each call; a batch runs unattended")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise UsageError(f"--out {args.out}: not a folder")
    questions = read_questions(args.questions, system=system_prompt(args))
    ranker = ranker_of(args)
    bar = None if args.quiet else ProgressBar(sys.stderr, functools.partial(redact, args=args))
    with contextlib.ExitStack() as stack:
        tools: Callable[[], ToolProvider]
        if uses_tools(args):
            errlog = stack.enter_context(open(os.devnull, "w")) if args.quiet else sys.stderr
            shared = stack.enter_context(run_tools(args, errlog=errlog))
            tools = functools.partial(_same, shared)
        else:
            tools = functools.partial(demo_store, args.db)
            demo_store(args.db).close()  # a missing --db is a usage error now, not in every run
        stack.enter_context(explained_refusal(api_key(args)))
        progress = asyncio.run(
            _batched(
                async_model_backend(args),
                questions,
                args.out,
                tools=tools,
                concurrency=args.concurrency,
                retry_failed=args.retry_failed,
                cap=args.cap,
                limits=RunLimits(max_rounds=args.max_rounds),
                answer=args.answer,
                max_calls=args.max_calls,
                shortlist=args.shortlist,
                ranker=ranker,
                abstain=args.abstain,
                on_progress=bar,
            )
        )
    if bar is not None:
        bar.close(progress)
    if args.json:
        counts = dataclasses.asdict(progress)
        counts.update(
            runs_per_second=progress.runs_per_second, decisions_per_second=progress.decisions_per_second
        )
        print(json.dumps(counts))
    else:
        print(f"batch: {summary(progress)}")
    return FAILED if progress.failed else DONE


async def _batched(backend: AsyncBackend, *args: Any, **options: Any) -> BatchProgress:
    """The batch over ``backend``, closed on this event loop (where its connections live) as it ends."""
    try:
        return await arun_batch(*args, backend=backend, **options)
    finally:
        await backend.aclose()


def _same(tools: ToolProvider) -> ToolProvider:
    """The one provider every run shares: MCP servers and Python tools are started once, not per run."""
    return tools


def summary(progress: BatchProgress) -> str:
    """The counts and rates of a batch as one line."""
    return (
        f"{progress.done}/{progress.total} done, {progress.failed} failed, {progress.running} running "
        f"({progress.skipped} skipped, {progress.resumed} resumed, {progress.started} started) in "
        f"{progress.seconds:.1f} s, {progress.runs_per_second:.2f} runs/s, "
        f"{progress.decisions_per_second:.2f} decisions/s"
    )


class ProgressBar:
    """The batch's progress on ``stream``: a bar redrawn in place on a terminal, else a line each interval."""

    def __init__(self, stream: TextIO, clean: Callable[[str], str]) -> None:
        self.stream = stream
        self.clean = clean
        self.in_place = stream.isatty()
        self._shown = -BATCH_PROGRESS_INTERVAL

    def __call__(self, progress: BatchProgress) -> None:
        now = time.monotonic()
        if now - self._shown < BATCH_PROGRESS_INTERVAL:
            return
        self._shown = now
        self._draw(progress)

    def close(self, progress: BatchProgress) -> None:
        """Draw the final counts, and end the line a terminal was redrawing."""
        self._draw(progress)
        if self.in_place:
            print(file=self.stream, flush=True)

    def _draw(self, progress: BatchProgress) -> None:
        filled = BAR_WIDTH * progress.finished // progress.total if progress.total else BAR_WIDTH
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        line = self.clean(f"[{bar}] {summary(progress)}")
        if self.in_place:
            print(f"\r\x1b[2K{line}", end="", file=self.stream, flush=True)
        else:
            print(line, file=self.stream, flush=True)
