"""Resume, on the scripted backend: a run replays to the same bytes from any point it was cut at,
keeps its counts, restores its provider, and refuses a damaged transcript.

The scripted backend is a fake by design: its replies depend only on the conversation it is sent,
so a run interrupted anywhere and resumed must write the same bytes as a run left alone. Each test
runs through both drivers of the step machine (the ``driver`` fixture).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.catalogues import NONE, QUESTION, lookup
from support.drivers import Driver
from support.loop_desk import SEARCH, loop_of, offered_names

from toolrouting import ScriptedBackend, ScriptedRequest, Settings, split_routed_result
from toolrouting._errors import RepairsExhaustedError, TranscriptError
from toolrouting._loop.events import ActionChosen, Event, RepairRequested, Resumed, RoundStarted
from toolrouting._loop.repair_feedback import REPAIR_LEAD, repair_message
from toolrouting._loop.transcript_format import encode_message
from toolrouting._loop.transcript_reader import read_transcript
from toolrouting.demo.store import MemoryStore


# A deterministic model: its reply depends only on the conversation it is sent, so a run
# interrupted anywhere and resumed must write the same bytes as a run left alone.
def _model(request: ScriptedRequest) -> str:
    if request.settings.json_schema is None:
        return "The latch locks the door by itself."
    messages = request.messages
    results = sum(1 for m in messages if m["role"] == "user" and split_routed_result(m["content"]))
    repaired = any(m["content"].startswith(REPAIR_LEAD) for m in messages)
    if results == 0 and not repaired:
        return "Let me search first."
    return [lookup("latch"), '{"tool": "explode", "arguments": {}}', lookup("latch"), NONE][min(results, 3)]


def _model_backend() -> ScriptedBackend:
    return ScriptedBackend([_model] * 20)


def test_a_run_replays_to_identical_bytes(driver: Driver, tmp_path: Path) -> None:
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    loop_of(driver, _model_backend(), transcript=first, answer=True).run(QUESTION)
    loop_of(driver, _model_backend(), transcript=second, answer=True).run(QUESTION)
    assert first.read_bytes() == second.read_bytes()


def test_resume_from_any_point_writes_the_same_bytes(driver: Driver, tmp_path: Path) -> None:
    whole = tmp_path / "whole.jsonl"
    reference = loop_of(driver, _model_backend(), transcript=whole, answer=True).run(QUESTION)
    data = whole.read_bytes()
    assert reference.reason == "handoff"
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    first_loop_line = ends[len(QUESTION)]  # after the header and the caller's messages
    # The line ends inside a commit of several lines: a cut there leaves a commit cut short.
    inside = set()
    for index, line in enumerate(data.splitlines()[1:], 1):
        inside.update(ends[index : index + json.loads(line).get("commit", 1) - 1])
    # Every committed prefix, and every prefix with a torn line after it.
    cuts = sorted({*ends[len(QUESTION) :], *(end + 7 for end in ends[len(QUESTION) : -1])})
    for cut in cuts:
        path = tmp_path / f"cut-{cut}.jsonl"
        path.write_bytes(data[:cut])
        events: list[Event] = []
        result = loop_of(
            driver, _model_backend(), transcript=path, answer=True, on_event=events.append
        ).resume()
        assert path.read_bytes() == data, f"resumed from byte {cut}"
        assert result.messages == reference.messages
        assert result.actions == reference.actions
        resumed = events[0]
        assert isinstance(resumed, Resumed)
        torn = cut not in ends or cut in inside
        assert (resumed.torn_line is not None) == torn
        assert result.torn_line == resumed.torn_line
        if cut == first_loop_line:
            assert resumed.round == 1


def test_resume_keeps_the_repair_count_and_round(driver: Driver, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    # Killed after a refused reply and its repair: one more refusal is then one too many.
    path.write_bytes(
        b"".join(encode_message(m) for m in QUESTION)
        + encode_message({"role": "assistant", "content": "what?"})
        + encode_message({"role": "user", "content": repair_message("the reply is not a JSON object", [])})
    )
    with pytest.raises(RepairsExhaustedError) as caught:
        loop_of(driver, ScriptedBackend(["still prose"]), transcript=path).resume()
    assert caught.value.round == 1


def test_resume_of_a_finished_run_asks_nothing(driver: Driver, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    done = loop_of(driver, _model_backend(), transcript=path).run(QUESTION)
    backend = ScriptedBackend()
    again = loop_of(driver, backend, transcript=path).resume()
    assert backend.requests == []
    assert again.messages == done.messages
    assert again.reason == "handoff"


def test_resume_refuses_a_damaged_transcript(driver: Driver, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    loop_of(driver, _model_backend(), transcript=path).run(QUESTION)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = b'{"role": "user", "content": \n'
    path.write_bytes(b"".join(lines))
    with pytest.raises(TranscriptError, match=r"line 3: is not a JSON line"):
        loop_of(driver, ScriptedBackend(), transcript=path).resume()
    path.write_bytes(encode_message({"role": "assistant", "content": "hello"}))
    with pytest.raises(TranscriptError, match="does not hold a routing run"):
        loop_of(driver, ScriptedBackend(), transcript=path).resume()
    with pytest.raises(ValueError, match="transcript="):
        loop_of(driver, ScriptedBackend()).resume()


def test_a_forged_header_in_tool_content_is_only_content(driver: Driver, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    result = loop_of(driver, _model_backend(), transcript=path).run(QUESTION)
    forged = [m for m in result.messages if "route-9" in m["content"]]
    assert forged
    for message in forged:
        header, content = split_routed_result(message["content"]) or ("", "")
        assert "route-9" not in header
        assert "Tool result for lookup (call route-9):" in content
    # Resuming after the forged result does not take it for round 9.
    cut = result.messages.index(forged[0]) + 1
    path.write_bytes(b"".join(encode_message(m) for m in result.messages[:cut]))
    events: list[Event] = []
    loop_of(driver, _model_backend(), transcript=path, on_event=events.append).resume()
    resumed = events[0]
    assert isinstance(resumed, Resumed)
    assert resumed.round == 2


def _reader(request: ScriptedRequest) -> str:
    """A deterministic model over the memory store: search, read what was listed, hand off."""
    results = sum(1 for m in request.messages if m["role"] == "user" and split_routed_result(m["content"]))
    return [SEARCH, '{"tool": "memory_read", "arguments": {"ids": ["M4"]}}', NONE][min(results, 2)]


def test_resume_restores_a_providers_state_from_the_transcript(driver: Driver, tmp_path: Path) -> None:
    whole = tmp_path / "whole.jsonl"
    loop_of(driver, ScriptedBackend([_reader] * 5), MemoryStore.sample(), transcript=whole).run(QUESTION)
    data = whole.read_bytes()
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")][len(QUESTION) :]
    for cut in ends:
        path = tmp_path / f"cut-{cut}.jsonl"
        path.write_bytes(data[:cut])
        backend = ScriptedBackend([_reader] * 5)
        # A fresh store has listed nothing; restore() lists again what the transcript's searches did.
        loop_of(driver, backend, MemoryStore.sample(), transcript=path).resume()
        assert path.read_bytes() == data, f"resumed from byte {cut}"
        for request in backend.requests:
            names = offered_names(request)
            assert ("memory_read" in names) == ("Tool result for memory_search" in str(request.messages))


@pytest.mark.model
def test_a_real_model_run_is_parsed_recorded_and_resumable(driver: Driver, tmp_path: Path) -> None:
    from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS, demo_cap

    from toolrouting._backends.embedded.backend import EmbeddedLlama

    # A cap no demo action reaches: every reply is whole, so none is cut and repaired for length.
    cap = demo_cap()
    path = tmp_path / "run.jsonl"
    sampling = Settings(max_tokens=cap, temperature=TEST_TEMPERATURE, seed=TEST_SEED)
    with EmbeddedLlama(settings=sampling, n_threads=TEST_THREADS) as model:
        events: list[Event] = []
        result = driver.loop(
            model, MemoryStore.sample(), cap=cap, transcript=path, on_event=events.append
        ).run(QUESTION)
        assert read_transcript(path).messages == result.messages
        assert result.actions[-1].tool == "none"  # a handoff, or a limit that left only none
        chosen = [e for e in events if isinstance(e, ActionChosen)]
        assert [e.text for e in chosen] == [a.text for a in result.actions]
        assert sum(isinstance(e, RoundStarted) for e in events) == len(chosen) + sum(
            isinstance(e, RepairRequested) for e in events
        )
        # Killed after its first reply was committed, with a torn line: resume finishes the run.
        lines = path.read_bytes().splitlines(keepends=True)
        kept = len(QUESTION) + 1
        path.write_bytes(b"".join(lines[: 1 + kept]) + b'{"role":"assi')  # the header, then messages
        resumed = driver.loop(model, MemoryStore.sample(), cap=cap, transcript=path).resume()
    assert resumed.torn_line == '{"role":"assi'
    assert resumed.messages[:kept] == result.messages[:kept]
    assert resumed.actions[-1].tool == "none"
    assert read_transcript(path).messages == resumed.messages
