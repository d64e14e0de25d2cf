"""GBNF text read into a tree of rules, as llama.cpp reads it: the one reader the test support shares.

``parse`` keeps every literal's text and every class's ranges, so one tree serves the walks
that draw texts from a grammar (support.gbnf_sample) and the bound on its longest text
(support.gbnf_bound). It reads what the grammars under test are written in, not every corner
of GBNF: an input it does not understand fails an assertion that shows where.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["Alt", "Cls", "Item", "Lit", "Node", "Ref", "parse"]

_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-", "^": "^"}
_NAME = re.compile(r"[A-Za-z0-9_-]+")
_RULE_START = re.compile(r"[A-Za-z0-9_-]+\s*::=")
_REPEAT = re.compile(r"\{\s*(\d+)\s*(?:(,)\s*(\d*)\s*)?\}")


@dataclass(frozen=True)
class Lit:
    """A literal: ``text`` exactly."""

    text: str


@dataclass(frozen=True)
class Cls:
    """A character class: one character in (or, ``negated``, out of) the inclusive ``ranges``.

    ``.`` reads as the negated class of no ranges: any character.
    """

    ranges: tuple[tuple[int, int], ...]
    negated: bool


@dataclass(frozen=True)
class Ref:
    """A reference to the rule ``name``."""

    name: str


@dataclass(frozen=True)
class Alt:
    """Alternatives (a rule's body or a parenthesised group), each a sequence of items."""

    options: tuple[tuple[Item, ...], ...]


Node = Lit | Cls | Ref | Alt


@dataclass(frozen=True)
class Item:
    """``node`` repeated from ``low`` to ``high`` times (``high`` an int, or ``math.inf``)."""

    node: Node
    low: int
    high: float


def parse(text: str) -> dict[str, Alt]:
    """The rules of the GBNF ``text``, by name, each its body of alternatives."""
    return _Parser(text).rules()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def rules(self) -> dict[str, Alt]:
        found: dict[str, Alt] = {}
        self._space(newlines=True)
        while self.at < len(self.text):
            name = self._name()
            self._space()
            assert self.text.startswith("::=", self.at), self.text[self.at : self.at + 40]
            self.at += 3
            found[name] = self._alternatives(nested=False)
            self._space(newlines=True)
        return found

    def _space(self, *, newlines: bool = False) -> None:
        # A comment runs to the end of its line. Outside parentheses a line break ends the rule,
        # unless the next line is indented: then the rule goes on there.
        text = self.text
        while self.at < len(text):
            char = text[self.at]
            indented = char == "\n" and text[self.at + 1 : self.at + 2] in (" ", "\t")
            if char == "#":
                while self.at < len(text) and text[self.at] != "\n":
                    self.at += 1
            elif char in " \t" or indented or (newlines and char.isspace()):
                self.at += 1
            else:
                return

    def _name(self) -> str:
        match = _NAME.match(self.text, self.at)
        assert match, self.text[self.at : self.at + 40]
        self.at = match.end()
        return match.group()

    def _alternatives(self, *, nested: bool) -> Alt:
        options = [self._sequence(nested)]
        while self.at < len(self.text) and self.text[self.at] == "|":
            self.at += 1
            options.append(self._sequence(nested))
        return Alt(tuple(options))

    def _sequence(self, nested: bool) -> tuple[Item, ...]:
        items: list[Item] = []
        while True:
            self._space(newlines=nested)
            if self.at >= len(self.text) or self.text[self.at] in "|)\n":
                return tuple(items)
            char = self.text[self.at]
            node: Node
            if char == '"':
                node = self._literal()
            elif char == "[":
                node = self._class()
            elif char == "(":
                self.at += 1
                node = self._alternatives(nested=True)
                self._space(newlines=True)
                assert self.text[self.at] == ")"
                self.at += 1
            elif char == ".":
                self.at += 1
                node = Cls((), True)
            else:
                # A rule name on a new logical line starts the next rule: stop before "name ::=".
                if _RULE_START.match(self.text, self.at):
                    return tuple(items)
                node = Ref(self._name())
            low, high = self._repetition()
            items.append(Item(node, low, high))

    def _repetition(self) -> tuple[int, float]:
        if self.at < len(self.text) and self.text[self.at] in "*+?":
            mark = self.text[self.at]
            self.at += 1
            return {"*": (0, math.inf), "+": (1, math.inf), "?": (0, 1)}[mark]
        match = _REPEAT.match(self.text, self.at)
        if not match:
            return 1, 1
        self.at = match.end()
        low = int(match.group(1))
        if match.group(2) is None:
            return low, low
        return low, (int(match.group(3)) if match.group(3) else math.inf)

    def _char(self) -> str:
        char = self.text[self.at]
        if char != "\\":
            self.at += 1
            return char
        code = self.text[self.at + 1]
        if code in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[code]
            digits = self.text[self.at + 2 : self.at + 2 + width]
            self.at += 2 + width
            return chr(int(digits, 16))
        self.at += 2
        return _ESCAPES.get(code, code)

    def _literal(self) -> Lit:
        self.at += 1
        chars = []
        while self.text[self.at] != '"':
            chars.append(self._char())
        self.at += 1
        return Lit("".join(chars))

    def _class(self) -> Cls:
        self.at += 1
        negated = self.text[self.at] == "^"
        if negated:
            self.at += 1
        ranges = []
        while self.text[self.at] != "]":
            first = self._char()
            last = first
            if self.text[self.at] == "-" and self.text[self.at + 1] != "]":
                self.at += 1
                last = self._char()
            ranges.append((ord(first), ord(last)))
        self.at += 1
        return Cls(tuple(ranges), negated)
