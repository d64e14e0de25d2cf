"""The capped clone: routed_backend, routing_cap, can_route, and Settings."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from toolrouting import (
    ROUTE_SCHEMA_NAME,
    AsyncBackend,
    AsyncScriptedBackend,
    ScriptedBackend,
    Settings,
    can_route,
    route_schema,
    routed_backend,
    routing_cap,
)

TOOLS = [{"type": "function", "function": {"name": "memory_search"}}]


def test_seed_synopsis() -> None:
    backend = ScriptedBackend(settings=Settings(max_tokens=4096, temperature=0.2))
    schema = route_schema(TOOLS)
    request = routed_backend(backend, schema, routing_cap(backend, 512))
    assert request.settings.json_schema == schema
    assert request.settings.json_schema_name == ROUTE_SCHEMA_NAME == "tool_route"
    assert request.settings.max_tokens == 512
    assert request.settings.temperature == 0.2
    assert backend.settings == Settings(max_tokens=4096, temperature=0.2)


def test_the_original_is_untouched_and_the_schema_detached() -> None:
    structured = {"type": "object", "properties": {"answer": {"type": "string"}}}
    backend = ScriptedBackend(
        settings=Settings(json_schema=structured, json_schema_name="answer", max_tokens=900)
    )
    schema = route_schema(TOOLS)
    request = routed_backend(backend, schema, 64)
    schema["anyOf"].clear()
    assert request.settings.json_schema is not None
    assert len(request.settings.json_schema["anyOf"]) == 2
    assert backend.settings.json_schema is structured
    assert (backend.settings.json_schema_name, backend.settings.max_tokens) == ("answer", 900)
    assert request is not backend


def test_the_clone_carries_its_settings_to_the_request() -> None:
    backend = ScriptedBackend(['{"tool":"none"}', "free text"], settings=Settings(max_tokens=900))
    schema = route_schema(TOOLS)
    routed_backend(backend, schema, 32).complete([{"role": "user", "content": "hi"}])
    backend.complete([{"role": "user", "content": "hi"}])
    routed, plain = backend.requests
    assert (routed.settings.json_schema, routed.settings.max_tokens) == (schema, 32)
    assert (plain.settings.json_schema, plain.settings.max_tokens) == (None, 900)


def test_an_async_backend_routes_the_same_way() -> None:
    backend = AsyncScriptedBackend(['{"tool":"none"}'], settings=Settings(max_tokens=100))
    assert isinstance(backend, AsyncBackend)
    assert can_route(backend)
    schema = route_schema(TOOLS)
    request = routed_backend(backend, schema, routing_cap(backend, 512))
    assert isinstance(request, AsyncScriptedBackend)
    asyncio.run(request.complete([{"role": "user", "content": "hi"}]))
    (routed,) = backend.requests
    assert (routed.settings.json_schema, routed.settings.max_tokens) == (schema, 100)
    assert backend.settings.json_schema is None


@pytest.mark.parametrize(
    ("own", "asked", "cap"), [(None, 512, 512), (4096, 512, 512), (100, 512, 100), (512, 512, 512)]
)
def test_routing_cap_only_ever_lowers_a_cap(own: int | None, asked: int, cap: int) -> None:
    assert routing_cap(ScriptedBackend(settings=Settings(max_tokens=own)), asked) == cap


@pytest.mark.parametrize("bad", [0, -5, 1.5, "512", True, None])
def test_a_cap_is_a_positive_integer(bad: Any) -> None:
    backend = ScriptedBackend()
    with pytest.raises(ValueError, match="positive integer"):
        routing_cap(backend, bad)
    with pytest.raises(ValueError, match="positive integer"):
        routed_backend(backend, route_schema(TOOLS), bad)


class NoClone:
    settings = Settings()


class SettingsWithoutClone:
    @dataclasses.dataclass
    class _S:
        json_schema: Any = None
        json_schema_name: str = "response"
        max_tokens: int | None = None

    settings = _S()

    def clone(self, **changes: Any) -> SettingsWithoutClone:
        return self


class RaisingSettings:
    @property
    def settings(self) -> Settings:
        raise RuntimeError("boom")

    def clone(self, **changes: Any) -> RaisingSettings:
        return self


class DuckTyped:
    """Not a toolrouting class: routing is duck-typed."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def clone(self, **changes: Any) -> DuckTyped:
        return DuckTyped(changes.get("settings", self.settings))


def test_can_route_is_duck_typed() -> None:
    assert can_route(ScriptedBackend())
    assert can_route(DuckTyped(Settings()))
    for backend in (NoClone(), SettingsWithoutClone(), RaisingSettings(), object(), None, Settings()):
        assert not can_route(backend)


def test_a_backend_that_cannot_route_is_a_type_error_that_names_the_need() -> None:
    with pytest.raises(TypeError, match="needs clone\\(\\) and settings"):
        routed_backend(NoClone(), route_schema(TOOLS), 10)
    with pytest.raises(TypeError, match="cannot route"):
        routing_cap(object(), 10)


def test_duck_typed_backend_routes() -> None:
    original = DuckTyped(Settings(max_tokens=50))
    clone = routed_backend(original, route_schema(TOOLS), routing_cap(original, 512))
    assert clone.settings.max_tokens == 50
    assert original.settings.json_schema is None


def test_a_schema_is_a_mapping() -> None:
    with pytest.raises(TypeError, match="route_schema"):
        routed_backend(ScriptedBackend(), '{"type":"object"}', 10)  # type: ignore[arg-type]


def test_settings_are_frozen_and_checked() -> None:
    settings = Settings(max_tokens=10, stop=["\n"])  # type: ignore[arg-type]
    assert settings.stop == ("\n",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.max_tokens = 5  # type: ignore[misc]
    assert settings.clone(max_tokens=5).max_tokens == 5
    assert settings.max_tokens == 10
    assert Settings().json_schema is None
    assert Settings().json_schema_name == "response"
    with pytest.raises(ValueError, match="max_tokens"):
        Settings(max_tokens=0)
    with pytest.raises(TypeError, match="wrap a single one"):
        Settings(stop="\n")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        settings.clone(max_token=5)
