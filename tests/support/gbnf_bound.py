"""The longest text, in bytes, that a GBNF grammar allows: what makes a completion cap a guarantee.

Under a grammar every sampled token writes at least one byte (llama.cpp's grammar sampler
refuses empty pieces) and, once the grammar is complete, only the end-of-generation token
remains. So a grammar whose longest text is N bytes can never be cut off by a cap of N + 1
tokens: a test that gives a routed request that cap may assert the reply is complete.
"""

from __future__ import annotations

import functools
import math
import re

__all__ = ["max_bytes"]

_NAME = re.compile(r"[A-Za-z0-9_-]+")
_REPEAT = re.compile(r"\{\s*(\d+)\s*(?:(,)\s*(\d*)\s*)?\}")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-", "^": "^"}


def max_bytes(grammar: str, root: str = "root") -> float:
    """Bytes of the longest text ``grammar`` derives from ``root``; ``math.inf`` when unbounded."""
    rules = _Parser(grammar).rules()

    @functools.cache
    def rule(name: str, visiting: frozenset[str] = frozenset()) -> float:
        if name in visiting:  # a rule that can reach itself repeats without bound
            return math.inf
        return alternatives(rules[name], visiting | {name})

    def alternatives(node: list[list[tuple[str, object, int, float]]], visiting: frozenset[str]) -> float:
        return max((sequence(items, visiting) for items in node), default=0)

    def sequence(items: list[tuple[str, object, int, float]], visiting: frozenset[str]) -> float:
        total: float = 0
        for kind, value, _low, high in items:
            if kind == "bytes":
                size: float = value  # type: ignore[assignment]
            elif kind == "rule":
                size = rule(value, visiting)  # type: ignore[arg-type]
            else:
                size = alternatives(value, visiting)  # type: ignore[arg-type]
            if high == 0:
                continue
            total += math.inf if (high == math.inf and size > 0) else size * high
        return total

    return rule(root)


class _Parser:
    """GBNF as llama.cpp reads it: rules of alternatives of literals, classes, rule names and groups."""

    def __init__(self, text: str) -> None:
        self.text = re.sub(r"(?m)#[^\n\"]*$", "", text)
        self.at = 0

    def rules(self) -> dict[str, list[list[tuple[str, object, int, float]]]]:
        found = {}
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
        pattern = r"\s*" if newlines else r"[ \t]*(?:\n[ \t]+)?[ \t]*"
        while True:
            match = re.compile(pattern).match(self.text, self.at)
            assert match is not None
            if match.end() == self.at:
                return
            self.at = match.end()

    def _name(self) -> str:
        match = _NAME.match(self.text, self.at)
        assert match, self.text[self.at : self.at + 40]
        self.at = match.end()
        return match.group()

    def _alternatives(self, *, nested: bool) -> list[list[tuple[str, object, int, float]]]:
        options = [self._sequence(nested)]
        while self.at < len(self.text) and self.text[self.at] == "|":
            self.at += 1
            options.append(self._sequence(nested))
        return options

    def _sequence(self, nested: bool) -> list[tuple[str, object, int, float]]:
        items: list[tuple[str, object, int, float]] = []
        while True:
            self._space(newlines=nested)
            if self.at >= len(self.text):
                return items
            char = self.text[self.at]
            if char in "|)" or char == "\n":
                return items
            if char == '"':
                kind, value = "bytes", self._literal()
            elif char == "[":
                kind, value = "bytes", self._class()
            elif char == "(":
                self.at += 1
                value = self._alternatives(nested=True)
                self._space(newlines=True)
                assert self.text[self.at] == ")"
                self.at += 1
                kind = "group"
            elif char == ".":
                self.at += 1
                kind, value = "bytes", 4
            else:
                # A rule name on a new logical line starts the next rule: stop before "name ::=".
                if re.compile(r"[A-Za-z0-9_-]+\s*::=").match(self.text, self.at):
                    return items
                kind, value = "rule", self._name()
            low, high = self._repetition()
            items.append((kind, value, low, high))

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

    def _char(self, end: str) -> str:
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

    def _literal(self) -> int:
        self.at += 1
        chars = []
        while self.text[self.at] != '"':
            chars.append(self._char('"'))
        self.at += 1
        return len("".join(chars).encode("utf-8", "surrogatepass"))

    def _class(self) -> int:
        self.at += 1
        negated = self.text[self.at] == "^"
        if negated:
            self.at += 1
        highest = 0
        while self.text[self.at] != "]":
            first = self._char("]")
            last = first
            if self.text[self.at] == "-" and self.text[self.at + 1] != "]":
                self.at += 1
                last = self._char("]")
            highest = max(highest, ord(first), ord(last))
        self.at += 1
        if negated:
            return 4
        return len(chr(highest).encode("utf-8", "surrogatepass"))
