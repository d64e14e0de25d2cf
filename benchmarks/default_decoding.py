"""The embedded model's two decoders side by side: forced tokens (the default) against the grammar sampler.

Run: nice -n 10 .venv/bin/python benchmarks/default_decoding.py  [--limit N] [--threads 2] [--model PATH.gguf]
                                                               [--skip-demo] [--skip-cases]

Two backends on the same GGUF in one process, greedy (temperature 0, seed 0), our bounded
grammar (``Settings()``'s defaults): ``EmbeddedLlama()`` (forced tokens, llguidance) and
``EmbeddedLlama(forced_tokens=False)`` (llama.cpp's grammar sampler). Each keeps its own
model context, so each finds its own previous prompt there, as a run does.

- **Decisions**: every case of the decision benchmark (benchmarks/cases/*.jsonl, as
  benchmarks/decisions.py reads them), with the loop's default instructions
  (``catalogue_prompt(tools, style="typescript")``) as the system message and a 512-token
  routing cap; each case is decided by both backends in turn (so a busy spell on shared
  cores hits both alike). Per way: valid replies, balanced accuracy (the mean of right tool
  where a tool is expected and ``none`` where none is), cap hits, completion tokens against
  the tokens of the reply's own text tokenized whole (the tokenizer's split), seconds per
  decision (median).
- **Demo questions**: the twelve questions of benchmarks/demo_questions.py, each a
  ``RoutingLoop`` run over the demo notes (its default cap and limits, no answer). Per
  way: decisions, the worst and mean excess of written tokens over the tokenizer's split of
  the same text, and the time from the request to the model's first own token, round 1
  against rounds 2 and later. Each run starts with nothing in the model's context (as in a
  fresh process); its later rounds find the prefix they share with the round before them
  there and evaluate only what follows it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from decisions import ROOT, ROUTING_CAP, Case, load_cases, spread
from demo_questions import QUESTIONS

from toolrouting import (
    Completion,
    EmbeddedLlama,
    Message,
    RoutingLoop,
    Settings,
    catalogue_prompt,
    parse_route,
    route_schema,
    route_tool_names,
    routed_backend,
    tools_from,
)
from toolrouting.demo import SYSTEM_PROMPT, MemoryStore

WAYS = ("forced", "grammar")
# Room for the 52-tool catalogue's prompt beside a conversation.
N_CTX = 8192


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
    """An embedded backend that logs its routed replies while ``log`` is a list (its clones share it).

    With forced tokens each reply says when the model first chose a token of its own.
    """

    log: list[Decision] | None = None

    def complete(self, messages: Sequence[Message]) -> Completion:
        started = time.perf_counter()
        completion = super().complete(messages)
        if self.log is not None and self.settings.json_schema is not None:
            raw = completion.raw if self.forced_tokens and completion.raw is not None else {}
            first = raw.get("seconds_to_first_choice")
            made = decision(self, completion, time.perf_counter() - started, not completion.truncated, first)
            self.log.append(made)
        return completion


def whole_tokens(backend: EmbeddedLlama, text: str) -> int:
    llama = backend._model.llama
    return len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))


def decision(
    backend: EmbeddedLlama, completion: Completion, seconds: float, valid: bool, first: float | None = None
) -> Decision:
    return Decision(
        seconds=seconds,
        valid=valid,
        truncated=completion.truncated,
        tokens=completion.usage.completion_tokens,
        whole=whole_tokens(backend, completion.text),
        first_choice=first,
    )


def run_cases(backends: dict[str, EmbeddedLlama], cases: Sequence[Case]) -> dict[str, Way]:
    catalogues: dict[str, list[dict[str, Any]]] = {}
    ways = {way: Way() for way in backends}
    for number, case in enumerate(sorted(cases, key=lambda case: case.catalogue), start=1):
        if case.catalogue not in catalogues:
            source = json.loads((ROOT / case.catalogue).read_text(encoding="utf-8"))
            catalogues[case.catalogue] = [dict(tool) for tool in tools_from(source)]
        tools = catalogues[case.catalogue]
        names = route_tool_names(tools)
        messages: list[Message] = [
            {"role": "system", "content": catalogue_prompt(tools, style="typescript")},
            *case.messages,
        ]
        shown = []
        for way, backend in backends.items():
            routed = routed_backend(backend, route_schema(tools), ROUTING_CAP)
            started = time.perf_counter()
            completion = routed.complete(messages)
            seconds = time.perf_counter() - started
            route = parse_route(completion.text, names)
            tally = ways[way]
            tally.decisions.append(decision(backend, completion, seconds, route.ok))
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


def run_demo(backends: dict[str, Timed], questions: Sequence[str]) -> dict[str, list[Decision]]:
    logs: dict[str, list[Decision]] = {way: [] for way in backends}
    for question in questions:
        messages: list[Message] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": question},
        ]
        for way, backend in backends.items():
            backend.log = []
            # Each run starts cold, as a run's first round does in a fresh process: nothing of its
            # prompt in the model's context. Its later rounds find their prefix there.
            backend._model.llama.reset()
            with MemoryStore.sample() as store:
                result = RoutingLoop(backend, store).run(messages)
            for round_number, made in enumerate(backend.log, start=1):
                made.round = round_number
                made.valid = True  # the loop parsed it, or repaired it: counted among the decisions
            made_here, backend.log = backend.log, None
            logs[way] += made_here
            excess = [made.tokens - made.whole for made in made_here]
            print(
                f"demo {way} {question[:40]!r}: {result.reason}, excess {excess}", file=sys.stderr, flush=True
            )
    return logs


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else float("nan")


def cases_table(ways: dict[str, Way]) -> str:
    rows = [
        "| way | decisions | valid | cap hits | right tool | `none` | balanced accuracy "
        "| tokens, mean | over the tokenizer's split: replies, tokens | seconds per decision, median |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for way, t in ways.items():
        made = t.decisions
        tool, none = percent(t.right_tool, t.tool_cases), percent(t.right_none, t.none_cases)
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
        one, rest = median(first), median(later)
        rows.append(
            f"| {way} | {len(made)} | {sum(d.truncated for d in made)} "
            f"| {max(extra)}, {statistics.mean(extra):.2f} "
            f"| {sum(e <= 2 for e in extra)}/{len(made)} | {statistics.median(d.seconds for d in made):.2f} "
            f"| {one:.2f} / {rest:.2f} | {rest / one:.2f}x |"
        )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--limit", type=int, help="this many decision cases, spread evenly over the set")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", type=Path)
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--skip-cases", action="store_true")
    args = parser.parse_args(argv)
    settings = Settings(temperature=0.0, seed=0)
    common: dict[str, Any] = {"n_ctx": N_CTX, "n_threads": args.threads, "settings": settings, "seed": 0}
    started = time.perf_counter()
    backends = {way: Timed(args.model, forced_tokens=way == "forced", **common) for way in WAYS}
    try:
        model = backends["forced"].model_path.name
        print(
            f"{model}, greedy, seed 0, {args.threads} threads, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}",
            flush=True,
        )
        if not args.skip_cases:
            cases = spread(load_cases(), args.limit)
            ways = run_cases(dict(backends), cases)
            print(f"\nDecisions: {len(cases)} cases, routing cap {ROUTING_CAP}\n")
            print(cases_table(ways), flush=True)
        if not args.skip_demo:
            logs = run_demo(backends, [question for question, _, _ in QUESTIONS])
            print(f"\nDemo questions: {len(QUESTIONS)} runs over the demo notes, no answer\n")
            print(demo_table(logs))
    finally:
        for backend in backends.values():
            backend.close()
    print(f"\n{time.perf_counter() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
