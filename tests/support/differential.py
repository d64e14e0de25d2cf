"""The grammar against the parser, both ways, over every corpus catalogue: for the test and the campaign.

Forward: texts drawn from the compiled GBNF (support.gbnf_sample), each confirmed grammar-valid
by llguidance's grammar engine where asked, must be accepted by ``parse_route``. Reverse:
replies the route schema allows and ``parse_route`` accepts, rewritten from those texts in
one way each (whitespace, key order, escapes, number forms), that the grammar refuses; each
way is judged in :data:`NARROWINGS` (a deliberate narrowing, and where it is written down),
and the rewrites in :data:`EQUIVALENTS`, which change nothing, the grammar must accept.
"""

from __future__ import annotations

import functools
import json
import random
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import llguidance
from jsonschema import Draft202012Validator

from support.compilers import _ByteTokenizer
from support.gbnf_sample import STYLES, Sampler, calls_rule, to_lark
from support.hostile_catalogues import HOSTILE
from toolrouting import (
    CatalogueError,
    GrammarError,
    Routes,
    parse_route,
    parse_routes,
    route_grammar,
    route_schema,
    tools_from,
)

__all__ = [
    "EQUIVALENTS",
    "MODES",
    "NARROWINGS",
    "Figures",
    "GrammarCheck",
    "corpus",
    "forward",
    "hostile_outcome",
    "reverse",
]

_ROOT = Path(__file__).resolve().parents[2]
#: The grammar's three shapes: compact, spaced, and bounded decisions (what backends send).
MODES: dict[str, dict[str, bool]] = {"compact": {}, "spaced": {"spaced": True}, "bounded": {"bounded": True}}


def corpus() -> dict[str, list[dict[str, Any]]]:
    """Every catalogue the tests and benchmarks hold, and every hostile one that becomes a route."""
    sources = {
        "tests": _ROOT / "tests" / "catalogues",
        "mcp": _ROOT / "tests" / "catalogues" / "mcp",
        "benchmarks": _ROOT / "benchmarks" / "cases" / "catalogues",
    }
    found: dict[str, list[dict[str, Any]]] = {}
    for source, folder in sources.items():
        for path in sorted(folder.glob("*.json")):
            tools = tools_from(json.loads(path.read_text(encoding="utf-8")))
            found[f"{source}/{path.stem}"] = list(tools)  # type: ignore[arg-type]
    for name, (_, build) in HOSTILE.items():
        catalogue = build()
        try:
            route_schema(catalogue)
        except (CatalogueError, GrammarError):
            continue  # refused with its place: tests/grammar/test_grammar_parser_differential.py checks how
        found[f"hostile/{name}"] = catalogue
    return found


def _names(tools: list[dict[str, Any]]) -> list[str]:
    return [tool["function"]["name"] for tool in tools]


# A wide object's chain of optional members keeps thousands of Earley items in one row.
_LIMITS = llguidance.LLParserLimits(max_items_in_row=100_000, step_max_items=1_000_000)


class GrammarCheck:
    """Whether a GBNF grammar derives a text: llguidance's engine, byte by byte, on gbnf_sample.to_lark."""

    def __init__(self) -> None:
        self._tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokenizer()))
        self._grammar = functools.lru_cache(maxsize=16)(self._compile)

    def _compile(self, gbnf: str) -> Any:
        grammar = to_lark(gbnf)
        failed, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar, self._tokenizer)
        assert not failed, messages
        return llguidance.LLMatcher(self._tokenizer, grammar, log_level=0, limits=_LIMITS)

    def accepts(self, gbnf: str, text: str) -> bool:
        # Compiled once, copied for each text (reset() leaves a matcher's error state as it was).
        matcher = self._grammar(gbnf).deep_copy()
        consumed = matcher.consume_tokens(list(text.encode("utf-8")))
        return bool(consumed and not matcher.is_error() and matcher.is_accepting())


@dataclass
class Figures:
    """What a run of the differential found."""

    catalogues: int = 0
    grammars: int = 0
    replies: int = 0
    confirmed: int = 0
    characters: int = 0
    refused: list[tuple[str, str, str]] = field(default_factory=list)
    """(catalogue and mode, parse_route's error, the reply) for each grammar text it refused."""
    not_derived: list[tuple[str, str]] = field(default_factory=list)
    """(catalogue and mode, text) the walk wrote that llguidance says the grammar does not derive."""
    too_long: list[tuple[str, int, str]] = field(default_factory=list)
    """(catalogue and mode, the grammar's longest reply in bytes, text) of a text longer than that."""
    calls: dict[int, int] = field(default_factory=dict)
    """Accepted replies by their number of calls (``none`` is one)."""
    repeated_keys: int = 0
    """Replies accepted although an object in them repeats a key (the free-keys class)."""
    narrowed: dict[str, int] = field(default_factory=dict)
    """Reverse: per way of rewriting, replies the schema and parse_route accept, the grammar refuses."""
    unequal: list[tuple[str, str, str]] = field(default_factory=list)
    """Reverse: (catalogue, way, text) of an equivalent rewrite the grammar refuses: an unchosen narrowing."""


def _repeats_a_key(text: str) -> bool:
    found = [False]

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({key for key, _ in items}) != len(items):
            found[0] = True
        return dict(items)

    json.loads(text, object_pairs_hook=pairs)
    return found[0]


def forward(
    tools: list[dict[str, Any]],
    label: str,
    figures: Figures,
    *,
    replies: int,
    seed: int,
    check: GrammarCheck | None,
    confirm_every: int = 1,
    budget: int = 4_000,
    max_calls: int = 1,
    answer_schema: dict[str, Any] | None = None,
) -> list[str]:
    """Draw ``replies`` texts from each mode's grammar and hand each to parse_route; the texts drawn.

    With ``max_calls`` above 1 the grammar is the route of up to that many calls, every other
    round of :data:`STYLES` is drawn from its array of calls alone, and parse_routes reads them.
    With ``answer_schema`` the route's ``none`` holds the answer, and parse_route reads it so.
    """
    figures.catalogues += 1
    schema = route_schema(tools, max_calls=max_calls, answer_schema=answer_schema)
    names = _names(tools)
    drawn: list[str] = []
    for mode, options in MODES.items():
        figures.grammars += 1
        grammar = route_grammar(schema, **options)
        gbnf = grammar.gbnf
        sampler = Sampler(gbnf, budget=budget)
        several = calls_rule(sampler.rules) if max_calls > 1 else None
        rng = random.Random(f"{seed}:{label}:{mode}")
        for index in range(replies):
            root = several if several is not None and index // len(STYLES) % 2 else "root"
            text = sampler.sample(rng, STYLES[index % len(STYLES)], root)
            figures.replies += 1
            figures.characters += len(text)
            if grammar.max_bytes is not None and len(text.encode("utf-8")) > grammar.max_bytes:
                figures.too_long.append((f"{label} {mode}", grammar.max_bytes, text))
            if check is not None and index % confirm_every == 0:
                figures.confirmed += 1
                if not check.accepts(gbnf, text):
                    figures.not_derived.append((f"{label} {mode}", text))
            route = (
                parse_route(text, names, answer=answer_schema is not None)
                if max_calls == 1
                else parse_routes(text, names, max_calls=max_calls)
            )
            if not route.ok:
                figures.refused.append((f"{label} {mode}", str(route.error), text))
            else:
                count = len(route.calls) if isinstance(route, Routes) else 1
                figures.calls[count] = figures.calls.get(count, 0) + 1
                if _repeats_a_key(text):
                    figures.repeated_keys += 1
            drawn.append(text)
    return drawn


# --- the reverse: valid replies the grammar cannot write ---------------------------------------


def _spaced(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)


def _reordered(value: Any) -> str | None:
    arguments = value.get("arguments")
    if not isinstance(arguments, dict) or len(arguments) < 2:
        return None
    return json.dumps(
        {"tool": value["tool"], "arguments": dict(reversed(arguments.items()))},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _ascii(value: Any) -> str | None:
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text if re.search(r"\\u[dD][89abAB]", text) else None


def _escaped_key(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace('"tool"', '"\\u0074ool"', 1)


def _whole_floats(value: Any) -> str | None:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    changed = re.sub(r"(?<=[:\[,])(-?[1-9][0-9]*)(?=[,}\]])", r"\1.0", text)
    return changed if changed != text else None


def _long_fraction(value: Any) -> str | None:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    changed = re.sub(r"(?<=[:\[,])(-?[0-9]+\.[0-9]+)(?=[,}\]])", r"\g<1>00000000000000001", text)
    return changed if changed != text else None


#: Each way a valid reply is rewritten, and the judgement on it when the grammar refuses the result.
NARROWINGS: dict[str, tuple[Callable[[Any], str | None], str]] = {
    "whitespace": (_spaced, "deliberate: no whitespace, or one space after : and , (docs/grammar.md)"),
    "key order": (_reordered, "deliberate: keys in properties order (docs/grammar.md)"),
    "escaped astral character": (
        _ascii,
        "deliberate: a character past U+FFFF is written as itself, not as a surrogate pair (docs/grammar.md)",
    ),
    "escaped key": (_escaped_key, "deliberate: keys are literals, written as the schema names them"),
    "integer written as a float": (
        _whole_floats,
        "deliberate: an integer is written without a fraction (the same value, one form)",
    ),
    "long fraction": (
        _long_fraction,
        "deliberate: a fraction has at most GRAMMAR_NUMBER_DIGITS digits (a double holds no more)",
    ),
}


def _dump(value: Any, string: Callable[[str], str]) -> str:
    """Compact JSON text with every string value (not key) written by ``string``."""
    if isinstance(value, str):
        return string(value)
    if isinstance(value, list):
        return "[" + ",".join(_dump(item, string) for item in value) + "]"
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(
                f"{json.dumps(key, ensure_ascii=False)}:{_dump(item, string)}" for key, item in value.items()
            )
            + "}"
        )
    return json.dumps(value)


def _escape_free(escape: Callable[[str], str], literals: set[str], text: str) -> str:
    return json.dumps(text, ensure_ascii=False) if text in literals else escape(text)


def _escape_bmp(text: str) -> str:
    body = json.dumps(text, ensure_ascii=False)[1:-1]
    return '"' + "".join(f"\\u{ord(c):04x}" if 0x7F <= ord(c) <= 0xFFFF else c for c in body) + '"'


def _escape_solidus(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).replace("/", "\\/")


#: Rewrites that change nothing a JSON reader sees and that the grammar must still accept, of
#: every string but the schema's own literals (enum and const values are written as the schema
#: writes them: that narrowing is deliberate and in NARROWINGS' words, "escaped key").
EQUIVALENTS: dict[str, Callable[[str], str]] = {
    "escaped non-ASCII character below U+10000": _escape_bmp,
    "escaped solidus": _escape_solidus,
}


def _literals(schema: Any) -> set[str]:
    """Every string inside an ``enum`` or ``const`` of ``schema``: text the grammar writes verbatim."""
    found: set[str] = set()
    stack = [(schema, False)]
    while stack:
        node, literal = stack.pop()
        if isinstance(node, str) and literal:
            found.add(node)
        elif isinstance(node, list):
            stack.extend((item, literal) for item in node)
        elif isinstance(node, dict):
            stack.extend((key, literal) for key in node if literal)
            stack.extend((item, literal or key in ("enum", "const")) for key, item in node.items())
    return found


def _validator(tools: list[dict[str, Any]]) -> Draft202012Validator | None:
    try:
        return Draft202012Validator(route_schema(tools))
    except Exception:
        return None


def reverse(
    tools: list[dict[str, Any]], label: str, drawn: list[str], figures: Figures, check: GrammarCheck
) -> None:
    """Rewrite each drawn reply each way: what the schema and parse_route accept, the grammar must not
    refuse unless the way is a deliberate narrowing (counted per way in ``figures.narrowed``)."""
    schema = route_schema(tools)
    validator = _validator(tools)
    if validator is None:
        return
    names = _names(tools)
    gbnf = route_grammar(schema).gbnf
    literals = _literals(schema)
    for text in drawn:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            continue
        for way, escape in EQUIVALENTS.items():
            changed = _dump(value, functools.partial(_escape_free, escape, literals))
            if changed != text and not check.accepts(gbnf, changed) and check.accepts(gbnf, _compact(value)):
                figures.unequal.append((label, way, changed))
        for way, (rewrite, _) in NARROWINGS.items():
            narrowed = rewrite(value)
            if narrowed is None or not parse_route(narrowed, names).ok:
                continue
            try:
                valid = validator.is_valid(json.loads(changed))
            except Exception:  # a pattern jsonschema cannot compile, a recursion: no verdict
                continue
            if valid and not check.accepts(gbnf, changed):
                figures.narrowed[way] = figures.narrowed.get(way, 0) + 1


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_PROBE = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[2]),) * 2)
sys.path[:0] = sys.argv[3:]
from support.hostile_catalogues import HOSTILE
from toolrouting import CatalogueError, GrammarError, TARGETS, preflight, route_grammar, route_schema
started = time.perf_counter()
try:
    schema = route_schema(HOSTILE[sys.argv[1]][1]())
    for options in ({}, {"spaced": True}, {"bounded": True}):
        route_grammar(schema, **options)
    for target in TARGETS:
        preflight(schema, target)
    outcome = {"ok": True}
except (CatalogueError, GrammarError) as error:
    outcome = {"ok": False, "type": type(error).__name__, "message": str(error)}
outcome["seconds"] = time.perf_counter() - started
outcome["peak_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(outcome))
"""


def hostile_outcome(name: str, seconds: float, memory: int) -> dict[str, Any]:
    """What route_schema, route_grammar (each mode) and preflight (each target) make of a hostile
    catalogue, in a process of its own bounded to ``memory`` bytes of address space: ``ok``, or the
    error's ``type`` and ``message``; ``seconds`` and ``peak_kib`` it took. Anything else (a
    crash, a traceback, the time or memory running out) fails the caller's assertion on ``rc``."""
    tests = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, name, str(memory), str(tests), str(tests.parent)],
        capture_output=True,
        text=True,
        timeout=seconds,
        check=False,
    )
    if done.returncode != 0:
        return {"ok": False, "type": "crash", "message": done.stderr[-2000:], "rc": done.returncode}
    outcome: dict[str, Any] = json.loads(done.stdout)
    return outcome
