"""The scripted app the serve fuzzes drive, in-process and on a socket."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from support.serve import served
from support.serve_fuzz import routed_reply
from toolrouting import AsyncScriptedBackend
from toolrouting._serve import serve_app


@pytest.fixture(scope="module")
def app() -> Any:
    return serve_app(AsyncScriptedBackend([routed_reply] * 20_000))


@pytest.fixture(scope="module")
def client(app: Any) -> Iterator[TestClient]:
    with TestClient(app) as client:
        yield client


@pytest.fixture(scope="module")
def socket_url(app: Any) -> Iterator[str]:
    with served(app) as url:
        yield url


@pytest.fixture(scope="module")
def http(socket_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=socket_url, timeout=30) as http:
        yield http
