"""A reply reasoned first in the model's own tags, on llama.cpp's ``llama-server``.

The server applies its model's chat template (``POST /apply-template``) and completes a raw
prompt (``POST /completion``) under a ``json_schema`` or a GBNF ``grammar``, so the embedded
backend's ``reasoning_budget`` (:mod:`~toolrouting._backends.embedded.reasoning`) is served there as three
requests: the conversation as the server's template writes it; that prompt opened with the
open tag (unless the template opened it) and completed for at most ``N`` tokens, stopped at the
close tag; then the prompt with the thought closed (``\\n</think>\\n\\n``), completed under the
request's schema or grammar and cap. The reply keeps every guarantee of its grammar; the thought
has its own bound, counted by the server.

The steps are a generator of posts (:func:`reasoning_posts`): each HTTP backend sends them with
its own I/O and sends each answer back in. :func:`template_tags` reads the tags from the
server's ``GET /props``, which names its chat template.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Generator, Sequence
from typing import Any

import httpx

from .._errors import BackendResponseError
from .._json import json_type, quoted
from .._limits import MAX_BODY_QUOTE
from .._settings import Settings
from .base import Completion, Message, TextDelta, Usage, reported_count
from .dialects import WireReply, constraint_fields
from .endpoint import Endpoint, endpoint_url
from .reasoning_tags import ReasoningTags, reasoning_tags

__all__ = ["PROPS_PATH", "Post", "advanced", "reasoning_posts", "template_tags", "whole_pieces"]

#: Where llama-server names its chat template (``chat_template``), under the server root.
PROPS_PATH = "/props"
_TEMPLATE_PATH = "/apply-template"
_COMPLETION_PATH = "/completion"


@dataclasses.dataclass(frozen=True)
class Post:
    """One request of the steps: the endpoint it goes to (its ``url`` the step's) and its body."""

    endpoint: Endpoint
    body: dict[str, Any]


def template_tags(body: object) -> ReasoningTags | None:
    """The reasoning tags of the chat template a ``GET /props`` answer names; ``None`` without."""
    template = body.get("chat_template") if isinstance(body, dict) else None
    return reasoning_tags(template) if isinstance(template, str) else None


def reasoning_posts(
    endpoint: Endpoint, messages: Sequence[Message], settings: Settings, tags: ReasoningTags, budget: int
) -> Generator[Post, httpx.Response, Completion]:
    """The three requests of a reply reasoned first (module docstring), each answer sent back in;
    returns the whole :class:`Completion`, its ``reasoning`` the thought. Every failure is a
    :class:`BackendError` that names the request's URL."""
    templated = _at(endpoint, _TEMPLATE_PATH)
    conversation = [{"role": message["role"], "content": message["content"]} for message in messages]
    answer = yield Post(templated, {"messages": conversation})
    prompt = _text_field(templated, _json_body(templated, answer, settings, "a templated prompt"), "prompt")
    prompt += tags.opening(prompt)
    completing = _at(endpoint, _COMPLETION_PATH)
    thought_settings = settings.clone(max_tokens=budget, stop=(tags.close,), json_schema=None)
    answer = yield Post(completing, _completion_body(endpoint, prompt, thought_settings))
    thought = _completed(
        completing, _json_body(completing, answer, thought_settings, "a completion"), thought_settings
    )
    prompt += tags.closing(thought.text)
    answer = yield Post(completing, _completion_body(endpoint, prompt, settings))
    body = _json_body(completing, answer, settings, "a completion")
    reply = _completed(completing, body, settings)
    usage = Usage(
        prompt_tokens=thought.usage.prompt_tokens,
        completion_tokens=thought.usage.completion_tokens + reply.usage.completion_tokens,
        cached_tokens=thought.usage.cached_tokens,
    )
    raw = {**body, "reasoning_tokens": thought.usage.completion_tokens}
    return dataclasses.replace(reply, usage=usage, raw=raw, reasoning=thought.text)


def advanced(steps: Generator[Post, httpx.Response, Completion], answer: httpx.Response) -> Post | Completion:
    """The steps' next post once ``answer`` answered the last, or their completion."""
    try:
        return steps.send(answer)
    except StopIteration as done:
        completion: Completion = done.value
        return completion


def whole_pieces(completion: Completion) -> list[TextDelta | Completion]:
    """A reply reasoned first as a stream's items: its thought, its text, each whole, then itself."""
    pieces: list[TextDelta | Completion] = []
    if completion.reasoning:
        pieces.append(TextDelta(completion.reasoning, reasoning=True))
    if completion.text:
        pieces.append(TextDelta(completion.text))
    return [*pieces, completion]


def _at(endpoint: Endpoint, path: str) -> Endpoint:
    """``endpoint`` posting to ``path`` on its server, so that its errors name that URL."""
    return dataclasses.replace(
        endpoint, url=endpoint_url(endpoint.url.removesuffix(endpoint.dialect.path), path)
    )


def _completion_body(endpoint: Endpoint, prompt: str, settings: Settings) -> dict[str, Any]:
    """A ``/completion`` body: the prompt, the cap as ``n_predict``, the stop strings, the sampling,
    and the schema (``json_schema``) or our grammar (``grammar``) as the dialect sends them."""
    body: dict[str, Any] = {"prompt": prompt, "cache_prompt": True}
    if settings.max_tokens is not None:
        body["n_predict"] = settings.max_tokens
    for name in ("temperature", "top_p", "top_k", "seed"):
        if (value := getattr(settings, name)) is not None:
            body[name] = value
    if settings.stop:
        body["stop"] = list(settings.stop)
    body.update(constraint_fields(endpoint.dialect, settings, schema_key="json_schema"))
    return body


def _json_body(
    endpoint: Endpoint, response: httpx.Response, settings: Settings, expected: str
) -> dict[str, Any]:
    """The answer's JSON object; an error status, a body that is no JSON object, a missing route
    (a server without llama-server's native endpoints) each a :class:`BackendError` naming it."""
    if response.status_code == 404:
        raise BackendResponseError(
            f"{endpoint.url} answered HTTP 404: reasoning in the model's own tags takes llama-server's "
            "/apply-template and /completion, which this server does not have; leave reasoning_tags "
            "out (the route's thought slot is used instead)"
        )
    if not response.is_success:
        raise endpoint.http_error(response, settings)
    try:
        body = json.loads(response.content)
    except (ValueError, RecursionError):
        body = None
    if not isinstance(body, dict):
        raise BackendResponseError(
            f"{endpoint.url} answered HTTP {response.status_code} with "
            f"{quoted(response.text, MAX_BODY_QUOTE)}, not {expected} (a JSON object); check that "
            "base_url points at llama-server"
        )
    return body


def _text_field(endpoint: Endpoint, body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str):
        raise BackendResponseError(
            f"{endpoint.url} answered without a {name!r} string (it is a JSON {json_type(value)}); "
            "check that base_url points at llama-server"
        )
    return value


def _completed(endpoint: Endpoint, body: dict[str, Any], settings: Settings) -> Completion:
    """A ``/completion`` answer as a :class:`Completion`: its ``content``, the tokens the server
    counted, cut when it stopped at ``n_predict`` (``stop_type`` ``limit``)."""
    text = _text_field(endpoint, body, "content")
    timings = body.get("timings")
    prompt = reported_count(body.get("tokens_evaluated"))
    cached = reported_count(timings.get("cache_n")) if isinstance(timings, dict) else 0
    usage = Usage(
        prompt_tokens=prompt,
        completion_tokens=reported_count(body.get("tokens_predicted")),
        cached_tokens=min(cached, prompt),
    )
    finish = "length" if body.get("stop_type") == "limit" else "stop"
    return endpoint.finished(WireReply(text=text, finish_reason=finish, usage=usage), body, settings)
