"""The scripted backend and the embedded model served on loopback, for the tests through real clients."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.serve import served, served_embedded
from toolrouting import AsyncScriptedBackend
from toolrouting._serve import serve_app


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[AsyncScriptedBackend, str]]:
    backend = AsyncScriptedBackend()
    with served(serve_app(backend, model="scripted")) as url:
        yield backend, url


@pytest.fixture(scope="module")
def embedded() -> Iterator[str]:
    with served_embedded(model="smollm2", answer_tokens=48) as url:
        yield url
