"""Tokens a reply of one or several calls costs, in each shape a reply of up to K calls could take.

Run: .venv/bin/python benchmarks/calls_shape.py [--model PATH ...]
     (the measurement model too: --model "$(sh scripts/fetch-measurement-model.sh)")

The actions are the decision benchmark's (benchmarks/cases/*.jsonl): each case's expected tool
with its argument checks as arguments, or ``{"tool":"none"}``, written as compact JSON, as our
grammar writes them. The several-call replies join the tool actions of one catalogue, in file
order, two and three at a time. Each reply is counted in each model's own tokenizer (the GGUF's
vocabulary alone, ``vocab_only``), in three shapes:

- ``object or array``: one action as its object, as at ``max_calls=1``; 2 to K as an array of them
  (what ``route_schema(tools, max_calls=K)`` allows);
- ``always array``: ``[...]`` around every reply, one action included;
- ``calls object``: ``{"calls":[...]}`` around every reply.

Printed: the mean tokens a reply costs over ``max_calls=1``'s one object (which has the same
tokens as ``object or array`` at one call, by construction), and the mean of each several-call reply
against the same calls made one a round (each its own reply and its end-of-text token). Also the
schema and grammar bytes of the demo catalogue's route at K = 1 to 4, and its longest reply.
Every ``object or array`` reply is checked with ``parse_routes`` first.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolrouting import default_model_path, parse_routes, route_grammar, route_schema, tools_from

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "benchmarks" / "cases"


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


#: Each shape: the text of a reply of these actions.
SHAPES: dict[str, Callable[[list[str]], str]] = {
    "object or array": lambda actions: actions[0] if len(actions) == 1 else "[" + ",".join(actions) + "]",
    "always array": lambda actions: "[" + ",".join(actions) + "]",
    "calls object": lambda actions: '{"calls":[' + ",".join(actions) + "]}",
}


def actions() -> dict[str, list[str]]:
    """Each case's expected action as compact JSON, by catalogue, in file order."""
    found: dict[str, list[str]] = {}
    for path in sorted(CASES.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            tool = case["expect"][0]
            action: dict[str, Any] = {"tool": tool}
            if tool != "none":
                action["arguments"] = case.get("arguments") or {}
            found.setdefault(case["catalogue"], []).append(compact(action))
    return found


class Tokenizer:
    """A GGUF's tokenizer alone (no weights)."""

    def __init__(self, path: Path) -> None:
        import llama_cpp

        self.model = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
        self.name = re.sub(
            r"-[0-9a-f]{64}$", "", path.stem
        )  # the measurement model's name ends in its sha256

    def count(self, text: str) -> int:
        return len(self.model.tokenize(text.encode("utf-8"), add_bos=False, special=False))


def replies(found: dict[str, list[str]], calls: int) -> list[tuple[str, list[str]]]:
    """(catalogue, actions) of every reply of ``calls`` tool actions, consecutive in file order."""
    chosen = []
    for catalogue, texts in found.items():
        tools = [text for text in texts if not text.startswith('{"tool":"none"')]
        chosen += [(catalogue, tools[at : at + calls]) for at in range(0, len(tools) - calls + 1, calls)]
    return chosen


def names_of(catalogue: str) -> list[str]:
    tools = tools_from(json.loads((ROOT / catalogue).read_text(encoding="utf-8")))
    return [tool["function"]["name"] for tool in tools]


def check(found: dict[str, list[str]]) -> None:
    singles = [(catalogue, [text]) for catalogue, texts in found.items() for text in texts]
    for catalogue, group in [*singles, *replies(found, 2), *replies(found, 3)]:
        routes = parse_routes(SHAPES["object or array"](group), names_of(catalogue), max_calls=3)
        assert routes.ok, (catalogue, group, routes.error)


def measure(tokenizer: Tokenizer, found: dict[str, list[str]]) -> list[str]:
    rows = []
    singles = [text for texts in found.values() for text in texts]
    base = [tokenizer.count(text) for text in singles]
    for shape, write in SHAPES.items():
        extra = [tokenizer.count(write([text])) - tokens for text, tokens in zip(singles, base, strict=True)]
        cells = [f"{statistics.mean(extra):+.2f} (most {max(extra):+d})"]
        for calls in (2, 3):
            group_replies = replies(found, calls)
            # One call a round: each reply its own, each ended by its own end-of-text token.
            rounds = [sum(tokenizer.count(text) + 1 for text in group) for _, group in group_replies]
            at_once = [tokenizer.count(write(group)) + 1 for _, group in group_replies]
            cells.append(f"{statistics.mean(at_once):.1f} against {statistics.mean(rounds):.1f}")
        rows.append(f"| {tokenizer.name} | {shape} | " + " | ".join(cells) + " |")
    return rows


def sizes() -> list[str]:
    tools = tools_from(json.loads((CASES / "catalogues" / "demo-notes.json").read_text(encoding="utf-8")))
    rows = []
    for calls in (1, 2, 3, 4):
        schema = route_schema(tools, max_calls=calls)
        grammar = route_grammar(schema, bounded=True)
        rows.append(f"| {calls} | {len(compact(schema)):,} | {len(grammar.gbnf):,} | {grammar.max_bytes:,} |")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", type=Path, action="append", help="a GGUF; the default model when none")
    args = parser.parse_args(argv)
    found = actions()
    check(found)
    counted = sum(len(texts) for texts in found.values())
    twos, threes = len(replies(found, 2)), len(replies(found, 3))
    print(f"{counted} one-call replies; {twos} of two calls, {threes} of three\n")
    print(
        "| tokenizer | shape | one call: tokens over max_calls=1 (mean, most) "
        "| two calls: at once against one a round | three calls |"
    )
    print("|---|---|---|---|---|")
    for path in args.model or [default_model_path()]:
        for row in measure(Tokenizer(path), found):
            print(row)
    print("\n| max_calls | route schema bytes | bounded grammar bytes | longest reply (bytes) |")
    print("|---|---|---|---|")
    for row in sizes():
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
