"""A server of up to three calls a decision over the scripted backend, and the calls and results
the several-calls tests send through it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from support.serve import TOOLS, served
from toolrouting import AsyncScriptedBackend
from toolrouting._serve import serve_app

FLAT: list[Any] = [{"type": "function", **tool["function"]} for tool in TOOLS]
ANTHROPIC_TOOLS: list[Any] = [
    {"name": f["name"], "description": f["description"], "input_schema": f["parameters"]}
    for f in (tool["function"] for tool in TOOLS)
]
QUESTION = "What does the latch on the storage-room door do?"
SEARCH_ACTION = '{"tool":"search","arguments":{"query":"latch"}}'
READ_ACTION = '{"tool":"read","arguments":{"id":"M1"}}'
TWO = f"[{SEARCH_ACTION},{READ_ACTION}]"


RESULTS = {"search": "M1: the latch on the storage-room door", "read": "M1: lift the latch to open it."}
ANSWER = "Lift it to open the door."


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[AsyncScriptedBackend, str]]:
    """The scripted fake served with decisions of up to three calls; the base URL without ``/v1``."""
    backend = AsyncScriptedBackend()
    with served(serve_app(backend, model="scripted", max_calls=3)) as url:
        yield backend, url.removesuffix("/v1")


def function_calls(output: list[Any]) -> list[tuple[str, str, str]]:
    """A response's output, every item a function call under an item id of its own: each call's
    ``call_id``, name and arguments."""
    assert all(item.type == "function_call" for item in output)
    assert len({item.id for item in output}) == len(output)
    return [(item.call_id, item.name, item.arguments) for item in output]
