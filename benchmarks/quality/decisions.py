"""Decision quality: is the routed first action the right tool, or ``none`` when no tool fits?

Run: .venv/bin/python -m benchmarks.quality.decisions [--limit N]
                                              [--styles bare,names,text,json,typescript,thought]
                                              [--model PATH.gguf] [--seed 0] [--threads N] [--thought 80]
                                              [--decoding forced|grammar] [--grammar ours|server]
                                              [--unbounded] [--spaced] [--max-calls K]
                                              [--variant loop|no-sentence|one-call-route|...]

Each case in benchmarks/cases/*.jsonl is a catalogue, a conversation and the expected first
action (one of a list of tool names, or ``none``), with optional argument checks (the
argument's JSON text must contain the given text, case-insensitively). Every case is asked
once per configuration through ``routed_backend(backend, route_schema(tools), cap)``: the
same grammar each time, only the system message differs:

- ``bare``: no system message, the conversation alone (``RoutingLoop(instructions=False)``);
- ``names``: one line of reply format and the tools' names, nothing else;
- ``text``, ``json``, ``typescript``: ``catalogue_prompt(tools, style=...)``; ``typescript``
  is also what ``RoutingLoop`` sends by default (its instructions, byte for byte, since no
  case has a system message of its own);
- ``thought``: what ``RoutingLoop(thought=N)`` sends and constrains: its instructions (the
  ``typescript`` text and the note on the slot) and ``route_schema(tools, thought=N)``, the
  reply parsed with the slot.

Sampling is greedy (temperature 0) with a fixed seed, so a run repeats on the same build.
Prints one Markdown table: valid %, right tool % (tool expected), ``none`` % (none
expected), balanced accuracy (their mean), arguments passing their checks, prompt tokens
added per tool against ``bare``, completion tokens and seconds per decision, and cap hits
(replies the routing cap cut). ``--grammar``, ``--unbounded`` and ``--spaced`` set the grammar
the embedded backend samples under (``Settings(grammar=, bounded=, spaced=)``; default ours,
bounded, compact).

``--max-calls K`` offers the route of up to K calls (``route_schema(tools, max_calls=K)``, the
catalogue's reply format saying so, as ``RoutingLoop(max_calls=K)`` sends it) and also asks
the cases of benchmarks/cases/parallel/ (questions that need two to four calls), in a second
table: all calls right (the calls expected, one for one in any order, arguments passing their
checks), the number of calls made against the number needed (over- and under-calling), tokens
and seconds per decision. A single-call case answered with several calls counts as not right
(and is counted, over-called). ``--max-calls 1`` gives the same tables at one call a decision.

``--variant`` changes what ``--max-calls K`` (above 1) adds to a catalogue prompt and a route,
to measure each part of it: ``loop`` is what the loop sends (the default); ``no-sentence`` the
prompt of one call over the route of K; ``one-call-route`` the prompt of K over the route of
one call; ``sentence-last`` the added sentence after the example, last; ``short`` a shorter
sentence in its place, and ``short-last`` that one last; ``array-first`` the route's array
alternative first, before the tools.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.common.corpus import (
    Case,
    ParallelCase,
    arguments_pass,
    calls_right,
    load_cases,
    load_catalogue,
    load_parallel_cases,
    spread,
)
from toolrouting import (
    DEFAULT_PROMPT_CHARS,
    EmbeddedLlama,
    Message,
    Settings,
    catalogue_prompt,
    parse_routes,
    route_schema,
    route_tool_names,
    routed_backend,
)
from toolrouting._loop import instructed  # the loop's own rendering, not a copy

CONFIGS = ("bare", "names", "text", "json", "typescript", "thought")
ROUTING_CAP = 512
#: The reasoning slot's length in the ``thought`` configuration (``--thought``).
THOUGHT_SLOT = [80]
# Room for the 52-tool catalogue in the JSON style beside a conversation.
N_CTX = 8192
#: The calls one decision may make (``--max-calls``).
MAX_CALLS = [1]
#: What ``--variant`` changes of the prompt and the route at ``--max-calls`` above 1.
VARIANTS = ("loop", "no-sentence", "one-call-route", "sentence-last", "short", "short-last", "array-first")
VARIANT = ["loop"]
#: How the sentence ``max_calls`` above 1 adds to the reply format begins.
SEVERAL_OPENING = "When the user asks for several things"
#: How the reply format's first sentence begins, which the added sentence follows.
REPLY_OPENING = "Reply with one JSON object"
#: The ``short`` variants' sentence, for the reply format's longer one.
SHORT_SENTENCE = (
    'Several calls at once: a JSON array of 2 to {max_calls} of them, [{{"tool": ...}}, {{"tool": ...}}].'
)


@dataclass
class Tally:
    decisions: int = 0
    valid: int = 0
    tool_cases: int = 0
    right_tool: int = 0
    none_cases: int = 0
    right_none: int = 0
    checked: int = 0
    arguments_ok: int = 0
    prompt_tokens: list[int] = field(default_factory=list)
    per_tool: list[float] = field(default_factory=list)
    completion_tokens: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    cap_hits: int = 0
    over_called: int = 0
    """Single-call cases answered with several calls."""


#: One case that needs several calls, as asked: (valid, all calls right, calls made, calls
#: needed, completion tokens, seconds).
Outcome = tuple[bool, bool, int, int, int, float]


def system_text(config: str, tools: list[dict[str, Any]], messages: list[Message]) -> str | None:
    if config == "bare":
        return None
    if config == "thought":
        return instructed(messages, True, tools, thought=THOUGHT_SLOT[0], max_calls=MAX_CALLS[0])[0][
            "content"
        ]
    if config == "names":
        names = ", ".join(route_tool_names(tools)) or "(none)"
        return f'Choose the next action: one JSON object, a tool call or {{"tool": "none"}}.\nTools: {names}'
    return several_prompt(tools, config)


def several_prompt(tools: list[dict[str, Any]], style: str) -> str:
    """The catalogue prompt of ``--max-calls``, as ``--variant`` writes it."""
    several = catalogue_prompt(tools, style=style, max_calls=MAX_CALLS[0])  # type: ignore[arg-type]
    variant = VARIANT[0]
    if MAX_CALLS[0] == 1 or variant in ("loop", "one-call-route", "array-first"):
        return several
    if variant == "no-sentence":
        return catalogue_prompt(tools, style=style)  # type: ignore[arg-type]
    lines = several.splitlines()
    (sentence,) = [line for line in lines if line.startswith(SEVERAL_OPENING)]
    wording = SHORT_SENTENCE.format(max_calls=MAX_CALLS[0]) if variant.startswith("short") else sentence
    # The one-call text fitted to the room the line leaves, as catalogue_prompt fits its own.
    room = DEFAULT_PROMPT_CHARS - len(wording) - 1
    lines = catalogue_prompt(tools, style=style, max_chars=room).splitlines()  # type: ignore[arg-type]
    (reply,) = [i for i, line in enumerate(lines) if line.startswith(REPLY_OPENING)]
    lines.insert(len(lines) if variant.endswith("-last") else reply + 1, wording)
    return "\n".join(lines)


def several_route(tools: list[dict[str, Any]], thought: int | None) -> dict[str, Any]:
    """The route of ``--max-calls``, as ``--variant`` writes it."""
    if VARIANT[0] == "one-call-route":
        return route_schema(tools, thought=thought)
    schema = route_schema(tools, thought=thought, max_calls=MAX_CALLS[0])
    if VARIANT[0] == "array-first" and MAX_CALLS[0] > 1 and "type" not in schema:
        schema["anyOf"].insert(0, schema["anyOf"].pop())  # the array, last, first
    return schema


def decide(
    backend: EmbeddedLlama, config: str, tools: list[dict[str, Any]], conversation: list[Message]
) -> tuple[Any, Any, float]:
    """One decision under ``config``: the completion, what parse_routes made of it, the seconds."""
    thought = THOUGHT_SLOT[0] if config == "thought" else None
    schema = several_route(tools, thought)
    routed = routed_backend(backend, schema, ROUTING_CAP)
    system = system_text(config, tools, conversation)
    messages: list[Message] = [{"role": "system", "content": system}] if system else []
    started = time.perf_counter()
    completion = routed.complete(messages + conversation)
    seconds = time.perf_counter() - started
    names = route_tool_names(tools)
    return completion, parse_routes(completion.text, names, max_calls=MAX_CALLS[0], thought=thought), seconds


def run_calls(
    backend: EmbeddedLlama, cases: Sequence[ParallelCase], configs: Sequence[str]
) -> dict[str, list[Outcome]]:
    """Every case that needs several calls, once per configuration."""
    outcomes: dict[str, list[Outcome]] = {config: [] for config in configs}
    for config in configs:
        for case in sorted(cases, key=lambda case: case.catalogue):
            completion, routes, seconds = decide(
                backend, config, load_catalogue(case.catalogue), case.messages
            )
            made = [(call.tool, call.arguments) for call in routes.calls if call.tool != "none"]
            right = routes.ok and calls_right(case.calls, made)
            tokens = completion.usage.completion_tokens
            outcomes[config].append((routes.ok, right, len(made), len(case.calls), tokens, seconds))
            print(f"{config} {case.id}: {[tool for tool, _ in made]}", file=sys.stderr, flush=True)
    return outcomes


def calls_table(outcomes: dict[str, list[Outcome]]) -> str:
    head = [
        "prompt", "valid", "all calls right", "calls as many as needed", "over-called", "under-called",
        "calls made, mean (needed)", "completion tokens, mean", "seconds per decision, median",
    ]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for config, asked in outcomes.items():
        valid, right, made, needed, tokens, seconds = zip(*asked, strict=True)
        n = len(asked)
        exact = sum(m == k for m, k in zip(made, needed, strict=True))
        over = sum(m > k for m, k in zip(made, needed, strict=True))
        cells = [
            config,
            f"{_percent(sum(valid), n):.0f}%",
            f"{_percent(sum(right), n):.1f}% ({sum(right)}/{n})",
            f"{exact}/{n}",
            str(over),
            str(n - exact - over),
            f"{statistics.mean(made):.2f} ({statistics.mean(needed):.2f})",
            f"{statistics.mean(tokens):.1f}",
            f"{statistics.median(seconds):.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run(backend: EmbeddedLlama, cases: Sequence[Case], configs: Sequence[str]) -> dict[str, Tally]:
    catalogues: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        if case.catalogue not in catalogues:
            catalogues[case.catalogue] = load_catalogue(case.catalogue)
    # Cases grouped by catalogue, so consecutive requests share the system message (prefix cache).
    ordered = sorted(cases, key=lambda case: case.catalogue)
    bare_prompt: dict[str, int] = {}
    tallies = {config: Tally() for config in configs}
    for config in configs:
        tally = tallies[config]
        for case in ordered:
            tools = catalogues[case.catalogue]
            names = route_tool_names(tools)
            completion, routes, seconds = decide(backend, config, tools, case.messages)
            tally.seconds.append(seconds)
            tally.cap_hits += completion.truncated
            # One call is the decision; several, to a case that needs one, is not right.
            route = routes.calls[0] if len(routes.calls) == 1 else _refused
            tally.over_called += len(routes.calls) > 1
            tally.decisions += 1
            tally.valid += routes.ok
            tally.prompt_tokens.append(completion.usage.prompt_tokens)
            tally.completion_tokens.append(completion.usage.completion_tokens)
            if config == "bare":
                bare_prompt[case.id] = completion.usage.prompt_tokens
            elif case.id in bare_prompt and names:
                tally.per_tool.append((completion.usage.prompt_tokens - bare_prompt[case.id]) / len(names))
            if case.expect == ["none"]:
                tally.none_cases += 1
                tally.right_none += route.ok and route.tool == "none"
            else:
                tally.tool_cases += 1
                right = route.ok and route.tool in case.expect
                tally.right_tool += right
                if right and case.arguments:
                    tally.checked += 1
                    tally.arguments_ok += arguments_pass(case.arguments, route.arguments)
            shown = ",".join(str(call.tool) for call in routes.calls) if routes.ok else "INVALID"
            print(f"{config} {case.id}: {shown}", file=sys.stderr, flush=True)
    return tallies


@dataclass(frozen=True)
class _Refused:
    """What the single-call scoring reads of a reply that is not one call."""

    ok: bool = False
    tool: str | None = None
    arguments: dict[str, Any] | None = None


_refused = _Refused()


def _percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else float("nan")


def table(tallies: dict[str, Tally]) -> str:
    rows = [
        "| prompt | valid | right tool (tool expected) | `none` (none expected) | balanced accuracy "
        "| arguments pass (right tool, checked) | prompt tokens, mean | added tokens per tool "
        "| completion tokens, mean | seconds per decision, median | cap hits | over-called |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for config, t in tallies.items():
        tool = _percent(t.right_tool, t.tool_cases)
        none = _percent(t.right_none, t.none_cases)
        per_tool = f"{statistics.mean(t.per_tool):.0f}" if t.per_tool else "-"
        rows.append(
            f"| {config} | {_percent(t.valid, t.decisions):.0f}% "
            f"| {tool:.1f}% ({t.right_tool}/{t.tool_cases}) "
            f"| {none:.1f}% ({t.right_none}/{t.none_cases}) | {(tool + none) / 2:.1f}% "
            f"| {t.arguments_ok}/{t.checked} | {statistics.mean(t.prompt_tokens):.0f} | {per_tool} "
            f"| {statistics.mean(t.completion_tokens):.1f} | {statistics.median(t.seconds):.2f} "
            f"| {t.cap_hits} ({_percent(t.cap_hits, t.decisions):.0f}%) | {t.over_called} |"
        )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--limit", type=int, help="run this many cases, spread evenly over the set")
    parser.add_argument("--styles", default=",".join(CONFIGS), help="comma-separated: " + ", ".join(CONFIGS))
    parser.add_argument("--model", help="a GGUF file (default: the embedded default model)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int)
    parser.add_argument(
        "--thought", type=int, default=THOUGHT_SLOT[0], help="the slot's length in characters"
    )
    parser.add_argument(
        "--decoding",
        choices=("forced", "grammar"),
        default="forced",
        help="forced tokens (llguidance, the default) or the grammar sampler (forced_tokens=False)",
    )
    parser.add_argument("--grammar", choices=("ours", "server"), default="ours")
    parser.add_argument("--unbounded", action="store_true", help="our grammar without bounded decisions")
    parser.add_argument("--spaced", action="store_true", help="our grammar with a space after : and ,")
    parser.add_argument(
        "--max-calls", type=int, help="calls a decision may make; also asks the cases that need several"
    )
    parser.add_argument(
        "--variant", choices=VARIANTS, default="loop", help="what --max-calls adds to the prompt and route"
    )
    args = parser.parse_args(argv)
    THOUGHT_SLOT[0] = args.thought
    MAX_CALLS[0] = args.max_calls or 1
    VARIANT[0] = args.variant
    configs = [name.strip() for name in args.styles.split(",") if name.strip()]
    unknown = [name for name in configs if name not in CONFIGS]
    if unknown:
        parser.error(f"unknown styles {', '.join(unknown)}; choose from {', '.join(CONFIGS)}")
    if "bare" in configs:  # measured first, so the others can count the tokens they add
        configs.remove("bare")
        configs.insert(0, "bare")
    cases = spread(load_cases(), args.limit)
    settings = Settings(
        temperature=0.0, seed=args.seed, grammar=args.grammar, bounded=not args.unbounded, spaced=args.spaced
    )
    started = time.perf_counter()
    with EmbeddedLlama(
        args.model,
        n_ctx=N_CTX,
        n_threads=args.threads,
        settings=settings,
        seed=args.seed,
        forced_tokens=args.decoding == "forced",
    ) as backend:
        tallies = run(backend, cases, configs)
        several = None if args.max_calls is None else run_calls(backend, load_parallel_cases(), configs)
        model = backend.model_path.name
    expected_none = sum(case.expect == ["none"] for case in cases)
    print(
        f"{model}, {len(cases)} cases "
        f"({len(cases) - expected_none} expect a tool, {expected_none} expect none), "
        f"greedy, seed {args.seed}, {'forced tokens' if args.decoding == 'forced' else 'grammar sampler'}, "
        f"grammar {args.grammar}{'' if args.unbounded else ', bounded'}{', spaced' if args.spaced else ''}, "
        f"routing cap {ROUTING_CAP}, max_calls {MAX_CALLS[0]}, variant {VARIANT[0]}, {os.cpu_count()} cores, "
        f"{platform.python_version()}, {time.perf_counter() - started:.0f} s in all\n"
    )
    print(table(tallies))
    if several is not None:
        print(f"\nThe {len(load_parallel_cases())} cases that need several calls:\n")
        print(calls_table(several))
    return 0


if __name__ == "__main__":
    sys.exit(main())
