"""GBNF as we write it: a small expression tree, its text as llama.cpp parses it, and its longest text.

llama.cpp's parser (``src/llama-grammar.cpp``) reads rule names of ``[A-Za-z0-9-]``, the
escapes ``\\x`` ``\\u`` ``\\U`` ``\\t`` ``\\r`` ``\\n`` ``\\\\`` ``\\"`` ``\\[`` ``\\]``
``\\-`` and nothing else (``\\^`` is "unknown escape"), and refuses a repetition whose count
times the rules of the repeated item reaches ``MAX_REPETITION_THRESHOLD``. So every repeated
item here is one rule reference or one terminal, and every count is at most
:data:`GBNF_MAX_REPETITION`; the text is ASCII, one rule a line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from .._limits import GBNF_MAX_REPETITION

__all__ = ["Alt", "Cls", "Expr", "Grammar", "Lit", "Ref", "Rep", "Seq", "literal_text", "seq"]


@dataclass(frozen=True)
class Lit:
    """A literal text."""

    text: str


@dataclass(frozen=True)
class Cls:
    """A character class: inclusive code-point ranges, or everything but them when ``negated``."""

    ranges: tuple[tuple[int, int], ...]
    negated: bool = False


@dataclass(frozen=True)
class Ref:
    """A reference to a named rule."""

    name: str


@dataclass(frozen=True)
class Seq:
    """Items one after another."""

    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Alt:
    """One of the options."""

    options: tuple[Expr, ...]


@dataclass(frozen=True)
class Rep:
    """``item`` from ``low`` to ``high`` times (``None``: no upper bound); ``item`` is a Ref, Lit or Cls."""

    item: Ref | Lit | Cls
    low: int
    high: int | None

    def __post_init__(self) -> None:
        # llama.cpp refuses counts at its threshold; the compiler caps them before they get here.
        if self.low > GBNF_MAX_REPETITION or (self.high is not None and self.high > GBNF_MAX_REPETITION):
            raise ValueError(f"a repetition count above {GBNF_MAX_REPETITION}")


Expr = Lit | Cls | Ref | Seq | Alt | Rep


def seq(*items: Expr) -> Expr:
    """Items one after another, nested sequences flattened and neighbouring literals joined."""
    flat: list[Expr] = []
    for item in items:
        for part in item.items if isinstance(item, Seq) else (item,):
            if isinstance(part, Lit) and flat and isinstance(flat[-1], Lit):
                flat[-1] = Lit(flat[-1].text + part.text)
            else:
                flat.append(part)
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


# Printable ASCII written as itself in a literal; '#' would start a comment for a careless
# reader of the text (it is safe inside quotes for llama.cpp, but \x23 costs nothing).
_PLAIN = frozenset(chr(c) for c in range(0x20, 0x7F)) - set('"\\#')
_CLASS_ESCAPES = {"]": "\\]", "-": "\\-", "[": "\\[", "^": "\\x5E"}


def _char(code: int, *, in_class: bool) -> str:
    char = chr(code)
    if in_class and char in _CLASS_ESCAPES:
        return _CLASS_ESCAPES[char]
    if char in _PLAIN:
        return char
    if char in '"\\':
        return "\\" + char
    if code < 0x100:
        return f"\\x{code:02X}"
    if code < 0x10000:
        return f"\\u{code:04X}"
    return f"\\U{code:08X}"


def literal_text(text: str) -> str:
    """``text`` as a GBNF literal, quotes included: ASCII only, every other character escaped."""
    return '"' + "".join(_char(ord(char), in_class=False) for char in text) + '"'


def _class_text(node: Cls) -> str:
    parts = []
    for low, high in node.ranges:
        parts.append(_char(low, in_class=True))
        if high != low:
            parts.append("-" + _char(high, in_class=True))
    return "[" + ("^" if node.negated else "") + "".join(parts) + "]"


def _text(node: Expr, *, top: bool = False) -> str:
    if isinstance(node, Lit):
        return literal_text(node.text)
    if isinstance(node, Cls):
        return _class_text(node)
    if isinstance(node, Ref):
        return node.name
    if isinstance(node, Seq):
        text = " ".join(_text(item) for item in node.items)
        return text if top or len(node.items) == 1 else f"({text})"
    if isinstance(node, Alt):
        text = " | ".join(_text(option, top=True) for option in node.options)
        return text if top else f"({text})"
    mark = _count(node.low, node.high)
    return _text(node.item) + mark


def _count(low: int, high: int | None) -> str:
    if (low, high) == (0, 1):
        return "?"
    if (low, high) == (0, None):
        return "*"
    if (low, high) == (1, None):
        return "+"
    if high is None:
        return f"{{{low},}}"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


def _references(node: Expr) -> set[str]:
    if isinstance(node, Ref):
        return {node.name}
    if isinstance(node, (Seq, Alt)):
        return set().union(
            *(_references(item) for item in (node.items if isinstance(node, Seq) else node.options))
        )
    return _references(node.item) if isinstance(node, Rep) else set()


_NAME = re.compile(r"[A-Za-z0-9-]+")


class Grammar:
    """Named rules in the order they were made, ``root`` (defined last, written first) at the top."""

    def __init__(self) -> None:
        self._rules: dict[str, Expr | None] = {"root": None}
        self._by_body: dict[Expr, str] = {}
        self._numbers: dict[str, int] = {}

    def reserve(self, hint: str) -> str:
        """A fresh rule name made from ``hint``, defined later with :meth:`define`."""
        base = "-".join(_NAME.findall(hint.lower()))[:48].strip("-") or "r"
        name, number = base, self._numbers.get(base, 1)
        while name in self._rules:  # each base remembers its last number: no quadratic probing
            number += 1
            name = f"{base}-{number}"
        self._numbers[base] = number
        self._rules[name] = None
        return name

    def define(self, name: str, body: Expr) -> str:
        self._rules[name] = body
        self._by_body.setdefault(body, name)
        return name

    def rule(self, hint: str, body: Expr) -> str:
        """The name of a rule with this body: an existing one when the body is already a rule."""
        if isinstance(body, Ref):
            return body.name
        known = self._by_body.get(body)
        if known is not None:
            return known
        return self.define(self.reserve(hint), body)

    def text(self) -> str:
        """The rules ``root`` reaches, one a line, with one-literal and alias rules written in place."""
        inline = {
            name: body
            for name, body in self._rules.items()
            if isinstance(body, (Lit, Ref)) and name != "root"
        }

        def written(node: Expr) -> Expr:
            if isinstance(node, Ref):
                return written(inline[node.name]) if node.name in inline else node
            if isinstance(node, Seq):
                return seq(*(written(item) for item in node.items))
            if isinstance(node, Alt):
                return Alt(tuple(written(option) for option in node.options))
            if isinstance(node, Rep):
                item = written(node.item)
                assert isinstance(item, (Ref, Lit, Cls))
                return Rep(item, node.low, node.high)
            return node

        bodies: dict[str, Expr] = {}
        todo = ["root"]
        while todo:
            name = todo.pop()
            if name in bodies:
                continue
            body = self._rules[name]
            assert body is not None, f"rule {name} was reserved and never defined"
            bodies[name] = written(body)
            todo.extend(sorted(_references(bodies[name]), reverse=True))
        return "".join(
            f"{name} ::= {_text(bodies[name], top=True)}\n" for name in self._rules if name in bodies
        )

    def max_bytes(self, root: str = "root", *, characters: bool = False) -> int | None:
        """Bytes (or ``characters``) of the longest text ``root`` derives; ``None`` when there is no longest.

        Iterative over the rules: a chain of rules (one per optional member of a wide object)
        is as long as the schema is wide, and must not meet Python's recursion limit.
        """
        done: dict[str, float] = {}
        active: set[str] = set()

        def size(name: str) -> float:
            # A rule that reaches itself through a bracket repeats without end.
            return math.inf if name in active else done[name]

        stack: list[tuple[str, bool]] = [(root, False)]
        while stack:
            name, expanded = stack.pop()
            if name in done:
                continue
            body = self._rules[name]
            assert body is not None
            if expanded:
                active.discard(name)
                done[name] = _longest(body, size, characters)
                continue
            if name in active:
                continue
            active.add(name)
            stack.append((name, True))
            stack.extend((child, False) for child in sorted(_references(body)) if child not in done)
        total = done[root]
        return None if math.isinf(total) else int(total)


def _longest(node: Expr, size: Callable[[str], float], characters: bool) -> float:
    """Bytes (or characters) of the longest text ``node`` derives, with ``size`` giving each rule's."""
    if isinstance(node, Lit):
        return len(node.text) if characters else len(node.text.encode("utf-8"))
    if isinstance(node, Cls):
        if characters:
            return 1
        return 4 if node.negated else len(chr(max(high for _, high in node.ranges)).encode())
    if isinstance(node, Ref):
        return size(node.name)
    if isinstance(node, Seq):
        return sum(_longest(item, size, characters) for item in node.items)
    if isinstance(node, Alt):
        return max(_longest(option, size, characters) for option in node.options)
    item = _longest(node.item, size, characters)
    if node.high is None:
        return math.inf if item else 0
    return item * node.high
