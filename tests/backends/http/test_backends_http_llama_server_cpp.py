"""The ``llama.cpp`` dialect against the real C++ ``llama-server`` on loopback, default model.

The server comes from the session fixture ``llama_server`` in tests/conftest.py (the binary
scripts/build-llama-server.sh caches). Our grammar goes in the request's ``grammar`` field and
the server's own conversion of the schema is the other mode; under either, a routed request
capped by ``guaranteed_cap`` gets a whole action back, whichever the model writes.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.model import TEST_SEED, TEST_TEMPERATURE, demo_cap
from support.replies import outside_strings

from toolrouting import GrammarError, Message, OpenAICompatible, RoutingLoop, Settings, parse_route
from toolrouting._backends import dialects
from toolrouting.demo.store import MemoryStore

pytestmark = pytest.mark.model

QUESTION = "What does the latch on the storage-room door do?"
MODES = ["ours", "server"]
RULES = " ".join(
    f"Rule {n}: the notes are kept in the shed, and answered from the notes alone." for n in range(8)
)


@pytest.fixture
def backend(llama_server: str) -> Iterator[OpenAICompatible]:
    settings = Settings(max_tokens=demo_cap(), temperature=TEST_TEMPERATURE, seed=TEST_SEED)
    with OpenAICompatible(llama_server, dialect="llama.cpp", settings=settings) as http_backend:
        yield http_backend


@pytest.mark.parametrize("grammar", MODES)
def test_a_routed_run_of_the_demo_in_either_grammar_mode(backend: OpenAICompatible, grammar: str) -> None:
    mode = backend.clone(settings=backend.settings.clone(grammar=grammar))
    with MemoryStore.sample() as store:
        result = RoutingLoop(mode, store, cap=demo_cap(), max_rounds=4).run(
            [{"role": "user", "content": QUESTION}]
        )
    assert result.actions, result.reason
    replies = [message["content"] for message in result.messages if message["role"] == "assistant"]
    assert replies
    for reply in replies:
        assert parse_route(reply, ["memory_search", "memory_read"]).ok, reply
        if grammar == "ours":  # our grammar writes no whitespace between tokens
            assert not any(char.isspace() for char in outside_strings(reply)), reply
    for spent in result.usage:  # every reply whole: the cap is above the longest action
        assert 0 < spent.usage.completion_tokens < demo_cap() * spent.requests


def test_a_grammar_the_server_refuses_is_a_named_error(
    backend: OpenAICompatible, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fault injection: our compiler writes only grammars llama.cpp parses, so a broken one is
    # put in its place to see the real server's refusal reach the caller as a GrammarError.
    class Broken:
        gbnf = 'root ::= "unclosed'

    monkeypatch.setattr(dialects, "route_grammar", lambda *args, **kwargs: Broken())
    routed = backend.clone(settings=backend.settings.clone(json_schema={"type": "string"}, max_tokens=8))
    with pytest.raises(GrammarError, match=r"refused the grammar toolrouting compiled .*HTTP 400"):
        routed.complete([{"role": "user", "content": "Say hi."}])
    server = routed.clone(settings=routed.settings.clone(grammar="server"))
    assert server.complete([{"role": "user", "content": "Say hi."}]).text.startswith('"')


def test_the_usage_says_what_the_servers_prompt_cache_held(backend: OpenAICompatible) -> None:
    # A unique first message, so nothing from another test is in the server's cache.
    asked: list[Message] = [
        {"role": "system", "content": f"Answer in one sentence. {id(backend)} {RULES}"},
        {"role": "user", "content": QUESTION},
    ]
    first, again = backend.complete(asked), backend.complete(asked)
    # The first may find the chat template's opening tokens of an earlier test's prompt cached.
    assert first.usage.cached_tokens < again.usage.cached_tokens
    assert first.usage.prompt_tokens == again.usage.prompt_tokens > again.usage.cached_tokens > 0
