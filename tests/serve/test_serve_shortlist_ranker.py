"""``serve_app(..., shortlist=K, ranker=)``: the server's own ranker, its index of each catalogue
kept and built again when the tools change, the hybrid's table loaded without the network, and
``toolrouting serve --ranker`` (BM25 alone unless it names the hybrid).

Served on loopback over the scripted backend (a fake by design: it records what each request was
sent) and asked through the real openai SDK; what is asserted is what the ranker chose and what
the backend was sent, never a model's choice.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from support.processes import offline_python
from support.ranker_indexes import indexes_built
from support.serve import served_to_sdk
from support.serve_process import _serving, _unreachable
from support.serve_shortlist import MESSAGES, NAMES, QUESTION, TOOLS, K, offered

from toolrouting import AsyncScriptedBackend, IndexedRanker, bm25_scores, default_ranker, shortlist
from toolrouting._serve import serve_app


def _names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    return [tool["function"]["name"] for tool in tools]


def test_the_servers_ranker_ranks_each_shortlist() -> None:
    asked: list[tuple[int, str]] = []

    def last_first(tools: Sequence[Mapping[str, Any]], query: str) -> list[float]:
        asked.append((len(tools), query))
        return [float(index) for index in range(len(tools))]

    with served_to_sdk("scripted", shortlist=K, ranker=last_first) as (backend, client):
        backend.enqueue('{"tool":"none"}', "Sunny.")
        client.chat.completions.create(model="scripted", messages=MESSAGES, tools=TOOLS)
        assert offered(backend.requests[0]) == [*NAMES[-K:], "none"]
    assert asked == [(len(TOOLS), QUESTION)]


def test_without_a_ranker_the_server_ranks_with_the_default_and_a_bad_one_is_refused_at_once() -> None:
    backend = AsyncScriptedBackend()
    assert serve_app(backend, shortlist=K).state.server.engine.ranker is default_ranker()
    assert not default_ranker().semantic
    assert serve_app(backend).state.server.engine.ranker is None
    with pytest.raises(TypeError, match="ranker= ranks the tools of shortlist=K; give shortlist= too"):
        serve_app(backend, ranker=bm25_scores)
    with pytest.raises(TypeError, match=r"ranker= takes a callable \(tools, query\) -> scores, not str"):
        serve_app(backend, shortlist=K, ranker="bm25")  # type: ignore[arg-type]


def test_each_catalogue_is_indexed_once_and_again_when_its_tools_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = indexes_built(monkeypatch)
    ranker = IndexedRanker(semantic=True)
    changed = copy.deepcopy(TOOLS)
    changed[NAMES.index("play_music")]["function"]["description"] = (
        "The weather forecast of a city, by email."
    )
    assert _names(shortlist(changed, MESSAGES, K, ranker=ranker)) != _names(
        shortlist(TOOLS, MESSAGES, K, ranker=ranker)
    )  # the edit ranks play_music in
    built.clear()
    with served_to_sdk("scripted", shortlist=K, ranker=ranker) as (backend, client):
        for tools in (TOOLS, TOOLS, changed, changed, TOOLS):
            backend.requests.clear()
            backend.enqueue('{"tool":"none"}', "Sunny.")
            client.chat.completions.create(model="scripted", messages=MESSAGES, tools=tools)
            expected = _names(shortlist(tools, MESSAGES, K, ranker=ranker))
            assert offered(backend.requests[0]) == [*expected, "none"]
    # Each request's tools are parsed anew from its body: the index is found by their bytes.
    assert built == []  # both catalogues were indexed above, by the same ranker
    fresh = IndexedRanker(semantic=True)
    with served_to_sdk("scripted", shortlist=K, ranker=fresh) as (backend, client):
        for tools in (TOOLS, TOOLS, changed, TOOLS):
            backend.enqueue('{"tool":"none"}', "Sunny.")
            client.chat.completions.create(model="scripted", messages=MESSAGES, tools=tools)
    assert built == [len(TOOLS), len(changed)]  # once each: the change is a new index, then both kept


#: A server made with a shortlist and the hybrid ranker in a fresh interpreter with the
#: network refused, one request served in process (Starlette's test client, no socket); it
#: prints the ranker, what was offered and the attempts refused.
_OFFLINE_SERVER = """
from starlette.testclient import TestClient
from toolrouting import AsyncScriptedBackend, IndexedRanker
from toolrouting._serve import serve_app
tools = [
    {"type": "function", "function": {"name": name, "description": text}}
    for name, text in [("get_weather", "The weather in a city."), ("send_email", "Send an email."),
                       ("play_music", "Play a song."), ("read_file", "Read a file.")]
]
backend = AsyncScriptedBackend(['{"tool":"none"}', "Warm."])
app = serve_app(backend, shortlist=2, ranker=IndexedRanker(semantic=True))
with TestClient(app) as client:
    question = [{"role": "user", "content": "How hot is it in Lisbon?"}]
    reply = client.post("/v1/chat/completions", json={"model": "m", "messages": question, "tools": tools})
schema = backend.requests[0].settings.json_schema
print(reply.status_code, app.state.server.engine.ranker.semantic, len(schema["anyOf"]))
print(attempts)
"""


def test_a_server_ranks_by_meanings_with_the_network_refused() -> None:
    done = offline_python(_OFFLINE_SERVER)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["200 True 3", "[]"]  # two tools and none; nothing connected


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ((), "by BM25 alone"),
        (("--ranker", "hybrid"), "by the meaning of its words and BM25"),
        (("--ranker", "bm25"), "by BM25 alone"),
    ],
)
def test_serve_says_what_ranks_its_shortlist(options: tuple[str, ...], said: str) -> None:
    with _serving(_unreachable(), "--shortlist", "3", *options) as (process, _):
        assert process.stderr is not None
        line = process.stderr.readline()
    assert line == f"toolrouting: a request of more than 3 tools is offered the 3 ranked best {said}\n"


def test_a_ranker_without_a_shortlist_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from toolrouting._cli import main

    assert main(["serve", "--base-url", "http://127.0.0.1:1/v1", "--ranker", "bm25", "--port", "0"]) == 2
    assert "--ranker ranks the tools of --shortlist K; give --shortlist too" in capsys.readouterr().err
    assert main(["serve", "--shortlist", "2", "--ranker", "words", "--port", "0"]) == 2
    assert "argument --ranker: invalid choice: 'words'" in capsys.readouterr().err
