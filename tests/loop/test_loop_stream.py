"""Streaming the final answer (``stream_answer=True``) and the routed decisions
(``stream_decisions=True``) through both drivers of the step machine.

The pieces come as :class:`AnswerDelta` events, and the answer is committed only once its
stream has ended: a stream cut short (a server that hangs up, a caller that stops reading, a
cancelled task) commits nothing, and a resume asks for the answer again. The wire cases run on
the HTTP backends against the fault server on loopback (a fake: it writes the server-sent
events of an OpenAI-compatible stream and hangs up on demand); the model test streams the
embedded model's real answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Generator
from pathlib import Path

import pytest
from support.drivers import Driver
from support.fault_server import FaultServer, ok
from support.stream_faults import chat_chunks, events, stream_then_close, streamed
from support.wire_faults import LOOKUP, NONE, QUESTION, TIMEOUT, Desk

from toolrouting import (
    ActionChosen,
    AnswerDelta,
    AsyncRoutingLoop,
    AsyncScriptedBackend,
    DecisionDelta,
    Event,
    OpenAICompatible,
    ReplyReceived,
    RoutingLoop,
    RunFinished,
    ScriptedBackend,
    read_transcript,
)
from toolrouting._errors import RetriesExhaustedError
from toolrouting._loop.answer_request import is_answer_request

ANSWER = "The latch holds the storage-room door shut."
PIECES = ["The latch ", "holds the ", "storage-room ", "door shut."]


def _answer_asked(path: Path) -> bool:
    """Whether the transcript ends with the answer request, no answer after it."""
    last = read_transcript(path).messages[-1]
    return last["role"] == "user" and is_answer_request(last["content"])


def test_the_pieces_are_events_and_the_answer_is_committed_whole(driver: Driver, tmp_path: Path) -> None:
    seen: list[Event] = []
    backend = ScriptedBackend([LOOKUP, NONE, ANSWER])
    loop = driver.loop(
        backend,
        Desk(),
        answer=True,
        stream_answer=True,
        transcript=tmp_path / "s.jsonl",
        on_event=seen.append,
    )
    result = loop.run(QUESTION)

    pieces = [event.text for event in seen if isinstance(event, AnswerDelta)]
    assert len(pieces) > 1
    assert "".join(pieces) == result.answer == ANSWER
    # The pieces, then what the server said of the answer, then the end.
    assert [type(event) for event in seen[-len(pieces) - 2 :]] == [
        *[AnswerDelta] * len(pieces),
        ReplyReceived,
        RunFinished,
    ]
    # The same bytes on disk as a run whose answer was not streamed.
    RoutingLoop(
        ScriptedBackend([LOOKUP, NONE, ANSWER]), Desk(), answer=True, transcript=tmp_path / "w.jsonl"
    ).run(QUESTION)
    assert (tmp_path / "s.jsonl").read_bytes() == (tmp_path / "w.jsonl").read_bytes()


def test_a_stream_cut_by_the_server_commits_nothing_and_resume_asks_again(
    driver: Driver, tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"
    seen: list[Event] = []
    cut = stream_then_close(events(chat_chunks(PIECES)), sent=3)  # the role chunk and two pieces
    with FaultServer() as server, OpenAICompatible(server.url, timeout=TIMEOUT) as backend:
        server.script.extend([ok(LOOKUP), ok(NONE), cut])
        loop = driver.loop(
            backend, Desk(), answer=True, stream_answer=True, retries=0, transcript=path, on_event=seen.append
        )
        with pytest.raises(RetriesExhaustedError, match="closed the connection"):
            loop.run(QUESTION)
        assert [e.text for e in seen if isinstance(e, AnswerDelta)] == PIECES[:2]  # shown, not kept
        assert _answer_asked(path)
        committed = path.read_bytes()

        server.script.append(streamed(events(chat_chunks(PIECES))))
        resumed = driver.loop(backend, Desk(), answer=True, stream_answer=True, transcript=path).resume()
    assert resumed.answer == ANSWER
    assert path.read_bytes().startswith(committed)
    assert read_transcript(path).messages[-1] == {"role": "assistant", "content": ANSWER}


def test_a_caller_that_stops_reading_mid_answer_commits_nothing(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    loop = RoutingLoop(
        ScriptedBackend([LOOKUP, NONE, ANSWER]), Desk(), answer=True, stream_answer=True, transcript=path
    )
    events = loop.iter_run(QUESTION)
    assert isinstance(events, Generator)  # a generator, which can be closed
    with contextlib.closing(events) as run:
        for event in run:
            if isinstance(event, AnswerDelta):
                break
    assert _answer_asked(path)
    again = ScriptedBackend([ANSWER])
    resumed = RoutingLoop(again, Desk(), answer=True, stream_answer=True, transcript=path).resume()
    assert resumed.answer == ANSWER
    assert len(again.requests) == 1  # the answer alone was asked for again


def test_a_cancelled_async_run_mid_answer_commits_nothing(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"

    async def cancelled() -> None:
        streaming = asyncio.Event()

        def watch(event: Event) -> None:
            if isinstance(event, AnswerDelta):
                streaming.set()

        async def slow_answer(_: object) -> str:
            return ANSWER

        backend = AsyncScriptedBackend([LOOKUP, NONE, slow_answer])
        loop = AsyncRoutingLoop(
            backend, Desk(), answer=True, stream_answer=True, transcript=path, on_event=watch
        )
        task = asyncio.create_task(loop.run(QUESTION))
        await streaming.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    assert _answer_asked(path)
    again = AsyncScriptedBackend([ANSWER])
    resumed = asyncio.run(
        AsyncRoutingLoop(again, Desk(), answer=True, stream_answer=True, transcript=path).resume()
    )
    assert resumed.answer == ANSWER
    assert len(again.requests) == 1


def _decisions(seen: list[Event]) -> dict[int, str]:
    """The streamed pieces of each round's decisions, joined."""
    joined: dict[int, str] = {}
    for event in seen:
        if isinstance(event, DecisionDelta):
            joined[event.round] = joined.get(event.round, "") + event.text
    return joined


def test_decisions_stream_as_pieces_and_are_parsed_once_whole(driver: Driver, tmp_path: Path) -> None:
    seen: list[Event] = []
    cut = '{"tool": "lookup",'  # refused whole (not JSON), though its pieces were shown
    backend = ScriptedBackend([cut, LOOKUP, NONE])
    loop = driver.loop(
        backend, Desk(), stream_decisions=True, transcript=tmp_path / "s.jsonl", on_event=seen.append
    )
    result = loop.run(QUESTION)

    assert _decisions(seen) == {1: cut + LOOKUP, 2: NONE}
    assert [e.text for e in seen if isinstance(e, ActionChosen)] == [LOOKUP, NONE]
    assert result.actions[-1].tool == "none"
    RoutingLoop(ScriptedBackend([cut, LOOKUP, NONE]), Desk(), transcript=tmp_path / "w.jsonl").run(QUESTION)
    assert (tmp_path / "s.jsonl").read_bytes() == (tmp_path / "w.jsonl").read_bytes()


def test_stream_answer_needs_a_backend_that_streams() -> None:
    class Plain(ScriptedBackend):
        stream = None  # type: ignore[assignment]

    with pytest.raises(TypeError, match=r"^stream_answer=True asks with the backend's stream\(\), and Plain"):
        RoutingLoop(Plain(), Desk(), answer=True, stream_answer=True)
    with pytest.raises(TypeError, match=r"^stream_decisions=True asks with the backend's stream\(\)"):
        RoutingLoop(Plain(), Desk(), stream_decisions=True)


@pytest.mark.model
@pytest.mark.parametrize("forced", [True, False], ids=["forced", "sampler"])
def test_the_embedded_model_streams_its_decisions_and_its_answer(
    driver: Driver, tmp_path: Path, forced: bool
) -> None:
    from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS

    from toolrouting import EmbeddedLlama, Settings, route_grammar, route_schema

    path = tmp_path / "run.jsonl"
    seen: list[Event] = []
    # Desk's word is an unbounded string, which bounded decisions bound: a cap one token past the
    # grammar's longest reply is never reached by a decision, so none is cut and repaired for length.
    longest = route_grammar(route_schema(Desk().tools_for_llm()), bounded=True).max_bytes
    assert longest is not None
    sampling = Settings(max_tokens=longest + 1, temperature=TEST_TEMPERATURE, seed=TEST_SEED)
    with EmbeddedLlama(settings=sampling, n_threads=TEST_THREADS, forced_tokens=forced) as model:
        result = driver.loop(
            model,
            Desk(),
            cap=longest + 1,
            answer=True,
            stream_answer=True,
            stream_decisions=True,
            transcript=path,
            on_event=seen.append,
        ).run(QUESTION)
    decisions = _decisions(seen)
    for chosen in (e for e in seen if isinstance(e, ActionChosen)):
        assert decisions[chosen.round].endswith(chosen.text)  # a refused reply's pieces come first
    pieces = [event.text for event in seen if isinstance(event, AnswerDelta)]
    assert "".join(pieces) == result.answer
    assert read_transcript(path).messages[-1] == {"role": "assistant", "content": result.answer}
