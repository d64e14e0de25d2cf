"""Forced-token decoding, the embedded backend's default, on the real default model.

Routed requests here go through ``EmbeddedLlama()``: llguidance forces what the grammar fixes
and the model samples the rest. The tests assert what the grammar path guarantees, now on this
path: validity, the bounds and the cap, truncation, refusals before any token, the grammar
cache, turns on the model, streaming, seeding, prompt reuse and named errors; never which
action the model picks. tests/backends/embedded/test_backends_embedded.py holds the grammar sampler's twins.
"""

# ruff: noqa: F811 - the fixtures imported from support.forced_cases are the tests' parameters
from __future__ import annotations

import inspect
import sys
from typing import Any

import pytest
from support.catalogues import tool
from support.forced_cases import (
    READ,
    SAMPLING,
    SEARCH,
    backend,  # noqa: F401 - fixtures shared with other tests
    conversation,
    routed,
)
from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS

from toolrouting import (
    BackendError,
    EmbeddedLlama,
    GrammarError,
    Message,
    ModelLoadError,
    Settings,
    parse_route,
    route_schema,
    route_tool_names,
    routed_backend,
)
from toolrouting._backends.embedded.decoding import Sampling

WEATHER = tool("weather_lookup", city={"type": "string", "maxLength": 40})
CONVERT = tool(
    "unit_convert",
    value={"type": "number"},
    from_unit={"type": "string", "enum": ["km", "mi", "kg", "lb"]},
    to_unit={"type": "string", "enum": ["km", "mi", "kg", "lb"]},
)

REQUESTS = [
    ([SEARCH, READ], "What did I write about the latch on the storage-room door?"),
    ([SEARCH, READ], "Open memories M1 and M3."),
    ([WEATHER, CONVERT], "How many miles is 42 km?"),
    ([WEATHER, CONVERT], "Thanks, that is all."),
]


@pytest.mark.model
@pytest.mark.parametrize(("tools", "prompt"), REQUESTS, ids=[prompt[:24] for _, prompt in REQUESTS])
def test_forced_replies_are_valid_routes_within_the_cap(
    backend: EmbeddedLlama, tools: list[dict[str, Any]], prompt: str
) -> None:
    clone = routed(backend, tools)
    cap = clone.settings.max_tokens
    assert cap is not None
    completion = clone.complete(conversation(tools, prompt))
    route = parse_route(completion.text, route_tool_names(tools))
    assert route.ok, (completion.text, route.error)
    assert not completion.truncated
    assert completion.finish_reason == "stop"
    assert completion.usage.prompt_tokens > 0
    assert 0 < completion.usage.completion_tokens < cap
    assert completion.raw is not None
    # '{"tool":"' opens every reply and the schema fixes it: those tokens are never sampled.
    assert 0 < completion.raw["forced_tokens"] <= completion.usage.completion_tokens


@pytest.mark.model
def test_a_tiny_cap_is_reported_truncated(backend: EmbeddedLlama) -> None:
    clone = routed_backend(backend, route_schema([SEARCH, READ]), 1)
    completion = clone.complete(conversation([SEARCH, READ], "Search for the latch."))
    assert completion.truncated
    assert completion.finish_reason == "length"
    assert completion.usage.completion_tokens == 1
    assert completion.text.startswith("{")
    assert not parse_route(completion.text, route_tool_names([SEARCH, READ])).ok


@pytest.mark.model
@pytest.mark.parametrize("temperature", [TEST_TEMPERATURE, 0.0])
def test_the_same_seed_writes_the_same_reply(backend: EmbeddedLlama, temperature: float) -> None:
    messages = conversation([WEATHER, CONVERT], "Is it raining in Lisbon?")
    clone = routed(backend, [WEATHER, CONVERT], temperature=temperature, seed=TEST_SEED + 7)
    first = clone.complete(messages)
    backend.clone(settings=SAMPLING.clone(max_tokens=4)).complete(messages)  # other state in between
    second = clone.complete(messages)
    assert first.text == second.text
    assert first.usage == second.usage


@pytest.mark.model
def test_a_schema_llguidance_refuses_is_a_grammar_error(backend: EmbeddedLlama) -> None:
    messages = conversation([SEARCH], "hello")
    refused = backend.clone(settings=SAMPLING.clone(json_schema={"type": "strin"}, grammar="server"))
    with pytest.raises(GrammarError, match=r"llguidance refused the JSON schema .*strin"):
        refused.complete(messages)
    not_json = backend.clone(settings=SAMPLING.clone(json_schema={"enum": [float("nan")]}))
    with pytest.raises(GrammarError, match="not JSON"):
        not_json.complete(messages)
    # The model still answers afterwards.
    assert parse_route(routed(backend, [SEARCH]).complete(messages).text, route_tool_names([SEARCH])).ok


@pytest.mark.model
def test_a_request_without_a_schema_is_sampled_as_before(backend: EmbeddedLlama) -> None:
    completion = backend.clone(settings=SAMPLING.clone(max_tokens=8)).complete(conversation([SEARCH], "hi"))
    assert completion.raw is not None
    assert "choices" in completion.raw  # llama-cpp-python's own response
    assert 0 < completion.usage.completion_tokens <= 8


@pytest.mark.model
def test_a_conversation_over_the_context_is_a_backend_error(backend: EmbeddedLlama) -> None:
    messages: list[Message] = [{"role": "user", "content": "latch " * (backend.n_ctx + 100)}]
    with pytest.raises(BackendError, match=f"n_ctx={backend.n_ctx}"):
        routed(backend, [SEARCH]).complete(messages)


def test_without_llguidance_the_option_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llguidance", None)
    with pytest.raises(ModelLoadError, match=r"toolrouting\[embedded\].*forced_tokens=False"):
        EmbeddedLlama(n_threads=TEST_THREADS, forced_tokens=True)


@pytest.mark.model
def test_a_stop_string_ends_the_reply_before_it(backend: EmbeddedLlama) -> None:
    # Every route reply opens '{"tool":"': the first quote is a stop string it always meets.
    completion = routed(backend, [SEARCH, READ], stop=('"',)).complete(conversation([SEARCH, READ], "hi"))
    assert completion.text == "{"
    assert completion.finish_reason == "stop"
    assert not completion.truncated


def test_sampling_takes_the_request_settings_and_llama_cpp_python_defaults() -> None:
    unset = Sampling.of(Settings(), seed=5)
    assert (unset.temperature, unset.top_p, unset.top_k, unset.min_p, unset.seed) == (0.2, 0.95, 40, 0.05, 5)
    given = Sampling.of(Settings(temperature=0.0, top_p=0.5, top_k=3, seed=9), seed=5)
    assert (given.temperature, given.top_p, given.top_k, given.seed) == (0.0, 0.5, 3, 9)
    assert Sampling.of(Settings(), seed=None).seed is None  # a fresh draw each request


def test_the_grammar_sampler_is_sent_the_same_sampling_and_the_defaults_are_llama_cpp_pythons() -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    defaults = inspect.signature(llama_cpp.Llama.create_chat_completion).parameters
    unset = Sampling.of(Settings(max_tokens=9, stop=("x",)), seed=None)
    arguments = unset.arguments(fresh_seed=123)
    for name in ("temperature", "top_p", "top_k", "min_p"):
        assert arguments[name] == getattr(unset, name) == defaults[name].default, name
    assert (arguments["max_tokens"], arguments["stop"], arguments["seed"]) == (9, ["x"], 123)
    given = Sampling.of(Settings(temperature=0.0, top_p=0.5, top_k=3, seed=9), seed=5).arguments(123)
    assert (given["temperature"], given["top_p"], given["top_k"], given["seed"]) == (0.0, 0.5, 3, 9)
