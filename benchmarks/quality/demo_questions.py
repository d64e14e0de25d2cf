"""Demo questions: does a run over the demo notes end in a handoff, read the right note, and answer?

Run: .venv/bin/python -m benchmarks.quality.demo_questions  [--model PATH.gguf] [--limit N] [--threads N]
                                                   [--answer-tokens 256] [--configs before,now,given]
                                                   [--persona TEXT]
                                                   [--seeds N --temperature T] [--forced-tokens on|off]
                                                   [--no-transcript]

Twelve questions over the demo's six notes (toolrouting/demo/data/; corpus.py's
``QUESTIONS``), each with the note that holds its answer and the words the answer must contain
(case-insensitive, every one of them). Each question is run twice through
``RoutingLoop(answer=True)`` on the demo store:

- ``before``: what the loop sent before it had instructions: no catalogue, and the demo's
  earlier hand-written system message (``BEFORE_PROMPT`` below, verbatim);
- ``now``: the loop's default instructions (the run-start catalogue) merged with the demo's
  ``SYSTEM_PROMPT``.

- ``given``: the retrieval scripted, not the model's: a read of the right note by its title,
  the handoff; it measures the answer requests alone, on the note that holds the answer.
- ``given-earlier``: the same, answered from the answer request earlier versions wrote
  (``earlier_answer_request``: the question first, then "What the tools returned:", then
  ``EARLIER_ANSWER_PROMPT``).
- ``persona``: ``given`` with ``--persona`` (default ``PERSONA``, a sentence that fixes the
  answer's first word) after the demo's system message; "persona followed" counts answers
  that begin with that word.

Every run is over the demo's store as ``toolrouting run`` makes it: the sample notes offered
by title (``MemoryStore.sample(titles=True)``).

On each run's retrieval the answer requests are then made: ``grounded`` is the loop's own
(``answer_conversation``: the caller's system message, without the instructions, then the
question and the tool results in one message); ``alone`` is that last message alone, as the
loop sent it before the answer kept the caller's context (asked only where the context is not
empty); ``transcript`` is the earlier one (the whole conversation, actions and result headers
included, then ``EARLIER_ANSWER_PROMPT``; ``--no-transcript`` skips it). Greedy sampling,
seed 0; ``--seeds N --temperature T`` runs every question N times instead, sampled at
temperature T with seeds 0 to N-1, as a newcomer's runs would differ on another machine.
"right note read" counts a ``memory_read`` of the note that answers; "its text seen" counts a
run where that note's text reached the model in any tool result (a read, or a search that
returns the notes' text). Prints one Markdown table.
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

from benchmarks.common.corpus import NOTES, QUESTIONS, has_fact, reads_note, result_collector, saw_note
from toolrouting import (
    EmbeddedLlama,
    Message,
    RoutingLoop,
    RunResult,
    ScriptedBackend,
    Settings,
)
from toolrouting._limits import DEFAULT_ANSWER_TOKENS
from toolrouting._loop import (  # the loop's own answer request, and the one earlier versions wrote
    EARLIER_ANSWER_PROMPT,
    answer_conversation,
    earlier_answer_request,
)
from toolrouting.demo import SYSTEM_PROMPT, MemoryStore

#: The demo's system message before the loop rendered the catalogue (toolrouting 0.1.0's
#: toolrouting/demo/prompt.py), the baseline of this benchmark.
BEFORE_PROMPT = (
    "You answer questions from a store of notes. Each turn, choose one action: memory_search to find "
    "notes about the question, memory_read to read notes a search listed, or none once you have what "
    "you need."
)

#: The persona case: a system sentence that fixes the answer's first word, easy to check.
PERSONA = "Begin every answer with the word Indeed."


@dataclass
class Tally:
    runs: int = 0
    handoffs: int = 0
    right_note: int = 0
    saw_note: int = 0
    grounded: int = 0
    alone: int = 0
    transcript: int = 0
    persona: int = 0
    persona_alone: int = 0
    rounds: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    grounded_chars: list[int] = field(default_factory=list)
    transcript_chars: list[int] = field(default_factory=list)


def read_note(result: RunResult, note: str) -> bool:
    return reads_note(((action.tool, action.arguments or {}) for action in result.actions), note)


def scripted(note: str) -> ScriptedBackend:
    """A backend that reads ``note`` by its title and hands off."""
    title = dict(NOTES)[note]
    return ScriptedBackend(
        [json.dumps({"tool": "memory_read", "arguments": {"title": title}}), '{"tool": "none"}']
    )


def run(
    backend: EmbeddedLlama,
    questions: Sequence[tuple[str, str, tuple[str, ...]]],
    configs: Sequence[str],
    seeds: Sequence[int | None] = (None,),
    transcript: bool = True,
    persona: str = PERSONA,
) -> dict[str, Tally]:
    tallies = {config: Tally() for config in configs}
    original = backend
    runs = [(question, seed) for question in questions for seed in seeds]
    for config, tally in tallies.items():
        for (question, note, words), seed in runs:
            if seed is not None:
                backend = original.clone(settings=original.settings.clone(seed=seed))
            results, observe = result_collector()
            system = {"before": BEFORE_PROMPT, "persona": f"{SYSTEM_PROMPT} {persona}"}.get(
                config, SYSTEM_PROMPT
            )
            messages: list[Message] = [
                {"role": "system", "content": system},
                {"role": "user", "content": question},
            ]
            started = time.perf_counter()
            with MemoryStore.sample(titles=True) as store:
                if config in ("given", "given-earlier", "persona"):
                    result = RoutingLoop(scripted(note), store, on_event=observe).run(messages)
                    if config == "given-earlier":
                        sent = [
                            Message(
                                role="user", content=earlier_answer_request(result.messages, len(messages))
                            )
                        ]
                    else:
                        sent = answer_conversation(result.messages, len(messages), instructions=True)
                    answer = backend.complete(sent).text
                    asked_and_answered = (sent[-1], Message(role="assistant", content=answer))
                    result = dataclasses.replace(
                        result, messages=(*result.messages, *asked_and_answered), answer=answer
                    )
                else:
                    loop = RoutingLoop(
                        backend, store, answer=True, instructions=config == "now", on_event=observe
                    )
                    result = loop.run(messages)
            tally.seconds.append(time.perf_counter() - started)
            request = result.messages[-2]
            context = answer_conversation(
                result.messages[:-2], len(messages), instructions=config != "before", asked=request["content"]
            )[:-1]
            alone = backend.complete([request]).text if context else result.answer
            asked = [*result.messages[:-2], Message(role="user", content=EARLIER_ANSWER_PROMPT)]
            earlier = backend.complete(asked).text if transcript else None
            tally.runs += 1
            tally.handoffs += result.reason == "handoff"
            tally.right_note += read_note(result, note)
            tally.saw_note += saw_note(results, note)
            tally.grounded += has_fact(result.answer, words)
            tally.alone += has_fact(alone, words)
            tally.persona += _begins(result.answer, persona)
            tally.persona_alone += _begins(alone, persona)
            tally.transcript += has_fact(earlier, words)
            tally.rounds.append(result.rounds)
            tally.grounded_chars.append(len(result.messages[-2]["content"]))
            tally.transcript_chars.append(sum(len(m["content"]) for m in asked))
            print(
                f"{config} {question!r} seed {seed}: {result.reason}, "
                f"{[(a.tool, a.arguments) for a in result.actions]}, "
                f"grounded={result.answer!r:.120} alone={alone!r:.120} transcript={earlier!r:.120}",
                file=sys.stderr,
                flush=True,
            )
    return tallies


def _begins(answer: str | None, persona: str) -> bool:
    """Whether ``answer`` begins with the word the persona's last word names ("Indeed")."""
    word = persona.rstrip(".").rsplit(" ", 1)[-1].lower()
    return answer is not None and answer.lstrip(" \n\"'*").lower().startswith(word)


def table(tallies: dict[str, Tally]) -> str:
    rows = [
        "| prompt | handoff | right note read | its text seen | fact in answer, grounded "
        "| fact in answer, request alone | fact in answer, transcript | persona followed, grounded "
        "/ alone | rounds, mean | answer request chars, grounded / transcript "
        "| seconds per run, median |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for config, t in tallies.items():
        persona = f"{t.persona}/{t.runs} / {t.persona_alone}/{t.runs}" if config == "persona" else "–"
        rows.append(
            f"| {config} | {t.handoffs}/{t.runs} | {t.right_note}/{t.runs} | {t.saw_note}/{t.runs} "
            f"| {t.grounded}/{t.runs} | {t.alone}/{t.runs} "
            f"| {t.transcript}/{t.runs} | {persona} | {statistics.mean(t.rounds):.1f} "
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
    parser.add_argument("--seeds", type=int, help="run each question with seeds 0..N-1 (with --temperature)")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--forced-tokens", choices=("on", "off"), help="the embedded model's decoding")
    parser.add_argument("--no-transcript", action="store_true", help="skip the transcript answer request")
    parser.add_argument("--persona", default=PERSONA, help="the persona config's system sentence")
    args = parser.parse_args(argv)
    questions = QUESTIONS[: args.limit]
    seeds: list[int | None] = list(range(args.seeds)) if args.seeds else [None]
    settings = Settings(temperature=args.temperature, seed=0, max_tokens=args.answer_tokens)
    forced = {} if args.forced_tokens is None else {"forced_tokens": args.forced_tokens == "on"}
    started = time.perf_counter()
    with EmbeddedLlama(args.model, n_threads=args.threads, settings=settings, seed=0, **forced) as backend:
        tallies = run(
            backend, questions, args.configs.split(","), seeds, not args.no_transcript, args.persona
        )
        model = backend.model_path.name
    sampling = f"temperature {args.temperature:g}, seeds 0-{len(seeds) - 1}" if args.seeds else "greedy"
    decoding = "" if args.forced_tokens is None else f", forced tokens {args.forced_tokens}"
    print(
        f"{model}, {len(questions)} questions over the demo notes, {sampling}{decoding}, "
        f"answer cap {args.answer_tokens} tokens, {time.perf_counter() - started:.0f} s in all\n"
    )
    print(table(tallies))
    return 0


if __name__ == "__main__":
    sys.exit(main())
