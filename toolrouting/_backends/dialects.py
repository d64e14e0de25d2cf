"""Where each server family wants the schema, the cap and the sampling settings, and what it answers.

Every shape below is cited from the server's own source or docs; docs/backends.md has the
same table for readers. A dialect only builds and reads JSON: the HTTP lives in _openai.py.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NotRequired, Required, TypedDict

from .._json import plain
from .._limits import MAX_BODY_QUOTE
from .._parse import quote_reply
from .._settings import Settings
from .base import Message, Usage

__all__ = [
    "DIALECTS",
    "ChatCompletionRequest",
    "Dialect",
    "DialectName",
    "JsonSchemaFormat",
    "OllamaChatRequest",
    "OllamaOptions",
    "ResponseFormat",
    "WireReply",
    "WireShapeError",
    "get_dialect",
]

DialectName = Literal["openai", "llama.cpp", "llama-cpp-python", "koboldcpp", "ollama"]


class JsonSchemaFormat(TypedDict):
    """OpenAI's ``response_format.json_schema``."""

    name: str
    schema: dict[str, Any]
    strict: bool


class ResponseFormat(TypedDict):
    """``response_format``: OpenAI's ``json_schema`` wrapper, or ``json_object`` with a ``schema``."""

    type: Literal["json_schema", "json_object"]
    json_schema: NotRequired[JsonSchemaFormat]
    schema: NotRequired[dict[str, Any]]


class ChatCompletionRequest(TypedDict, total=False):
    """A ``/v1/chat/completions`` body, with the fields any of our OpenAI-shaped dialects sends."""

    model: str
    messages: Required[list[Message]]
    max_tokens: int
    max_length: int
    temperature: float
    top_p: float
    top_k: int
    seed: int
    stop: list[str]
    response_format: ResponseFormat


class OllamaOptions(TypedDict, total=False):
    """Ollama's ``options``: the Modelfile parameters a request may override."""

    num_predict: int
    temperature: float
    top_p: float
    top_k: int
    seed: int
    stop: list[str]


class OllamaChatRequest(TypedDict, total=False):
    """An Ollama ``/api/chat`` body."""

    model: Required[str]
    messages: Required[list[Message]]
    stream: Required[bool]
    format: dict[str, Any]
    options: OllamaOptions


@dataclasses.dataclass(frozen=True, kw_only=True)
class WireReply:
    """What a dialect read from a response body."""

    text: str
    finish_reason: str | None
    usage: Usage


class WireShapeError(ValueError):
    """A response body that is not the dialect's completion shape; the message says what it is instead."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Dialect:
    """One server family's wire format."""

    name: DialectName
    path: str
    """The endpoint under the server root."""
    schema_field: str
    """Where the schema goes, in words, for error messages."""
    requires_model: bool
    build: Callable[[Sequence[Message], Settings, str | None], Mapping[str, Any]]
    parse: Callable[[Any], WireReply]


def _messages(messages: Sequence[Message]) -> list[Message]:
    return [{"role": message["role"], "content": message["content"]} for message in messages]


def _chat_body(messages: Sequence[Message], settings: Settings, model: str | None) -> ChatCompletionRequest:
    """The fields every OpenAI-shaped dialect shares: only what is set goes on the wire."""
    body: ChatCompletionRequest = {"messages": _messages(messages)}
    if model is not None:
        body["model"] = model
    if settings.max_tokens is not None:
        body["max_tokens"] = settings.max_tokens
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.top_p is not None:
        body["top_p"] = settings.top_p
    if settings.top_k is not None:
        # Not an OpenAI parameter: OpenAI itself answers 400, which is loud, while vLLM,
        # SGLang, LM Studio, OpenRouter, llama.cpp, llama-cpp-python and KoboldCpp take it.
        body["top_k"] = settings.top_k
    if settings.seed is not None:
        body["seed"] = settings.seed
    if settings.stop:
        body["stop"] = list(settings.stop)
    return body


def _json_schema_format(settings: Settings, schema: Mapping[str, Any]) -> ResponseFormat:
    return {
        "type": "json_schema",
        "json_schema": {
            "name": settings.json_schema_name,
            "schema": plain(schema),
            "strict": settings.json_schema_strict,
        },
    }


def _openai_body(messages: Sequence[Message], settings: Settings, model: str | None) -> ChatCompletionRequest:
    # OpenAI API reference, Chat Completions, `response_format`:
    # {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}; vLLM, SGLang,
    # LM Studio and OpenRouter take the same shape on their /v1/chat/completions.
    body = _chat_body(messages, settings, model)
    if settings.json_schema is not None:
        body["response_format"] = _json_schema_format(settings, settings.json_schema)
    return body


def _json_object_body(
    messages: Sequence[Message], settings: Settings, model: str | None
) -> ChatCompletionRequest:
    # llama.cpp tools/server/README.md (/v1/chat/completions): "schema-constrained JSON (e.g.
    # {"type": "json_object", "schema": {...}})"; server-common.cpp oaicompat_chat_params_parse
    # reads response_format.schema for json_object, and server-task.cpp takes max_tokens as
    # n_predict and top_k natively.
    # llama-cpp-python llama_cpp/server/types.py CreateChatCompletionRequest: response_format is
    # llama_types.ChatCompletionRequestResponseFormat, type "text" | "json_object" with an
    # optional schema (json_schema is refused with HTTP 500); max_tokens, top_k and seed are fields.
    body = _chat_body(messages, settings, model)
    if settings.json_schema is not None:
        body["response_format"] = {"type": "json_object", "schema": plain(settings.json_schema)}
    return body


def _koboldcpp_body(
    messages: Sequence[Message], settings: Settings, model: str | None
) -> ChatCompletionRequest:
    # koboldcpp.py transform_genparams, OpenAI chat (api_format 4): response_format json_schema
    # has json_schema.schema turned into GBNF (name and strict unused); the older top-level
    # json_schema is read only when response_format is absent. The budget is max_length, which
    # current releases take over max_tokens while older ones read max_tokens alone: both go.
    # stop becomes stop_sequence and seed sampler_seed on its side; top_k is native.
    body = _chat_body(messages, settings, model)
    if settings.max_tokens is not None:
        body["max_length"] = settings.max_tokens
    if settings.json_schema is not None:
        body["response_format"] = _json_schema_format(settings, settings.json_schema)
    return body


def _ollama_body(messages: Sequence[Message], settings: Settings, model: str | None) -> OllamaChatRequest:
    # ollama docs/api.md, "Generate a chat completion" (POST /api/chat): model is required,
    # format takes a JSON schema, options carries Modelfile parameters (num_predict, temperature,
    # top_p, top_k, seed, stop), and stream false returns one object instead of a stream.
    if model is None:
        raise ValueError("the ollama dialect needs model=, the name `ollama list` shows")
    body: OllamaChatRequest = {"model": model, "messages": _messages(messages), "stream": False}
    if settings.json_schema is not None:
        body["format"] = plain(settings.json_schema)
    options: OllamaOptions = {}
    if settings.max_tokens is not None:
        options["num_predict"] = settings.max_tokens
    if settings.temperature is not None:
        options["temperature"] = settings.temperature
    if settings.top_p is not None:
        options["top_p"] = settings.top_p
    if settings.top_k is not None:
        options["top_k"] = settings.top_k
    if settings.seed is not None:
        options["seed"] = settings.seed
    if settings.stop:
        options["stop"] = list(settings.stop)
    if options:
        body["options"] = options
    return body


def _count(value: object) -> int:
    """A token count as reported, 0 where the server gave none or nonsense."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _json_type(value: object) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def _error_member(body: dict[str, Any]) -> str:
    """A server's ``error`` member, quoted, for a body that carries one instead of a completion."""
    if "error" not in body:
        return ""
    quoted = json.dumps(body["error"], ensure_ascii=False)
    more = "…" if len(quoted) > MAX_BODY_QUOTE else ""
    return f"; it carries an error: {quoted[:MAX_BODY_QUOTE]}{more}"


def _keys(body: dict[str, Any]) -> str:
    """At most 8 of a body's keys, 40 characters of each: the server's text, bounded."""
    keys = sorted(f"{key:.40}" for key in map(str, body))
    return ", ".join(keys[:8]) + (", …" if len(keys) > 8 else "") if keys else "none"


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if content is None:
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            raise WireShapeError(f"the model refused instead of answering: {quote_reply(refusal)}")
        return ""
    if not isinstance(content, str):
        raise WireShapeError(f"the message content is a JSON {_json_type(content)}, not text")
    return content


def _parse_chat_completion(body: Any) -> WireReply:
    """The OpenAI ``chat.completion`` object, which every dialect but Ollama answers."""
    if not isinstance(body, dict):
        raise WireShapeError(f"the body is a JSON {_json_type(body)}, not a chat completion object")
    if "choices" not in body:
        raise WireShapeError(
            f'the body is not a chat completion: it has no "choices" (keys: {_keys(body)})'
            f"{_error_member(body)}"
        )
    choices = body["choices"]
    if not isinstance(choices, list):
        raise WireShapeError(f'the body is not a chat completion: "choices" is a JSON {_json_type(choices)}')
    if not choices:
        raise WireShapeError(f"the chat completion has no choices (an empty list){_error_member(body)}")
    choice = choices[0]
    if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
        raise WireShapeError('the first choice has no "message" object')
    finish_reason = choice.get("finish_reason")
    usage = body.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return WireReply(
        text=_content(choice["message"]),
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=Usage(
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
        ),
    )


def _parse_ollama(body: Any) -> WireReply:
    """Ollama's ``/api/chat`` answer: message.content, done_reason, prompt_eval_count, eval_count."""
    if not isinstance(body, dict):
        raise WireShapeError(f"the body is a JSON {_json_type(body)}, not an Ollama chat response object")
    message = body.get("message")
    if not isinstance(message, dict):
        raise WireShapeError(
            f'the body is not an Ollama chat response: it has no "message" object (keys: {_keys(body)})'
            f"{_error_member(body)}"
        )
    done_reason = body.get("done_reason")
    return WireReply(
        text=_content(message),
        finish_reason=done_reason if isinstance(done_reason, str) else None,
        usage=Usage(
            prompt_tokens=_count(body.get("prompt_eval_count")),
            completion_tokens=_count(body.get("eval_count")),
        ),
    )


_CHAT = "/v1/chat/completions"

_DIALECTS: dict[str, Dialect] = {
    dialect.name: dialect
    for dialect in (
        Dialect(
            name="openai",
            path=_CHAT,
            schema_field='response_format {"type": "json_schema", "json_schema": {...}}',
            requires_model=False,
            build=_openai_body,
            parse=_parse_chat_completion,
        ),
        Dialect(
            name="llama.cpp",
            path=_CHAT,
            schema_field='response_format {"type": "json_object", "schema": ...}',
            requires_model=False,
            build=_json_object_body,
            parse=_parse_chat_completion,
        ),
        Dialect(
            name="llama-cpp-python",
            path=_CHAT,
            schema_field='response_format {"type": "json_object", "schema": ...}',
            requires_model=False,
            build=_json_object_body,
            parse=_parse_chat_completion,
        ),
        Dialect(
            name="koboldcpp",
            path=_CHAT,
            schema_field='response_format {"type": "json_schema", "json_schema": {...}}',
            requires_model=False,
            build=_koboldcpp_body,
            parse=_parse_chat_completion,
        ),
        Dialect(
            name="ollama",
            path="/api/chat",
            schema_field="format",
            requires_model=True,
            build=_ollama_body,
            parse=_parse_ollama,
        ),
    )
}

#: The dialect names :class:`~toolrouting.OpenAICompatible` knows.
DIALECTS: tuple[str, ...] = tuple(_DIALECTS)


def get_dialect(name: str) -> Dialect:
    """The dialect called ``name``; a ValueError lists the known ones."""
    try:
        return _DIALECTS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown dialect {name!r}; known dialects: {', '.join(DIALECTS)}") from None
