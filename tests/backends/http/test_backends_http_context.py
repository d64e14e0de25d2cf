"""A server's answer that the prompt is too long is a ContextLengthError with the server's numbers.

The servers' own words are read from real servers where one runs here (llama.cpp's llama-server
and llama-cpp-python's server, the session fixtures, each with the default model and a context
of 2,048 tokens); vLLM's and OpenAI's, which no local server speaks, are their documented bodies.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from toolrouting import (
    AsyncOpenAICompatible,
    BackendHTTPError,
    ContextLengthError,
    Message,
    OpenAICompatible,
    Settings,
)
from toolrouting._backends.context_refusals import context_refusal

#: Far past a 2,048-token context in any tokenizer: a word and a space are at least a token.
LONG: list[Message] = [{"role": "user", "content": "latch " * 3000}]

_OPENAI = {
    "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in "
    "9000 tokens. Please reduce the length of the messages.",
    "type": "invalid_request_error",
    "param": "messages",
    "code": "context_length_exceeded",
}
_VLLM = {
    "object": "error",
    "message": "This model's maximum context length is 4096 tokens. However, your request has 5000 input "
    "tokens. Please reduce the length of the input messages.",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}
_VLLM_OLDER = {
    **_VLLM,
    "message": "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens "
    "(2000 in the messages, 100 in the completion). Please reduce the length of the messages or completion.",
}
_LLAMA_SERVER = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 3012,
        "n_ctx": 2048,
    }
}


@pytest.mark.parametrize(
    ("body", "counts"),
    [
        ({"error": _OPENAI}, (9000, 8192)),
        (_VLLM, (5000, 4096)),
        (_VLLM_OLDER, (2000, 2048)),
        (_LLAMA_SERVER, (3012, 2048)),
        ({"error": {"code": "context_length_exceeded", "message": "too long"}}, (None, None)),
    ],
    ids=["openai", "vllm", "vllm-older", "llama-server", "code-alone"],
)
def test_each_servers_words_are_read_for_their_numbers(body: Any, counts: tuple[Any, Any]) -> None:
    refused = context_refusal("http://up/v1/chat/completions", 400, json.dumps(body))
    assert refused is not None
    assert (refused.prompt_tokens, refused.n_ctx) == counts
    assert not refused.retryable
    assert "http://up/v1/chat/completions" in str(refused)
    assert "larger context" in str(refused)


@pytest.mark.parametrize(
    ("status", "text"),
    [
        (400, json.dumps({"error": {"message": "Failed to initialize samplers", "type": "invalid_request"}})),
        (400, "the context is not JSON"),
        (400, json.dumps(["maximum context length is 10"])),
        (500, json.dumps(_LLAMA_SERVER)),
        (413, json.dumps({"error": _OPENAI})),
    ],
    ids=["another-400", "not-json", "not-an-object", "a-500", "a-413"],
)
def test_any_other_answer_is_not_read_as_the_context(status: int, text: str) -> None:
    assert context_refusal("http://up", status, text) is None


def _settings() -> Settings:
    return Settings(max_tokens=8, temperature=0.0)


@pytest.mark.model
@pytest.mark.parametrize(
    ("fixture", "dialect"), [("llama_server", "llama.cpp"), ("llama_cpp_server", "llama-cpp-python")]
)
def test_a_real_servers_refusal_is_a_context_length_error(
    fixture: str, dialect: str, request: pytest.FixtureRequest
) -> None:
    url: str = request.getfixturevalue(fixture)
    with (
        OpenAICompatible(url, dialect=dialect, settings=_settings()) as backend,
        pytest.raises(ContextLengthError) as refused,
    ):
        backend.complete(LONG)
    # Not a BackendHTTPError: a caller that handles those as the server's fault never sees this one.
    assert not isinstance(refused.value, BackendHTTPError)
    prompt, context = refused.value.prompt_tokens, refused.value.n_ctx
    assert context is not None
    assert 0 < context <= 2048
    assert prompt is not None
    assert prompt >= 3000 > context


@pytest.mark.model
def test_llama_servers_refusal_of_a_stream_comes_before_it_opens(llama_server: str) -> None:
    """llama-server answers the first error of a stream as a whole answer, its 400 (server-context.cpp:
    "in streaming mode, the first error must be treated as non-stream response"). llama-cpp-python's
    server opens the stream with 200 and ends it empty, which reads as a stream cut short."""

    async def streamed() -> ContextLengthError:
        async with AsyncOpenAICompatible(llama_server, dialect="llama.cpp", settings=_settings()) as backend:
            with pytest.raises(ContextLengthError) as refused:
                async for _ in backend.stream(LONG):
                    pass
            return refused.value

    error = anyio.run(streamed)
    assert error.prompt_tokens is not None
    assert error.n_ctx is not None
    assert error.prompt_tokens >= error.n_ctx
