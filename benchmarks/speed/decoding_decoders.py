"""Forced tokens (the default) against the grammar sampler: the decision cases and the demo runs.

``decoders [--limit N] [--threads 2] [--model PATH.gguf] [--skip-demo] [--skip-cases]``: the two
decoders side by side on the same GGUF, each with its own context. Every decision case (the
loop's default ``typescript`` instructions, cap 512) decided by both in turn: valid replies,
balanced accuracy, cap hits, tokens against the reply's text tokenized whole (the tokenizer's
split), seconds. Then the twelve demo questions, each a ``RoutingLoop`` run over the demo
notes starting cold (a backend freshly loaded, as in a fresh process): tokens over the split,
and the time to the model's first own token, round 1 against rounds 2 and later.

A way of decoding.py (``python -m benchmarks.speed.decoding decoders``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.common.corpus import QUESTIONS, Case, load_cases, spread
from benchmarks.common.servers import Tokenizer
from benchmarks.speed.decoding_core import N_CTX, ROUTING_CAP, routed_request, timed, told
from toolrouting import (
    Completion,
    EmbeddedLlama,
    Message,
    RoutingLoop,
    Settings,
    default_model_path,
    parse_route,
    route_tool_names,
)
from toolrouting.demo import SYSTEM_PROMPT, MemoryStore

WAYS = ("forced", "grammar")


@dataclass
class Decision:
    seconds: float
    valid: bool
    truncated: bool
    tokens: int
    whole: int
    """Tokens of the reply's text as the tokenizer splits it whole."""
    first_choice: float | None = None
    round: int = 0


@dataclass
class Way:
    decisions: list[Decision] = field(default_factory=list)
    tool_cases: int = 0
    right_tool: int = 0
    none_cases: int = 0
    right_none: int = 0


class Timed(EmbeddedLlama):
    """An embedded backend that logs its routed replies while ``log`` is a list (its clones share
    it); with forced tokens each reply says when the model first chose a token of its own."""

    log: list[Decision] | None = None
    tokenizer: Tokenizer

    def complete(self, messages: Sequence[Message]) -> Completion:
        seconds, completion = timed(functools.partial(super().complete, messages))
        if self.log is not None and self.settings.json_schema is not None:
            raw = completion.raw if self.forced_tokens and completion.raw is not None else {}
            made = decision(self.tokenizer, completion, seconds, not completion.truncated)
            made.first_choice = raw.get("seconds_to_first_choice")
            self.log.append(made)
        return completion


def decision(tokenizer: Tokenizer, completion: Completion, seconds: float, valid: bool) -> Decision:
    return Decision(
        seconds=seconds,
        valid=valid,
        truncated=completion.truncated,
        tokens=completion.usage.completion_tokens,
        whole=tokenizer.count(completion.text),
    )


def decoder_cases(
    backends: dict[str, EmbeddedLlama], cases: Sequence[Case], tokenizer: Tokenizer
) -> dict[str, Way]:
    catalogues: dict[str, list[dict[str, Any]]] = {}
    ways = {way: Way() for way in backends}
    for number, case in enumerate(sorted(cases, key=lambda case: case.catalogue), start=1):
        tools, messages = told(case, catalogues)  # catalogue_prompt's default style, typescript
        names = route_tool_names(tools)
        shown = []
        for way, backend in backends.items():
            seconds, completion = timed(routed_request(backend, tools, messages))
            route = parse_route(completion.text, names)
            tally = ways[way]
            tally.decisions.append(decision(tokenizer, completion, seconds, route.ok))
            if case.expect == ["none"]:
                tally.none_cases += 1
                tally.right_none += route.ok and route.tool == "none"
            else:
                tally.tool_cases += 1
                tally.right_tool += route.ok and route.tool in case.expect
            shown.append(
                f"{way} {seconds:.2f}s {completion.usage.completion_tokens}t {route.tool or 'INVALID'}"
            )
        print(f"{number}/{len(cases)} {case.id}: {'  '.join(shown)}", file=sys.stderr, flush=True)
    return ways


def decoder_demo(make: Callable[[str], Timed], questions: Sequence[str]) -> dict[str, list[Decision]]:
    logs: dict[str, list[Decision]] = {way: [] for way in WAYS}
    for question in questions:
        messages: list[Message] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": question},
        ]
        for way in WAYS:
            # Each run starts cold, on a backend freshly loaded, as a run's first round does in a
            # fresh process: nothing of its prompt in the model's context. Its later rounds find
            # their prefix there.
            with make(way) as backend, MemoryStore.sample() as store:
                backend.log = []
                result = RoutingLoop(backend, store).run(messages)
                made_here, backend.log = backend.log, None
            for round_number, made in enumerate(made_here, start=1):
                made.round = round_number
                made.valid = True  # the loop parsed it, or repaired it: counted among the decisions
            logs[way] += made_here
            excess = [made.tokens - made.whole for made in made_here]
            print(
                f"demo {way} {question[:40]!r}: {result.reason}, excess {excess}", file=sys.stderr, flush=True
            )
    return logs


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else float("nan")


def cases_table(ways: dict[str, Way]) -> str:
    rows = [
        "| way | decisions | valid | cap hits | right tool | `none` | balanced accuracy "
        "| tokens, mean | over the tokenizer's split: replies, tokens | seconds per decision, median |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for way, t in ways.items():
        made = t.decisions
        tool, none = _percent(t.right_tool, t.tool_cases), _percent(t.right_none, t.none_cases)
        split = [d.tokens - d.whole for d in made if d.valid and not d.truncated]
        rows.append(
            f"| {way} | {len(made)} | {sum(d.valid for d in made)} | {sum(d.truncated for d in made)} "
            f"| {tool:.1f}% ({t.right_tool}/{t.tool_cases}) | {none:.1f}% ({t.right_none}/{t.none_cases}) "
            f"| {(tool + none) / 2:.1f}% | {statistics.mean(d.tokens for d in made):.1f} "
            f"| {sum(extra > 0 for extra in split)}/{len(split)}, +{sum(split)} "
            f"| {statistics.median(d.seconds for d in made):.2f} |"
        )
    return "\n".join(rows)


def demo_table(logs: dict[str, list[Decision]]) -> str:
    rows = [
        "| way | decisions | cap hits | over the tokenizer's split: max, mean | within split + 2 "
        "| seconds per decision, median | first own token, round 1 / rounds 2+ (median s) | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for way, made in logs.items():
        extra = [d.tokens - d.whole for d in made]
        first = [d.first_choice for d in made if d.round == 1 and d.first_choice is not None]
        later = [d.first_choice for d in made if d.round > 1 and d.first_choice is not None]
        one, rest = _median(first), _median(later)
        rows.append(
            f"| {way} | {len(made)} | {sum(d.truncated for d in made)} "
            f"| {max(extra)}, {statistics.mean(extra):.2f} "
            f"| {sum(e <= 2 for e in extra)}/{len(made)} | {statistics.median(d.seconds for d in made):.2f} "
            f"| {one:.2f} / {rest:.2f} | {rest / one:.2f}x |"
        )
    return "\n".join(rows)


def decoders(args: argparse.Namespace) -> None:
    settings = Settings(temperature=0.0, seed=0)
    common: dict[str, Any] = {"n_ctx": N_CTX, "n_threads": args.threads, "settings": settings, "seed": 0}
    tokenizer = Tokenizer(args.model or default_model_path())

    def make(way: str) -> Timed:
        backend = Timed(args.model, forced_tokens=way == "forced", **common)
        backend.tokenizer = tokenizer
        return backend

    started = time.perf_counter()
    print(
        f"{(args.model or default_model_path()).name}, greedy, seed 0, {args.threads} threads, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}",
        flush=True,
    )
    if not args.skip_cases:
        cases = spread(load_cases(), args.limit)
        with contextlib.ExitStack() as stack:
            backends: dict[str, EmbeddedLlama] = {way: stack.enter_context(make(way)) for way in WAYS}
            ways = decoder_cases(backends, cases, tokenizer)
        print(f"\nDecisions: {len(cases)} cases, routing cap {ROUTING_CAP}\n")
        print(cases_table(ways), flush=True)
    if not args.skip_demo:
        logs = decoder_demo(make, [question for question, _, _ in QUESTIONS])
        print(f"\nDemo questions: {len(QUESTIONS)} runs over the demo notes, no answer\n")
        print(demo_table(logs))
    print(f"\n{time.perf_counter() - started:.0f} s in all")
