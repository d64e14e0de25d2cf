"""A conversation past the context through the official clients, on the real embedded model: each
API's own 400, which the SDK raises as its BadRequestError and does not send again, and a
``count_tokens`` that counts the very number the refusal names.

The model is the default one with a context of 512 tokens; the conversation is one user message
of about 1,400 tokens, with a catalogue. The clients keep their default retries (two), and every
request that reaches the server is counted: one each, whole or streamed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import anthropic
import anyio
import openai
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send
from support.model import TEST_SEED, TEST_THREADS
from support.serve import TOOLS, served

from toolrouting import AsyncEmbeddedLlama, EmbeddedLlama, Settings
from toolrouting._serve import serve_app

pytestmark = pytest.mark.model

N_CTX = 512
LONG = "What does the latch do? " + "latch " * 1400
ANTHROPIC_TOOLS: list[Any] = [
    {
        "name": tool["function"]["name"],
        "description": tool["function"]["description"],
        "input_schema": tool["function"]["parameters"],
    }
    for tool in TOOLS
]
RESPONSES_TOOLS: list[Any] = [{"type": "function", **tool["function"]} for tool in TOOLS]
OPENAI_WORDS = re.compile(
    r"^This model's maximum context length is (\d+) tokens\. "
    r"However, your messages resulted in (\d+) tokens\."
)
ANTHROPIC_WORDS = re.compile(r"^prompt is too long: (\d+) tokens > (\d+) maximum$")


class Counted:
    """The requests that reach the server, each path as it arrives."""

    def __init__(self, app: ASGIApp, seen: list[str]) -> None:
        self.app = app
        self.seen = seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append(scope["path"])
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, list[str]]]:
    """The base URL of the default model served with a context of ``N_CTX``, and the paths asked."""
    settings = Settings(temperature=0.0, seed=TEST_SEED, max_tokens=32)
    backend = AsyncEmbeddedLlama(EmbeddedLlama(settings=settings, n_threads=TEST_THREADS, n_ctx=N_CTX))
    app = serve_app(backend, model="smollm2")
    seen: list[str] = []
    app.add_middleware(Counted, seen=seen)
    try:
        with served(app) as url:
            yield url, seen
    finally:
        anyio.run(backend.aclose)


@pytest.fixture
def url(server: tuple[str, list[str]]) -> str:
    return server[0]


@pytest.fixture
def seen(server: tuple[str, list[str]]) -> list[str]:
    server[1].clear()
    return server[1]


def _openai(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key="unused")  # max_retries left at its default


def _anthropic(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="unused")


def _openai_refusal(error: openai.BadRequestError) -> tuple[int, int]:
    body: Any = error.body
    assert error.status_code == 400
    assert body["type"] == "invalid_request_error"
    assert body["code"] == "context_length_exceeded"
    words = OPENAI_WORDS.match(body["message"])
    assert words is not None, body["message"]
    return int(words[2]), int(words[1])


def _counted(url: str) -> int:
    with _anthropic(url) as client:
        counted = client.messages.count_tokens(
            model="smollm2", messages=[{"role": "user", "content": LONG}], tools=ANTHROPIC_TOOLS
        )
    return counted.input_tokens


def test_messages_answers_prompt_is_too_long_with_count_tokens_number(url: str, seen: list[str]) -> None:
    counted = _counted(url)
    assert counted >= N_CTX
    client = _anthropic(url)
    asked: dict[str, Any] = {
        "model": "smollm2",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": LONG}],
        "tools": ANTHROPIC_TOOLS,
    }
    with client:
        with pytest.raises(anthropic.BadRequestError) as whole:
            client.messages.create(**asked)
        with pytest.raises(anthropic.BadRequestError) as streamed, client.messages.stream(**asked) as stream:
            stream.get_final_message()
    assert seen == ["/v1/messages/count_tokens", "/v1/messages", "/v1/messages"]  # none sent again
    for refused in (whole.value, streamed.value):
        assert refused.status_code == 400
        body: Any = refused.body
        assert body["type"] == "error"
        assert body["error"]["type"] == "invalid_request_error"
        assert body["error"]["message"] == f"prompt is too long: {counted} tokens > {N_CTX} maximum"
        assert ANTHROPIC_WORDS.match(body["error"]["message"])


def test_chat_completions_answers_context_length_exceeded_whole_and_streamed(
    url: str, seen: list[str]
) -> None:
    counted = _counted(url)
    client = _openai(url)
    messages: Any = [{"role": "user", "content": LONG}]
    with client:
        with pytest.raises(openai.BadRequestError) as whole:
            client.chat.completions.create(model="smollm2", messages=messages, tools=TOOLS)
        with pytest.raises(openai.BadRequestError) as streamed:
            for _ in client.chat.completions.create(
                model="smollm2", messages=messages, tools=TOOLS, stream=True
            ):
                pass
    assert seen == ["/v1/messages/count_tokens", *["/v1/chat/completions"] * 2]  # none sent again
    for refused in (whole.value, streamed.value):
        assert _openai_refusal(refused) == (counted, N_CTX)


def test_responses_answers_context_length_exceeded_whole_and_streamed(url: str, seen: list[str]) -> None:
    counted = _counted(url)
    client = _openai(url)
    with client:
        with pytest.raises(openai.BadRequestError) as whole:
            client.responses.create(model="smollm2", input=LONG, tools=RESPONSES_TOOLS)
        with pytest.raises(openai.BadRequestError) as streamed:
            for _ in client.responses.create(
                model="smollm2",
                input=LONG,
                tools=RESPONSES_TOOLS,
                stream=True,
            ):
                pass
    assert seen == ["/v1/messages/count_tokens", *["/v1/responses"] * 2]
    for refused in (whole.value, streamed.value):
        assert _openai_refusal(refused) == (counted, N_CTX)


def test_a_conversation_that_fits_is_answered_after_the_refusals(url: str) -> None:
    with _openai(url) as client:
        reply = client.chat.completions.create(
            model="smollm2", messages=[{"role": "user", "content": "What does the latch do?"}], max_tokens=8
        )
    assert reply.choices[0].finish_reason in ("stop", "length")
