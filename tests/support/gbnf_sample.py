"""Texts drawn from a GBNF grammar itself: a random walk over its rules, biased toward the edges.

The differential test of grammar against parser (tests/grammar/test_grammar_parser_differential.py)
asks what a model under the grammar may write, not what a schema's author meant: every text
here is derived from the GBNF text ``route_grammar`` compiled, rule by rule. The walk leans
toward the places where a grammar and a parser part: the shortest and the longest counts, the
deepest nesting a budget allows, every alternative (so every escape and every number form),
and characters at the edges of each class (the first and last of a range; for a negated class
controls' neighbours, U+2028, U+FFFF, astral characters, and U+10FFFF).
"""

from __future__ import annotations

import math
import random

from support.gbnf import Alt, Cls, Item, Lit, Node, Ref, parse

__all__ = ["STYLES", "Sampler", "calls_rule", "to_lark"]

#: How a walk chooses: "short" takes every minimum, "long" every maximum (deepest nesting,
#: longest strings), "edges" a minimum or a maximum at random at each choice, "random" anything.
STYLES = ("short", "long", "edges", "random")

#: Characters a negated class is tried with first: the neighbours of what JSON strings exclude,
#: the line and paragraph separators JavaScript once refused, the ends of each plane.
_EDGE_CHARS = (
    0x20, 0x21, 0x23, 0x2F, 0x5B, 0x5D, 0x7E, 0x7F, 0x80, 0x9F, 0xA0, 0xFF, 0x100, 0x7FF, 0x800,
    0x2028, 0x2029, 0xD7FF, 0xE000, 0xFEFF, 0xFFFD, 0xFFFE, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF,
)  # fmt: skip
#: Unbounded repetitions (``*``, ``+``, ``{n,}``) go at most this far past their minimum.
_OPEN_END = 24


class Sampler:
    """Texts a GBNF grammar derives from ``root``, drawn by a walk of one of :data:`STYLES`.

    ``budget`` bounds a text's length and ``depth`` how often one rule may be open inside
    itself: past either, every choice takes the shortest way out (each rule's shortest
    derivation is known), so every walk ends and every text is one the grammar derives.
    """

    def __init__(self, gbnf: str, *, budget: int = 20_000, depth: int = 12) -> None:
        self.rules = parse(gbnf)
        self.budget, self.depth = budget, depth
        self._shortest = self._shortest_lengths()
        self._least: dict[int, tuple[int, int]] = {}  # id of an Alt: its shortest and longest option
        self._edges: dict[int, list[int]] = {}  # id of a negated Cls: the edge characters it takes

    def _shortest_lengths(self) -> dict[str, float]:
        lengths = dict.fromkeys(self.rules, math.inf)
        changed = True
        while changed:
            changed = False
            for name, body in self.rules.items():
                length = self._node_min(body, lengths)
                if length < lengths[name]:
                    lengths[name], changed = length, True
        return lengths

    def _node_min(self, node: Node, lengths: dict[str, float]) -> float:
        if isinstance(node, Lit):
            return len(node.text)
        if isinstance(node, Cls):
            return 1
        if isinstance(node, Ref):
            return lengths[node.name]
        return min(self._seq_min(option, lengths) for option in node.options)

    def _seq_min(self, items: tuple[Item, ...], lengths: dict[str, float]) -> float:
        return sum(item.low * self._node_min(item.node, lengths) if item.low else 0 for item in items)

    def sample(self, rng: random.Random, style: str, root: str = "root") -> str:
        out: list[str] = []
        size = 0
        open_rules: dict[str, int] = {}
        # Work: a node to write (with whether to take the shortest way), or a rule to close.
        stack: list[tuple[str, object, bool]] = [("node", Ref(root), False)]
        while stack:
            kind, payload, short = stack.pop()
            if kind == "close":
                open_rules[payload] -= 1  # type: ignore[index]
                continue
            node = payload
            short = short or size > self.budget
            if isinstance(node, Lit):
                out.append(node.text)
                size += len(node.text)
            elif isinstance(node, Cls):
                out.append(chr(self._char(rng, node, style)))
                size += 1
            elif isinstance(node, Ref):
                name = node.name
                deep = open_rules.get(name, 0)
                open_rules[name] = deep + 1
                stack.append(("close", name, short))
                limit = self.depth if style in ("long", "edges") else 3
                stack.append(("node", self.rules[name], short or deep >= limit))
            else:
                assert isinstance(node, Alt)
                option = self._option(rng, node, style, short)
                for item in reversed(option):
                    count = self._count(rng, item, style, short)
                    stack.extend(("node", item.node, short) for _ in range(count))
        return "".join(out)

    def _option(self, rng: random.Random, node: Alt, style: str, short: bool) -> tuple[Item, ...]:
        options = node.options
        if len(options) == 1:
            return options[0]
        known = self._least.get(id(node))
        if known is None:
            lengths = [self._seq_min(option, self._shortest) for option in options]
            known = self._least[id(node)] = (lengths.index(min(lengths)), lengths.index(max(lengths)))
        if short or style == "short":
            return options[known[0]]
        if style == "long":  # the option that can write the most: the one whose least is most
            return options[known[1]] if rng.random() < 0.5 else rng.choice(options)
        return rng.choice(options)

    def _count(self, rng: random.Random, item: Item, style: str, short: bool) -> int:
        low = item.low
        high = low + _OPEN_END if math.isinf(item.high) else int(item.high)
        if short or style == "short" or high == low:
            return low
        if style == "long":
            return high
        if style == "edges":
            return rng.choice((low, high, low + 1 if low < high else low))
        return rng.randint(low, min(high, low + 6))

    def _char(self, rng: random.Random, node: Cls, style: str) -> int:
        def inside(code: int) -> bool:
            hit = any(low <= code <= high for low, high in node.ranges)
            return hit != node.negated and not 0xD800 <= code <= 0xDFFF

        if not node.negated:
            low, high = rng.choice(node.ranges)
            if style == "random":
                return rng.randint(low, high)
            return rng.choice((low, high, rng.randint(low, high)))
        edges = self._edges.get(id(node))
        if edges is None:
            edges = self._edges[id(node)] = [code for code in _EDGE_CHARS if inside(code)]
        if style != "random" and edges and rng.random() < 0.7:
            return rng.choice(edges)
        while True:
            code = rng.choice((rng.randint(0x20, 0x7E), rng.randint(0x80, 0xFFFF), rng.randint(0, 0x10FFFF)))
            if inside(code):
                return code


def calls_rule(rules: dict[str, Alt]) -> str | None:
    """The rule of a route's array of calls (``route_schema(tools, max_calls=K)``), or ``None``.

    It is the last alternative of the rule ``root`` names, and it opens with ``[``: the one-action
    alternatives are objects.
    """
    body = rules["root"]
    while len(body.options) == 1 and len(body.options[0]) == 1 and isinstance(body.options[0][0].node, Ref):
        body = rules[body.options[0][0].node.name]
    last = body.options[-1]
    if len(last) != 1 or not isinstance(last[0].node, Ref):
        return None
    name = last[0].node.name
    opening = rules[name].options[0][0].node if len(rules[name].options) == 1 else None
    return name if isinstance(opening, Lit) and opening.text.startswith("[") else None


def _lark_name(name: str) -> str:
    return "r_" + name.replace("-", "_").lower()


def _lark_class(ranges: tuple[tuple[int, int], ...], negated: bool) -> str:
    if not ranges:  # "." in GBNF: any character
        return r"/[\x{0}-\x{10ffff}]/"
    body = "".join(f"\\x{{{low:x}}}" + (f"-\\x{{{high:x}}}" if high != low else "") for low, high in ranges)
    return f"/[{'^' if negated else ''}{body}]/"


def _lark_node(node: Node) -> str:
    if isinstance(node, Lit):
        return " ".join(_lark_class(((ord(char), ord(char)),), False) for char in node.text) or '""'
    if isinstance(node, Cls):
        return _lark_class(node.ranges, node.negated)
    if isinstance(node, Ref):
        return _lark_name(node.name)
    return "(" + " | ".join(_lark_sequence(option) for option in node.options) + ")"


def _lark_sequence(items: tuple[Item, ...]) -> str:
    parts = []
    for item in items:
        text = _lark_node(item.node)
        if isinstance(item.node, Lit) and len(item.node.text) > 1:
            text = f"({text})"
        if (item.low, item.high) != (1, 1):
            high = "" if math.isinf(item.high) else str(int(item.high))
            text += f"{{{item.low},{high}}}"
        parts.append(text)
    return " ".join(parts) or '""'


def to_lark(gbnf: str) -> str:
    """``gbnf`` in llguidance's Lark, every literal a run of one-character lexemes.

    llguidance's own GBNF reader turns rules of literals into lexemes, and its greedy lexer
    then refuses texts where one such lexeme is a prefix of another (``{`` against
    ``{"a":null}``); lexemes of one character each never overlap, so the grammar is the same.
    """
    rules = parse(gbnf)
    lines = ["%llguidance {}", "start: r_root"]
    lines += [f"{_lark_name(name)}: {_lark_node(body)[1:-1]}" for name, body in rules.items()]
    return "\n".join(lines) + "\n"
