"""What a server offers: the model names its ``/v1/models`` (or Ollama's ``/api/tags``) lists,
and the reasoning tags of the chat template llama-server applies (``/props``).

Most servers need ``model=`` to name one of them (Ollama always does), and a user rarely knows
the exact spelling, so the command line's ``models`` asks the server rather than guessing.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from .._errors import BackendConnectError, BackendHTTPError, BackendResponseError, BackendTimeout
from .._json import quoted
from .._limits import DEFAULT_REQUEST_TIMEOUT, MAX_BODY_QUOTE, MAX_MODEL_LIST_BYTES, SHOWN_VALUE_CHARS
from .dialects import get_dialect
from .endpoint import check_size, endpoint_url
from .reasoning_tags import ReasoningTags
from .server_reasoning import PROPS_PATH, template_tags

__all__ = ["list_models", "models_url", "served_reasoning_tags"]

#: Where each server family lists its models. OpenAI API reference "List models" (GET
#: /v1/models, {"data": [{"id": ...}]}), which vLLM, SGLang, LM Studio, llama.cpp's
#: llama-server, llama-cpp-python's server and KoboldCpp copy; ollama docs/api.md "List Local
#: Models" (GET /api/tags, {"models": [{"name": ...}]}).
_PATHS = {"ollama": "/api/tags"}
_OPENAI_PATH = "/v1/models"


def models_url(base_url: str, dialect: str = "openai") -> str:
    """The URL that lists ``base_url``'s models; ``base_url`` is a server root, its API root, or that URL."""
    return endpoint_url(base_url, _PATHS.get(get_dialect(dialect).name, _OPENAI_PATH))


def list_models(
    base_url: str,
    *,
    dialect: str = "openai",
    api_key: str | None = None,
    timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> tuple[str, ...]:
    """The names of the models the server at ``base_url`` offers, in its order.

    A key goes as ``Authorization: Bearer``, as for completions; every failure is a
    :class:`~toolrouting.BackendError` whose message says what to check.
    """
    if api_key is not None and not (api_key.isascii() and api_key.isprintable()):
        raise ValueError("api_key goes in an HTTP header, so it must be printable ASCII text")
    url = models_url(base_url, dialect)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    body = _get(url, headers, timeout, "a list of models")
    return _names(url, body, ollama=url.endswith(_PATHS["ollama"]))


def served_reasoning_tags(
    base_url: str, *, api_key: str | None = None, timeout: float = DEFAULT_REQUEST_TIMEOUT
) -> ReasoningTags | None:
    """The reasoning tags of the chat template llama-server at ``base_url`` applies (its ``GET
    /props`` names it), ``None`` where it has none: what ``OpenAICompatible(dialect="llama.cpp",
    reasoning_tags=...)`` takes, so that a reply asked to reason first is reasoned in them.

    Every failure is a :class:`~toolrouting.BackendError` whose message says what to check."""
    if api_key is not None and not (api_key.isascii() and api_key.isprintable()):
        raise ValueError("api_key goes in an HTTP header, so it must be printable ASCII text")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return template_tags(_get(endpoint_url(base_url, PROPS_PATH), headers, timeout, "a server's properties"))


def _get(url: str, headers: dict[str, str], timeout: float, expected: str) -> Any:
    try:
        with httpx.Client(timeout=timeout) as client, client.stream("GET", url, headers=headers) as response:
            received = bytearray()
            for chunk in response.iter_bytes():
                received += chunk
                size = len(received)
                check_size(size, url, "MAX_MODEL_LIST_BYTES", MAX_MODEL_LIST_BYTES, expected)
    except httpx.TimeoutException as error:
        raise BackendTimeout(f"{url} did not answer within the timeout of {timeout:g} s") from error
    except httpx.HTTPError as error:
        raise BackendConnectError(
            f"could not get {url} ({type(error).__name__}: {error}); is the server running and listening "
            "there?"
        ) from error
    text = bytes(received).decode("utf-8", "replace")
    body = text[:MAX_BODY_QUOTE]
    shown = quoted(text, MAX_BODY_QUOTE)
    status = response.status_code
    if status != 200:
        hint = "check api_key" if status in (401, 403) else "check base_url and the dialect"
        message = (
            f"GET {url} answered HTTP {status} {response.reason_phrase[:SHOWN_VALUE_CHARS]}: {shown}; {hint}"
        )
        raise BackendHTTPError(status, url, body, message)
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise BackendResponseError(
            f"{url} answered a body that is not JSON: {shown}; check that base_url points at the server's API"
        ) from None


def _names(url: str, body: Any, *, ollama: bool) -> tuple[str, ...]:
    member, key = ("models", "name") if ollama else ("data", "id")
    entries = body.get(member) if isinstance(body, dict) else None
    if not isinstance(entries, list):
        raise BackendResponseError(
            f'{url} answered no "{member}" list, so it is not a model list; '
            "check that base_url points at the model server and that the dialect matches it"
        )
    return tuple(
        entry[key] for entry in entries if isinstance(entry, dict) and isinstance(entry.get(key), str)
    )
