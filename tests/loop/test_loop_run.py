"""The routing loop, branch by branch, on the scripted backend.

The scripted backend is a fake by design: it is how these tests choose exactly what the
model says (a refusal, a truncation, a retryable fault) at exactly the request they mean.
Each test runs through both drivers of the step machine (the ``driver`` fixture): the sync
``RoutingLoop`` and the ``AsyncRoutingLoop``, with the same expectations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.catalogues import NONE, QUESTION, lookup
from support.drivers import Driver
from support.loop_desk import SEARCH, Desk, loop_of, offered_names

from toolrouting import (
    BackendConnectError,
    BackendResponseError,
    Completion,
    ScriptedBackend,
    Settings,
    Usage,
    routed_call_id,
    split_routed_result,
)
from toolrouting._errors import RepairsExhaustedError
from toolrouting._limits import MAX_REPLY_QUOTE
from toolrouting._loop.answer_request import ANSWER_PROMPT
from toolrouting._loop.events import (
    ActionChosen,
    Event,
    LimitReached,
    RepairRequested,
    ReplyReceived,
    RetryScheduled,
    RoundStarted,
    RunFinished,
    ToolReturned,
)
from toolrouting._loop.repair_feedback import REPAIR_LEAD, repair_message, truncated_problem
from toolrouting._loop.tool_calls import limit_notice
from toolrouting._loop.transcript_format import encode_header, encode_message
from toolrouting._loop.transcript_reader import read_transcript
from toolrouting._provider import ToolOutput
from toolrouting.demo.store import MemoryStore


def test_actions_run_until_none_with_the_catalogue_read_every_round(driver: Driver) -> None:
    store = MemoryStore.sample()
    backend = ScriptedBackend([SEARCH, '{"tool":"memory_read","arguments":{"ids":["M4"]}}', f"  {NONE}\n"])
    result = loop_of(driver, backend, store, cap=64).run(QUESTION)

    assert result.reason == "handoff"
    assert [a.tool for a in result.actions] == ["memory_search", "memory_read", "none"]
    assert [a.round for a in result.actions] == [1, 2, 3]
    assert result.rounds == 3
    # The first round offers no memory_read (nothing listed yet); the second narrows its ids and,
    # with a listed note unread, leaves search out; the third offers both again.
    assert offered_names(backend.requests[0]) == ["memory_search", "none"]
    assert offered_names(backend.requests[1]) == ["memory_read", "none"]
    assert offered_names(backend.requests[2]) == ["memory_search", "memory_read", "none"]
    read_schema = backend.requests[1].settings.json_schema["anyOf"][0]  # type: ignore[index]
    assert read_schema["properties"]["arguments"]["properties"]["ids"]["items"]["enum"] == list(store.listed)
    assert all(
        r.settings.max_tokens == 64 and r.settings.json_schema_name == "tool_route" for r in backend.requests
    )
    assert backend.settings.json_schema is None  # the original is untouched
    added = result.messages[len(QUESTION) :]
    assert [m["role"] for m in added] == ["assistant", "user", "assistant", "user", "assistant"]
    assert added[0]["content"] == SEARCH
    assert added[4]["content"] == NONE  # the text exactly as parsed: trimmed
    header, content = split_routed_result(added[1]["content"]) or ("", "")
    assert header == "Tool result for memory_search (call route-1):"
    assert json.loads(content)["records"][0] == {"id": "M4", "title": "The storage-room latch"}
    assert added[3]["content"].startswith("Tool result for memory_read (call route-2):\n")
    assert "spring latch" in added[3]["content"]
    assert result.answer is None
    assert result.answer_usage is None
    assert [(u.round, u.requests) for u in result.usage] == [(1, 1), (2, 1), (3, 1)]
    assert result.usage[0].usage.completion_tokens == 5


def test_answer_asks_the_original_backend_after_the_answer_prompt(driver: Driver) -> None:
    backend = ScriptedBackend([lookup("latch"), NONE, "It locks the door by itself."])
    backend = backend.clone(settings=Settings(max_tokens=200))
    result = loop_of(driver, backend, answer=True).run(QUESTION)

    assert result.answer == "It locks the door by itself."
    assert [m["content"] for m in result.messages[-3:]] == [
        NONE,
        result.messages[-2]["content"],
        result.answer,
    ]
    assert [m["role"] for m in result.messages[-3:]] == ["assistant", "user", "assistant"]
    final = backend.requests[-1]
    assert final.settings.json_schema is None
    assert final.settings.max_tokens == 200  # its own budget, not the routing cap
    # The caller's system message, then the answer request as committed: the result, the
    # question, then the prompt.
    assert final.messages == (QUESTION[0], result.messages[-2])
    asked = final.messages[-1]["content"]
    assert asked.startswith("What was found:\nlatch")
    assert asked.endswith(f"\n\nQuestion: {QUESTION[-1]['content']}\n{ANSWER_PROMPT}")
    assert result.answer_usage is not None
    assert result.answer_usage.completion_tokens == 6


def test_a_refused_reply_is_repaired_and_the_action_keeps_its_round(driver: Driver) -> None:
    backend = ScriptedBackend(["Sure! Let me look that up.", lookup("latch"), NONE])
    events: list[Event] = []
    result = loop_of(driver, backend, on_event=events.append).run(QUESTION)

    added = result.messages[len(QUESTION) :]
    assert added[0]["content"] == "Sure! Let me look that up."
    assert added[1]["content"] == repair_message("the reply is not a JSON object", Desk().tools_for_llm())
    assert added[1]["content"].startswith(REPAIR_LEAD)
    assert '{"tool": "lookup", "arguments": {"word": ...}}' in added[1]["content"]
    assert added[2]["content"] == lookup("latch")
    assert added[3]["content"].startswith(f"Tool result for lookup (call {routed_call_id(1)}):")
    assert [a.round for a in result.actions] == [1, 2]
    assert RepairRequested(round=1, attempt=1, problem="the reply is not a JSON object") in events
    assert [(u.round, u.requests) for u in result.usage] == [(1, 2), (2, 1)]


def test_repairs_run_out_with_a_clear_error_quoting_little(driver: Driver, tmp_path: Path) -> None:
    long_prose = "I would rather chat about the weather " * 20
    backend = ScriptedBackend(["nope", '{"tool": "' + long_prose + '"}'])
    path = tmp_path / "run.jsonl"
    with pytest.raises(RepairsExhaustedError) as caught:
        loop_of(driver, backend, transcript=path).run(QUESTION)

    error = caught.value
    assert error.round == 1
    assert "max_repairs" in str(error)
    assert "is not one of the offered tools" in str(error)
    quoted = str(error).split('"')[1]
    assert quoted.startswith("I would rather")
    assert len(quoted) <= MAX_REPLY_QUOTE
    # Both replies and the one repair between them were committed, and nothing else.
    assert [m["content"] for m in read_transcript(path).messages[len(QUESTION) :]] == [
        "nope",
        repair_message("the reply is not a JSON object", Desk().tools_for_llm()),
        '{"tool": "' + long_prose + '"}',
    ]


def test_max_repairs_zero_fails_on_the_first_refusal(driver: Driver) -> None:
    with pytest.raises(RepairsExhaustedError, match="after 0 repairs"):
        loop_of(driver, ScriptedBackend(["{}"]), max_repairs=0).run(QUESTION)


def test_a_truncated_completion_is_never_dispatched(driver: Driver) -> None:
    desk = Desk()
    cut = Completion(text=lookup("latch"), finish_reason="length", truncated=True, usage=Usage())
    backend = ScriptedBackend([cut, NONE])
    result = loop_of(driver, backend, desk, cap=40).run(QUESTION)

    assert desk.calls == []
    assert [a.tool for a in result.actions] == ["none"]
    assert truncated_problem(40) in result.messages[len(QUESTION) + 1]["content"]


def test_a_cut_reply_that_exhausts_the_repairs_is_not_run_on_resume(driver: Driver, tmp_path: Path) -> None:
    # A complete-looking action cut at the cap: once committed, nothing would show it was cut.
    cut = Completion(text=lookup("latch"), finish_reason="length", truncated=True, usage=Usage())
    path = tmp_path / "run.jsonl"
    with pytest.raises(RepairsExhaustedError, match="cut off"):
        loop_of(driver, ScriptedBackend([cut]), Desk(), max_repairs=0, transcript=path).run(QUESTION)
    assert [m["role"] for m in read_transcript(path).messages] == [m["role"] for m in QUESTION]
    desk = Desk()
    result = loop_of(driver, ScriptedBackend([NONE]), desk, transcript=path).resume()
    assert desk.calls == []
    assert [a.tool for a in result.actions] == ["none"]


def test_a_completion_whose_text_is_not_a_string_is_a_backend_error(driver: Driver) -> None:
    odd = Completion(text=None, finish_reason="stop", usage=Usage())  # type: ignore[arg-type]
    with pytest.raises(BackendResponseError, match="returned text of type NoneType"):
        loop_of(driver, ScriptedBackend([odd]), Desk()).run(QUESTION)


def test_a_reply_cut_at_a_small_cap_is_refused_then_fails(driver: Driver) -> None:
    # The scripted backend cuts a reply with more words than the cap, as a server would.
    backend = ScriptedBackend([lookup("latch"), lookup("latch")])
    with pytest.raises(RepairsExhaustedError, match="cut off at the completion cap of 3 tokens"):
        loop_of(driver, backend, cap=3).run(QUESTION)


def test_the_rounds_limit_is_told_and_leaves_only_none(driver: Driver) -> None:
    backend = ScriptedBackend([lookup("a"), lookup("b"), lookup("c"), lookup("d"), NONE])
    events: list[Event] = []
    result = loop_of(driver, backend, max_rounds=2, on_event=events.append).run(QUESTION)

    assert result.reason == "max_rounds"
    assert [a.tool for a in result.actions] == ["lookup", "lookup", "lookup", "none"]
    notice = limit_notice("max_rounds", 2)
    third = result.messages[len(QUESTION) + 5]["content"]
    assert third == f"Tool error for lookup (call route-3):\n{notice}"
    assert (
        LimitReached(round=3, limit="max_rounds", tool="lookup", call_id="route-3", notice=notice) in events
    )
    # After the limit the schema offers only none, so the tool action is refused and repaired.
    assert offered_names(backend.requests[3]) == ["none"]
    assert offered_names(backend.requests[4]) == ["none"]
    assert "is not one of the offered tools" in result.messages[len(QUESTION) + 7]["content"]


def test_the_same_call_repeated_trips_max_repeats(driver: Driver) -> None:
    desk = Desk()
    same_reordered = '{"arguments": {"word": "latch"}, "tool": "lookup"}'
    backend = ScriptedBackend([lookup("latch"), lookup("latch"), same_reordered, NONE])
    result = loop_of(driver, backend, desk, max_repeats=1).run(QUESTION)

    assert result.reason == "max_repeats"
    assert len(desk.calls) == 2  # the third identical call (canonical arguments) did not run
    third = result.messages[len(QUESTION) + 5]["content"]
    assert third == "Tool error for lookup (call route-3):\n" + limit_notice("max_repeats", 1, 2)
    assert "already run 2 times" in third


def test_a_tool_that_raises_or_reports_an_error_is_fed_back_and_the_run_goes_on(driver: Driver) -> None:
    backend = ScriptedBackend(['{"tool": "explode", "arguments": {}}', lookup("missing"), NONE])
    events: list[Event] = []
    result = loop_of(driver, backend, on_event=events.append).run(QUESTION)

    added = result.messages[len(QUESTION) :]
    assert added[1]["content"] == (
        "Tool error for explode (call route-1):\nthe tool failed: RuntimeError: the tool blew up"
    )
    assert added[3]["content"] == "Tool error for lookup (call route-2):\nno entry for missing"
    assert [e.is_error for e in events if isinstance(e, ToolReturned)] == [True, True]
    assert result.reason == "handoff"


def test_a_provider_returning_the_wrong_type_is_a_tool_error(driver: Driver) -> None:
    class Sloppy(Desk):
        def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
            return "plain text"  # type: ignore[return-value]

    result = loop_of(driver, ScriptedBackend([lookup("x"), NONE]), Sloppy()).run(QUESTION)
    assert result.messages[len(QUESTION) + 1]["content"].endswith("the tool returned str, not a ToolOutput")


def test_events_come_in_order(driver: Driver) -> None:
    backend = ScriptedBackend(["hm", BackendConnectError("reset"), lookup("latch"), NONE])
    seen: list[Event] = []
    loop = loop_of(driver, backend, on_event=seen.append)
    iterated = list(loop.iter_run(QUESTION))

    assert seen == iterated
    assert [type(e) for e in iterated] == [
        RoundStarted,
        ReplyReceived,
        RepairRequested,
        RoundStarted,
        RetryScheduled,
        ReplyReceived,
        ActionChosen,
        ToolReturned,
        RoundStarted,
        ReplyReceived,
        ActionChosen,
        RunFinished,
    ]
    assert iterated[0] == RoundStarted(round=1, choices=("lookup", "explode", "none"))
    assert iterated[6] == ActionChosen(
        round=1, tool="lookup", arguments={"word": "latch"}, text=lookup("latch")
    )
    finished = iterated[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result.reason == "handoff"


def test_the_transcript_on_disk_equals_the_messages(driver: Driver, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    backend = ScriptedBackend(["??", lookup("latch"), '{"tool": "explode", "arguments": {}}', NONE, "Done."])
    result = loop_of(driver, backend, transcript=path, answer=True).run(QUESTION)

    header, *lines = path.read_bytes().splitlines(keepends=True)
    assert header == encode_header(len(QUESTION))
    # One line a message; the first line of a commit of several also counts them.
    assert [_without_count(line) for line in lines] == [encode_message(m) for m in result.messages]
    assert json.loads(header) == {"transcript": "toolrouting", "version": 3, "caller_messages": len(QUESTION)}
    assert read_transcript(path).messages == result.messages
    counts = [json.loads(line).get("commit") for line in lines]
    assert counts == [len(QUESTION), None, 2, *[None] * (len(lines) - 3)]  # the caller's; "??" and its repair
    for line in lines:
        assert list(json.loads(line)) in (["role", "content"], ["role", "content", "commit"])


def _without_count(line: bytes) -> bytes:
    record = json.loads(line)
    return encode_message({"role": record["role"], "content": record["content"]})
