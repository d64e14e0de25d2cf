"""toolrouting serve's application in-process over the scripted backend, through Starlette's
TestClient, and how an OpenAI error body is read: shared by the fronts' in-process tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from starlette.testclient import TestClient

from toolrouting import AsyncScriptedBackend
from toolrouting._serve import serve_app

if TYPE_CHECKING:
    import httpx2  # what starlette's TestClient is built on, and answers with


@pytest.fixture
def backend() -> AsyncScriptedBackend:
    return AsyncScriptedBackend()


@pytest.fixture
def client(backend: AsyncScriptedBackend) -> Iterator[TestClient]:
    with TestClient(serve_app(backend, model="test-model")) as client:
        yield client


def error_of(response: httpx.Response | httpx2.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    error: dict[str, Any] = body["error"]
    return error
