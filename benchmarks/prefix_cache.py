"""What keeping the run-start instructions saves when the catalogue narrows: prompt seconds a round.

Run: .venv/bin/python benchmarks/prefix_cache.py  [--model PATH.gguf] [--repeats 3] [--threads N]

The demo store narrows its catalogue every round (``memory_search`` alone, then
``memory_read`` alone, then ``memory_search`` again). A run of four rounds is recorded with
the scripted backend; its routing requests are then sent to the real model in order, two ways:

- ``run-start``: what ``RoutingLoop`` sends, the instructions rendered once from the
  run-start catalogue, so each request extends the one before it;
- ``re-rendered``: the same requests with the system message rendered again from each
  round's catalogue, as a loop that "says what is offered now" in the system message would.

Each request is capped at one completion token, so the time is the prompt's; the model decodes
with llama.cpp's grammar sampler (``forced_tokens=False``), which evaluates the prompt before that
token, where forced tokens would stop at the cap before evaluating anything. The in-process
model keeps the previous prompt's KV cache and evaluates only what follows the common
prefix, as a server's prefix cache does. A different prompt is sent before each pass so no
pass starts warm. Prints one Markdown table: seconds per round, median over the repeats.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence

from toolrouting import (
    EmbeddedLlama,
    Message,
    RoutingLoop,
    ScriptedBackend,
    Settings,
    catalogue_prompt,
    route_schema,
    routed_backend,
)
from toolrouting._loop import INSTRUCTIONS_SEPARATOR
from toolrouting.demo import SEARCH_PROMPT, MemoryStore

QUESTION = "What does the latch on the storage-room door do?"
ACTIONS = [
    '{"tool": "memory_search", "arguments": {"query": "latch"}}',
    '{"tool": "memory_read", "arguments": {"ids": ["M4"]}}',
    '{"tool": "memory_search", "arguments": {"query": "brass key"}}',
    '{"tool": "none"}',
]


def recorded() -> list[tuple[list[Message], list[dict[str, object]]]]:
    """Each routing request of the run and the catalogue it offered."""
    backend = ScriptedBackend(ACTIONS)
    catalogues = []
    with MemoryStore.sample() as store:
        original = store.tools_for_llm

        def watched() -> list[dict[str, object]]:
            tools = original()
            catalogues.append(tools)
            return tools

        store.tools_for_llm = watched  # type: ignore[method-assign]
        RoutingLoop(backend, store).run(
            [{"role": "system", "content": SEARCH_PROMPT}, {"role": "user", "content": QUESTION}]
        )
    # The first catalogue read renders the instructions; each round reads it again.
    return [(list(r.messages), tools) for r, tools in zip(backend.requests, catalogues[1:], strict=True)]


def re_rendered(messages: list[Message], tools: list[dict[str, object]]) -> list[Message]:
    system = catalogue_prompt(tools) + INSTRUCTIONS_SEPARATOR + SEARCH_PROMPT
    return [Message(role="system", content=system), *messages[1:]]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int)
    args = parser.parse_args(argv)
    rounds = recorded()
    variants = {
        "run-start": [messages for messages, _ in rounds],
        "re-rendered": [re_rendered(messages, tools) for messages, tools in rounds],
    }
    seconds: dict[str, list[list[float]]] = {name: [[] for _ in rounds] for name in variants}
    tokens: dict[str, list[int]] = {name: [] for name in variants}
    # The grammar sampler: it evaluates the whole prompt before its first token, where forced tokens
    # stop at a 1-token cap before the model is run (the forced {"tool":" is more than one token).
    settings = Settings(temperature=0.0, seed=0)
    with EmbeddedLlama(args.model, n_threads=args.threads, settings=settings, forced_tokens=False) as model:
        for _ in range(args.repeats):
            for name, requests in variants.items():
                model.complete([{"role": "user", "content": "Say hello."}])  # a cold start for each pass
                for index, (messages, (_, tools)) in enumerate(zip(requests, rounds, strict=True)):
                    routed = routed_backend(model, route_schema(tools), 1)
                    started = time.perf_counter()
                    completion = routed.complete(messages)
                    seconds[name][index].append(time.perf_counter() - started)
                    if len(tokens[name]) < len(rounds):
                        tokens[name].append(completion.usage.prompt_tokens)
        model_name = model.model_path.name
    print(f"{model_name}, the demo run's {len(rounds)} routing requests, median of {args.repeats} passes\n")
    print("| instructions | " + " | ".join(f"round {i + 1}" for i in range(len(rounds))) + " | all rounds |")
    print("|---|" + "---:|" * (len(rounds) + 1))
    for name in variants:
        medians = [statistics.median(values) for values in seconds[name]]
        cells = " | ".join(f"{m:.2f} s ({t} tok)" for m, t in zip(medians, tokens[name], strict=True))
        print(f"| {name} | {cells} | {sum(medians):.2f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
