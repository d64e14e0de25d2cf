"""What the benchmark scripts share; the one module of benchmarks/ the tests may import.

- the decision cases (benchmarks/cases/*.jsonl), their catalogues and their argument checks,
  and the cases that need several calls in one decision (benchmarks/cases/parallel/);
- the demo questions, and how a run over the demo notes is scored;
- the hostile replies that parse_route must answer (tests/test_parse_bounds.py asserts them,
  bounds.py times them);
- a way's decision as a record: a chat completion's tool call read as one, scored, summed, and
  the records of a stopped run joined with the rest of it (versus_native.py);
- a grouped bar chart as SVG;
- the default model's tokenizer alone, model servers on loopback (llama.cpp's
  ``llama-server`` and ``python -m llama_cpp.server``), and ``toolrouting serve``'s app served
  in this event loop over the small notes catalogue its tests use (``SERVE_TOOLS``).

Importing it loads no model and imports neither llama_cpp nor anything of tests/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from xml.sax.saxutils import escape

import httpx

from toolrouting import MAX_REPLY_CHARS, Message, ToolReturned, tools_from
from toolrouting.demo import sample_notes

__all__ = [
    "CASES",
    "HOSTILE_NAMES",
    "MEMORY_TOOLS",
    "NOTES",
    "QUESTIONS",
    "ROOT",
    "SERVE_TOOLS",
    "Case",
    "ParallelCase",
    "Reply",
    "Tokenizer",
    "arguments_pass",
    "bar_chart",
    "calls_right",
    "has_fact",
    "hostile_replies",
    "llama_server_binary",
    "load_cases",
    "load_catalogue",
    "load_parallel_cases",
    "local_server",
    "merged",
    "native_reply",
    "openai_tool",
    "reads_note",
    "result_collector",
    "run_way",
    "saw_note",
    "score",
    "serving",
    "spread",
    "started",
    "summary",
]

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "benchmarks" / "cases"
#: The small notes catalogue ``toolrouting serve``'s tests and benchmarks route over: a bounded
#: search and a read by one of three ids.
SERVE_TOOLS: list[Any] = json.loads((CASES / "catalogues" / "serve-notes.json").read_text(encoding="utf-8"))

# --- the decision cases ---


@dataclass(frozen=True)
class Case:
    """A catalogue, a conversation, the expected first action (tool names, or ``["none"]``), and
    argument checks (the argument's JSON text must contain the text, case-insensitively)."""

    id: str
    catalogue: str
    messages: list[Message]
    expect: list[str]
    arguments: dict[str, str] = field(default_factory=dict)


def _records(folder: Path) -> Iterator[dict[str, Any]]:
    """Every JSON object of the folder's *.jsonl files, in the files' order, a line each."""
    for path in sorted(folder.glob("*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        yield from (json.loads(line) for line in lines if line.strip())


def load_cases() -> list[Case]:
    return [
        Case(raw["id"], raw["catalogue"], raw["messages"], raw["expect"], raw.get("arguments", {}))
        for raw in _records(CASES)
    ]


@dataclass
class ParallelCase:
    """A catalogue, a conversation and the calls one decision should make, each a tool and
    argument checks (as :class:`Case`'s), in any order."""

    id: str
    catalogue: str
    messages: list[Message]
    calls: list[tuple[str, dict[str, str]]]


def load_parallel_cases() -> list[ParallelCase]:
    """benchmarks/cases/parallel/*.jsonl: the decisions that need two to four calls."""
    return [
        ParallelCase(
            raw["id"],
            raw["catalogue"],
            raw["messages"],
            [(call["tool"], call.get("arguments", {})) for call in raw["calls"]],
        )
        for raw in _records(CASES / "parallel")
    ]


def calls_right(expected: Sequence[tuple[str, dict[str, str]]], made: Sequence[tuple[str, Any]]) -> bool:
    """Whether ``made`` (tool, arguments) are the ``expected`` calls, one for one in any order."""
    if len(made) != len(expected):
        return False
    left = list(made)
    for tool, checks in expected:
        found = next(
            (i for i, (name, args) in enumerate(left) if name == tool and arguments_pass(checks, args)), None
        )
        if found is None:
            return False
        del left[found]
    return True


def load_catalogue(path: str) -> list[dict[str, Any]]:
    """A case's catalogue (a path from the repository root), read as ``tools_from`` reads it."""
    source = json.loads((ROOT / path).read_text(encoding="utf-8"))
    return [dict(tool) for tool in tools_from(source)]


def spread(cases: Sequence[Case], limit: int | None) -> list[Case]:
    """``limit`` cases spread evenly over the list (every source and class), or all of them."""
    if limit is None or limit >= len(cases):
        return list(cases)
    step = len(cases) / limit
    return [cases[int(i * step)] for i in range(limit)]


def openai_tool(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI-style tool whose every property is required."""
    parameters = {"type": "object", "properties": properties, "required": list(properties)}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


#: A search and a read of memories, their strings and arrays unbounded.
MEMORY_TOOLS = [
    openai_tool("memory_search", "Search the memories for a phrase.", {"query": {"type": "string"}}),
    openai_tool(
        "memory_read", "Read memories by their ids.", {"ids": {"type": "array", "items": {"type": "string"}}}
    ),
]


def arguments_pass(checks: dict[str, str], arguments: dict[str, Any] | None) -> bool:
    arguments = arguments or {}
    return all(
        name in arguments and text.lower() in json.dumps(arguments[name], ensure_ascii=False).lower()
        for name, text in checks.items()
    )


# --- the demo questions ---

#: (question, id of the note that answers it, words the answer must contain). The ids follow
#: the notes' file names: M1 generator, M2 keys, M3 radio, M4 storage-room latch, M5 stove,
#: M6 water.
QUESTIONS: list[tuple[str, str, tuple[str, ...]]] = [
    ("What does the latch on the storage-room door do?", "M4", ("itself",)),
    ("How do I start the generator?", "M1", ("cord",)),
    ("Which key opens the storage room?", "M2", ("brass",)),
    ("At what time is the evening radio check?", "M3", ("19:00",)),
    ("How should the water filter candle be cleaned?", "M6", ("brush",)),
    ("Where is the dry wood for the stove stacked?", "M5", ("east",)),
    ("What colour is the tag on the generator shed key?", "M2", ("blue",)),
    ("On which day is the generator's oil level checked?", "M1", ("sunday",)),
    ("What happens when the water tank is below one quarter?", "M6", ("shower",)),
    ("What if the valley base does not answer the radio call?", "M3", ("19:30",)),
    ("What should be done with the stove's damper before lighting it?", "M5", ("open",)),
    ("How do you open the storage-room door from inside?", "M4", ("lever",)),
]

#: The notes' ids and titles, as the sample store numbers them.
NOTES = [(f"M{number}", title) for number, (title, _) in enumerate(sample_notes(), start=1)]


def has_fact(answer: str | None, words: Sequence[str]) -> bool:
    return answer is not None and all(word.lower() in answer.lower() for word in words)


def reads_note(calls: Iterable[tuple[str, dict[str, Any]]], note: str) -> bool:
    """Whether one of ``calls`` (tool, arguments) is a ``memory_read`` of ``note``, by id or by title."""
    title = dict(NOTES)[note]
    return any(
        tool == "memory_read" and (note in arguments.get("ids", []) or arguments.get("title") == title)
        for tool, arguments in calls
    )


def saw_note(results: Iterable[str], note: str) -> bool:
    """Whether the text of ``note`` reached the model in one of the tool ``results``, however
    it was asked for (a read, or a search that returns the notes' text)."""
    body = dict(zip((id for id, _ in NOTES), (body for _, body in sample_notes()), strict=True))[note]
    quoted = json.dumps(body[:60], ensure_ascii=False)[1:-1]
    return any(quoted in result for result in results)


def result_collector() -> tuple[list[str], Callable[[object], None]]:
    """A list, and an event observer that appends the content of every tool result that is no error."""
    results: list[str] = []

    def observe(event: object) -> None:
        if isinstance(event, ToolReturned) and not event.is_error:
            results.append(event.content)

    return results, observe


# --- hostile replies ---

#: The catalogue every hostile reply is parsed against.
HOSTILE_NAMES = ("t",)
_MB = 1_000_000


def _action(arguments: str) -> str:
    return '{"tool":"t","arguments":' + arguments + "}"


def _fill(make: Callable[[int], str], budget: int) -> str:
    """The longest ``make(n)`` within ``budget`` characters (``make`` grows with ``n``)."""
    low, high = 0, budget
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if len(make(middle)) <= budget else (low, middle - 1)
    return make(low)


def hostile_replies() -> list[tuple[str, str, bool]]:
    """(what, reply, whether parse_route accepts it) for each hostile reply: 10 MB, a million
    brackets, a megabyte of escapes, digits or whitespace."""
    limit = MAX_REPLY_CHARS
    return [
        ("10 MB string argument", _action('{"s":"' + "x" * (10 * _MB) + '"}'), False),
        ("10 MB of brackets", "[" * (5 * _MB) + "]" * (5 * _MB), False),
        ("1,000,000 open brackets", "[" * _MB, False),
        ("1,000,000 nested brackets in arguments", _action("[" * _MB + "]" * _MB), False),
        ("nested brackets up to the limit", _fill(lambda n: _action("[" * n + "]" * n), limit), False),
        (
            "nested objects up to the limit",
            _fill(lambda n: _action('{"a":' * n + "1" + "}" * n), limit),
            False,
        ),
        ("1 MB of \\n escapes", _fill(lambda n: _action('{"s":"' + "\\n" * n + '"}'), limit), True),
        ("1 MB of \\u00e9 escapes", _fill(lambda n: _action('{"s":"' + "\\u00e9" * n + '"}'), limit), True),
        (
            "1 MB of escaped pairs",
            _fill(lambda n: _action('{"s":"' + "\\ud83d\\ude00" * n + '"}'), limit),
            True,
        ),
        ("1 MB of lone surrogates", _fill(lambda n: _action('{"s":"' + "\\ud800" * n + '"}'), limit), False),
        ("1 MB integer", _fill(lambda n: _action('{"n":' + "7" * n + "}"), limit), False),
        ("1 MB fraction", _fill(lambda n: _action('{"n":0.' + "7" * n + "}"), limit), True),
        ("1 MB exponent", _fill(lambda n: _action('{"n":1e' + "9" * n + "}"), limit), False),
        (  # decoded twice: the second time to see which object repeats (the last value counts)
            "80,000 keys, the last repeated",
            _action("{" + ",".join(f'"k{i}":1' for i in range(80_000)) + ',"k0":2}'),
            True,
        ),
        (
            "80,000 keys, then the action's own repeated",
            _action("{" + ",".join(f'"k{i}":1' for i in range(80_000)) + "}")[:-1] + ',"tool":"t"}',
            False,
        ),
        ("1 MB of whitespace", _fill(lambda n: " " * n + '{"tool":"none"}', limit), True),
        ("1 MB non-ASCII string", _fill(lambda n: _action('{"s":"' + "é" * n + '"}'), limit), True),
    ]


# --- a way's decision as a record ---


@dataclass
class Reply:
    """One decision: ``tool`` is ``None`` when the reply called no tool."""

    tool: str | None
    arguments: dict[str, Any] | None = None
    malformed: str | None = None
    truncated: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    text: str = ""


def native_reply(body: dict[str, Any], names: Sequence[str], seconds: float, cap: int) -> Reply:
    """A native chat completion read as a decision: its first tool call, or none.

    It ran away when it stopped at its cap, or wrote as many tokens as the cap allows: the
    ``chatml-function-calling`` handler leaves its inner completions uncapped."""
    choice = body["choices"][0]
    message = choice.get("message") or {}
    usage = body.get("usage") or {}
    completion_tokens = int(usage.get("completion_tokens") or 0)
    reply = Reply(
        tool=None,
        truncated=choice.get("finish_reason") == "length" or completion_tokens >= cap,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=completion_tokens,
        seconds=seconds,
        text=message.get("content") or "",
    )
    calls = message.get("tool_calls") or []
    if not calls:
        return reply
    function = calls[0].get("function") or {}
    reply.tool = str(function.get("name"))
    reply.text = json.dumps(calls, ensure_ascii=False)
    if reply.tool not in names:
        reply.malformed = f"a tool not in the catalogue: {reply.tool[:40]!r}"
        return reply
    raw = function.get("arguments")
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        reply.malformed = "arguments that do not parse as JSON"
        return reply
    if not isinstance(arguments, dict):
        reply.malformed = "arguments that are not a JSON object"
        return reply
    reply.arguments = arguments
    return reply


def score(reply: Reply, case: Case, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """One case's record: what the way chose and how it scores."""
    import jsonschema

    record: dict[str, Any] = {
        "case": case.id,
        "expect": case.expect,
        "tool": reply.tool,
        "malformed": reply.malformed,
        "runaway": reply.truncated,
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "seconds": round(reply.seconds, 3),
        "text": reply.text[:300],
        "arguments_valid": None,
        "arguments_right": None,
    }
    parameters = {t["function"]["name"]: t["function"].get("parameters") or {} for t in tools}
    if reply.malformed is None and reply.tool in parameters and reply.arguments is not None:
        schema = parameters[reply.tool]
        validator = jsonschema.validators.validator_for(schema)(schema)
        record["arguments_valid"] = validator.is_valid(reply.arguments)
        if reply.tool in case.expect and case.arguments:
            record["arguments_right"] = arguments_pass(case.arguments, reply.arguments)
    return record


def summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A way's figures over its records: the two rates and their mean, arguments, tokens, seconds."""
    tool_cases = [r for r in records if r["expect"] != ["none"]]
    none_cases = [r for r in records if r["expect"] == ["none"]]
    right_tool = sum(r["malformed"] is None and r["tool"] in r["expect"] for r in tool_cases)
    right_none = sum(r["malformed"] is None and r["tool"] is None for r in none_cases)
    valid = [r["arguments_valid"] for r in records if r["arguments_valid"] is not None]
    right = [r["arguments_right"] for r in records if r["arguments_right"] is not None]

    def percent(part: int, whole: int) -> float | None:
        return round(100.0 * part / whole, 1) if whole else None

    def median(key: str) -> float | None:
        return statistics.median(r[key] for r in records) if records else None

    tool_rate, none_rate = percent(right_tool, len(tool_cases)), percent(right_none, len(none_cases))
    rates = [rate for rate in (tool_rate, none_rate) if rate is not None]
    seconds = median("seconds")
    return {
        "decisions": len(records),
        "right_tool": [right_tool, len(tool_cases)],
        "right_tool_pct": tool_rate,
        "none": [right_none, len(none_cases)],
        "none_pct": none_rate,
        "balanced_accuracy_pct": round(statistics.mean(rates), 1) if rates else None,
        "arguments_valid": [sum(valid), len(valid)],
        "arguments_valid_pct": percent(sum(valid), len(valid)),
        "arguments_right": [sum(right), len(right)],
        "malformed": sum(r["malformed"] is not None for r in records),
        "runaways": sum(r["runaway"] for r in records),
        "median_prompt_tokens": median("prompt_tokens"),
        "median_completion_tokens": median("completion_tokens"),
        "median_seconds": None if seconds is None else round(seconds, 2),
    }


def merged(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One result of several runs on the same model and cap: each way's decisions joined case by
    case (a case measured twice counts from the first run that measured it, so a run and the
    rest of it after a stop make one), and its demo runs from the first run that measured them;
    the commands are kept, one a line."""
    first = results[0]
    for other in results[1:]:
        if (other["model"], other["cap"]) != (first["model"], first["cap"]):
            sys.exit("--from-json: the results are not of the same model and cap")
    ways: dict[str, Any] = {}
    cases: set[str] = set()
    for result in results:
        for way, data in result["ways"].items():
            into = ways.setdefault(way, {"records": [], "demo": []})
            seen = {record["case"] for record in into["records"]}
            into["records"] += [record for record in data["records"] if record["case"] not in seen]
            cases |= {record["case"] for record in data["records"]}
            if data.get("demo") and not into["demo"]:
                into["demo"], into["demo_summary"] = data["demo"], data["demo_summary"]
    for data in ways.values():
        if data["records"]:
            data["summary"] = summary(data["records"])
    commands = "\n".join(result["command"] for result in results)
    seconds = sum(result.get("seconds", 0) for result in results)
    return {**first, "cases": len(cases), "ways": ways, "command": commands, "seconds": seconds}


# --- a grouped bar chart ---

#: Colours from the Okabe-Ito palette, told apart with colour blindness too.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")
#: Where the bars start (the labels' width) and how long a bar of 100% is, in pixels.
LABEL_WIDTH = 190
PLOT_WIDTH = 360
_BAR = 14
_GAP = 4
_GROUP_GAP = 14
_TOP = 58


def bar_chart(
    title: str, groups: Sequence[tuple[str, str]], series: Sequence[tuple[str, Sequence[float | None]]]
) -> str:
    """SVG of ``series`` (name, one percentage per group, ``None`` for not measured) over
    ``groups`` (label, a second line such as the tokens and seconds): one group of horizontal
    bars a row, each labelled with its value, and a legend; byte-stable for the same input."""
    per_group = len(series) * (_BAR + _GAP) + _GROUP_GAP
    height = _TOP + len(groups) * per_group + 16
    width = LABEL_WIDTH + PLOT_WIDTH + 70
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="8" y="18" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    x = 8
    for index, (name, _) in enumerate(series):
        colour = COLOURS[index % len(COLOURS)]
        out.append(f'<rect x="{x}" y="30" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{x + 14}" y="39">{escape(name)}</text>')
        x += 22 + 7 * len(name)
    for tick in (0, 50, 100):
        tx = LABEL_WIDTH + PLOT_WIDTH * tick / 100
        out.append(f'<line x1="{tx:.1f}" y1="{_TOP - 6}" x2="{tx:.1f}" y2="{height - 12}" stroke="#dddddd"/>')
        out.append(f'<text x="{tx:.1f}" y="{height - 2}" text-anchor="middle" fill="#666666">{tick}%</text>')
    for row, (label, note) in enumerate(groups):
        top = _TOP + row * per_group
        middle = top + len(series) * (_BAR + _GAP) / 2
        out.append(
            f'<text x="{LABEL_WIDTH - 8}" y="{middle - 2:.1f}" text-anchor="end">{escape(label)}</text>'
        )
        out.append(
            f'<text x="{LABEL_WIDTH - 8}" y="{middle + 12:.1f}" text-anchor="end" fill="#666666" '
            f'font-size="10">{escape(note)}</text>'
        )
        for index, (_, values) in enumerate(series):
            value = values[row]
            y = top + index * (_BAR + _GAP)
            if value is None:
                out.append(
                    f'<text x="{LABEL_WIDTH + 4}" y="{y + _BAR - 3}" fill="#666666">not measured</text>'
                )
                continue
            length = PLOT_WIDTH * max(0.0, min(value, 100.0)) / 100
            colour = COLOURS[index % len(COLOURS)]
            out.append(
                f'<rect x="{LABEL_WIDTH}" y="{y}" width="{length:.1f}" height="{_BAR}" fill="{colour}"/>'
            )
            out.append(f'<text x="{LABEL_WIDTH + length + 4:.1f}" y="{y + _BAR - 3}">{value:.0f}%</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def run_way(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    """Run the way ``argv`` names: a subcommand of ``parser`` whose ``run`` default takes the
    parsed options (the scripts of several ways: ``decoding.py WAY``, ``compile.py WAY``)."""
    args = parser.parse_args(argv)
    args.run(args)
    return 0


# --- the model's tokenizer, and model servers on loopback ---


class Tokenizer:
    """A GGUF's tokenizer alone (no weights): how many tokens a text is in the tokenizer's own split."""

    def __init__(self, model: Path) -> None:
        import llama_cpp

        self.model = llama_cpp.Llama(model_path=str(model), vocab_only=True, verbose=False)

    def count(self, text: str) -> int:
        return len(self.model.tokenize(text.encode("utf-8"), add_bos=False, special=False))


ServerKind = Literal["llama-server", "llama_cpp.server"]

#: Seconds a server gets to load its model and answer.
SERVER_START_LIMIT = 300.0


def llama_server_binary() -> Path:
    """Where scripts/build-llama-server.sh caches llama.cpp's ``llama-server`` (it honours the
    same variables: ``LLAMA_SERVER_CACHE``, else ``XDG_CACHE_HOME``)."""
    cache = os.environ.get("LLAMA_SERVER_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "toolrouting"
        / "llama-server-11434"
    )
    return Path(cache) / "llama-server"


@contextmanager
def local_server(
    kind: ServerKind,
    model: Path,
    threads: int,
    ctx: int,
    *,
    slots: int = 1,
    extra: Sequence[str] = (),
    binary: Path | None = None,
) -> Iterator[str]:
    """``kind`` serving ``model`` on a free loopback port: its base URL (no ``/v1``) once it
    answers, until the block ends. ``llama-server`` is ``binary`` or the cached build, with
    ``slots`` parallel slots sharing ``ctx`` tokens of context and ``extra`` options
    (``--jinja``); ``llama_cpp.server`` serves one request at a time."""
    if kind == "llama-server":

        def command(port: int) -> list[str]:
            return [
                str(binary or llama_server_binary()), "--model", str(model), "--host", "127.0.0.1",
                "--port", str(port), "--ctx-size", str(ctx), "--parallel", str(slots),
                "--threads", str(threads), "--threads-batch", str(threads), "--no-webui", *extra,
            ]  # fmt: skip

        ready = "/health"
    else:

        def command(port: int) -> list[str]:
            return [
                sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
                "--port", str(port), "--n_ctx", str(ctx), "--n_threads", str(threads),
                "--n_threads_batch", str(threads),
            ]  # fmt: skip

        ready = "/v1/models"
    with started(kind, command, lambda url: _answers(url + ready)) as url:
        yield url


@contextmanager
def started(what: str, command: Callable[[int], list[str]], ready: Callable[[str], bool]) -> Iterator[str]:
    """``command(port)`` run on a free loopback port: its base URL once ``ready(url)``, until the
    block ends (then asked to stop, and killed if it has not within 15 s)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            command(port),
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "OMP_WAIT_POLICY": "passive"},
        )
        try:
            deadline = time.monotonic() + SERVER_START_LIMIT
            while process.poll() is None and not ready(url):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            if process.poll() is not None or not ready(url):
                log.seek(0)
                said = log.read().decode("utf-8", "replace")[-2000:]
                raise SystemExit(f"{what} did not start within {SERVER_START_LIMIT:g} s:\n{said}")
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.TransportError:
        return False


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """``app`` (``toolrouting serve``'s Starlette app) served by uvicorn on a free loopback port, in
    this event loop: its base URL (``.../v1``) until the block ends."""
    import uvicorn

    from toolrouting._serve import server_config

    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and without
    # it every keep-alive request waits 40 ms on a delayed ACK.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    listener.listen(socket.SOMAXCONN)
    port = listener.getsockname()[1]
    server = uvicorn.Server(server_config(app, host="127.0.0.1", port=port))
    task = asyncio.create_task(server.serve(sockets=[listener]))
    while not server.started:
        if task.done():
            task.result()  # raises what stopped it
            raise RuntimeError("the server stopped before it started")
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        await task
        listener.close()
