"""The HTTP backend for asyncio code: :class:`OpenAICompatible`'s requests on ``httpx.AsyncClient``.

Everything but the waiting is :mod:`endpoint`'s and :mod:`streams`', shared with the sync
backend, so both send the same bodies, hold the same limits and raise the same errors.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import httpx

from .._limits import DEFAULT_REQUEST_TIMEOUT
from .._settings import Settings
from .base import AsyncBaseBackend, Completion, Message, TextDelta
from .endpoint import TRANSPORT_ERRORS, Endpoint, Intake
from .endpoint_backend import EndpointBackend
from .reasoning_tags import ReasoningTags
from .server_reasoning import Post, advanced, reasoning_posts, whole_pieces
from .streams import STREAM_FIELDS, StreamReader, stream_end

__all__ = ["AsyncOpenAICompatible"]


class AsyncOpenAICompatible(EndpointBackend, AsyncBaseBackend):
    """:class:`~toolrouting.OpenAICompatible` for asyncio: the same dialects, limits and errors, awaited.

    Many requests may be in flight at once on one backend and its clones (they share the
    connection pool), which is what a server with parallel slots or continuous batching wants.
    Cancelling an awaiting caller closes its request's connection. Only the backend that
    created the pool closes it (``aclose()``, ``async with``); a ``http_client`` passed in is
    never closed here.
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
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(settings, owner=http_client is None)
        self._endpoint = Endpoint.checked(
            base_url, model=model, api_key=api_key, dialect=dialect, timeout=timeout
        )
        self._reasons(reasoning_tags)
        self._client: httpx.AsyncClient = http_client if http_client is not None else httpx.AsyncClient()

    async def complete(self, messages: Sequence[Message]) -> Completion:
        """Send ``messages`` with this backend's settings; every failure is a :class:`BackendError`.

        Cloned with ``reasoning_budget``, the reply is reasoned first in the model's tags, on llama-server's
        native endpoints, as :meth:`OpenAICompatible.complete` does."""
        endpoint, settings = self._opened(), self._settings
        if self._tags is not None and self._reasoning_budget is not None:
            steps = reasoning_posts(endpoint, messages, settings, self._tags, self._reasoning_budget)
            step: Post | Completion = next(steps)
            while isinstance(step, Post):
                step = advanced(steps, await self._post(step.endpoint, *step.endpoint.encoded(step.body)))
            return step
        content, headers = endpoint.request(messages, settings)
        return endpoint.completion(await self._post(endpoint, content, headers), settings)

    async def _post(self, endpoint: Endpoint, content: bytes, headers: dict[str, str]) -> httpx.Response:
        intake = endpoint.intake()
        try:
            async with self._client.stream(
                "POST", endpoint.url, content=content, headers=headers, timeout=endpoint.timeout
            ) as response:
                received = await _read(response, intake)
        except TRANSPORT_ERRORS as error:
            raise endpoint.transport_error(error) from error
        return endpoint.answered(response, received)

    async def stream(self, messages: Sequence[Message]) -> AsyncIterator[TextDelta | Completion]:
        """:meth:`complete`, handed over piece by piece; the last item is the whole :class:`Completion`.

        The same limits and errors as :meth:`OpenAICompatible.stream`; leave one early with
        ``contextlib.aclosing``, so that its connection closes at once. Reasoned first
        (``reasoning_budget``), the thought and the reply each come whole, once written.
        """
        if self._tags is not None and self._reasoning_budget is not None:
            for item in whole_pieces(await self.complete(messages)):
                yield item
            return
        endpoint, settings = self._opened(), self._settings
        content, headers = endpoint.request(messages, settings, STREAM_FIELDS[endpoint.dialect.name])
        intake = endpoint.intake()
        try:
            async with self._client.stream(
                "POST", endpoint.url, content=content, headers=headers, timeout=endpoint.timeout
            ) as response:
                if not response.is_success:
                    received = await _read(response, intake)
                    raise endpoint.http_error(endpoint.answered(response, received), settings)
                reader = StreamReader(
                    endpoint.url,
                    response.headers.get("Content-Type", ""),
                    endpoint.dialect.name,
                )
                async for chunk in response.aiter_bytes():
                    for piece in reader.feed(intake.take(chunk)):
                        yield TextDelta(piece)
        except TRANSPORT_ERRORS as error:
            raise endpoint.transport_error(error) from error
        for item in stream_end(endpoint, response, reader, settings):
            yield item

    async def _arelease(self) -> None:
        """Close the connection pool this backend created; a clone's ``aclose()`` leaves it open."""
        await self._client.aclose()

    def _opened(self) -> Endpoint:
        if self._client.is_closed:
            raise self._endpoint.closed_error()
        return self._endpoint


async def _read(response: httpx.Response, intake: Intake) -> bytes:
    return b"".join([intake.take(chunk) async for chunk in response.aiter_bytes()])
