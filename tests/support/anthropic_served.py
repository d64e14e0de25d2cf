"""The fixtures of the Messages front's tests that serve the scripted fake to Anthropic's clients:
a module's server (``scripted``: the backend and the server's root, which Anthropic's clients
take, without ``/v1``), the backend drained for one test, the root, and the SDK's client on it.
A test module imports the ones it takes."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import pytest

from support.serve import drained, served_scripted
from toolrouting import AsyncScriptedBackend

__all__ = ["backend", "claude", "root", "scripted"]


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[AsyncScriptedBackend, str]]:
    with served_scripted() as (backend, url):
        yield backend, url.removesuffix("/v1")


@pytest.fixture
def backend(scripted: tuple[AsyncScriptedBackend, str]) -> Iterator[AsyncScriptedBackend]:
    with drained(scripted[0]) as backend:
        yield backend


@pytest.fixture
def root(scripted: tuple[AsyncScriptedBackend, str]) -> str:
    return scripted[1]


@pytest.fixture
def claude(root: str) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=root, api_key="unused", max_retries=0) as client:
        yield client
