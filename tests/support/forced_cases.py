"""The forced-token backend's conversation and catalogue, shared by its tests on the real default model."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from support.catalogues import tool
from support.gbnf_bound import max_bytes
from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS
from toolrouting import EmbeddedLlama, Message, Settings, route_grammar, route_schema, routed_backend

SEARCH = tool("memory_search", query={"type": "string", "maxLength": 40})
READ = tool("memory_read", ids={"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 4})


SAMPLING = Settings(max_tokens=128, temperature=TEST_TEMPERATURE, seed=TEST_SEED)


def conversation(tools: list[dict[str, Any]], prompt: str) -> list[Message]:
    names = ", ".join(t["function"]["name"] for t in tools)
    action = '{"tool": NAME, "arguments": {...}} or {"tool": "none"}'
    system = f"Answer with one JSON object: {action}. Tools: {names}."
    return [{"role": "system", "content": system}, {"role": "user", "content": prompt}]


@pytest.fixture(scope="module")
def backend() -> Iterator[EmbeddedLlama]:
    with EmbeddedLlama(settings=SAMPLING, n_threads=TEST_THREADS, seed=TEST_SEED) as loaded:
        assert loaded.forced_tokens  # the default
        yield loaded


def routed(backend: EmbeddedLlama, tools: list[dict[str, Any]], **changes: Any) -> EmbeddedLlama:
    """A routed clone with a cap no reply reaches: one token past the longest text of the grammar
    it decodes under (ours, bounded), since every token writes at least one byte."""
    schema = route_schema(tools)
    longest = max_bytes(route_grammar(schema, bounded=True).gbnf)
    assert longest < float("inf")
    cap = int(longest) + 1
    return routed_backend(backend.clone(settings=backend.settings.clone(**changes)), schema, cap)
