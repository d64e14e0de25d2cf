"""What a prompt costs when its prefix recurs: an agent's conversation, a batch, the loop's rounds.

    sh scripts/fetch-measurement-model.sh      # the 0.5B model, once
    .venv/bin/python -m benchmarks.serve.prefix_cache conversation --system-tokens 2500 \\
        [--ways embedded,embedded-uncached,llama-server] [--turns 6]
    .venv/bin/python -m benchmarks.serve.prefix_cache batch [--questions 20] \\
        [--ways embedded,embedded-uncached]
    .venv/bin/python -m benchmarks.serve.prefix_cache states [--tokens 1500,12000]
    .venv/bin/python -m benchmarks.serve.prefix_cache run-start [--repeats 3]   # the default model
    .venv/bin/python -m benchmarks.serve.prefix_cache clients [--steps 4]       # the default model

``conversation``: an agent's conversation through ``toolrouting serve``, as agents hold one: a
decision under ``tool_choice: "required"`` (its call answered by a tool message), then the answer
under ``"none"``, then the next question, alternating for ``--turns``. The 12 tools are
tool-eval-bench's universal catalogue and the questions its first user messages over it
(benchmarks/cases/README.md); the system prompt is the project's docs cut at ``--system-tokens``
of the model's tokens (2,500 makes prompts of about 3,000 tokens, 11,500 about 12,000, an agent
CLI's size). Each way serves the model (``--model``, by default the measurement model; greedy,
``--threads`` 2) in a server of its own, with a context of 16,384 tokens:

- ``embedded``: ``serve --model``'s backend, the in-process model with its prompt cache;
- ``embedded-uncached``: the same keeping no prompt state (``prompt_cache_mb=0``), so only what
  the model's one context holds is reused;
- ``llama-server``: ``serve --base-url`` over llama.cpp's llama-server (one slot, its prompt
  cache in RAM at its default size), the tokens it evaluated and took from its cache read off
  its responses (``timings``).

Each turn's seconds, its prompt tokens evaluated and taken from a cache (the context or a kept
state); the server process's peak resident memory (``VmHWM``) and the states' peak bytes.

``batch``: ``run_batch`` with answers (``toolrouting batch --answer``), one question at a time, over
the same catalogue and system prompt, ``--questions`` of tool-eval-bench's (each call answered by
a canned result): each run's seconds, cached against uncached.

``states``: a state's cost after ``--tokens`` of prompt: llama-cpp-python's ``save_state`` and
``load_state`` (``LlamaRAMCache``'s) against the sequence's own (the prompt cache's).

``run-start`` and ``clients``: benchmarks/serve/prefix_ways.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import httpx
import openai

from benchmarks.common.corpus import ROOT, load_cases
from benchmarks.common.llama import decoding_llama
from benchmarks.common.servers import (
    local_server,
    measurement_model,
    server_pid,
    serving,
    system_prompt,
)
from benchmarks.common.ways import run_way
from benchmarks.serve.prefix_ways import clients, run_start
from toolrouting import (
    AsyncBackend,
    AsyncEmbeddedLlama,
    AsyncOpenAICompatible,
    EmbeddedLlama,
    Event,
    RoundStarted,
    RunFinished,
    Settings,
    ToolOutput,
    run_batch,
)
from toolrouting._limits import EMBEDDED_PROMPT_CACHE_MB
from toolrouting._serve import serve_app

CATALOGUE = "benchmarks/cases/catalogues/teb-universal.json"
#: The answer's cap: the same for every way, so a turn's seconds differ by its prompt alone.
ANSWER_TOKENS = 64
#: The context of every way: a 12,000-token conversation's prompts and replies, with room.
N_CTX = 16384
RESULT = "{name}: done. 3 items matched; the first reads: the request was carried out as asked, no errors."
Counts = Callable[[], tuple[int, int]]
"""The last request's prompt tokens: (evaluated, taken from a cache)."""


def catalogue() -> list[dict[str, Any]]:
    return list(json.loads((ROOT / CATALOGUE).read_text(encoding="utf-8"))["tools"])


def questions(count: int) -> list[str]:
    return [case.messages[-1]["content"] for case in load_cases() if case.catalogue == CATALOGUE][:count]


def peak_mib(pid: int | str = "self") -> float:
    """A process's peak resident memory (``VmHWM``)."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def embedded(model: Path, args: argparse.Namespace, way: str, **settings: Any) -> EmbeddedLlama:
    # The peak resident memory counts from here: each way's own.
    Path("/proc/self/clear_refs").write_text("5", encoding="utf-8")
    kept = 0 if way == "embedded-uncached" else EMBEDDED_PROMPT_CACHE_MB
    return EmbeddedLlama(
        model,
        n_ctx=N_CTX,
        n_threads=args.threads,
        settings=Settings(temperature=0.0, **settings),
        prompt_cache_mb=kept,
    )


def embedded_counts(backend: EmbeddedLlama) -> Counts:
    seen = [0, 0]

    def read() -> tuple[int, int]:
        info = backend.prompt_cache_info()
        counts = (info.evaluated_tokens - seen[0], info.reused_tokens - seen[1])
        seen[:] = [info.evaluated_tokens, info.reused_tokens]
        return counts

    return read


# --- the conversation through serve ---


async def conversation(url: str, system: str, turns: int, counts: Counts) -> list[dict[str, Any]]:
    tools: Any = catalogue()
    asked = iter(questions(turns))
    messages: list[Any] = [{"role": "system", "content": system}, {"role": "user", "content": next(asked)}]
    rows = []
    async with openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0, timeout=3600) as client:
        for turn in range(1, turns + 1):
            choice: Literal["required", "none"] = "required" if turn % 2 else "none"
            cap = ANSWER_TOKENS if choice == "none" else None
            started = time.perf_counter()
            reply = await client.chat.completions.create(
                model="m", messages=messages, tools=tools, tool_choice=choice, temperature=0, max_tokens=cap
            )
            seconds = time.perf_counter() - started
            evaluated, cached = counts()
            prompt = reply.usage.prompt_tokens if reply.usage else 0
            row = {"turn": turn, "choice": choice, "seconds": seconds, "prompt": prompt}
            rows.append(row | {"evaluated": evaluated, "cached": cached})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
            message = reply.choices[0].message.model_dump(exclude_none=True)
            messages.append(message)
            if choice == "required":
                call = message["tool_calls"][0]
                result = RESULT.format(name=call["function"]["name"])
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
            else:
                messages.append(
                    {"role": "user", "content": next(asked, "Thank you. Anything else to check?")}
                )
    return rows


async def through_serve(
    backend: AsyncBackend, system: str, turns: int, counts: Counts
) -> list[dict[str, Any]]:
    async with serving(serve_app(backend, owned=True)) as url:
        return await conversation(url, system, turns, counts)


def embedded_conversation(model: Path, system: str, args: argparse.Namespace, way: str) -> dict[str, Any]:
    inner = embedded(model, args, way)
    rows = asyncio.run(through_serve(AsyncEmbeddedLlama(inner), system, args.turns, embedded_counts(inner)))
    states = inner.prompt_cache_info().peak_bytes / 2**20
    return {"rows": rows, "peak_mib": peak_mib(), "states_mib": states}


def llama_server_conversation(model: Path, system: str, args: argparse.Namespace) -> dict[str, Any]:
    timings: list[dict[str, Any]] = []

    async def read_timings(response: httpx.Response) -> None:
        await response.aread()  # kept: the backend reads the same content after this hook
        timings.append(json.loads(response.content).get("timings", {}))

    def counts() -> tuple[int, int]:
        [timing] = timings
        timings.clear()
        return timing["prompt_n"], timing["cache_n"]

    async def measure(upstream: str) -> list[dict[str, Any]]:
        async with httpx.AsyncClient(event_hooks={"response": [read_timings]}, timeout=3600) as http:
            settings = Settings(temperature=0.0)
            # A cold 12,000-token turn on 2 busy cores runs past the default request timeout.
            backend = AsyncOpenAICompatible(
                f"{upstream}/v1",
                model="default",
                dialect="llama.cpp",
                settings=settings,
                http_client=http,
                timeout=3600,
            )
            return await through_serve(backend, system, args.turns, counts)

    with local_server("llama-server", model, args.threads, N_CTX) as upstream:
        rows = asyncio.run(measure(upstream))
        pid = server_pid(upstream)
        peak = peak_mib(pid) if pid else float("nan")
    return {"rows": rows, "peak_mib": peak, "states_mib": float("nan")}


def conversation_way(args: argparse.Namespace) -> None:
    model = args.model or measurement_model()
    system = system_prompt(model, args.system_tokens)
    results = {
        way: llama_server_conversation(model, system, args)
        if way == "llama-server"
        else embedded_conversation(model, system, args, way)
        for way in args.ways.split(",")
    }
    print(f"{model.name}, {args.threads} threads, a system prompt of {args.system_tokens:,} tokens\n")
    rows = next(iter(results.values()))["rows"]
    print("| way | " + " | ".join(f"{r['turn']}: {r['choice']}" for r in rows) + " | peak memory (states) |")
    print("|---|" + "---:|" * (len(rows) + 1))
    for way, result in results.items():
        cells = [f"{r['seconds']:.2f} s ({r['evaluated']:,} + {r['cached']:,})" for r in result["rows"]]
        memory = f"{result['peak_mib']:,.0f} MiB ({result['states_mib']:,.0f} MiB)"
        print(f"| {way} | " + " | ".join(cells) + f" | {memory} |")
    print("\nprompt tokens (turn 1):", rows[0]["prompt"], "; (evaluated + from a cache) each turn")
    for way, result in results.items():
        for kind in ("required", "none"):
            seconds = [r["seconds"] for r in result["rows"] if r["choice"] == kind]
            later = ", ".join(f"{s / seconds[0]:.2f}" for s in seconds[1:])
            print(f"- {way}, {kind}: the later turns {later} times the first ({seconds[0]:.2f} s)")
    write_json(args, results)


# --- the batch ---


class CannedTools:
    """The catalogue's tools, each call answered with the same short result."""

    def __init__(self) -> None:
        self.tools = catalogue()

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return self.tools

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput(RESULT.format(name=name))


def batch_run(model: Path, system: str, args: argparse.Namespace, way: str) -> dict[str, Any]:
    began: dict[str, float] = {}
    seconds: dict[str, float] = {}

    def observe(question: str, event: Event) -> None:
        if isinstance(event, RoundStarted):
            began.setdefault(question, time.perf_counter())
        elif isinstance(event, RunFinished):
            seconds[question] = time.perf_counter() - began[question]

    asked = [{"id": f"q{n:02d}", "question": text} for n, text in enumerate(questions(args.questions), 1)]
    with (
        tempfile.TemporaryDirectory() as folder,
        embedded(model, args, way, max_tokens=ANSWER_TOKENS) as backend,
    ):
        path = Path(folder) / "questions.jsonl"
        path.write_text("".join(json.dumps(question) + "\n" for question in asked), encoding="utf-8")
        started = time.perf_counter()
        out = Path(folder) / "out"
        run_batch(
            path,
            out,
            backend=backend,
            tools=CannedTools,
            concurrency=1,
            system=system,
            answer=True,
            on_event=observe,
        )
        total = time.perf_counter() - started
        states = backend.prompt_cache_info().peak_bytes / 2**20
    runs = [seconds[question["id"]] for question in asked]
    return {"runs": runs, "total": total, "peak_mib": peak_mib(), "states_mib": states}


def batch_way(args: argparse.Namespace) -> None:
    model = args.model or measurement_model()
    system = system_prompt(model, args.system_tokens)
    results = {way: batch_run(model, system, args, way) for way in args.ways.split(",")}
    print(f"{model.name}, {args.threads} threads, {args.questions} questions with answers, one at a time\n")
    print(
        "| way | run 1 | later runs (median) | later/first | slowest later | all runs | peak memory, states |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for way, result in results.items():
        first, later = result["runs"][0], result["runs"][1:]
        median = statistics.median(later)
        memory = f"{result['peak_mib']:,.0f} MiB ({result['states_mib']:,.0f} MiB)"
        print(
            f"| {way} | {first:.2f} s | {median:.2f} s | {median / first:.2f} | {max(later):.2f} s | "
            f"{result['total']:.1f} s | {memory} |"
        )
    write_json(args, results)


# --- the states' cost ---


def states_way(args: argparse.Namespace) -> None:
    import ctypes

    import llama_cpp

    model = args.model or measurement_model()
    text = "\n\n".join(path.read_text(encoding="utf-8") for path in sorted((ROOT / "docs").glob("*.md")))
    llama = decoding_llama(model_path=str(model), n_ctx=N_CTX, n_threads=args.threads, verbose=False)
    split = llama.tokenize(text.encode("utf-8"), add_bos=True)
    print(f"{model.name}\n\n| prompt | way | state | save | restore |\n|---:|---|---:|---:|---:|")
    for tokens in map(int, args.tokens.split(",")):
        llama.reset()
        llama.eval(split[:tokens])
        started = time.perf_counter()
        state = llama.save_state()
        saved = time.perf_counter() - started
        llama.load_state(state)
        loaded = time.perf_counter() - saved - started
        size = (state.llama_state_size + state.scores.nbytes + state.input_ids.nbytes) / 2**20
        print(_state_row(tokens, "`save_state`", size, saved, loaded))
        started = time.perf_counter()
        size = llama_cpp.llama_state_seq_get_size(llama.ctx, 0)
        data = (ctypes.c_uint8 * size)()
        llama_cpp.llama_state_seq_get_data(llama.ctx, data, size, 0)
        saved = time.perf_counter() - started
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llama.ctx), False)
        llama_cpp.llama_state_seq_set_data(llama.ctx, data, size, 0)
        loaded = time.perf_counter() - saved - started
        print(_state_row(tokens, "sequence 0", size / 2**20, saved, loaded))
    llama.close()


def _state_row(tokens: int, way: str, size: float, saved: float, loaded: float) -> str:
    return f"| {tokens:,} | {way} | {size:,.1f} MB | {saved * 1000:,.0f} ms | {loaded * 1000:,.0f} ms |"


def write_json(args: argparse.Namespace, results: dict[str, Any]) -> None:
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    measures = parser.add_subparsers(dest="measure", required=True)
    for name, run, ways in (
        ("conversation", conversation_way, "embedded,embedded-uncached,llama-server"),
        ("batch", batch_way, "embedded,embedded-uncached"),
        ("states", states_way, ""),
    ):
        sub = measures.add_parser(name)
        sub.set_defaults(run=run)
        sub.add_argument("--ways", default=ways)
        sub.add_argument("--model", type=Path, help="a GGUF file (default: the measurement model)")
        sub.add_argument("--threads", type=int, default=2)
        sub.add_argument("--system-tokens", type=int, default=2500)
        sub.add_argument("--turns", type=int, default=6)
        sub.add_argument("--questions", type=int, default=20)
        sub.add_argument("--tokens", default="1500,12000")
        sub.add_argument("--json", help="also write the results here")
    earlier = measures.add_parser("run-start")
    earlier.set_defaults(run=run_start)
    earlier.add_argument("--model")
    earlier.add_argument("--repeats", type=int, default=3)
    earlier.add_argument("--threads", type=int)
    earlier = measures.add_parser("clients")
    earlier.set_defaults(run=clients)
    earlier.add_argument("--steps", type=int, default=4)
    return run_way(parser, argv)


if __name__ == "__main__":
    sys.exit(main())
