"""A server's answer that the prompt is too long for its context, read for its numbers.

Each server says it its own way, all with HTTP 400:

- llama-server: an error of type ``exceed_context_size_error`` ("the request exceeds the
  available context size, try increasing it") with ``n_prompt_tokens`` and ``n_ctx``;
- OpenAI and llama-cpp-python's server: code ``context_length_exceeded``, "This model's maximum
  context length is M tokens. However, your messages resulted in N tokens" (or "you requested T
  tokens (N in the messages, C in the completion)");
- vLLM: the same words without the code ("However, your request has N input tokens").

:func:`context_refusal` reads the error object (under ``error``, or the body itself as vLLM
writes it): a :class:`ContextLengthError` with the prompt's tokens and the context's, each
``None`` where the server does not say; ``None`` for any other answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .._errors import ContextLengthError
from .._json import quoted
from .._limits import MAX_BODY_QUOTE

__all__ = ["context_refusal"]

_LLAMA_SERVER_TYPE = "exceed_context_size_error"
_OPENAI_CODE = "context_length_exceeded"
_MAXIMUM = re.compile(r"maximum context length is (\d+)", re.IGNORECASE)
#: Where the words give the prompt's own tokens, the most precise first.
_PROMPT = [
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"(\d+) in the messages",
        r"messages resulted in (\d+) tokens",
        r"request has (\d+) input tokens",
        r"you requested (\d+) tokens",
    )
]


def context_refusal(url: str, status: int, text: str) -> ContextLengthError | None:
    """The error of the answer ``text`` of HTTP ``status`` from ``url`` where it says the prompt is
    too long for the server's context (module docstring), else ``None``."""
    counts = _counts(status, text)
    if counts is None:
        return None
    prompt_tokens, n_ctx = counts
    said = [f"the prompt is {prompt_tokens} tokens"] if prompt_tokens is not None else []
    said += [f"the context holds {n_ctx}"] if n_ctx is not None else []
    shown = f" ({', '.join(said)})" if said else ""
    return ContextLengthError(
        f"POST {url} answered HTTP {status}: {quoted(text, MAX_BODY_QUOTE)}; the prompt does not fit "
        f"the server's context{shown}: a conversation that long "
        "needs a server started with a larger context (llama-server's -c), or a shorter one",
        prompt_tokens=prompt_tokens,
        n_ctx=n_ctx,
    )


def _counts(status: int, text: str) -> tuple[int | None, int | None] | None:
    if status != 400:
        return None
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return None
    error = body.get("error") if isinstance(body, Mapping) else None
    if not isinstance(error, Mapping):
        error = body if isinstance(body, Mapping) else {}
    message = error.get("message")
    message = message if isinstance(message, str) else ""
    if error.get("type") == _LLAMA_SERVER_TYPE:
        return _count(error.get("n_prompt_tokens")), _count(error.get("n_ctx"))
    maximum = _MAXIMUM.search(message)
    if error.get("code") != _OPENAI_CODE and maximum is None:
        return None
    prompt = next((found for pattern in _PROMPT if (found := pattern.search(message))), None)
    return (
        None if prompt is None else int(prompt[1]),
        None if maximum is None else int(maximum[1]),
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
