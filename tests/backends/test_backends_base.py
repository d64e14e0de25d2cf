"""BaseBackend, through the backends that ship on it: checked clones, close, the context manager;
and AsyncBaseBackend, which shares its settings, clones and owning.

The embedded backend's share (a loaded model) is tested in
tests/backends/embedded/test_backends_embedded.py, which loads one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import httpx
import pytest

from toolrouting import (
    AsyncBackend,
    AsyncBaseBackend,
    AsyncStreamingBackend,
    Backend,
    BaseBackend,
    Completion,
    OpenAICompatible,
    ScriptedBackend,
    Settings,
)

HI = [{"role": "user", "content": "hi"}]

Make = Callable[[], BaseBackend]


def _scripted() -> BaseBackend:
    return ScriptedBackend(["one", "two"], settings=Settings(max_tokens=9))


def _http() -> BaseBackend:
    return OpenAICompatible("http://127.0.0.1:8080", settings=Settings(max_tokens=9))


MAKERS = [pytest.param(_scripted, id="scripted"), pytest.param(_http, id="http")]


@pytest.mark.parametrize("make", MAKERS)
def test_each_is_a_backend_and_a_context_manager_of_itself(make: Make) -> None:
    backend = make()
    assert isinstance(backend, Backend)
    with backend as entered:
        assert entered is backend


@pytest.mark.parametrize("make", MAKERS)
def test_a_clone_carries_new_settings_and_leaves_the_original_alone(make: Make) -> None:
    with make() as original:
        clone = original.clone(settings=Settings(max_tokens=3))
        assert type(clone) is type(original)
        assert (clone.settings.max_tokens, original.settings.max_tokens) == (3, 9)
        assert original.clone().settings is original.settings


@pytest.mark.parametrize(
    ("make", "changes", "message"),
    [
        (
            _scripted,
            {"model": "x", "seed": 1},
            r"^ScriptedBackend\.clone takes only settings, not model, seed$",
        ),
        (
            _http,
            {"http_client": None, "seed": 1},
            r"^OpenAICompatible\.clone takes api_key, base_url, dialect, model, reasoning_budget, "
            r"reasoning_tags, settings, timeout, not http_client, seed$",
        ),
    ],
)
def test_clone_refuses_keys_it_does_not_take_and_lists_those_it_does(
    make: Make, changes: dict[str, object], message: str
) -> None:
    with make() as backend, pytest.raises(TypeError, match=message):
        backend.clone(**changes)


NOT_SETTINGS = r"^settings is a toolrouting\.Settings, not dict$"


@pytest.mark.parametrize(
    "build", [ScriptedBackend, functools.partial(OpenAICompatible, "http://127.0.0.1:8080")]
)
def test_settings_must_be_settings_when_made(build: Callable[..., BaseBackend]) -> None:
    with pytest.raises(TypeError, match=NOT_SETTINGS):
        build(settings={"max_tokens": 3})


@pytest.mark.parametrize("make", MAKERS)
def test_settings_must_be_settings_when_cloned(make: Make) -> None:
    with make() as backend, pytest.raises(TypeError, match=NOT_SETTINGS):
        backend.clone(settings={"max_tokens": 3})


def test_a_scripted_clone_shares_the_script_and_the_record() -> None:
    original = ScriptedBackend(["one", "two"])
    clone = original.clone(settings=Settings(max_tokens=5))
    assert clone.complete(HI).text == "one"  # type: ignore[arg-type]
    assert original.complete(HI).text == "two"  # type: ignore[arg-type]
    assert clone.requests is original.requests
    assert [request.settings.max_tokens for request in original.requests] == [5, None]


def test_only_the_owner_frees_the_pool_and_only_once() -> None:
    closes = 0

    class CountingClient(httpx.Client):
        def close(self) -> None:
            nonlocal closes
            closes += 1
            super().close()

    original = OpenAICompatible("http://127.0.0.1:8080")
    original._client = CountingClient()  # the pool it made, counted
    clone = original.clone()
    clone.close()
    clone.close()
    assert closes == 0  # a clone never owns the pool
    with original:
        pass
    original.close()
    assert closes == 1  # the owner frees it once, however often it is closed


def test_the_context_manager_closes_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError, match="inside"), OpenAICompatible("http://127.0.0.1:8080") as backend:
        raise RuntimeError("inside")
    assert backend._client.is_closed


def test_a_backend_need_not_subclass_to_be_one() -> None:
    class Own:
        settings = Settings()

        def clone(self, **changes: object) -> Own:
            return self

        def complete(self, messages: object) -> object:
            return None

        def close(self) -> None:
            pass

        def __enter__(self) -> Own:
            return self

        def __exit__(self, *exc_info: object) -> None:
            pass

    assert isinstance(Own(), Backend)
    assert not isinstance(Own(), BaseBackend)


@pytest.mark.anyio
async def test_the_async_base_shares_settings_clones_and_owning() -> None:
    class Counting(AsyncBaseBackend):
        freed = 0

        async def complete(self, messages: object) -> Completion:
            return Completion(text="ok")

        async def _arelease(self) -> None:
            type(self).freed += 1

    original = Counting(Settings(max_tokens=3))
    assert isinstance(original, AsyncBackend)
    assert not isinstance(original, AsyncStreamingBackend)  # no stream
    clone = original.clone(settings=Settings(max_tokens=9))
    assert (original.settings.max_tokens, clone.settings.max_tokens) == (3, 9)
    with pytest.raises(TypeError, match=r"Counting\.clone takes only settings, not model"):
        original.clone(model="x")
    with pytest.raises(TypeError, match=r"settings is a toolrouting\.Settings, not dict"):
        original.clone(settings={})
    await clone.aclose()
    assert Counting.freed == 0  # a clone never owns what it shares
    async with original as entered:
        assert entered is original
    await original.aclose()
    assert Counting.freed == 1  # the owner frees it once, however often it is closed
