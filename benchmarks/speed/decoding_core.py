"""What the ways of decoding.py share: the routing cap, the context size, a case as the
conversation a routed backend is told, a backend routed over a catalogue, and a request timed."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from benchmarks.common.corpus import Case, load_catalogue
from toolrouting import Backend, Completion, Message, catalogue_prompt, route_schema, routed_backend

B = TypeVar("B", bound=Backend)

ROUTING_CAP = 512
# Room for the 52-tool catalogue's prompt beside a conversation.
N_CTX = 8192


def told(
    case: Case, catalogues: dict[str, list[dict[str, Any]]]
) -> tuple[list[dict[str, Any]], list[Message]]:
    """A case's catalogue, and its conversation after the catalogue rendered as the system message."""
    if case.catalogue not in catalogues:
        catalogues[case.catalogue] = load_catalogue(case.catalogue)
    tools = catalogues[case.catalogue]
    return tools, [{"role": "system", "content": catalogue_prompt(tools)}, *case.messages]


def timed(request: Callable[[], Completion]) -> tuple[float, Completion]:
    started = time.perf_counter()
    completion = request()
    return time.perf_counter() - started, completion


def routed(backend: B, tools: list[dict[str, Any]], cap: int = ROUTING_CAP) -> B:
    """``backend`` routed over ``tools``: their route schema, and at most ``cap`` tokens a decision."""
    return routed_backend(backend, route_schema(tools), cap)


def routed_request(
    backend: Backend, tools: list[dict[str, Any]], messages: Sequence[Message], cap: int = ROUTING_CAP
) -> Callable[[], Completion]:
    """``backend``'s routed decision over ``tools`` on ``messages``, asked (and timed) when called."""
    return functools.partial(routed(backend, tools, cap).complete, messages)
