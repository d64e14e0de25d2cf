"""What the benchmarks decide and answer: the decision cases and their catalogues, the demo
questions, and how either is scored.

- the decision cases (benchmarks/cases/*.jsonl), their catalogues and their argument checks,
  and the cases that need several calls in one decision (benchmarks/cases/parallel/);
- the demo questions (benchmarks/cases/demo-questions.json), and how a run over the demo notes
  is scored: the note read, its text seen, the fact in the answer;
- the small notes catalogue ``toolrouting serve``'s tests and benchmarks route over
  (``SERVE_TOOLS``).

One of the modules of benchmarks/ the tests may import (tests/project/test_architecture.py). Importing
it loads no model and imports neither llama_cpp nor anything of tests/.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolrouting import Message, ToolReturned, tools_from
from toolrouting.demo import sample_notes

ROOT = Path(__file__).resolve().parents[2]
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


def load_questions() -> list[tuple[str, str, tuple[str, ...]]]:
    """The demo questions, in their file's order: (question, id of the note that answers it, words
    the answer must contain). The ids follow the notes' file names: M1 generator, M2 keys, M3
    radio, M4 storage-room latch, M5 stove, M6 water."""
    raw = json.loads((CASES / "demo-questions.json").read_text(encoding="utf-8"))
    return [(item["question"], item["note"], tuple(item["words"])) for item in raw]


#: (question, id of the note that answers it, words the answer must contain): ``load_questions()``.
QUESTIONS = load_questions()

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
