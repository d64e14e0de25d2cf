"""Where each server family wants the schema, the cap and the sampling settings, and what it answers.

The families differ in field names and places, not in logic, so each dialect is one row of
data (where the schema goes, which fields carry the cap, whether the settings sit inside
``options``) and one builder reads every row. Each row cites the server's own source or docs;
docs/backends.md has the same table for readers. A dialect only builds and reads JSON: the
HTTP lives in http.py.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal

from .._grammar import route_grammar
from .._json import json_type, plain, quoted
from .._limits import MAX_BODY_QUOTE, MAX_KEYS_SHOWN, MAX_REPLY_QUOTE, SHOWN_VALUE_CHARS
from .._settings import Settings
from .base import Message, Usage, chat_usage, reported_count

__all__ = [
    "DIALECTS",
    "Dialect",
    "DialectName",
    "SchemaPlace",
    "WireReply",
    "WireShapeError",
    "constraint_fields",
    "get_dialect",
]

DialectName = Literal["openai", "llama.cpp", "llama-cpp-python", "koboldcpp", "ollama"]

#: Where a dialect puts the schema: OpenAI's ``response_format`` ``json_schema`` wrapper (with
#: the settings' name and strict), ``response_format`` ``json_object`` with the ``schema`` beside
#: it, or Ollama's top-level ``format``.
SchemaPlace = Literal["json_schema", "json_object", "format"]

#: The same places in words, for the error that says where an ignored schema went.
_SCHEMA_PLACE_WORDS: dict[SchemaPlace, str] = {
    "json_schema": 'response_format {"type": "json_schema", "json_schema": {...}}',
    "json_object": 'response_format {"type": "json_object", "schema": ...}',
    "format": "format",
}

#: The sampling settings every dialect sends under their own names, each only when set. top_k
#: is not an OpenAI parameter: OpenAI itself answers 400, which is loud, while vLLM, SGLang,
#: LM Studio, OpenRouter, llama.cpp, llama-cpp-python, KoboldCpp and Ollama take it.
_SAMPLING = ("temperature", "top_p", "top_k", "seed")


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
    """One server family's wire format, as data; :meth:`build` writes a request body from it."""

    name: DialectName
    path: str
    """The endpoint under the server root."""
    schema_at: SchemaPlace
    """Where the schema goes."""
    cap_at: tuple[str, ...]
    """The fields that carry the completion cap, each with the same value."""
    in_options: bool
    """Whether the cap and the sampling settings go inside ``options`` instead of the top level."""
    fixed: Mapping[str, Any]
    """Fields every request carries as they are."""
    requires_model: bool
    takes_grammar: bool
    """Whether the server takes a GBNF ``grammar`` field in place of the schema: with
    ``settings.grammar == "ours"`` our compact grammar of the schema goes there instead."""
    parse: Callable[[Any], WireReply]
    """Reads the server's answer; a :class:`WireShapeError` says what the body is instead."""

    def sends_grammar(self, settings: Settings) -> bool:
        """Whether a request under ``settings`` carries our grammar instead of the schema."""
        return settings.json_schema is not None and self.takes_grammar and settings.grammar == "ours"

    def schema_field(self, settings: Settings) -> str:
        """Where the schema (or our grammar of it) goes, in words, for error messages."""
        return "grammar (our GBNF)" if self.sends_grammar(settings) else _SCHEMA_PLACE_WORDS[self.schema_at]

    def build(self, messages: Sequence[Message], settings: Settings, model: str | None) -> dict[str, Any]:
        """The request body: only what is set goes on the wire, so the server's defaults apply."""
        body: dict[str, Any] = {} if model is None else {"model": model}
        body["messages"] = [{"role": message["role"], "content": message["content"]} for message in messages]
        body.update(self.fixed)
        cap = settings.max_tokens
        sampling: dict[str, Any] = {} if cap is None else dict.fromkeys(self.cap_at, cap)
        sampling.update({name: value for name in _SAMPLING if (value := getattr(settings, name)) is not None})
        if settings.stop:
            sampling["stop"] = list(settings.stop)
        if not self.in_options:
            body.update(sampling)
        if self.sends_grammar(settings):
            # The grammar alone: llama-server refuses json_schema beside it ("Cannot use both
            # json_schema and grammar"), and llama-cpp-python and KoboldCpp let response_format
            # replace it. None of the three needs the schema for anything else.
            body["grammar"] = _our_grammar(settings)
        elif settings.json_schema is not None:
            body.update(self._schema(settings))
        if self.in_options and sampling:
            body["options"] = sampling
        return body

    def _schema(self, settings: Settings) -> dict[str, Any]:
        # plain: a schema held in a read-only mapping goes on the wire all the same.
        schema = plain(settings.json_schema)
        if self.schema_at == "format":
            return {"format": schema}
        if self.schema_at == "json_object":
            return {"response_format": {"type": "json_object", "schema": schema}}
        wrapper = {"name": settings.json_schema_name, "schema": schema, "strict": settings.json_schema_strict}
        return {"response_format": {"type": "json_schema", "json_schema": wrapper}}


def constraint_fields(dialect: Dialect, settings: Settings, *, schema_key: str) -> dict[str, Any]:
    """What constrains a raw completion (llama-server's ``/completion``) under ``settings``: our
    grammar where ``dialect`` sends it, else the schema under ``schema_key``; nothing without one."""
    if dialect.sends_grammar(settings):
        return {"grammar": _our_grammar(settings)}
    if settings.json_schema is not None:
        return {schema_key: plain(settings.json_schema)}
    return {}


def _our_grammar(settings: Settings) -> str:
    return route_grammar(plain(settings.json_schema), spaced=settings.spaced, bounded=settings.bounded).gbnf


def _error_member(body: dict[str, Any]) -> str:
    """A server's ``error`` member, quoted, for a body that carries one instead of a completion."""
    if "error" not in body:
        return ""
    return f"; it carries an error: {quoted(json.dumps(body['error'], ensure_ascii=False), MAX_BODY_QUOTE)}"


def _keys(body: dict[str, Any]) -> str:
    """A few of a body's keys, each cut short: the server's text, bounded."""
    keys = sorted(key[:SHOWN_VALUE_CHARS] for key in map(str, body))
    more = ", …" if len(keys) > MAX_KEYS_SHOWN else ""
    return ", ".join(keys[:MAX_KEYS_SHOWN]) + more if keys else "none"


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if content is None:
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            raise WireShapeError(
                f"the model refused instead of answering: {quoted(refusal, MAX_REPLY_QUOTE)}"
            )
        return ""
    if not isinstance(content, str):
        raise WireShapeError(f"the message content is a JSON {json_type(content)}, not text")
    return content


def _parse_chat_completion(body: Any) -> WireReply:
    """The OpenAI ``chat.completion`` object, which every dialect but Ollama answers."""
    if not isinstance(body, dict):
        raise WireShapeError(f"the body is a JSON {json_type(body)}, not a chat completion object")
    if "choices" not in body:
        raise WireShapeError(
            f'the body is not a chat completion: it has no "choices" (keys: {_keys(body)})'
            f"{_error_member(body)}"
        )
    choices = body["choices"]
    if not isinstance(choices, list):
        raise WireShapeError(f'the body is not a chat completion: "choices" is a JSON {json_type(choices)}')
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
        usage=chat_usage(usage),
    )


def _parse_ollama(body: Any) -> WireReply:
    """Ollama's ``/api/chat`` answer: message.content, done_reason, prompt_eval_count, eval_count."""
    if not isinstance(body, dict):
        raise WireShapeError(f"the body is a JSON {json_type(body)}, not an Ollama chat response object")
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
            prompt_tokens=reported_count(body.get("prompt_eval_count")),
            completion_tokens=reported_count(body.get("eval_count")),
        ),
    )


_CHAT = "/v1/chat/completions"
_NOTHING: Mapping[str, Any] = MappingProxyType({})

_DIALECTS: dict[str, Dialect] = {
    dialect.name: dialect
    for dialect in (
        # OpenAI API reference, Chat Completions, `response_format`:
        # {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}; vLLM, SGLang,
        # LM Studio and OpenRouter take the same shape on their /v1/chat/completions.
        Dialect(
            name="openai",
            path=_CHAT,
            schema_at="json_schema",
            cap_at=("max_tokens",),
            in_options=False,
            fixed=_NOTHING,
            requires_model=False,
            takes_grammar=False,
            parse=_parse_chat_completion,
        ),
        # llama.cpp tools/server/README.md (/v1/chat/completions): "schema-constrained JSON (e.g.
        # {"type": "json_object", "schema": {...}})"; server-common.cpp oaicompat_chat_params_parse
        # reads response_format.schema for json_object, and server-task.cpp takes max_tokens as
        # n_predict and top_k natively. server-schema.cpp takes a GBNF "grammar" (a user grammar,
        # parsed when the sampler starts: a refused one is HTTP 400 "Failed to initialize samplers").
        Dialect(
            name="llama.cpp",
            path=_CHAT,
            schema_at="json_object",
            cap_at=("max_tokens",),
            in_options=False,
            fixed=_NOTHING,
            requires_model=False,
            takes_grammar=True,
            parse=_parse_chat_completion,
        ),
        # llama-cpp-python llama_cpp/server/types.py CreateChatCompletionRequest: response_format is
        # llama_types.ChatCompletionRequestResponseFormat, type "text" | "json_object" with an
        # optional schema (json_schema is refused with HTTP 500); max_tokens, top_k, seed and grammar
        # (GBNF, LlamaGrammar.from_string in server/app.py) are fields.
        Dialect(
            name="llama-cpp-python",
            path=_CHAT,
            schema_at="json_object",
            cap_at=("max_tokens",),
            in_options=False,
            fixed=_NOTHING,
            requires_model=False,
            takes_grammar=True,
            parse=_parse_chat_completion,
        ),
        # koboldcpp.py transform_genparams, OpenAI chat (api_format 4): response_format json_schema
        # has json_schema.schema turned into GBNF (name and strict unused); the older top-level
        # json_schema is read only when response_format is absent. The cap is max_length, which
        # current releases take over max_tokens while older ones read max_tokens alone: both go.
        # stop becomes stop_sequence and seed sampler_seed on its side; top_k and grammar (GBNF,
        # passed to its sampler as given) are native.
        Dialect(
            name="koboldcpp",
            path=_CHAT,
            schema_at="json_schema",
            cap_at=("max_tokens", "max_length"),
            in_options=False,
            fixed=_NOTHING,
            requires_model=False,
            takes_grammar=True,
            parse=_parse_chat_completion,
        ),
        # ollama docs/api.md, "Generate a chat completion" (POST /api/chat): model is required,
        # format takes a JSON schema, options carries Modelfile parameters (num_predict, temperature,
        # top_p, top_k, seed, stop), and stream false returns one object instead of a stream.
        Dialect(
            name="ollama",
            path="/api/chat",
            schema_at="format",
            cap_at=("num_predict",),
            in_options=True,
            fixed=MappingProxyType({"stream": False}),
            requires_model=True,
            takes_grammar=False,
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
