"""Structured output's last step: the answer asked after ``none`` (two requests) against the
answer held by the ``none`` alternative (one request).

Run: OMP_WAIT_POLICY=passive .venv/bin/python benchmarks/structured_answer.py [--model PATH.gguf ...]
                                                       [--threads 2]

Each case of benchmarks/cases/structured/ is a question no tool is needed for, over the small
notes catalogue, with a JSON schema its answer is to follow. Two ways:

- ``two requests``: the decision routed under ``route_schema(tools)`` (the routing cap), and
  after ``none`` the answer asked under the schema with the loop's answer request
  (``answer_conversation``, the server's answer tokens): what ``toolrouting serve`` did with
  ``tools`` and ``response_format`` before it answered in one request;
- ``one request``: the same decision's messages (the catalogue's instructions and the
  question) under the route whose ``none`` alternative also holds the answer,
  ``{"tool": "none", "answer": {...}}``: ``route_schema(tools, answer_schema=schema)``, asked
  once with a cap of the routing cap and the server's answer tokens together (512 + 1,024);
- ``serve``: ``toolrouting serve``'s own app in-process (Starlette's TestClient), one chat
  completion with ``tools`` and ``response_format`` as a client sends it: the one-request way,
  as the server does it.

Both share the decision up to ``none``: the same prompt, the same choice among the tools. For
each way: the replies that answered (``none``, not a tool call), valid under the schema
(``jsonschema``; by the grammar they must be), cut at the cap, with the case's words (every
word of the case in the answer's compact JSON, lowercased; a case with no words is not
counted), and the prompt and completion tokens (as reported: every request's whole prompt)
and the seconds summed. Each way asks every case in turn, after an untimed first case, so
consecutive decisions share the instructions as a server's prefix cache would have them.
Greedy (temperature 0, seed 0), forced tokens, our bounded grammar.

docs/benchmarks.md's first figures were taken at c24fe5e, where the two requests were serve's
own (``git show c24fe5e:benchmarks/structured_answer.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpus import CASES, load_catalogue

from toolrouting import (
    DEFAULT_ROUTING_CAP,
    AsyncEmbeddedLlama,
    EmbeddedLlama,
    Message,
    Settings,
    catalogue_prompt,
    default_model_path,
    route_schema,
    routed_backend,
)
from toolrouting._loop import answer_conversation, instructed  # what the loop and serve send, not copies
from toolrouting._serve import SERVE_ANSWER_TOKENS, serve_app

N_CTX = 4096


@dataclass(frozen=True)
class Question:
    """A question no tool is needed for, its catalogue, the schema of its answer, and the words
    a right answer holds."""

    id: str
    catalogue: str
    messages: list[Message]
    schema: dict[str, Any]
    words: list[str]


def load_questions() -> list[Question]:
    path = CASES / "structured" / "answers.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [
        Question(raw["id"], raw["catalogue"], raw["messages"], raw["schema"], raw["words"])
        for raw in map(json.loads, filter(str.strip, lines))
    ]


@dataclass
class Answered:
    """One question asked one way: the answer (``None`` after a tool call), the cut, tokens, seconds."""

    answer: Any
    truncated: bool
    prompt: int
    completion: int
    seconds: float


def one_request(backend: EmbeddedLlama, question: Question) -> Answered:
    """The decision under the route whose ``none`` alternative holds the answer: one request."""
    tools = load_catalogue(question.catalogue)
    route = route_schema(tools, answer_schema=question.schema)
    routed = routed_backend(backend, route, DEFAULT_ROUTING_CAP + SERVE_ANSWER_TOKENS)
    messages = instructed(question.messages, catalogue_prompt(tools), tools)
    started = time.perf_counter()
    completion = routed.complete(messages)
    seconds = time.perf_counter() - started
    reply = json.loads(completion.text) if not completion.truncated else {}
    usage = completion.usage
    answer = reply.get("answer") if reply.get("tool") == "none" else None
    return Answered(answer, completion.truncated, usage.prompt_tokens, usage.completion_tokens, seconds)


def two_requests(backend: EmbeddedLlama, question: Question) -> Answered:
    """The decision routed, and after ``none`` the answer asked under the schema: two requests."""
    tools = load_catalogue(question.catalogue)
    messages = instructed(question.messages, catalogue_prompt(tools), tools)
    started = time.perf_counter()
    decision = routed_backend(backend, route_schema(tools), DEFAULT_ROUTING_CAP).complete(messages)
    prompt, completion_tokens = decision.usage.prompt_tokens, decision.usage.completion_tokens
    truncated, answer = decision.truncated, None
    if not truncated and json.loads(decision.text).get("tool") == "none":
        asked = answer_conversation(question.messages, len(question.messages))
        answered = routed_backend(backend, question.schema, SERVE_ANSWER_TOKENS).complete(asked)
        prompt += answered.usage.prompt_tokens
        completion_tokens += answered.usage.completion_tokens
        truncated = answered.truncated
        answer = None if truncated else json.loads(answered.text)
    seconds = time.perf_counter() - started
    return Answered(answer, truncated, prompt, completion_tokens, seconds)


def through_serve(client: Any) -> Callable[[Question], Answered]:
    """Ask ``toolrouting serve``'s app through ``client``: one chat completion, as a client would."""

    def ask(question: Question) -> Answered:
        body = {
            "model": "toolrouting",
            "messages": question.messages,
            "tools": load_catalogue(question.catalogue),
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": question.schema, "strict": True},
            },
            "temperature": 0,
            "seed": 0,
        }
        started = time.perf_counter()
        response = client.post("/v1/chat/completions", json=body)
        seconds = time.perf_counter() - started
        response.raise_for_status()
        reply = response.json()
        choice, usage = reply["choices"][0], reply["usage"]
        content = choice["message"]["content"]
        truncated = choice["finish_reason"] == "length"
        answer = json.loads(content) if content is not None and not truncated else None
        return Answered(answer, truncated, usage["prompt_tokens"], usage["completion_tokens"], seconds)

    return ask


def row(name: str, way: str, questions: Sequence[Question], asked: Sequence[Answered]) -> str:
    import jsonschema

    answered = [(q, a) for q, a in zip(questions, asked, strict=True) if a.answer is not None]
    valid = sum(jsonschema.Draft202012Validator(q.schema).is_valid(a.answer) for q, a in answered)
    worded = [(q, a) for q, a in answered if q.words]
    text = {q.id: json.dumps(a.answer, separators=(",", ":")).lower() for q, a in answered}
    right = sum(all(word in text[q.id] for word in q.words) for q, _ in worded)
    with_words = sum(bool(q.words) for q in questions)
    cells = [
        name,
        way,
        f"{len(answered)}/{len(asked)}",
        f"{valid}/{len(answered)}",
        str(sum(a.truncated for a in asked)),
        f"{right}/{with_words}",
        str(sum(a.prompt for a in asked)),
        str(sum(a.completion for a in asked)),
        str(sum(a.prompt + a.completion for a in asked)),
        f"{sum(a.seconds for a in asked):.1f}",
    ]
    return "| " + " | ".join(cells) + " |"


def measure(model: Path, threads: int | None) -> list[str]:
    """Both ways on one model: a row each."""
    from starlette.testclient import TestClient

    questions = load_questions()
    settings = Settings(temperature=0.0, seed=0)
    backend = EmbeddedLlama(model, n_ctx=N_CTX, n_threads=threads, settings=settings, seed=0)
    name = backend.model_path.name
    rows = []
    try:
        with TestClient(serve_app(AsyncEmbeddedLlama(backend))) as client:
            ways: list[tuple[str, Callable[[Question], Answered]]] = [
                ("two requests", lambda question: two_requests(backend, question)),
                ("one request", lambda question: one_request(backend, question)),
                ("serve (one request)", through_serve(client)),
            ]
            for way, ask in ways:
                ask(questions[0])  # untimed: the model's first request, the first grammars
                asked = []
                for question in questions:
                    asked.append(ask(question))
                    print(f"{name} {way} {question.id}: {asked[-1].answer}", file=sys.stderr, flush=True)
                rows.append(row(name, way, questions, asked))
    finally:
        backend.close()
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", type=Path, action="append", help="a GGUF file; give several to compare")
    parser.add_argument("--threads", type=int)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    head = [
        "model", "way", "answered (`none`)", "valid under the schema", "cap hits", "with the words",
        "prompt tokens", "completion tokens", "tokens in all", "seconds",
    ]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    for model in args.model or [default_model_path()]:
        lines += measure(model, args.threads)
    print(f"{len(load_questions())} questions, greedy, seed 0, forced tokens, bounded, "
          f"{time.perf_counter() - started:.0f} s in all\n")  # fmt: skip
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
