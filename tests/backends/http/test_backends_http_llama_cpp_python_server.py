"""OpenAICompatible against a real `python -m llama_cpp.server` on loopback with the default model.

The server comes from the session fixture ``llama_cpp_server`` in tests/conftest.py. It takes
our grammar in the request's ``grammar`` field, or turns the schema into one with the same
converter as the embedded backend (``grammar="server"``); either way a routed request capped by
``guaranteed_cap`` always gets a whole action back, whichever the model writes.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.llama_cpp_server_cases import NAMES, OWN_CAP, PROMPTS, ROUTE_CAP, TOOLS, ask
from support.model import TEST_SEED, TEST_TEMPERATURE

from toolrouting import Settings, parse_route, route_schema, routed_backend
from toolrouting._backends.http import OpenAICompatible
from toolrouting._errors import BackendHTTPError

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def backend(llama_cpp_server: str) -> Iterator[OpenAICompatible]:
    settings = Settings(max_tokens=OWN_CAP, temperature=TEST_TEMPERATURE, seed=TEST_SEED)
    with OpenAICompatible(llama_cpp_server, dialect="llama-cpp-python", settings=settings) as http_backend:
        yield http_backend


@pytest.mark.parametrize("grammar", ["ours", "server"])
@pytest.mark.parametrize("prompt", PROMPTS)
def test_routed_replies_are_actions(backend: OpenAICompatible, prompt: str, grammar: str) -> None:
    # "ours" sends our GBNF in the request's grammar field, "server" the schema for the server's converter.
    mode = backend.clone(settings=backend.settings.clone(grammar=grammar))
    routed = routed_backend(mode, route_schema(TOOLS), ROUTE_CAP)
    completion = routed.complete(ask(prompt))
    route = parse_route(completion.text, NAMES)
    assert route.ok, (route.error, completion.text)
    assert completion.finish_reason == "stop"
    assert not completion.truncated
    assert completion.usage.prompt_tokens > 0
    assert 0 < completion.usage.completion_tokens < ROUTE_CAP


def test_capped_clone_stops_at_its_cap_and_the_original_keeps_its_own(backend: OpenAICompatible) -> None:
    # One token cannot hold the shortest action, {"tool":"none"}
    # (tests/backends/embedded/test_backends_embedded.py checks the vocabulary), so the grammar
    # forces a cut.
    capped = routed_backend(backend, route_schema(TOOLS), 1)
    cut = capped.complete(ask(PROMPTS[0]))
    assert cut.truncated
    assert cut.finish_reason == "length"
    assert cut.usage.completion_tokens == 1
    assert cut.text.startswith("{")  # constrained from the first token, and cut mid-action
    assert not parse_route(cut.text, NAMES).ok

    poem = backend.complete([{"role": "user", "content": "Write a long poem about the sea."}])
    assert backend.settings == Settings(max_tokens=OWN_CAP, temperature=TEST_TEMPERATURE, seed=TEST_SEED)
    assert 0 <= poem.usage.completion_tokens <= OWN_CAP  # its own cap, not the clone's cap of 1
    assert poem.truncated == (poem.finish_reason == "length")


def test_the_openai_shape_is_refused_by_this_server(backend: OpenAICompatible) -> None:
    # llama-cpp-python's response_format takes "text" or "json_object" only: a wrong dialect is loud.
    wrong = routed_backend(backend.clone(dialect="openai"), route_schema(TOOLS), ROUTE_CAP)
    with pytest.raises(BackendHTTPError, match="another dialect than 'openai'") as caught:
        wrong.complete(ask(PROMPTS[0]))
    assert caught.value.status == 500
    assert "json_object" in caught.value.body
    assert parse_route(backend.clone(settings=wrong.settings).complete(ask(PROMPTS[0])).text, NAMES).ok
