"""Forced tokens evaluated, not sampled: routed decision wall time against unconstrained decoding.

Run: .venv/bin/python benchmarks/forced_tokens.py  [--demo 4] [--repeats 3] [--threads 2] [--model PATH.gguf]

The routed prompts are the first ``--demo`` cases over the demo notes catalogue (2 tools,
benchmarks/cases/own.jsonl) and every case over tool-eval-bench's 52-tool ``LARGE_TOOLSET``
(benchmarks/cases/tool_eval_bench.jsonl), each with ``catalogue_prompt(tools)`` as its system
message and the route schema under a 512-token cap. Each is decided three ways on the same
model, greedy (temperature 0, seed 0):

- ``grammar``: ``EmbeddedLlama(forced_tokens=False)``, llama.cpp's grammar sampler, token by token;
- ``forced``: ``EmbeddedLlama()`` as it ships, llguidance's forced tokens evaluated as one batch;
- ``free``: the same backend with no schema, asked for exactly as many tokens as the routed reply
  it is set against (end-of-generation tokens banned, so it writes all of them): unconstrained
  decoding of a reply of the same length. Decoding cost per token does not depend on which
  token it is, so this stands for "unconstrained generation of the same text".

Each way's first request is not timed: it puts the prompt in the model's context, where the
timed ones find it (as the loop's next round finds most of its conversation), so the time is
the reply's own and not the prompt's, which every way pays alike. Each time is the best of
``--repeats``, the ways interleaved, since other work on shared cores only ever adds to a run.
Prints one table: per catalogue and in all, the tokens written, the valid routes, the seconds,
the ratio of each routed way to unconstrained decoding of its own length, and the share of the
forced way's tokens that were forced.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import llama_cpp

from toolrouting import (
    Completion,
    EmbeddedLlama,
    Message,
    Settings,
    catalogue_prompt,
    parse_route,
    route_schema,
    route_tool_names,
    routed_backend,
    tools_from,
)

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "benchmarks" / "cases"
DEMO = "benchmarks/cases/catalogues/demo-notes.json"
LARGE = "benchmarks/cases/catalogues/teb-large.json"
ROUTING_CAP = 512
# Room for the 52-tool catalogue's prompt beside the conversation.
N_CTX = 8192


@dataclass(frozen=True)
class Case:
    id: str
    catalogue: str
    messages: list[Message]


@dataclass
class Tally:
    """Sums over a group of cases: best seconds per way, tokens, valid replies, forced tokens."""

    cases: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    valid: dict[str, int] = field(default_factory=dict)
    forced_tokens: int = 0

    def add(self, way: str, seconds: float, tokens: int = 0, valid: bool = False) -> None:
        self.seconds[way] = self.seconds.get(way, 0.0) + seconds
        self.tokens[way] = self.tokens.get(way, 0) + tokens
        self.valid[way] = self.valid.get(way, 0) + int(valid)

    def merge(self, other: Tally) -> None:
        self.cases += other.cases
        self.forced_tokens += other.forced_tokens
        for way, seconds in other.seconds.items():
            self.add(way, seconds, other.tokens[way])
            self.valid[way] += other.valid[way]


def load_cases(demo: int) -> list[Case]:
    cases: list[Case] = []
    for name, catalogue, limit in (("own.jsonl", DEMO, demo), ("tool_eval_bench.jsonl", LARGE, None)):
        rows = [
            json.loads(line)
            for line in (CASES / name).read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        chosen = [row for row in rows if row["catalogue"] == catalogue]
        cases += [Case(row["id"], catalogue, row["messages"]) for row in chosen[:limit]]
    return cases


def timed(request: Callable[[], Completion]) -> tuple[float, Completion]:
    started = time.perf_counter()
    completion = request()
    return time.perf_counter() - started, completion


def end_of_generation(backend: EmbeddedLlama) -> dict[int, float]:
    """A logit bias that bans every end-of-generation token of the model."""
    llama = backend._model.llama
    vocab = llama_cpp.llama_model_get_vocab(llama.model)
    return {t: float("-inf") for t in range(llama.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, t)}


def free_decoding(
    backend: EmbeddedLlama, messages: list[Message], tokens: int, ban: dict[int, float]
) -> Completion:
    """Unconstrained decoding of exactly ``tokens`` tokens, through llama-cpp-python."""
    response = backend._model.llama.create_chat_completion(
        messages=messages, max_tokens=tokens, temperature=0.0, seed=0, logit_bias=ban
    )
    written = response["usage"]["completion_tokens"]
    if written != tokens:
        sys.exit(f"unconstrained decoding wrote {written} tokens, not {tokens}")
    return Completion(text=response["choices"][0]["message"]["content"] or "")


def decide(
    tally: Tally, normal: EmbeddedLlama, forced: EmbeddedLlama, case: Case, repeats: int, **given: Any
) -> None:
    """One case each way: an untimed request (it fills the context), then the best of ``repeats``."""
    tools, messages, ban = given["tools"], given["messages"], given["ban"]
    schema, names = route_schema(tools), route_tool_names(tools)
    requests: dict[str, Callable[[], Completion]] = {}
    written: dict[str, int] = {}
    for way, backend in (("grammar", normal), ("forced", forced)):
        routed = routed_backend(backend, schema, ROUTING_CAP)
        requests[way] = functools.partial(routed.complete, messages)
        completion = requests[way]()
        tokens = written[way] = completion.usage.completion_tokens
        tally.add(way, 0.0, tokens, parse_route(completion.text, names).ok)
        if way == "forced" and completion.raw is not None:
            tally.forced_tokens += completion.raw["forced_tokens"]
        requests[f"free for {way}"] = functools.partial(free_decoding, normal, messages, tokens, ban)
    best = dict.fromkeys(requests, float("inf"))
    for _ in range(repeats):
        for way, request in requests.items():  # interleaved, so that a busy spell hits every way alike
            best[way] = min(best[way], timed(request)[0])
    for way, seconds in best.items():
        tally.add(way, seconds)
    shown = "  ".join(f"{way} {seconds:.3f}s" for way, seconds in best.items())
    print(
        f"  {case.id:<10} {written['grammar']:>3} / {written['forced']:>3} tokens  {shown}",
        flush=True,
    )


def run(
    normal: EmbeddedLlama, forced: EmbeddedLlama, cases: Sequence[Case], repeats: int
) -> dict[str, Tally]:
    ban = end_of_generation(normal)
    tallies: dict[str, Tally] = {DEMO: Tally(), LARGE: Tally()}
    catalogues: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        if case.catalogue not in catalogues:
            source = json.loads((ROOT / case.catalogue).read_text(encoding="utf-8"))
            catalogues[case.catalogue] = [dict(tool) for tool in tools_from(source)]
        tools = catalogues[case.catalogue]
        messages: list[Message] = [{"role": "system", "content": catalogue_prompt(tools)}, *case.messages]
        tally = tallies[case.catalogue]
        tally.cases += 1
        decide(tally, normal, forced, case, repeats, tools=tools, messages=messages, ban=ban)
    return tallies


def report(tallies: dict[str, Tally]) -> None:
    total = Tally()
    for tally in tallies.values():
        total.merge(tally)
    print()
    print("| catalogue | cases | way | tokens | valid | seconds | free decoding, same length | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    groups = (
        ("demo notes (2 tools)", tallies[DEMO]),
        ("teb-large (52 tools)", tallies[LARGE]),
        ("all", total),
    )
    for label, tally in groups:
        for way in ("grammar", "forced"):
            seconds, free = tally.seconds[way], tally.seconds[f"free for {way}"]
            print(
                f"| {label} | {tally.cases} | {way} | {tally.tokens[way]} | {tally.valid[way]}/{tally.cases} "
                f"| {seconds:.2f} | {free:.2f} | {seconds / free:.2f}x |"
            )
        written = tally.tokens["forced"]
        share = tally.forced_tokens / written if written else 0.0
        print(f"| {label} | | of which forced | {tally.forced_tokens} ({share:.0%}) | | | | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=int, default=4, help="cases over the demo catalogue (of 17)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", type=Path)
    args = parser.parse_args()
    settings = Settings(temperature=0.0, seed=0)
    common: dict[str, Any] = {"n_ctx": N_CTX, "n_threads": args.threads, "settings": settings, "seed": 0}
    with (
        EmbeddedLlama(args.model, forced_tokens=False, **common) as normal,
        EmbeddedLlama(args.model, forced_tokens=True, **common) as forced,
    ):
        print(
            f"{normal.model_path.name}, greedy, routing cap {ROUTING_CAP}, {args.threads} threads, "
            f"{os.cpu_count()} cores, best of {args.repeats}, Python {platform.python_version()}",
            flush=True,
        )
        tallies = run(normal, forced, load_cases(args.demo), args.repeats)
    report(tallies)


if __name__ == "__main__":
    main()
