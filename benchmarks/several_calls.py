"""Several calls at once against one call a round: the same work, its tokens and seconds.

Run: OMP_WAIT_POLICY=passive .venv/bin/python benchmarks/several_calls.py [--model PATH.gguf ...]
                                                 [--threads 2] [--max-rounds 5] [--max-calls 3]

Each case of benchmarks/cases/parallel/ (a question that needs two to four calls) is run by
``RoutingLoop`` twice, with no answer (``answer=False``) and the tools scripted: every call
returns a fixed short text (the tool and its arguments, then ``done``). ``one a round`` is the
loop at ``max_calls=1``: a decision of one call a round. ``at once`` is the loop at
``max_calls=3``, whose first decision may make them all. Either run stops at ``none``, once
as many calls are made as the case needs, or at ``max_rounds``; so a model that makes every
call in one decision costs that decision alone, and one that makes one call a decision costs
the same rounds either way. Every routed request's prompt and completion tokens are summed
(as the backend reports them: the whole prompt each request, though the embedded model
evaluates only past the prefix it holds), and the run timed, after an untimed run of the first
case each way (the model's first requests). ``first decision`` is the at-once run's first
decision alone: what one decision at ``max_calls=3`` costs before the loop goes on.

Greedy (temperature 0, seed 0), forced tokens, our bounded grammar, the ``typescript`` prompt
the loop sends. Prints, per model, one row a case and the sums, with at once over one a round
as ratios; several ``--model`` are run one after another, in one run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus import ParallelCase, calls_right, load_catalogue, load_parallel_cases

from toolrouting import (
    ActionChosen,
    EmbeddedLlama,
    LimitReached,
    ReplyReceived,
    RoutingLoop,
    RunFinished,
    Settings,
    ToolOutput,
    ToolReturned,
    default_model_path,
)

# Room for a catalogue, the conversation and five rounds of calls and results.
N_CTX = 8192


class Scripted:
    """A catalogue whose every call returns a fixed short text: the call, then ``done``."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.tools = tools

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return self.tools

    def call(self, tool: str, arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput(f"{tool} {json.dumps(arguments, ensure_ascii=False)}: done.")


@dataclass
class Run:
    """One case run one way: the requests' tokens (each), the calls made, the seconds."""

    prompt: list[int] = field(default_factory=list)
    completion: list[int] = field(default_factory=list)
    calls: list[tuple[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    handed_off: bool = False


def run_case(backend: EmbeddedLlama, case: ParallelCase, max_calls: int, max_rounds: int) -> Run:
    """The loop on ``case`` until ``none``, the calls it needs, or ``max_rounds``."""
    tools = load_catalogue(case.catalogue)
    loop = RoutingLoop(backend, Scripted(tools), max_calls=max_calls, max_rounds=max_rounds, answer=False)
    run = Run()
    made = 0
    started = time.perf_counter()
    events = loop.iter_run(case.messages)
    try:
        for event in events:
            if isinstance(event, ReplyReceived) and event.routed:
                run.prompt.append(event.usage.prompt_tokens)
                run.completion.append(event.usage.completion_tokens)
            elif isinstance(event, ActionChosen):
                if event.tool == "none":
                    run.handed_off = True
                else:
                    run.calls.append((event.tool, event.arguments))
            elif isinstance(event, ToolReturned | LimitReached):
                made += 1
                # A decision's calls all return before the next request: stop at a round's end.
                if made >= len(case.calls) and made == len(run.calls):
                    break
            elif isinstance(event, RunFinished):
                break
    finally:
        events.close()  # type: ignore[attr-defined]  # a generator
    run.seconds = time.perf_counter() - started
    return run


def _ratio(part: float, whole: float) -> str:
    return f"{part / whole:.2f}" if whole else "-"


def _pair(one: float, once: float, digits: int) -> str:
    """One a round's figure, at once's, and at once's over one a round."""
    return f"{one:.{digits}f} / {once:.{digits}f} ({_ratio(once, one)})"


def _total(runs: Sequence[Run], what: str) -> float:
    return sum(run.seconds if what == "seconds" else sum(getattr(run, what)) for run in runs)


def _row(label: str, needed: int, one: Sequence[Run], once: Sequence[Run], right: tuple[int, int]) -> str:
    first = [Run(prompt=run.prompt[:1], completion=run.completion[:1]) for run in once]
    cells = [label, str(needed)]
    for runs in (one, once):
        cells += [str(sum(len(run.prompt) for run in runs)), str(sum(len(run.calls) for run in runs))]
    for what in ("prompt", "completion"):
        cells += [
            _pair(_total(one, what), _total(once, what), 0),
            _ratio(_total(first, what), _total(one, what)),
        ]
    cells += [_pair(_total(one, "seconds"), _total(once, "seconds"), 1), f"{right[0]} / {right[1]}"]
    return "| " + " | ".join(cells) + " |"


def measure(model: Path | None, threads: int | None, max_calls: int, max_rounds: int) -> str:
    """One model's table: a row a case, then the sums."""
    cases = sorted(load_parallel_cases(), key=lambda case: case.catalogue)
    settings = Settings(temperature=0.0, seed=0)
    ones: list[Run] = []
    onces: list[Run] = []
    rights = [0, 0]
    lines = []
    with EmbeddedLlama(model, n_ctx=N_CTX, n_threads=threads, settings=settings, seed=0) as backend:
        name = backend.model_path.name
        for calls in (1, max_calls):  # untimed: the model's first requests, and each route's compile
            run_case(backend, cases[0], calls, max_rounds)
        for case in cases:
            one = run_case(backend, case, 1, max_rounds)
            once = run_case(backend, case, max_calls, max_rounds)
            ones.append(one)
            onces.append(once)
            right = (int(calls_right(case.calls, one.calls)), int(calls_right(case.calls, once.calls)))
            rights = [rights[0] + right[0], rights[1] + right[1]]
            lines.append(_row(case.id, len(case.calls), [one], [once], right))
            shown = f"{[t for t, _ in one.calls]} / {[t for t, _ in once.calls]}"
            print(f"{name} {case.id}: {shown}", file=sys.stderr, flush=True)
    needed = sum(len(case.calls) for case in cases)
    lines.append(_row(f"**all {len(cases)}**", needed, ones, onces, (rights[0], rights[1])))
    head = [
        "case", "calls needed", "requests, one a round", "calls made", "requests, at once", "calls made",
        "prompt tokens, one a round / at once (ratio)", "first decision / one a round",
        "completion tokens, one a round / at once (ratio)", "first decision / one a round",
        "seconds, one a round / at once (ratio)", "all calls right, one a round / at once",
    ]  # fmt: skip
    table = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1), *lines]
    return f"{name}, max_calls {max_calls} against 1, max_rounds {max_rounds}\n\n" + "\n".join(table)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", type=Path, action="append", help="a GGUF file; give several to compare")
    parser.add_argument("--threads", type=int)
    parser.add_argument("--max-calls", type=int, default=3, help="the calls a decision may make at once")
    parser.add_argument("--max-rounds", type=int, default=5, help="the rounds a run may take either way")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    for model in args.model or [default_model_path()]:
        print(measure(model, args.threads, args.max_calls, args.max_rounds) + "\n", flush=True)
    print(f"{time.perf_counter() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
