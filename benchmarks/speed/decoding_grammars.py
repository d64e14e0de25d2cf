"""The server's grammar against ours, on each backend.

``grammars [--limit 12] [--threads 2] [--backends embedded,llama_cpp.server,llama-server]``:
the decision cases, each routed once per backend and grammar mode: ``server``
(``Settings(grammar="server")``, the schema for the server's own converter), ``ours`` (our
compact bounded grammar, the default) and ``ours, spaced`` (a space after ``:`` and ``,``),
against the same action as compact JSON in the same tokenizer (the target: at most that plus
2). The embedded backend samples under llama.cpp's grammar sampler, as llama-server does;
llama-server is the binary scripts/build-llama-server.sh caches (left out with a line saying
why when missing). A reply showing the server ignored the schema (``SchemaIgnoredError``) is
counted apart. Each catalogue's grammars are compiled first and each case's prompt processed
once untimed, so the seconds are decoding; compile.py times the compiling.

A way of decoding.py (``python -m benchmarks.speed.decoding grammars``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.common.corpus import Case, load_cases, spread
from benchmarks.common.servers import Tokenizer, llama_server_binary, local_server
from benchmarks.speed.decoding_core import ROUTING_CAP, routed, routed_request, timed, told
from toolrouting import (
    EmbeddedLlama,
    OpenAICompatible,
    SchemaIgnoredError,
    Settings,
    default_model_path,
    parse_route,
    route_tool_names,
)

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
            request = routed_request(
                backend.clone(settings=backend.settings.clone(**changes)), tools, messages
            )
            tally = tallies[mode]
            try:
                seconds, completion = timed(request)
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
                        routed(clone, tools, 1).complete([{"role": "user", "content": "Hi."}])
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
