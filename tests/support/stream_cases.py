"""The streams the HTTP backends' tests are served: their flavours, pieces and timings, and how a
whole answer is read and checked."""

from __future__ import annotations

from support.fault_server import ACTION, ANSWERED_TIMEOUT, HELD_TIMEOUT
from support.http_dialects import MESSAGES
from toolrouting import AsyncOpenAICompatible, Completion, OpenAICompatible

TIMEOUT = ANSWERED_TIMEOUT
SHORT = HELD_TIMEOUT
#: The timeout of a trickled answer, and the gap between its parts: a fortieth of it, so no
#: read comes near the timeout however loaded the machine, while the whole trickled stream (72
#: events) takes almost twice the timeout, and the trickled body (some 200 bytes) more still.
GIVE_UP = 3.0
GAP = GIVE_UP / 40
PIECES = ['{"tool": ', '"search", ', '"arguments": ', '{"query": ', '"llama"}}']
SCHEMA = {"type": "object", "properties": {"tool": {"const": "none"}}, "required": ["tool"]}
FLAVOURS = ("sync", "async")


async def complete(flavour: str, url: str, timeout: float) -> Completion:
    """One whole request, through the sync or the async backend."""
    if flavour == "sync":
        with OpenAICompatible(url, timeout=timeout) as backend:
            return backend.complete(MESSAGES)
    async with AsyncOpenAICompatible(url, timeout=timeout) as async_backend:
        return await async_backend.complete(MESSAGES)


async def assert_usable(url: str) -> None:
    """The next request after a fault succeeds."""
    async with AsyncOpenAICompatible(url, timeout=TIMEOUT) as backend:
        assert (await backend.complete(MESSAGES)).text == ACTION
