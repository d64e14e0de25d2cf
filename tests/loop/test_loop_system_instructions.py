"""The loop's instructions: the run-start catalogue in one system message, stable and resumable.

The scripted backend is a fake by design: it records exactly what each request was sent.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from support.catalogues import NONE, QUESTION, tool
from support.drivers import Driver

from toolrouting import Message, ScriptedBackend, ToolOutput, catalogue_prompt
from toolrouting._loop.system_instructions import INSTRUCTIONS_SEPARATOR
from toolrouting.demo.store import MemoryStore

SEARCH = '{"tool": "memory_search", "arguments": {"query": "latch"}}'
READ = '{"tool": "memory_read", "arguments": {"ids": ["M4"]}}'


class Desk:
    def tools_for_llm(self) -> list[dict[str, object]]:
        return [tool("lookup", word={"type": "string"})]

    def call(self, name: str, arguments: dict[str, object]) -> ToolOutput:
        return ToolOutput(f"{arguments['word']}: a fastening.")


def test_the_catalogue_goes_first_in_the_callers_system_message(driver: Driver) -> None:
    backend = ScriptedBackend([NONE])
    result = driver.loop(backend, Desk()).run(QUESTION)
    sent = backend.requests[0].messages
    expected = catalogue_prompt(Desk().tools_for_llm()) + INSTRUCTIONS_SEPARATOR + QUESTION[0]["content"]
    assert sent[0] == {"role": "system", "content": expected}
    assert sent[1:] == tuple(QUESTION[1:])
    assert [m["role"] for m in sent].count("system") == 1
    assert result.messages[: len(sent)] == sent


def test_a_conversation_without_a_system_message_gets_one(driver: Driver) -> None:
    backend = ScriptedBackend([NONE])
    driver.loop(backend, Desk()).run(QUESTION[1:])
    sent = backend.requests[0].messages
    assert sent == (
        {"role": "system", "content": catalogue_prompt(Desk().tools_for_llm())},
        QUESTION[1],
    )


def test_the_callers_own_text_replaces_the_rendering_and_false_sends_nothing(driver: Driver) -> None:
    own = ScriptedBackend([NONE])
    driver.loop(own, Desk(), instructions="Use lookup for words.").run(QUESTION)
    assert own.requests[0].messages[0]["content"] == "Use lookup for words.\n\nAnswer from the notes."
    off = ScriptedBackend([NONE])
    driver.loop(off, Desk(), instructions=False).run(QUESTION)
    assert off.requests[0].messages == tuple(QUESTION)


@pytest.mark.parametrize(
    ("value", "error"), [(None, TypeError), (1, TypeError), ("  \n", ValueError), (b"x", TypeError)]
)
def test_bad_instructions_are_refused_when_the_loop_is_made(
    value: object, error: type[Exception], driver: Driver
) -> None:
    with pytest.raises(error, match="instructions="):
        driver.loop(ScriptedBackend(), Desk(), instructions=value)


def _demo_run(driver: Driver, path: Path | None = None) -> tuple[ScriptedBackend, list[Message]]:
    backend = ScriptedBackend([SEARCH, READ, NONE])
    with MemoryStore.sample() as store:
        result = driver.loop(backend, store, transcript=path).run(QUESTION)
    return backend, list(result.messages)


def test_the_system_message_is_byte_identical_while_the_catalogue_narrows(driver: Driver) -> None:
    # The demo store offers memory_search alone at first, then memory_read alone: the text
    # keeps the run-start catalogue, and each request extends the one before it.
    backend, _ = _demo_run(driver)
    with MemoryStore.sample() as store:
        first = catalogue_prompt(store.tools_for_llm())
    requests = [request.messages for request in backend.requests]
    assert len(requests) == 3
    assert {request[0]["content"] for request in requests} == {
        first + INSTRUCTIONS_SEPARATOR + QUESTION[0]["content"]
    }
    for earlier, later in itertools.pairwise(requests):
        assert later[: len(earlier)] == earlier


def test_a_resumed_run_sends_the_same_bytes_and_renders_nothing_again(tmp_path: Path, driver: Driver) -> None:
    whole = tmp_path / "whole.jsonl"
    backend, _ = _demo_run(driver, whole)
    lines = whole.read_bytes().splitlines(keepends=True)
    # Killed after round 1's result: the header, the conversation (2), the search and its result.
    killed = tmp_path / "killed.jsonl"
    killed.write_bytes(b"".join(lines[:5]))
    resumed_backend = ScriptedBackend([READ, NONE])
    with MemoryStore.sample() as store:
        # Instructions of another kind on the resuming loop change nothing: the transcript holds them.
        loop = driver.loop(resumed_backend, store, transcript=killed, instructions="other text")
        result = loop.resume()
    assert killed.read_bytes() == whole.read_bytes()
    assert [r.messages for r in resumed_backend.requests] == [r.messages for r in backend.requests[1:]]
    assert [m["role"] for m in result.messages].count("system") == 1
