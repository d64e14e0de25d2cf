"""How the tests run a real model: one sampling seed, thread count and temperature for all of them.

Greedy decoding of a small model differs across CPUs (AVX2 or AVX-512 float kernels),
thread counts and batching, so the model tests assert only what the grammar, the cap and
our code guarantee. To show that they hold whatever the model writes, run them over
several machines' worth of variation::

    for seed in 0 1 2 3 4; do for threads in 1 2; do
        TOOLROUTING_TEST_SEED=$seed TOOLROUTING_TEST_THREADS=$threads .venv/bin/python -m pytest -m model
    done; done

The tests sample (temperature above zero) so that each seed writes other replies.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from typing import Any

from support.gbnf_bound import max_bytes

__all__ = ["TEST_SEED", "TEST_TEMPERATURE", "TEST_THREADS", "demo_cap", "guaranteed_cap", "route_gbnf"]


def _number(name: str, default: str) -> str:
    value = os.environ.get(name, "").strip()
    return value or default


#: The sampling seed of every model request the tests make.
TEST_SEED = int(_number("TOOLROUTING_TEST_SEED", "0"))

#: Threads of every model the tests load (in-process and the llama_cpp.server fixture).
TEST_THREADS = int(_number("TOOLROUTING_TEST_THREADS", "2"))

#: The sampling temperature: above zero, so that the seed matters.
TEST_TEMPERATURE = float(_number("TOOLROUTING_TEST_TEMPERATURE", "0.8"))


@functools.cache
def _gbnf(schema_text: str) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return str(json_schema_to_gbnf(schema_text))


def route_gbnf(schema: Mapping[str, Any]) -> str:
    """The GBNF llama.cpp's converter (in-process and in llama_cpp.server) makes of ``schema``."""
    return _gbnf(json.dumps(schema))


def guaranteed_cap(schema: Mapping[str, Any]) -> int:
    """A completion cap no reply under ``schema``'s llama.cpp grammar can reach.

    Every token writes at least one byte, so a reply of the grammar's longest text is one
    token short of this cap and ends on the end token instead. Fails for a schema whose
    grammar is unbounded (a string without ``maxLength``, an array without ``maxItems``).
    """
    longest = max_bytes(route_gbnf(schema))
    assert longest < float("inf"), "the schema leaves a string or an array unbounded: bound it"
    return int(longest) + 1


def demo_cap() -> int:
    """A routing cap no action of the demo store can reach: its widest catalogue, every note listed,
    or its notes offered by title (as ``toolrouting run`` makes it), whichever is wider."""
    from toolrouting import route_schema
    from toolrouting.demo import MemoryStore

    with MemoryStore.sample() as fresh, MemoryStore.sample() as searched:
        search = fresh.tools_for_llm()
        for word in ("latch", "generator", "keys", "radio", "stove", "water"):
            searched.call("memory_search", {"query": word})
        read = [tool for tool in searched.tools_for_llm() if tool["function"]["name"] == "memory_read"]
        ids = read[0]["function"]["parameters"]["properties"]["ids"]["items"]["enum"]
        assert len(ids) == len(searched.read(f"M{k}" for k in range(1, 100))), "a note was never listed"
    with MemoryStore.sample(titles=True) as titled:
        by_title = titled.tools_for_llm()
    return max(guaranteed_cap(route_schema([*search, *read])), guaranteed_cap(route_schema(by_title)))
