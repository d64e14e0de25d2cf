"""The longest text, in bytes, that a GBNF grammar allows: what makes a completion cap a guarantee.

Under a grammar every sampled token writes at least one byte (llama.cpp's grammar sampler
refuses empty pieces) and, once the grammar is complete, only the end-of-generation token
remains. So a grammar whose longest text is N bytes can never be cut off by a cap of N + 1
tokens: a test that gives a routed request that cap may assert the reply is complete.
"""

from __future__ import annotations

import functools
import math

from support.gbnf import Alt, Cls, Item, Lit, Ref, parse

__all__ = ["max_bytes"]


def max_bytes(grammar: str, root: str = "root") -> float:
    """Bytes of the longest text ``grammar`` derives from ``root``; ``math.inf`` when unbounded."""
    rules = parse(grammar)

    @functools.cache
    def rule(name: str, visiting: frozenset[str] = frozenset()) -> float:
        if name in visiting:  # a rule that can reach itself repeats without bound
            return math.inf
        return alternatives(rules[name], visiting | {name})

    def alternatives(node: Alt, visiting: frozenset[str]) -> float:
        return max((sequence(items, visiting) for items in node.options), default=0)

    def sequence(items: tuple[Item, ...], visiting: frozenset[str]) -> float:
        total: float = 0
        for item in items:
            node = item.node
            size: float
            if isinstance(node, Lit):
                size = _utf8(node.text)
            elif isinstance(node, Cls):
                size = 4 if node.negated else _utf8(chr(max((max(pair) for pair in node.ranges), default=0)))
            elif isinstance(node, Ref):
                size = rule(node.name, visiting)
            else:
                size = alternatives(node, visiting)
            if item.high == 0 or size == 0:  # nothing written: 0 * inf would make the bound NaN
                continue
            total += math.inf if (item.high == math.inf and size > 0) else size * item.high
        return total

    return rule(root)


def _utf8(text: str) -> int:
    # A lone surrogate (a \uD800 escape) counts as its three bytes instead of failing the count.
    return len(text.encode("utf-8", "surrogatepass"))
