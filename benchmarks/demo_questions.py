"""Demo questions: does a run over the demo notes end in a handoff, read the right note, and answer?

Run: .venv/bin/python benchmarks/demo_questions.py  [--model PATH.gguf] [--limit N] [--threads N]
                                                   [--answer-tokens 256] [--configs before,now,given]

Twelve questions over the demo's six notes (toolrouting/demo/data/), each with the note that
holds its answer and the words the answer must contain (case-insensitive, every one of
them). Each question is run twice through ``RoutingLoop(answer=True)`` on the demo store:

- ``before``: what the loop sent before it had instructions: no catalogue, and the demo's
  earlier hand-written system message (``BEFORE_PROMPT`` below, verbatim);
- ``now``: the loop's default instructions (the run-start catalogue) merged with the demo's
  ``SYSTEM_PROMPT``.

- ``given``: the retrieval scripted, not the model's: a search for the right note's title,
  a read of that note, the handoff; it measures the answer requests alone, on the notes
  that hold the answer.

On each run's retrieval both answer requests are then made: ``grounded`` is the loop's own
(the question and the tool results, one message); ``transcript`` is the earlier one (the
whole conversation, actions and result headers included, then ``ANSWER_PROMPT``). Greedy
sampling, seed 0. Prints one Markdown table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from toolrouting import (
    LlamaCpp,
    MemoryStore,
    Message,
    RoutingLoop,
    RunResult,
    ScriptedBackend,
    Settings,
)
from toolrouting._limits import DEFAULT_ANSWER_TOKENS
from toolrouting._loop.answer import answer_request  # the loop's own answer request
from toolrouting._loop.feedback import ANSWER_PROMPT
from toolrouting.demo import SYSTEM_PROMPT, sample_notes

#: The demo's system message before the loop rendered the catalogue (toolrouting 0.1.0's
#: toolrouting/demo/prompt.py), the baseline of this benchmark.
BEFORE_PROMPT = (
    "You answer questions from a store of notes. Each turn, choose one action: memory_search to find "
    "notes about the question, memory_read to read notes a search listed, or none once you have what "
    "you need."
)

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


@dataclass
class Tally:
    runs: int = 0
    handoffs: int = 0
    right_note: int = 0
    grounded: int = 0
    transcript: int = 0
    rounds: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    grounded_chars: list[int] = field(default_factory=list)
    transcript_chars: list[int] = field(default_factory=list)


def has_fact(answer: str | None, words: Sequence[str]) -> bool:
    return answer is not None and all(word.lower() in answer.lower() for word in words)


def read_note(result: RunResult, note: str) -> bool:
    return any(
        action.tool == "memory_read" and note in (action.arguments or {}).get("ids", [])
        for action in result.actions
    )


def scripted(note: str) -> ScriptedBackend:
    """A backend that searches for ``note``'s title, reads it and hands off."""
    title = dict(NOTES)[note]
    return ScriptedBackend(
        [
            json.dumps({"tool": "memory_search", "arguments": {"query": title}}),
            json.dumps({"tool": "memory_read", "arguments": {"ids": [note]}}),
            '{"tool": "none"}',
        ]
    )


def run(
    backend: LlamaCpp, questions: Sequence[tuple[str, str, tuple[str, ...]]], configs: Sequence[str]
) -> dict[str, Tally]:
    tallies = {config: Tally() for config in configs}
    for config, tally in tallies.items():
        for question, note, words in questions:
            system = BEFORE_PROMPT if config == "before" else SYSTEM_PROMPT
            messages: list[Message] = [
                {"role": "system", "content": system},
                {"role": "user", "content": question},
            ]
            started = time.perf_counter()
            with MemoryStore.sample() as store:
                if config == "given":
                    result = RoutingLoop(scripted(note), store).run(messages)
                    grounded = answer_request(result.messages, len(messages))
                    answer = backend.complete([Message(role="user", content=grounded)]).text
                    asked_and_answered = (
                        Message(role="user", content=grounded),
                        Message(role="assistant", content=answer),
                    )
                    result = dataclasses.replace(
                        result, messages=(*result.messages, *asked_and_answered), answer=answer
                    )
                else:
                    loop = RoutingLoop(backend, store, answer=True, instructions=config == "now")
                    result = loop.run(messages)
            tally.seconds.append(time.perf_counter() - started)
            asked = [*result.messages[:-2], Message(role="user", content=ANSWER_PROMPT)]
            earlier = backend.complete(asked).text
            tally.runs += 1
            tally.handoffs += result.reason == "handoff"
            tally.right_note += read_note(result, note)
            tally.grounded += has_fact(result.answer, words)
            tally.transcript += has_fact(earlier, words)
            tally.rounds.append(result.rounds)
            tally.grounded_chars.append(len(result.messages[-2]["content"]))
            tally.transcript_chars.append(sum(len(m["content"]) for m in asked))
            print(
                f"{config} {question!r}: {result.reason}, {[a.tool for a in result.actions]}, "
                f"grounded={result.answer!r:.120} transcript={earlier!r:.120}",
                file=sys.stderr,
                flush=True,
            )
    return tallies


def table(tallies: dict[str, Tally]) -> str:
    rows = [
        "| prompt | handoff | right note read | fact in answer, grounded | fact in answer, transcript "
        "| rounds, mean | answer request chars, grounded / transcript | seconds per run, median |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for config, t in tallies.items():
        rows.append(
            f"| {config} | {t.handoffs}/{t.runs} | {t.right_note}/{t.runs} | {t.grounded}/{t.runs} "
            f"| {t.transcript}/{t.runs} | {statistics.mean(t.rounds):.1f} "
            f"| {statistics.mean(t.grounded_chars):.0f} / {statistics.mean(t.transcript_chars):.0f} "
            f"| {statistics.median(t.seconds):.1f} |"
        )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", help="a GGUF file (default: the embedded default model)")
    parser.add_argument("--limit", type=int, help="the first N questions only")
    parser.add_argument("--threads", type=int)
    parser.add_argument("--answer-tokens", type=int, default=DEFAULT_ANSWER_TOKENS)
    parser.add_argument("--configs", default="before,now,given")
    args = parser.parse_args(argv)
    questions = QUESTIONS[: args.limit]
    settings = Settings(temperature=0.0, seed=0, max_tokens=args.answer_tokens)
    started = time.perf_counter()
    with LlamaCpp(args.model, n_threads=args.threads, settings=settings, seed=0) as backend:
        tallies = run(backend, questions, args.configs.split(","))
        model = backend.model_path.name
    print(
        f"{model}, {len(questions)} questions over the demo notes, greedy, seed 0, "
        f"answer cap {args.answer_tokens} tokens, {time.perf_counter() - started:.0f} s in all\n"
    )
    print(table(tallies))
    return 0


if __name__ == "__main__":
    sys.exit(main())
