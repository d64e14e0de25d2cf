"""The HTTP backends' named fake: httpx.MockTransport, whose handler records each request and answers
with the next queued response, and an OpenAICompatible of any dialect on it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from toolrouting._backends.http import OpenAICompatible

__all__ = ["Recorder", "client", "make", "recorder"]


class Recorder:
    """A MockTransport handler that records each request and answers with the next queued response."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.responses: list[httpx.Response] = []

    def answer(self, body: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.responses.append(httpx.Response(status, json=body, headers=headers))

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.responses.pop(0)

    def body(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def client(recorder: Recorder) -> Iterator[httpx.Client]:
    with httpx.Client(transport=httpx.MockTransport(recorder)) as http_client:
        yield http_client


@pytest.fixture
def make(client: httpx.Client) -> Callable[..., OpenAICompatible]:
    def build(dialect: str = "openai", **kwargs: Any) -> OpenAICompatible:
        if dialect == "ollama":
            kwargs.setdefault("model", "smollm2")
        return OpenAICompatible("http://127.0.0.1:8080", dialect=dialect, http_client=client, **kwargs)

    return build
