"""The HTTP backend: one chat completion per request, on any OpenAI-compatible server or Ollama.

What it sends and how it reads the answer is :mod:`endpoint`'s (shared with the async backend);
this module only waits for the bytes, whole or streamed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import httpx

from .._limits import DEFAULT_REQUEST_TIMEOUT
from .._settings import Settings
from .base import BaseBackend, Completion, Message, TextDelta
from .endpoint import TRANSPORT_ERRORS, Endpoint
from .endpoint_backend import EndpointBackend
from .reasoning_tags import ReasoningTags
from .server_reasoning import Post, advanced, reasoning_posts, whole_pieces
from .streams import STREAM_FIELDS, StreamReader, stream_end

__all__ = ["OpenAICompatible"]


class OpenAICompatible(EndpointBackend, BaseBackend):
    """A chat model behind an HTTP server: OpenAI's API or a local server that copies it.

    ``dialect`` says where the server wants ``settings.json_schema`` and ``settings.max_tokens``
    (see docs/backends.md): ``openai`` (OpenAI, vLLM, SGLang, LM Studio, OpenRouter),
    ``llama.cpp`` (``llama-server``), ``llama-cpp-python`` (``python -m llama_cpp.server``),
    ``koboldcpp``, or ``ollama`` (its native ``/api/chat``; ``model`` is required).
    ``base_url`` is the server root (``http://127.0.0.1:8080``), its ``/v1`` root, or the endpoint.

    Settings are read when a request is sent, so a clone's schema and cap never reach this
    backend. A clone shares the connection pool; only the backend that created the pool
    closes it, so close the original last. A ``http_client`` passed in is never closed here.
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        dialect: str = "openai",
        timeout: float = DEFAULT_REQUEST_TIMEOUT,
        settings: Settings | None = None,
        reasoning_tags: ReasoningTags | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(settings, owner=http_client is None)
        self._endpoint = Endpoint.checked(
            base_url, model=model, api_key=api_key, dialect=dialect, timeout=timeout
        )
        self._reasons(reasoning_tags)
        self._client: httpx.Client = http_client if http_client is not None else httpx.Client()

    def complete(self, messages: Sequence[Message]) -> Completion:
        """Send ``messages`` with this backend's settings; every failure is a :class:`BackendError`.

        Cloned with ``reasoning_budget``, the reply is reasoned first in the model's tags, on llama-server's
        native endpoints (:mod:`~toolrouting._backends.server_reasoning`)."""
        settings = self._settings
        endpoint = self._opened()
        if self._tags is not None and self._reasoning_budget is not None:
            steps = reasoning_posts(endpoint, messages, settings, self._tags, self._reasoning_budget)
            step: Post | Completion = next(steps)
            while isinstance(step, Post):
                step = advanced(steps, self._post(step.endpoint, *step.endpoint.encoded(step.body)))
            return step
        content, headers = endpoint.request(messages, settings)
        return endpoint.completion(self._post(endpoint, content, headers), settings)

    def stream(self, messages: Sequence[Message]) -> Iterator[TextDelta | Completion]:
        """:meth:`complete`, handed over piece by piece as the server generates it (see docs/backends.md).

        The last item is the whole :class:`Completion`; the same limits hold (the timeout bounds
        the whole stream) and the same errors are raised, a stream cut short as
        :class:`BackendConnectError`. Read it to the end or close it: it holds a connection.
        Reasoned first (``reasoning_budget``), the thought and the reply each come whole, once written.
        """
        if self._tags is not None and self._reasoning_budget is not None:
            yield from whole_pieces(self.complete(messages))
            return
        endpoint, settings = self._opened(), self._settings
        content, headers = endpoint.request(messages, settings, STREAM_FIELDS[endpoint.dialect.name])
        intake = endpoint.intake()
        try:
            with self._client.stream(
                "POST", endpoint.url, content=content, headers=headers, timeout=endpoint.timeout
            ) as response:
                if not response.is_success:
                    received = b"".join(intake.take(chunk) for chunk in response.iter_bytes())
                    raise endpoint.http_error(endpoint.answered(response, received), settings)
                reader = StreamReader(
                    endpoint.url,
                    response.headers.get("Content-Type", ""),
                    endpoint.dialect.name,
                )
                for chunk in response.iter_bytes():
                    for piece in reader.feed(intake.take(chunk)):
                        yield TextDelta(piece)
        except TRANSPORT_ERRORS as error:
            raise endpoint.transport_error(error) from error
        yield from stream_end(endpoint, response, reader, settings)

    def _release(self) -> None:
        """Close the connection pool this backend created; a clone's ``close()`` leaves it open."""
        self._client.close()

    def _opened(self) -> Endpoint:
        if self._client.is_closed:
            raise self._endpoint.closed_error()
        return self._endpoint

    def _post(self, endpoint: Endpoint, content: bytes, headers: dict[str, str]) -> httpx.Response:
        intake = endpoint.intake()
        try:
            with self._client.stream(
                "POST", endpoint.url, content=content, headers=headers, timeout=endpoint.timeout
            ) as response:
                received = b"".join(intake.take(chunk) for chunk in response.iter_bytes())
            return endpoint.answered(response, received)
        except TRANSPORT_ERRORS as error:
            raise endpoint.transport_error(error) from error
