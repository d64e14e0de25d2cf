"""The request log: one record per request, written once its response is finished.

Served on loopback over the scripted backend (``serve_app(..., request_log=...)``) and asked
through the real SDKs (openai's chat completions and Responses, anthropic's Messages), whole and
streamed, so each record is held against what the client itself got: the status, the usage, the
calls. Every error a client can meet (400, 401, 404, 413, 502) gets its record too. Then the
embedded default model, asked the same request twice, says in the usage and in the record how
many of the prompt's tokens its prompt cache held (a model test). What the command line writes
(the text, ``-q``, ``--log-json``, nothing secret) is tests/serve/test_serve_request_log_cli.py's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import anthropic
import anyio
import httpx
import openai
import pytest
from support.serve import TOOLS, served, served_embedded

from toolrouting import (
    AsyncScriptedBackend,
    BackendConnectError,
    Completion,
    RequestRecord,
    ScriptedRequest,
    Usage,
    serve_app,
)
from toolrouting._limits import SERVE_MAX_BODY_BYTES

QUESTION: list[Any] = [{"role": "user", "content": "What does the latch do?"}]
CALL = '{"tool":"search","arguments":{"query":"latch"}}'
ANSWER = "The latch holds the door shut."
KEY = "sk-log-test-key"
WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


class Records:
    """The records a server handed over, in order; :meth:`wait` for the next ``n``."""

    def __init__(self) -> None:
        self.all: list[RequestRecord] = []

    def __call__(self, record: RequestRecord) -> None:
        self.all.append(record)

    def wait(self, n: int = 1) -> list[RequestRecord]:
        """The next ``n`` records: each is written once its response's last byte went out, which
        may be a moment after the client read it."""
        deadline = time.monotonic() + 30
        while len(self.all) < n:
            assert time.monotonic() < deadline, f"{len(self.all)} of {n} records came"
            time.sleep(0.01)
        taken, self.all[:] = self.all[:n], self.all[n:]
        return taken


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[AsyncScriptedBackend, Records, str]]:
    backend, records = AsyncScriptedBackend(), Records()
    app = serve_app(backend, model="m", require_key=KEY, request_log=records, shortlist=1)
    with served(app) as url:
        yield backend, records, url


@pytest.fixture
def backend(server: tuple[AsyncScriptedBackend, Records, str]) -> Iterator[AsyncScriptedBackend]:
    backend, records, _ = server
    backend.requests.clear()
    records.all.clear()
    yield backend
    assert backend.pending == 0, "a scripted reply was left unasked"
    assert records.all == [], "a request left a record no test read"


@pytest.fixture
def records(server: tuple[AsyncScriptedBackend, Records, str]) -> Records:
    return server[1]


@pytest.fixture
def client(server: tuple[AsyncScriptedBackend, Records, str]) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server[2], api_key=KEY, max_retries=0) as client:
        yield client


@pytest.fixture
def claude(server: tuple[AsyncScriptedBackend, Records, str]) -> Iterator[anthropic.Anthropic]:
    root = server[2].removesuffix("/v1")
    with anthropic.Anthropic(base_url=root, api_key=KEY, max_retries=0) as client:
        yield client


def _used(prompt: int, completion: int, cached: int) -> Completion:
    usage = Usage(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached)
    return Completion(text=CALL, finish_reason="stop", usage=usage)


def test_a_call_is_logged_with_its_tools_tokens_and_name(
    backend: AsyncScriptedBackend, records: Records, client: openai.OpenAI
) -> None:
    backend.enqueue(_used(120, 9, 64))
    reply = client.chat.completions.create(model="m", messages=QUESTION, tools=[TOOLS[0]])
    [record] = records.wait()
    assert reply.usage is not None
    assert reply.usage.prompt_tokens_details is not None
    assert reply.usage.prompt_tokens_details.cached_tokens == 64
    assert record.fields() == {
        "api": "chat",
        "status": 200,
        "stream": False,
        "tools": 1,
        "offered": 1,
        "prompt_tokens": 120,
        "cached_tokens": 64,
        "completion_tokens": 9,
        "decision": "call",
        "calls": ["search"],
        "error": None,
        "seconds": record.fields()["seconds"],
        "notes": [],
    }
    assert 0 <= record.seconds < 30
    assert record.line().startswith(
        "toolrouting: chat 200 tools=1 prompt=120 cached=64 completion=9 decision=search "
    )


def test_a_streamed_answer_after_none_is_logged_when_the_stream_ends(
    backend: AsyncScriptedBackend, records: Records, client: openai.OpenAI
) -> None:
    backend.enqueue('{"tool":"none"}', ANSWER)
    stream = client.chat.completions.create(
        model="m", messages=QUESTION, tools=[TOOLS[0]], stream=True, stream_options={"include_usage": True}
    )
    usage = [chunk.usage for chunk in stream if chunk.usage is not None][-1]
    [record] = records.wait()
    assert (record.api, record.status, record.stream, record.decision) == ("chat", 200, True, "none")
    assert (record.prompt_tokens, record.completion_tokens) == (usage.prompt_tokens, usage.completion_tokens)
    assert " stream " in record.line()
    assert " decision=none " in record.line()


def test_the_shortlist_says_how_many_tools_it_kept(
    backend: AsyncScriptedBackend, records: Records, client: openai.OpenAI
) -> None:
    backend.enqueue('{"tool":"none"}', ANSWER)
    client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS)
    [record] = records.wait()
    assert (record.tools, record.offered) == (2, 1)
    assert " tools=2 offered=1 " in record.line()


def test_responses_and_messages_are_logged_under_their_api(
    backend: AsyncScriptedBackend, records: Records, client: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    backend.enqueue('{"tool":"none"}', ANSWER, _used(140, 5, 128))
    response = client.responses.create(model="m", input="What does the latch do?", tools=[_flat(TOOLS[0])])
    tool: Any = {"name": "search", "input_schema": TOOLS[0]["function"]["parameters"]}
    with claude.messages.stream(model="m", max_tokens=64, messages=QUESTION, tools=[tool]) as stream:
        message = stream.get_final_message()
    answered, called = records.wait(2)
    assert response.usage is not None
    assert (answered.api, answered.decision, answered.prompt_tokens) == (
        "responses",
        "none",
        response.usage.input_tokens,
    )
    assert (called.api, called.stream, called.decision, called.calls) == (
        "messages",
        True,
        "call",
        ["search"],
    )
    # Anthropic counts the cached tokens apart from input_tokens; the record counts the prompt whole.
    assert (message.usage.input_tokens, message.usage.cache_read_input_tokens) == (12, 128)
    assert (called.prompt_tokens, called.cached_tokens) == (140, 128)


def test_count_tokens_and_models_are_logged_without_a_decision(
    backend: AsyncScriptedBackend, records: Records, client: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    tool: Any = {"name": "search", "input_schema": TOOLS[0]["function"]["parameters"]}
    claude.messages.count_tokens(model="m", messages=QUESTION, tools=[tool])
    client.models.list()
    counted, listed = records.wait(2)
    assert (counted.api, counted.status, counted.tools, counted.decision) == ("count_tokens", 200, 1, None)
    assert (listed.api, listed.status, listed.decision, listed.prompt_tokens) == ("models", 200, None, None)
    assert listed.line().startswith("toolrouting: models 200 ")


def test_every_error_gets_its_line(
    server: tuple[AsyncScriptedBackend, Records, str], backend: AsyncScriptedBackend, records: Records
) -> None:
    url = server[2]
    key = {"Authorization": f"Bearer {KEY}"}
    body = {"model": "m", "messages": QUESTION, "tools": [TOOLS[0]]}
    backend.enqueue(BackendConnectError("the upstream is down"))
    statuses = [
        httpx.post(f"{url}/chat/completions", json=body).status_code,
        httpx.post(f"{url}/chat/completions", json={"model": "m"}, headers=key).status_code,
        httpx.post(f"{url}/messages", content=b"x" * (SERVE_MAX_BODY_BYTES + 1), headers=key).status_code,
        httpx.post(f"{url}/chat/completions", json=body, headers=key, timeout=30).status_code,
        httpx.get(f"{url}/chat/completion", headers=key).status_code,
    ]
    logged = records.wait(5)
    assert statuses == [401, 400, 413, 502, 404]
    assert [(r.api, r.status, r.decision, r.error) for r in logged] == [
        ("chat", 401, "refused", "invalid_api_key"),
        ("chat", 400, "refused", "invalid_request"),
        ("messages", 413, "refused", "request_too_large"),
        ("chat", 502, "failed", "BackendConnectError"),
        ("other", 404, "refused", "not_found"),
    ]
    assert " decision=failed:BackendConnectError " in logged[3].line()
    assert logged[4].notes == ["no route for GET /v1/chat/completion"]
    assert logged[4].line().endswith(" notes: no route for GET /v1/chat/completion")


def test_health_checks_are_not_logged(
    server: tuple[AsyncScriptedBackend, Records, str], backend: AsyncScriptedBackend, records: Records
) -> None:
    assert httpx.get(server[2].removesuffix("/v1") + "/health").status_code == 200
    time.sleep(0.2)
    assert records.all == []


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_that_leaves_is_logged_499(
    server: tuple[AsyncScriptedBackend, Records, str],
    backend: AsyncScriptedBackend,
    records: Records,
    stream: bool,
) -> None:
    async def endless(request: ScriptedRequest) -> str:
        await anyio.sleep(3600)
        return CALL  # pragma: no cover

    backend.enqueue(endless)
    body = {"model": "m", "messages": QUESTION, "tools": [TOOLS[0]], "stream": stream}
    key = {"Authorization": f"Bearer {KEY}"}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{server[2]}/chat/completions", json=body, headers=key, timeout=httpx.Timeout(30, read=0.5)
        )
    [record] = records.wait()
    assert (record.api, record.status, record.stream, record.decision) == ("chat", 499, stream, None)
    # The client's 0.5 s read timeout starts before the server's clock does (the body is still on
    # its way), so the record counts a little less than the wait, and far more than no wait.
    assert record.seconds >= 0.25


def test_an_abstention_is_logged_as_one() -> None:
    backend, records = AsyncScriptedBackend(), Records()
    with (
        served(serve_app(backend, abstain="grounding", request_log=records)) as url,
        openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client,
    ):
        backend.enqueue('{"tool":"get_weather","arguments":{"city":"Paris"}}', "Which city do you mean?")
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Rain?"}], tools=[WEATHER]
        )
        [record] = records.wait()
    assert (record.decision, record.calls) == ("abstained", [])
    assert " decision=abstained " in record.line()


def test_a_line_is_one_line_whatever_a_client_named() -> None:
    record = RequestRecord(api="chat", status=200, decision="call", calls=["a\nb"], notes=["GET /x\r\ny"])
    assert record.line() == "toolrouting: chat 200 decision=a?b 0.00s notes: GET /x??y"


def _flat(tool: dict[str, Any]) -> Any:
    """A chat completions tool as the Responses API declares it."""
    return {"type": "function", **tool["function"]}


@pytest.mark.model
def test_the_embedded_model_says_how_much_of_a_repeated_prompt_its_cache_held() -> None:
    records = Records()
    with (
        served_embedded(request_log=records) as url,
        openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client,
    ):
        asked: Any = {"model": "m", "messages": QUESTION, "tools": TOOLS, "tool_choice": "required"}
        client.chat.completions.create(**asked)
        again = client.chat.completions.create(**asked)
        cold, warm = records.wait(2)
    assert again.usage is not None
    assert again.usage.prompt_tokens_details is not None
    assert cold.cached_tokens == 0
    # The prompt's whole blocks of the cache (64 tokens), all but its last token, come back.
    held = (again.usage.prompt_tokens - 1) // 64 * 64
    assert warm.cached_tokens == again.usage.prompt_tokens_details.cached_tokens == held > 0
    assert warm.prompt_tokens == again.usage.prompt_tokens
    assert warm.decision == "call"
    assert len(warm.calls) == 1
