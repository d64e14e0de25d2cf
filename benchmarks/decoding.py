"""What a routed decision costs to decode: tokens and seconds, four ways of measuring it.

Run: OMP_WAIT_POLICY=passive .venv/bin/python benchmarks/decoding.py WAY [options]

- ``unconstrained [--decoding forced|grammar]``: on the embedded default model, each of 8 fixed
  prompts asked twice with the same conversation: through ``routed_backend`` (the route schema,
  cap 512) and through the backend itself (no schema, its own budget of 1024 tokens). The
  median and worst case of each, and the share of replies ``parse_route`` accepts. The
  backend decodes a schema with forced tokens (its default) or llama.cpp's grammar sampler.
- ``grammars [--limit 12] [--threads 2] [--backends embedded,llama_cpp.server,llama-server]``:
  the decision cases, each routed once per backend and grammar mode: ``server``
  (``Settings(grammar="server")``, the schema for the server's own converter), ``ours`` (our
  compact bounded grammar, the default) and ``ours, spaced`` (a space after ``:`` and ``,``),
  against the same action as compact JSON in the same tokenizer (the target: at most that plus
  2). The embedded backend samples under llama.cpp's grammar sampler, as llama-server does;
  llama-server is the binary scripts/build-llama-server.sh caches (left out with a line saying
  why when missing). A reply showing the server ignored the schema (``SchemaIgnoredError``) is
  counted apart. Each catalogue's grammars are compiled first and each case's prompt processed
  once untimed, so the seconds are decoding; compile.py times the compiling.
- ``free [--demo 4] [--repeats 3] [--threads 2] [--model PATH.gguf]``: the first ``--demo`` cases
  over the demo notes catalogue and every case over tool-eval-bench's 52-tool ``LARGE_TOOLSET``,
  decided by the grammar sampler (``EmbeddedLlama(forced_tokens=False)``) and by forced tokens
  (``EmbeddedLlama()``), each set against free decoding on the same model of exactly as many
  tokens as its reply (end-of-generation tokens banned): a pass of the model costs the same
  whatever token it writes. Each way's first request is untimed (it puts the prompt in the
  model's context); each time is the best of ``--repeats``, the ways interleaved. Also the share
  of the forced way's tokens that were forced.
- ``decoders [--limit N] [--threads 2] [--model PATH.gguf] [--skip-demo] [--skip-cases]``: the two
  decoders side by side on the same GGUF, each with its own context. Every decision case (the
  loop's default ``typescript`` instructions, cap 512) decided by both in turn: valid replies,
  balanced accuracy, cap hits, tokens against the reply's text tokenized whole (the tokenizer's
  split), seconds. Then the twelve demo questions, each a ``RoutingLoop`` run over the demo
  notes starting cold (a backend freshly loaded, as in a fresh process): tokens over the split,
  and the time to the model's first own token, round 1 against rounds 2 and later.

Greedy (temperature 0, seed 0) throughout; the decision cases are decisions.py's
(benchmarks/cases/*.jsonl), with ``catalogue_prompt(tools)`` as the system message.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus import MEMORY_TOOLS, QUESTIONS, Case, load_cases, load_catalogue, spread
from servers import Tokenizer, llama_server_binary, local_server
from ways import run_way

from toolrouting import (
    Backend,
    Completion,
    EmbeddedLlama,
    Message,
    OpenAICompatible,
    RoutingLoop,
    SchemaIgnoredError,
    Settings,
    catalogue_prompt,
    default_model_path,
    parse_route,
    route_schema,
    route_tool_names,
    routed_backend,
    routing_cap,
)
from toolrouting.demo import SYSTEM_PROMPT, MemoryStore

ROUTING_CAP = 512
# Room for the 52-tool catalogue's prompt beside a conversation.
N_CTX = 8192


def told(
    case: Case, catalogues: dict[str, list[dict[str, Any]]]
) -> tuple[list[dict[str, Any]], list[Message]]:
    """A case's catalogue, and its conversation after the catalogue rendered as the system message."""
    if case.catalogue not in catalogues:
        catalogues[case.catalogue] = load_catalogue(case.catalogue)
    tools = catalogues[case.catalogue]
    return tools, [{"role": "system", "content": catalogue_prompt(tools)}, *case.messages]


def timed(request: Callable[[], Completion]) -> tuple[float, Completion]:
    started = time.perf_counter()
    completion = request()
    return time.perf_counter() - started, completion


# --- unconstrained: routed against the backend's own budget ---

OWN_BUDGET = 1024


#: The catalogue of the prompts: a search and a read of memories, unbounded.
NOTES_CATALOGUE = MEMORY_TOOLS
PROMPTS = [
    "What did I write about the latch on the storage-room door?",
    "Open memories M1 and M3.",
    "Find anything about the blue notebook.",
    "Read memory M7, please.",
    "Do I have notes on the garden irrigation schedule?",
    "Thanks, that is all I needed.",
    "Summarise what you know so far.",
    "Search my memories for 'quarterly report' and then read the first result.",
]

Row = tuple[int, float, bool, bool, str]


def conversation(prompt: str) -> list[Message]:
    lines = [
        "You choose the next action for the user's request. Answer with one JSON object and nothing else:",
        '{"tool": NAME, "arguments": {...}} to call a tool, or {"tool": "none"} when no tool is needed.',
        "Tools:",
    ]
    for tool in NOTES_CATALOGUE:
        function = tool["function"]
        lines.append(
            f"- {function['name']}: {function['description']} Arguments: {json.dumps(function['parameters'])}"
        )
    return [{"role": "system", "content": "\n".join(lines)}, {"role": "user", "content": prompt}]


def prompt_rows(backend: Backend, names: Sequence[str]) -> list[Row]:
    """Per prompt: tokens, seconds, accepted by parse_route, truncated, the action or the reply's start."""
    rows = []
    for prompt in PROMPTS:
        seconds, completion = timed(functools.partial(backend.complete, conversation(prompt)))
        route = parse_route(completion.text, names)
        shown = (
            route.tool if route.ok and route.tool else json.dumps(completion.text[:36]).replace("|", "\\|")
        )
        rows.append((completion.usage.completion_tokens, seconds, route.ok, completion.truncated, shown))
    return rows


def row_summary(rows: list[Row]) -> list[str]:
    tokens = [row[0] for row in rows]
    seconds = [row[1] for row in rows]
    return [
        f"{statistics.median(tokens):g}",
        f"{max(tokens)}",
        f"{statistics.median(seconds):.2f}",
        f"{max(seconds):.2f}",
        f"{sum(row[2] for row in rows)}/{len(rows)}",
        f"{sum(row[3] for row in rows)}/{len(rows)}",
    ]


def unconstrained(args: argparse.Namespace) -> None:
    names = route_tool_names(NOTES_CATALOGUE)
    forced = args.decoding == "forced"
    with EmbeddedLlama(settings=Settings(max_tokens=OWN_BUDGET), forced_tokens=forced) as backend:
        routed = routed_backend(backend, route_schema(NOTES_CATALOGUE), routing_cap(backend, ROUTING_CAP))
        routed.complete(conversation("warm-up"))  # loads pages and compiles the grammar outside the timings
        routed_rows = prompt_rows(routed, names)
        free_rows = prompt_rows(backend, names)
        model = backend.model_path.name
    labels = [
        "completion tokens, median",
        "completion tokens, worst",
        "seconds per decision, median",
        "seconds per decision, worst",
        "replies parse_route accepts",
        "replies stopped at the cap",
    ]
    decoder = "forced tokens" if forced else "grammar sampler"
    print(
        f"{model}, {decoder}, {len(PROMPTS)} prompts, catalogue {', '.join(names)}, {os.cpu_count()} cores\n"
    )
    print(f"| | routed (schema, cap {ROUTING_CAP}) | unconstrained (no schema, budget {OWN_BUDGET}) |")
    print("|---|---:|---:|")
    for label, routed_cell, free_cell in zip(
        labels, row_summary(routed_rows), row_summary(free_rows), strict=True
    ):
        print(f"| {label} | {routed_cell} | {free_cell} |")
    print("\n| prompt | routed: tokens, action | unconstrained: tokens, reply begins |")
    print("|---|---|---|")
    for prompt, routed_row, free_row in zip(PROMPTS, routed_rows, free_rows, strict=True):
        print(f"| {prompt[:48]} | {routed_row[0]}, {routed_row[4]} | {free_row[0]}, {free_row[4]} |")


# --- grammars: the server's grammar against ours, on each backend ---

MODES: dict[str, dict[str, Any]] = {
    "server": {"grammar": "server"},
    "ours": {"grammar": "ours"},
    "ours, spaced": {"grammar": "ours", "spaced": True},
}
BACKENDS = ("embedded", "llama_cpp.server", "llama-server")


@dataclass
class ModeTally:
    tokens: list[int] = field(default_factory=list)
    compact: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    invalid: int = 0
    cap_hits: int = 0
    ignored: int = 0


@contextlib.contextmanager
def backend_named(name: str, settings: Settings, threads: int) -> Iterator[Any]:
    if name == "embedded":
        # llama.cpp's grammar sampler, token by token, as llama-server samples under a grammar.
        with EmbeddedLlama(
            n_ctx=4096, n_threads=threads, settings=settings, seed=0, forced_tokens=False
        ) as embedded:
            yield embedded
        return
    if name == "llama-server" and not llama_server_binary().is_file():
        print(f"llama-server: no binary at {llama_server_binary()}; left out", file=sys.stderr)
        yield None
        return
    dialect = "llama.cpp" if name == "llama-server" else "llama-cpp-python"
    with (
        local_server(
            "llama-server" if name == "llama-server" else "llama_cpp.server",
            default_model_path(),
            threads,
            4096,
        ) as url,
        OpenAICompatible(url, dialect=dialect, settings=settings, timeout=600) as http,
    ):
        yield http


def mode_tallies(
    backend: Any, cases: Sequence[Case], catalogues: dict[str, list[dict[str, Any]]], tokenizer: Tokenizer
) -> dict[str, ModeTally]:
    tallies = {mode: ModeTally() for mode in MODES}
    for case in cases:
        tools, messages = told(case, catalogues)
        names = route_tool_names(tools)
        # The prompt once, untimed: every mode then finds it in the prefix cache alike, so the
        # seconds are the decision's, not the first mode's prompt processing.
        backend.clone(settings=backend.settings.clone(max_tokens=1)).complete(messages)
        for mode, changes in MODES.items():
            routed = routed_backend(
                backend.clone(settings=backend.settings.clone(**changes)), route_schema(tools), ROUTING_CAP
            )
            tally = tallies[mode]
            try:
                seconds, completion = timed(functools.partial(routed.complete, messages))
            except SchemaIgnoredError as error:  # llama-server left some route schemas unconstrained
                tally.ignored += 1
                print(f"{mode} {case.id}: {error}", file=sys.stderr)
                continue
            tally.seconds.append(seconds)
            tally.cap_hits += completion.truncated
            route = parse_route(completion.text, names)
            if not route.ok:
                tally.invalid += 1
                continue
            action: dict[str, Any] = {"tool": route.tool}
            if route.arguments is not None:
                action["arguments"] = route.arguments
            tally.tokens.append(completion.usage.completion_tokens)
            tally.compact.append(
                tokenizer.count(json.dumps(action, ensure_ascii=False, separators=(",", ":")))
            )
            print(
                f"{mode} {case.id}: {completion.usage.completion_tokens} {completion.text!r}", file=sys.stderr
            )
    return tallies


def grammars(args: argparse.Namespace) -> None:
    cases = spread(load_cases(), args.limit)
    catalogues: dict[str, list[dict[str, Any]]] = {}
    tokenizer = Tokenizer(default_model_path())
    settings = Settings(temperature=0.0, seed=0)
    print(
        f"{default_model_path().name}, {len(cases)} cases, greedy, seed 0, routing cap {ROUTING_CAP}, "
        f"{args.threads} threads\n"
    )
    print(
        "| backend | grammar | completion tokens, mean | compact JSON tokens, mean | tokens / compact "
        "| tokens − compact, mean (max) | seconds per decision, median | seconds / server's "
        "| invalid | cap hits | schema ignored |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in [b.strip() for b in args.backends.split(",") if b.strip()]:
        with backend_named(name, settings, args.threads) as backend:
            if backend is None:
                continue
            # One token per catalogue and mode first, so the seconds are decoding, not compiling.
            for case in cases:
                told(case, catalogues)
            for tools in catalogues.values():
                for changes in MODES.values():
                    clone = backend.clone(settings=backend.settings.clone(**changes))
                    with contextlib.suppress(SchemaIgnoredError):
                        routed_backend(clone, route_schema(tools), 1).complete(
                            [{"role": "user", "content": "Hi."}]
                        )
            tallies = mode_tallies(backend, cases, catalogues, tokenizer)
        server_seconds = statistics.median(tallies["server"].seconds)
        for mode, t in tallies.items():
            extra = [a - b for a, b in zip(t.tokens, t.compact, strict=True)]
            seconds = statistics.median(t.seconds)
            print(
                f"| {name} | {mode} | {statistics.mean(t.tokens):.1f} | {statistics.mean(t.compact):.1f} "
                f"| {sum(t.tokens) / sum(t.compact):.2f} | {statistics.mean(extra):+.1f} ({max(extra):+d}) "
                f"| {seconds:.2f} | {seconds / server_seconds:.2f} | {t.invalid} | {t.cap_hits} "
                f"| {t.ignored} |",
                flush=True,
            )


# --- free: each decoder against free decoding of its reply's length ---

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

        self.llama: Any = llama_cpp.Llama(
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
    schema, names = route_schema(tools), route_tool_names(tools)
    requests: dict[str, Callable[[], Completion]] = {}
    written: dict[str, int] = {}
    for way, backend in backends.items():
        requests[way] = functools.partial(routed_backend(backend, schema, ROUTING_CAP).complete, messages)
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


# --- decoders: forced tokens (the default) against the grammar sampler ---

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
            routed = routed_backend(backend, route_schema(tools), ROUTING_CAP)
            seconds, completion = timed(functools.partial(routed.complete, messages))
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ways = parser.add_subparsers(dest="way", required=True, metavar="WAY")
    way = ways.add_parser("unconstrained", help="routed against no schema and the backend's own budget")
    way.add_argument("--decoding", choices=("forced", "grammar"), default="forced")
    way.set_defaults(run=unconstrained)
    way = ways.add_parser("grammars", help="the server's grammar against ours, on each backend")
    way.add_argument("--limit", type=int, default=12)
    way.add_argument("--threads", type=int, default=2)
    way.add_argument("--backends", default=",".join(BACKENDS))
    way.set_defaults(run=grammars)
    way = ways.add_parser("free", help="each decoder against free decoding of its reply's length")
    way.add_argument("--demo", type=int, default=4, help="cases over the demo catalogue (of 17)")
    way.add_argument("--repeats", type=int, default=3)
    way.add_argument("--threads", type=int, default=2)
    way.add_argument("--model", type=Path)
    way.set_defaults(run=free_decoding)
    way = ways.add_parser("decoders", help="forced tokens against the grammar sampler, cases and demo runs")
    way.add_argument("--limit", type=int, help="this many decision cases, spread evenly over the set")
    way.add_argument("--threads", type=int, default=2)
    way.add_argument("--model", type=Path)
    way.add_argument("--skip-demo", action="store_true")
    way.add_argument("--skip-cases", action="store_true")
    way.set_defaults(run=decoders)
    return run_way(parser, argv)


if __name__ == "__main__":
    sys.exit(main())
