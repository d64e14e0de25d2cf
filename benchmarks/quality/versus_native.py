"""Routed decisions against the server's own tool calling: same model, same cases, one run.

Run: .venv/bin/python -m benchmarks.quality.versus_native  [--model PATH.gguf] [--limit N] [--demo N]
         [--ways server-native,embedded-native,server-routed,embedded-routed,json-mode]
         [--cap 256] [--seed 0] [--threads N] [--forced-tokens on|off] [--base-url URL]
         [--out result.json] [--chart chart.svg] [--from-json result.json]

Without ``--model`` it measures the model ``scripts/fetch-measurement-model.sh`` fetches and
caches (Qwen2.5 Coder 0.5B Instruct, about 470 MB once; see docs/benchmarks/decisions.md for where it
comes from); any GGUF whose chat template declares tools works. The ways (native_ways.py):
llama-server's own tool calling (started with ``--jinja``), llama-cpp-python's
``chatml-function-calling`` handler in-process, ``RoutingLoop``'s first action over the
``llama.cpp`` dialect and over the embedded backend, and llama-server's JSON mode told the
catalogue. (The ideas measured against the default decision and rejected were ways of this
benchmark too; docs/benchmarks/history.md names the commit that holds them.) One llama-server
serves every server way, started here from the binary
scripts/build-llama-server.sh caches (or ``--base-url``).

The cases are decisions.py's (benchmarks/cases/*.jsonl, loaded by corpus.py, scored by
scoring.py), ``--limit`` of them spread over the set; every way answers the same ones, greedy, under the
same completion cap. Scored per way: the right tool where one is expected, ``none`` (no call)
where none is, balanced accuracy (their mean), arguments valid against the tool's parameter
schema (``jsonschema``) over every call of a catalogue tool, arguments right where the case
checks them, malformed replies (arguments that do not parse, a name not in the catalogue, a
routed reply the parser refuses), runaways (replies that ran to the cap), and the medians of
prompt tokens, completion tokens and seconds per decision. Then ``--demo`` of
the demo questions (corpus.py's ``QUESTIONS``) run whole over the demo notes, each way as its users would run
it (handoff, the right note read, its text seen, the fact in the answer).

Writes the per-case records and the summary as JSON (``--out``, rewritten after every case so
an interrupted run keeps what it measured), the headline chart as SVG (``--chart``), and prints
Markdown tables. ``--from-json`` renders the tables and chart of a saved result again.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common.corpus import (
    QUESTIONS,
    ROOT,
    has_fact,
    load_cases,
    load_catalogue,
    reads_note,
    saw_note,
    spread,
)
from benchmarks.common.scoring import Reply, bar_chart, merged, score, summary
from benchmarks.common.servers import local_server
from benchmarks.quality.native_ways import JsonMode, Routed, embedded_native, server_native
from toolrouting import DEFAULT_ROUTING_CAP, EmbeddedLlama, Message, OpenAICompatible, Settings
from toolrouting.demo import SYSTEM_PROMPT

WAYS = ("server-native", "embedded-native", "server-routed", "embedded-routed", "json-mode")
SERVER_WAYS = {"server-native", "server-routed", "json-mode"}
DEMO_WAYS = ("server-native", "embedded-native", "server-routed", "embedded-routed")
#: Room for the 52-tool catalogue as the native template writes it (its JSON, about 8,000 tokens).
N_CTX = 16384
FETCH = ROOT / "scripts" / "fetch-measurement-model.sh"


def measurement_model() -> Path:
    """The model the fetch script caches (downloading it once), its path from the script."""
    done = subprocess.run(["sh", str(FETCH)], check=True, capture_output=True, text=True)
    return Path(done.stdout.strip().splitlines()[-1])


def make_way(name: str, args: argparse.Namespace, url: str | None, owned: list[Any]) -> Any:
    settings = Settings(temperature=0.0, seed=args.seed, max_tokens=args.cap)
    if name == "server-native":
        return server_native(str(url), args.cap, args.seed)
    if name == "json-mode":
        return JsonMode(str(url), args.cap, args.seed)
    if name == "embedded-native":
        return embedded_native(args.model, args.cap, args.seed, N_CTX, args.threads)
    if name == "server-routed":
        backend: Any = OpenAICompatible(str(url), dialect="llama.cpp", settings=settings)
    else:
        forced = {} if args.forced_tokens is None else {"forced_tokens": args.forced_tokens == "on"}
        backend = EmbeddedLlama(
            args.model, n_ctx=N_CTX, n_threads=args.threads, settings=settings, seed=args.seed, **forced
        )
    owned.append(backend)
    return Routed(backend, DEFAULT_ROUTING_CAP)


def demo_record(way: Any, question: str, note: str, words: Sequence[str]) -> dict[str, Any]:
    messages: list[Message] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    run = way.run_demo(messages)
    return {
        "question": question,
        "ended": run.ended,
        "calls": run.calls,
        "read_note": reads_note(run.calls, note),
        "saw_note": saw_note(run.results, note),
        "fact": has_fact(run.answer, words),
        "answer": (run.answer or "")[:300],
        "seconds": round(run.seconds, 2),
    }


def demo_summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "runs": len(records),
        "handoff": sum(r["ended"] == "handoff" for r in records),
        "read_note": sum(r["read_note"] for r in records),
        "saw_note": sum(r["saw_note"] for r in records),
        "handoff_read_fact": sum(r["ended"] == "handoff" and r["read_note"] and r["fact"] for r in records),
        "fact": sum(r["fact"] for r in records),
        "median_seconds": statistics.median(r["seconds"] for r in records) if records else None,
    }


def _cell(value: Any, unit: str = "") -> str:
    return "-" if value is None else f"{value:g}{unit}" if isinstance(value, float) else f"{value}{unit}"


def tables(result: dict[str, Any]) -> str:
    rows = [
        "| way | balanced accuracy | right tool (tool expected) | `none` (none expected) "
        "| arguments valid (schema) | arguments right (checked) | malformed | runaways "
        "| prompt tokens, median | completion tokens, median | seconds per decision, median |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for way, data in result["ways"].items():
        if not data["records"]:
            continue
        s = data["summary"]
        rows.append(
            f"| {way} | {_cell(s['balanced_accuracy_pct'], '%')} "
            f"| {_cell(s['right_tool_pct'], '%')} ({s['right_tool'][0]}/{s['right_tool'][1]}) "
            f"| {_cell(s['none_pct'], '%')} ({s['none'][0]}/{s['none'][1]}) "
            f"| {_cell(s['arguments_valid_pct'], '%')} ({s['arguments_valid'][0]}/{s['arguments_valid'][1]}) "
            f"| {s['arguments_right'][0]}/{s['arguments_right'][1]} | {s['malformed']} | {s['runaways']} "
            f"| {_cell(s['median_prompt_tokens'])} | {_cell(s['median_completion_tokens'])} "
            f"| {_cell(s['median_seconds'])} |"
        )
    demo = {way: data["demo_summary"] for way, data in result["ways"].items() if data.get("demo")}
    if demo:
        rows += [
            "",
            "| way (demo questions, whole runs) | handoff | right note read | its text seen "
            "| handoff, note read and fact | fact in answer | seconds per run, median |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for way, d in demo.items():
            rows.append(
                f"| {way} | {d['handoff']}/{d['runs']} | {d['read_note']}/{d['runs']} "
                f"| {d['saw_note']}/{d['runs']} | {d['handoff_read_fact']}/{d['runs']} "
                f"| {d['fact']}/{d['runs']} | {_cell(d['median_seconds'])} |"
            )
    return "\n".join(rows)


def chart(result: dict[str, Any]) -> str:
    ways = [(way, data["summary"]) for way, data in result["ways"].items() if data["records"]]
    groups = [
        (
            way,
            f"{_cell(s['median_completion_tokens'])} tokens, {_cell(s['median_seconds'])} s, "
            f"{s['runaways']} runaways",
        )
        for way, s in ways
    ]
    series = [
        ("balanced accuracy", [s["balanced_accuracy_pct"] for _, s in ways]),
        ("right tool", [s["right_tool_pct"] for _, s in ways]),
        ("none when none fits", [s["none_pct"] for _, s in ways]),
        ("arguments valid", [s["arguments_valid_pct"] for _, s in ways]),
    ]
    model = re.sub(r"-?[0-9a-f]{64}", "", result["model"])  # the fetched file's name holds its sha256
    title = f"{model}: {result['cases']} decision cases, medians per decision"
    return bar_chart(title, groups, series)


def save(result: dict[str, Any], out: Path) -> None:
    """Write ``result`` whole or not at all: a reader never sees a half-written file."""
    partial = out.with_name(out.name + ".partial")
    partial.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(partial, out)


def measure(args: argparse.Namespace, ways: Sequence[str], out: Path) -> dict[str, Any]:
    cases = [] if args.limit == 0 else spread(load_cases(), args.limit)  # --limit 0: the demo alone
    cases = cases[args.skip :]  # the rest of a run that stopped: --from-json joins the two
    catalogues = {case.catalogue: load_catalogue(case.catalogue) for case in cases}
    result: dict[str, Any] = {
        "model": args.model.name,
        "cases": len(cases),
        "command": " ".join(sys.argv),
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
        "cap": args.cap,
        "seed": args.seed,
        "forced_tokens": args.forced_tokens,
        "ways": {},
    }
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        url = args.base_url
        if url is None and SERVER_WAYS & set(ways):
            server = local_server("llama-server", args.model, args.threads or 2, N_CTX, extra=["--jinja"])
            url = stack.enter_context(server)
        owned: list[Any] = []
        made = {name: make_way(name, args, url, owned) for name in ways}
        for name in ways:
            result["ways"][name] = {"records": [], "demo": []}
        # Case by case, every way in turn: a run stopped early has compared the ways on the
        # same cases.
        for case in cases:
            tools = catalogues[case.catalogue]
            for name, way in made.items():
                try:
                    reply = way.decide(tools, case.messages)
                except Exception as error:  # one case's failure is recorded, not the run's end
                    failure = f"request failed: {type(error).__name__}: {error}"
                    reply = Reply(tool=None, malformed=failure[:200])
                data = result["ways"][name]
                data["records"].append(score(reply, case, tools))
                data["summary"] = summary(data["records"])
                print(f"{name} {case.id}: {reply.tool} {reply.malformed or ''}", file=sys.stderr, flush=True)
                save(result, out)
        for question, note, words in QUESTIONS[: args.demo]:
            for name, way in made.items():
                if name not in DEMO_WAYS:
                    continue
                data = result["ways"][name]
                data["demo"].append(demo_record(way, question, note, words))
                data["demo_summary"] = demo_summary(data["demo"])
                print(f"{name} demo {data['demo'][-1]}", file=sys.stderr, flush=True)
                save(result, out)
        for backend in owned:
            backend.close()
    result["seconds"] = round(time.perf_counter() - started)
    save(result, out)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the fetched measurement model)")
    parser.add_argument("--limit", type=int, help="this many decision cases, spread evenly over the 160")
    parser.add_argument(
        "--skip", type=int, default=0, help="leave out the first N of those cases (the rest of a stopped run)"
    )
    parser.add_argument("--demo", type=int, default=len(QUESTIONS), help="demo questions per way (0: none)")
    parser.add_argument("--ways", default=",".join(WAYS), help="comma-separated: " + ", ".join(WAYS))
    parser.add_argument("--cap", type=int, default=256, help="completion cap of every request, in tokens")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int)
    parser.add_argument("--forced-tokens", choices=("on", "off"), help="embedded-routed's decoding")
    parser.add_argument("--base-url", help="a llama-server already running (with --jinja) on this model")
    parser.add_argument("--out", type=Path, default=Path("versus_native.json"))
    parser.add_argument("--chart", type=Path, default=Path("versus_native.svg"))
    parser.add_argument(
        "--from-json",
        type=Path,
        nargs="+",
        help="render the tables and chart of saved results (of runs on the same model and cases, merged)",
    )
    args = parser.parse_args(argv)
    if args.from_json:
        result = merged([json.loads(path.read_text(encoding="utf-8")) for path in args.from_json])
    else:
        ways = [name.strip() for name in args.ways.split(",") if name.strip()]
        unknown = [name for name in ways if name not in WAYS]
        if unknown:
            parser.error(f"unknown ways {', '.join(unknown)}; choose from {', '.join(WAYS)}")
        args.model = args.model or measurement_model()
        result = measure(args, ways, args.out)
    args.chart.write_text(chart(result), encoding="utf-8")
    print(
        f"{result['model']}, {result['cases']} cases, greedy, seed {result['seed']}, "
        f"cap {result['cap']} tokens, "
        f"{result['machine']}, {result.get('seconds', '?')} s in all\n"
    )
    print(tables(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
