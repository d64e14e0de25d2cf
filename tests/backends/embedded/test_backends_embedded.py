"""The embedded backend's grammar sampler on the real default model (SmolLM2-135M-Instruct, in-process).

Every backend here asks for ``forced_tokens=False``: llama.cpp's grammar sampler and its grammar
cache. tests/backends/embedded/test_backends_embedded_forced.py holds the forced-token twins, and
tests/backends/embedded/test_backends_embedded_grammar_check.py the parser's refusals; loading the model is
tests/backends/embedded/test_backends_embedded_loading.py's.

The model is loaded once for the module; each test keeps its generations few and short,
since constrained decoding runs at about 50 tokens/s on two shared cores. The tests assert
what the grammar, the cap and the backend guarantee, never which action the model picks:
every catalogue here bounds its strings and arrays, and a routed request gets a cap its
grammar cannot reach (tests/support/model.py), so a routed reply is always complete.
"""

# ruff: noqa: F811 - the fixtures imported from support.embedded_cases are the tests' parameters
from __future__ import annotations

import concurrent.futures
import copy
import itertools
import json
import threading
import time
from types import MappingProxyType
from typing import Any

import pytest
from support.embedded_cases import (
    MEMORY,
    REQUESTS,
    SAMPLING,
    SAMPLING_CAP,
    backend,  # noqa: F401 - fixtures shared with other tests
    conversation,
    load,
)
from support.model import guaranteed_cap

from toolrouting import (
    BackendError,
    Message,
    parse_route,
    route_schema,
    route_tool_names,
    routed_backend,
)
from toolrouting._backends.embedded.backend import EmbeddedLlama
from toolrouting._errors import GrammarError


def request_id(request: tuple[object, str]) -> str:
    return request[1][:24]


@pytest.mark.model
@pytest.mark.parametrize(("tools", "prompt"), REQUESTS, ids=[request_id(r) for r in REQUESTS])
def test_routed_replies_parse(backend: EmbeddedLlama, tools: list[dict[str, Any]], prompt: str) -> None:
    schema = route_schema(tools)
    cap = guaranteed_cap(schema)
    routed = routed_backend(backend.clone(settings=SAMPLING.clone(max_tokens=cap)), schema, cap)
    completion = routed.complete(conversation(tools, prompt))
    route = parse_route(completion.text, route_tool_names(tools))
    assert route.ok, (completion.text, route.error)
    assert not completion.truncated
    assert completion.finish_reason == "stop"
    assert completion.usage.prompt_tokens > 0
    assert 0 < completion.usage.completion_tokens < cap


@pytest.mark.model
@pytest.mark.parametrize(("tools", "prompt"), REQUESTS, ids=[request_id(r) for r in REQUESTS])
def test_unconstrained_replies_are_only_text(
    backend: EmbeddedLlama, tools: list[dict[str, Any]], prompt: str, record_property: Any
) -> None:
    # Nothing about the reply's shape is certain without the schema; what parse_route made
    # of it is recorded (pytest --junitxml) rather than asserted. `benchmarks/speed/decoding.py
    # unconstrained` measures the share over a fixed prompt set.
    completion = backend.complete(conversation(tools, prompt))
    assert completion.usage.completion_tokens <= SAMPLING_CAP  # the backend's own cap holds
    assert completion.truncated == (completion.finish_reason == "length")
    route = parse_route(completion.text, route_tool_names(tools))
    record_property("parse_route_ok", route.ok)
    record_property("reply", completion.text[:200])


@pytest.mark.model
def test_grammar_compiled_once_per_schema(backend: EmbeddedLlama) -> None:
    schema = route_schema(MEMORY[:1])  # a schema no other test sends, so the cache starts without it
    messages = conversation(MEMORY[:1], "Search for the latch.")
    before = backend.grammar_cache_info()
    routed_backend(backend, schema, 4).complete(messages)
    # An equal schema in a new object, through another clone, is the same bytes: a cache hit.
    routed_backend(backend, copy.deepcopy(schema), 4).complete(messages)
    after = backend.grammar_cache_info()
    assert after.misses - before.misses == 1
    assert after.hits - before.hits == 1
    # Key order is part of the grammar (it orders the properties), so it is another entry.
    reordered = {"anyOf": schema["anyOf"], "type": "object"}
    routed_backend(backend, reordered, 4).complete(messages)
    assert backend.grammar_cache_info().misses - after.misses == 1


@pytest.mark.model
def test_clone_shares_the_model_and_leaves_the_original_alone() -> None:
    schema = route_schema(MEMORY)
    cap = guaranteed_cap(schema)
    own = SAMPLING.clone(max_tokens=6)
    with load(own) as original:
        routed = routed_backend(original, schema, cap)
        assert routed.settings.json_schema == schema
        assert routed.settings.max_tokens == cap
        assert original.settings is own
        assert routed.model_path == original.model_path
        messages = conversation(MEMORY, "Search for the latch.")
        assert parse_route(routed.complete(messages).text, route_tool_names(MEMORY)).ok
        # The original still sends no schema and keeps its own cap of 6.
        plain = original.complete(messages)
        assert plain.usage.completion_tokens <= 6
        # Closing a clone retires only the clone; closing the original frees the model for all.
        routed.close()
        with pytest.raises(BackendError, match="closed"):
            routed.complete(messages)
        assert original.complete(messages).usage.completion_tokens <= 6
        survivor = original.clone()
    with pytest.raises(BackendError, match="closed"):
        survivor.complete(messages)


@pytest.mark.model
def test_clone_takes_settings_and_a_reasoning_budget_and_checks_them(backend: EmbeddedLlama) -> None:
    with pytest.raises(
        TypeError, match=r"^EmbeddedLlama\.clone takes reasoning_budget, settings, not n_ctx$"
    ):
        backend.clone(n_ctx=8)
    with pytest.raises(TypeError, match=r"^settings is a toolrouting\.Settings, not dict$"):
        backend.clone(settings={"max_tokens": 3})


class _TurnLog:
    """Wraps the loaded ``llama_cpp.Llama`` and records when each completion starts and ends."""

    def __init__(self, llama: Any) -> None:
        self._llama = llama
        self._guard = threading.Lock()
        self.turns: list[tuple[float, float]] = []

    def create_chat_completion(self, **arguments: Any) -> Any:
        start = time.monotonic()
        time.sleep(0.05)  # widen the window in which an unserialised second request would overlap
        try:
            return self._llama.create_chat_completion(**arguments)
        finally:
            with self._guard:
                self.turns.append((start, time.monotonic()))


@pytest.mark.model
def test_clones_on_two_threads_take_turns(backend: EmbeddedLlama, monkeypatch: pytest.MonkeyPatch) -> None:
    # One llama.cpp context cannot decode two requests at once; the shared lock serialises them.
    log = _TurnLog(backend._model.llama)
    monkeypatch.setattr(backend._model, "llama", log)
    schema = route_schema(MEMORY)
    routed = routed_backend(backend, schema, guaranteed_cap(schema))
    prompts = ["Search for the latch.", "Read memory M2.", "Thanks, that is all."]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(prompts)) as pool:
        completions = list(pool.map(lambda p: routed.clone().complete(conversation(MEMORY, p)), prompts))
    turns = sorted(log.turns)
    assert len(turns) == len(prompts)
    for (_, end), (next_start, _) in itertools.pairwise(turns):
        assert end <= next_start, turns  # one request at a time, never two
    for completion in completions:
        assert parse_route(completion.text, route_tool_names(MEMORY)).ok, completion.text


@pytest.mark.model
def test_a_tiny_cap_is_reported_truncated(backend: EmbeddedLlama) -> None:
    # The shortest action, {"tool":"none"}, is 15 bytes; no token of the model that could open
    # a reply ("{" first) is that long, so one token can never hold a whole action.
    pieces = [backend._model.llama.detokenize([token]) for token in range(backend._model.llama.n_vocab())]
    assert max(len(piece) for piece in pieces if piece.startswith(b"{")) < len(b'{"tool":"none"}')
    routed = routed_backend(backend, route_schema(MEMORY), 1)
    completion = routed.complete(conversation(MEMORY, "Search for the latch."))
    assert completion.truncated
    assert completion.finish_reason == "length"
    assert completion.usage.completion_tokens == 1
    assert completion.text.startswith("{")  # constrained from the first token
    assert not parse_route(completion.text, route_tool_names(MEMORY)).ok


@pytest.mark.model
def test_a_schema_without_types_is_a_grammar_error(backend: EmbeddedLlama) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "memory_search",
                "parameters": {"type": "object", "properties": {"query": {"description": "words to find"}}},
            },
        }
    ]
    server = backend.clone(settings=backend.settings.clone(grammar="server"))  # llama-cpp-python's converter
    routed = routed_backend(server, route_schema(tools), 16)
    with pytest.raises(GrammarError, match=r'no type it knows .*give it a "type"') as caught:
        routed.complete(conversation(tools, "Search for the latch."))
    assert caught.value.pointer == "/anyOf/0/properties/arguments/properties/query"
    assert "/anyOf/0/properties/arguments/properties/query" in str(caught.value)
    assert isinstance(caught.value, BackendError)
    assert not isinstance(caught.value.__cause__, GrammarError)  # the converter's own error stays attached


@pytest.mark.model
def test_a_schema_that_is_not_json_is_a_grammar_error(backend: EmbeddedLlama) -> None:
    routed = backend.clone(settings=backend.settings.clone(json_schema={"enum": [float("nan")]}))
    with pytest.raises(GrammarError, match="not JSON"):
        routed.complete(conversation(MEMORY, "hello"))


@pytest.mark.model
def test_a_read_only_schema_is_a_schema_as_on_the_wire(backend: EmbeddedLlama) -> None:
    schema = MappingProxyType({"type": "object", "properties": MappingProxyType({}), "required": []})
    cap = guaranteed_cap(dict(schema, properties={}))
    routed = backend.clone(settings=backend.settings.clone(json_schema=schema, max_tokens=cap))
    completion = routed.complete(conversation(MEMORY, "hello"))
    assert not completion.truncated
    assert json.loads(completion.text) == {}  # the only object this schema allows


@pytest.mark.model
def test_a_conversation_over_the_context_is_a_backend_error(backend: EmbeddedLlama) -> None:
    messages: list[Message] = [{"role": "user", "content": "latch " * (backend.n_ctx + 100)}]
    with pytest.raises(BackendError, match=f"n_ctx={backend.n_ctx}"):
        backend.complete(messages)
    # The backend is still usable afterwards.
    after = backend.clone(settings=SAMPLING.clone(max_tokens=2)).complete(conversation(MEMORY, "hi"))
    assert after.usage.prompt_tokens > 0
    assert after.usage.completion_tokens <= 2
