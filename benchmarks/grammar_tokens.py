"""Tokens and seconds per routed decision on each backend: the server's grammar against ours.

Run: OMP_WAIT_POLICY=passive .venv/bin/python benchmarks/grammar_tokens.py [--limit 12] [--threads 2]
                                       [--backends embedded,llama_cpp.server,llama-server]

The cases are the decision benchmark's (benchmarks/cases/*.jsonl: public function-calling
catalogues and the demo's notes), ``--limit`` of them spread evenly, each asked once per backend
and grammar mode through ``routed_backend(backend, route_schema(tools), 512)`` with the
catalogue as the system message (``catalogue_prompt``), greedy, seed 0, on the default model:

- ``server``: ``Settings(grammar="server")``, the schema for the server's own converter (llama-server's
  C++ one, llama-cpp-python's Python port in llama_cpp.server and in-process);
- ``ours``: our compact, bounded grammar (the default);
- ``ours, spaced``: ours with one space after ``:`` and ``,``.

The baseline is the same action written as compact JSON (``separators=(",", ":")``), counted
in the same tokenizer: the least a decision can cost. The target is at most that plus 2 (the
end-of-text token and one for luck). llama-server is started from the binary
scripts/build-llama-server.sh caches, llama_cpp.server with ``python -m``; a backend whose
server is missing is left out with a line saying why. A reply that shows the server ignored the
schema (``SchemaIgnoredError``: llama-server 11434 leaves some route schemas unconstrained) is
counted under "schema ignored" and left out of the other columns. Each catalogue's grammars are compiled
first (one token each), and each case's prompt is processed once untimed (the prefix cache then
serves every mode alike), so the seconds are decoding; benchmarks/grammar_compile.py times the
compiling.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from decisions import ROOT, load_cases, spread

sys.path.insert(0, str(ROOT / "tests"))

from support.llama_server import (
    llama_server_binary,
    start_llama_cpp_server,
    start_llama_server,
    wait_until_healthy,
)

from toolrouting import (
    Backend,
    EmbeddedLlama,
    Message,
    OpenAICompatible,
    SchemaIgnoredError,
    Settings,
    catalogue_prompt,
    default_model_path,
    parse_route,
    route_schema,
    route_tool_names,
    routed_backend,
    tools_from,
)

ROUTING_CAP = 512
MODES = {
    "server": {"grammar": "server"},
    "ours": {"grammar": "ours"},
    "ours, spaced": {"grammar": "ours", "spaced": True},
}
BACKENDS = ("embedded", "llama_cpp.server", "llama-server")


@dataclass
class Tally:
    tokens: list[int] = field(default_factory=list)
    compact: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    invalid: int = 0
    cap_hits: int = 0
    ignored: int = 0


class Tokenizer:
    """The default model's tokenizer alone (no weights), to count compact JSON."""

    def __init__(self) -> None:
        import llama_cpp

        self.model = llama_cpp.Llama(model_path=str(default_model_path()), vocab_only=True, verbose=False)

    def count(self, text: str) -> int:
        return len(self.model.tokenize(text.encode("utf-8"), add_bos=False, special=False))


@contextmanager
def llama_cpp_python_server(threads: int, log: Path) -> Iterator[str]:
    # Retried on another port when the probed one is taken before the server binds it.
    process, url = start_llama_cpp_server(default_model_path(), threads, log, n_ctx=4096)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=15)


@contextmanager
def backend_named(name: str, settings: Settings, threads: int, work: Path) -> Iterator[Backend | None]:
    if name == "embedded":
        # llama.cpp's grammar sampler, token by token, as llama-server samples under a grammar.
        with EmbeddedLlama(
            n_ctx=4096, n_threads=threads, settings=settings, seed=0, forced_tokens=False
        ) as embedded:
            yield embedded
    elif name == "llama_cpp.server":
        with (
            llama_cpp_python_server(threads, work / "llama_cpp_server.log") as url,
            OpenAICompatible(url, dialect="llama-cpp-python", settings=settings, timeout=600) as http,
        ):
            yield http
    else:
        if not llama_server_binary().is_file():
            print(f"llama-server: no binary at {llama_server_binary()}; left out", file=sys.stderr)
            yield None
            return
        log = work / "llama_server.log"
        process, url = start_llama_server(default_model_path(), threads, log, ctx_size=4096)
        try:
            problem = wait_until_healthy(process, url, log)
            if problem:
                raise SystemExit(problem)
            with OpenAICompatible(url, dialect="llama.cpp", settings=settings, timeout=600) as http:
                yield http
        finally:
            process.terminate()
            process.wait(timeout=15)


def measure(
    backend: Backend, cases: Sequence[Any], catalogues: dict[str, list[dict[str, Any]]], tokenizer: Tokenizer
) -> dict[str, Tally]:
    tallies = {mode: Tally() for mode in MODES}
    for case in cases:
        tools = catalogues[case.catalogue]
        names = route_tool_names(tools)
        messages: list[Message] = [{"role": "system", "content": catalogue_prompt(tools)}, *case.messages]
        # The prompt once, untimed: every mode then finds it in the prefix cache alike, so the
        # seconds are the decision's, not the first mode's prompt processing.
        backend.clone(settings=backend.settings.clone(max_tokens=1)).complete(messages)  # type: ignore[attr-defined]
        for mode, changes in MODES.items():
            clone = backend.clone(settings=backend.settings.clone(**changes))  # type: ignore[attr-defined]
            routed = routed_backend(clone, route_schema(tools), ROUTING_CAP)
            started = time.perf_counter()
            tally = tallies[mode]
            try:
                completion = routed.complete(messages)
            except SchemaIgnoredError as error:  # llama-server left some route schemas unconstrained
                tally.ignored += 1
                print(f"{mode} {case.id}: {error}", file=sys.stderr)
                continue
            tally.seconds.append(time.perf_counter() - started)
            tally.cap_hits += completion.truncated
            route = parse_route(completion.text, names)
            if not route.ok:
                tally.invalid += 1
                continue
            action: dict[str, Any] = {"tool": route.tool}
            if route.arguments is not None:
                action["arguments"] = route.arguments
            compact = json.dumps(action, ensure_ascii=False, separators=(",", ":"))
            tally.tokens.append(completion.usage.completion_tokens)
            tally.compact.append(tokenizer.count(compact))
            print(
                f"{mode} {case.id}: {completion.usage.completion_tokens} {completion.text!r}", file=sys.stderr
            )
    return tallies


def warm_up(backend: Backend, catalogues: dict[str, list[dict[str, Any]]]) -> None:
    """One token per catalogue and mode first, so the seconds are decoding, not compiling grammars."""
    for tools in catalogues.values():
        for changes in MODES.values():
            clone = backend.clone(settings=backend.settings.clone(**changes))  # type: ignore[attr-defined]
            with contextlib.suppress(SchemaIgnoredError):
                routed_backend(clone, route_schema(tools), 1).complete([{"role": "user", "content": "Hi."}])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--limit", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    args = parser.parse_args(argv)
    cases = spread(load_cases(), args.limit)
    catalogues = {
        case.catalogue: [dict(tool) for tool in tools_from(json.loads((ROOT / case.catalogue).read_text()))]
        for case in cases
    }
    tokenizer = Tokenizer()
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
    with tempfile.TemporaryDirectory() as work:
        for name in [b.strip() for b in args.backends.split(",") if b.strip()]:
            with backend_named(name, settings, args.threads, Path(work)) as backend:
                if backend is None:
                    continue
                warm_up(backend, catalogues)
                tallies = measure(backend, cases, catalogues, tokenizer)
            server_seconds = statistics.median(tallies["server"].seconds)
            for mode, t in tallies.items():
                extra = [a - b for a, b in zip(t.tokens, t.compact, strict=True)]
                seconds = statistics.median(t.seconds)
                ratio = sum(t.tokens) / sum(t.compact)
                print(
                    f"| {name} | {mode} | {statistics.mean(t.tokens):.1f} | {statistics.mean(t.compact):.1f} "
                    f"| {ratio:.2f} | {statistics.mean(extra):+.1f} ({max(extra):+d}) "
                    f"| {seconds:.2f} | {seconds / server_seconds:.2f} | {t.invalid} | {t.cap_hits} "
                    f"| {t.ignored} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
