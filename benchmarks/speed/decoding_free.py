"""Each decoder against free decoding of its reply's length.

``free [--demo 4] [--repeats 3] [--threads 2] [--model PATH.gguf]``: the first ``--demo`` cases
over the demo notes catalogue and every case over tool-eval-bench's 52-tool ``LARGE_TOOLSET``,
decided by the grammar sampler (``EmbeddedLlama(forced_tokens=False)``) and by forced tokens
(``EmbeddedLlama()``), each set against free decoding on the same model of exactly as many
tokens as its reply (end-of-generation tokens banned): a pass of the model costs the same
whatever token it writes. Each way's first request is untimed (it puts the prompt in the
model's context); each time is the best of ``--repeats``, the ways interleaved. Also the share
of the forced way's tokens that were forced.

A way of decoding.py (``python -m benchmarks.speed.decoding free``).
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common.corpus import Case, load_cases
from benchmarks.common.llama import decoding_llama
from benchmarks.speed.decoding_core import N_CTX, ROUTING_CAP, routed_request, timed, told
from toolrouting import (
    Completion,
    EmbeddedLlama,
    Message,
    Settings,
    parse_route,
    route_tool_names,
)

DEMO = "benchmarks/cases/catalogues/demo-notes.json"
LARGE = "benchmarks/cases/catalogues/teb-large.json"


@dataclass
class FreeTally:
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

    def merge(self, other: FreeTally) -> None:
        self.cases += other.cases
        self.forced_tokens += other.forced_tokens
        for way, seconds in other.seconds.items():
            self.add(way, seconds, other.tokens[way])
            self.valid[way] += other.valid[way]


class FreeDecoder:
    """The same GGUF loaded on its own, decoding with no schema exactly ``tokens`` tokens
    (every end-of-generation token banned), through llama-cpp-python."""

    def __init__(self, model: Path, threads: int) -> None:
        import llama_cpp

        self.llama: Any = decoding_llama(
            model_path=str(model), n_ctx=N_CTX, n_threads=threads, seed=0, verbose=False
        )
        vocab = llama_cpp.llama_model_get_vocab(self.llama.model)
        eog = (t for t in range(self.llama.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, t))
        self.ban = {t: float("-inf") for t in eog}

    def complete(self, messages: list[Message], tokens: int) -> Completion:
        response = self.llama.create_chat_completion(
            messages=messages, max_tokens=tokens, temperature=0.0, seed=0, logit_bias=self.ban
        )
        written = response["usage"]["completion_tokens"]
        if written != tokens:
            sys.exit(f"unconstrained decoding wrote {written} tokens, not {tokens}")
        return Completion(text=response["choices"][0]["message"]["content"] or "")


def free_cases(demo: int) -> list[Case]:
    """The first ``demo`` cases over the demo notes catalogue, then every one over the 52 tools."""
    cases = load_cases()
    return [case for case in cases if case.catalogue == DEMO][:demo] + [
        c for c in cases if c.catalogue == LARGE
    ]


def free_case(
    tally: FreeTally,
    backends: dict[str, EmbeddedLlama],
    free: FreeDecoder,
    case: Case,
    repeats: int,
    catalogues: dict[str, list[dict[str, Any]]],
) -> None:
    """One case each way: an untimed request (it fills the context), then the best of ``repeats``."""
    tools, messages = told(case, catalogues)
    names = route_tool_names(tools)
    requests: dict[str, Callable[[], Completion]] = {}
    written: dict[str, int] = {}
    for way, backend in backends.items():
        requests[way] = routed_request(backend, tools, messages)
        completion = requests[way]()
        tokens = written[way] = completion.usage.completion_tokens
        tally.add(way, 0.0, tokens, parse_route(completion.text, names).ok)
        if way == "forced" and completion.raw is not None:
            tally.forced_tokens += completion.raw["forced_tokens"]
        requests[f"free for {way}"] = functools.partial(free.complete, messages, tokens)
    requests[f"free for {next(iter(backends))}"]()  # the free decoder's own untimed first request
    best = dict.fromkeys(requests, float("inf"))
    for _ in range(repeats):
        for way, request in requests.items():  # interleaved, so that a busy spell hits every way alike
            best[way] = min(best[way], timed(request)[0])
    for way, seconds in best.items():
        tally.add(way, seconds)
    shown = "  ".join(f"{way} {seconds:.3f}s" for way, seconds in best.items())
    print(f"  {case.id:<10} {written['grammar']:>3} / {written['forced']:>3} tokens  {shown}", flush=True)


def free_table(tallies: dict[str, FreeTally]) -> None:
    total = FreeTally()
    for tally in tallies.values():
        total.merge(tally)
    print("\n| catalogue | cases | way | tokens | valid | seconds | free decoding, same length | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for label, tally in (
        ("demo notes (2 tools)", tallies[DEMO]),
        ("teb-large (52 tools)", tallies[LARGE]),
        ("all", total),
    ):
        for way in ("grammar", "forced"):
            seconds, free = tally.seconds[way], tally.seconds[f"free for {way}"]
            print(
                f"| {label} | {tally.cases} | {way} | {tally.tokens[way]} | {tally.valid[way]}/{tally.cases} "
                f"| {seconds:.2f} | {free:.2f} | {seconds / free:.2f}x |"
            )
        share = tally.forced_tokens / tally.tokens["forced"] if tally.tokens["forced"] else 0.0
        print(f"| {label} | | of which forced | {tally.forced_tokens} ({share:.0%}) | | | | |")


def free_decoding(args: argparse.Namespace) -> None:
    settings = Settings(temperature=0.0, seed=0)
    common: dict[str, Any] = {"n_ctx": N_CTX, "n_threads": args.threads, "settings": settings, "seed": 0}
    with (
        EmbeddedLlama(args.model, forced_tokens=False, **common) as normal,
        EmbeddedLlama(args.model, forced_tokens=True, **common) as forced,
    ):
        free = FreeDecoder(normal.model_path, args.threads)
        print(
            f"{normal.model_path.name}, greedy, routing cap {ROUTING_CAP}, {args.threads} threads, "
            f"{os.cpu_count()} cores, best of {args.repeats}, Python {platform.python_version()}",
            flush=True,
        )
        tallies = {DEMO: FreeTally(), LARGE: FreeTally()}
        catalogues: dict[str, list[dict[str, Any]]] = {}
        for case in free_cases(args.demo):
            tallies[case.catalogue].cases += 1
            free_case(
                tallies[case.catalogue],
                {"grammar": normal, "forced": forced},
                free,
                case,
                args.repeats,
                catalogues,
            )
        free.llama.close()
    free_table(tallies)
