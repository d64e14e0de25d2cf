"""The loop with ``max_calls=K``: a decision of several calls, run, answered, limited and resumed.

Through both drivers (the ``driver`` fixture) on the scripted backend, whose record holds every
request: the route offered, the transcript committed and the events given. The async driver's
concurrency is checked on an async provider whose calls wait for each other. The embedded
model's replies under the K-call route, in a real run, all parse (a model test).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from support.catalogues import NONE, QUESTION, lookup, tool
from support.drivers import Driver

from benchmarks.common import corpus
from toolrouting import (
    ActionChosen,
    AsyncRoutingLoop,
    AsyncScriptedBackend,
    Event,
    LimitReached,
    RepairRequested,
    ScriptedBackend,
    ToolOutput,
    ToolReturned,
    catalogue_prompt,
    read_transcript,
    route_schema,
)
from toolrouting._loop.repair_feedback import repair_message


class Shelf:
    """Two tools; every call is recorded, in the order the loop made them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return [
            tool("lookup", word={"type": "string", "maxLength": 12}),
            tool("weigh", item={"type": "string", "enum": ["latch", "door", "hinge"]}),
        ]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        self.calls.append((name, arguments))
        if name == "weigh" and arguments["item"] == "door":
            raise RuntimeError("the scale is broken")
        return ToolOutput(f"{name}: {json.dumps(arguments, sort_keys=True)}")


def weigh(item: str) -> str:
    return json.dumps({"tool": "weigh", "arguments": {"item": item}})


def calls(*actions: str) -> str:
    return "[" + ", ".join(actions) + "]"


def made(driver: Driver, shelf: Shelf) -> list[tuple[str, dict[str, Any]]]:
    """The calls a run made: in the order written (sync), or in any order (async, concurrent)."""
    return shelf.calls if driver.name == "sync" else sorted(shelf.calls, key=json.dumps)


def written(driver: Driver, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    return calls if driver.name == "sync" else sorted(calls, key=json.dumps)


def test_a_decision_of_several_calls_runs_each_and_answers_each_under_its_own_id(
    driver: Driver, tmp_path: Path
) -> None:
    shelf, events = Shelf(), list[Event]()
    decision = calls(lookup("latch"), weigh("door"), weigh("hinge"))
    backend = ScriptedBackend([decision, lookup("key"), NONE])
    path = tmp_path / "run.jsonl"
    result = driver.loop(backend, shelf, max_calls=3, transcript=path, on_event=events.append).run(QUESTION)
    # The route offered is the route of up to three calls, every round.
    schema = route_schema(shelf.tools_for_llm(), max_calls=3)
    assert [request.settings.json_schema for request in backend.requests] == [schema] * 3
    # The calls ran in the order written (sync) or concurrently (async); each result is its
    # own message, under route-N counted over the run's calls, so the next one is route-4.
    assert made(driver, shelf) == written(
        driver,
        [
            ("lookup", {"word": "latch"}),
            ("weigh", {"item": "door"}),
            ("weigh", {"item": "hinge"}),
            ("lookup", {"word": "key"}),
        ],
    )
    own = list(result.messages[len(QUESTION) :])
    assert own == [
        {"role": "assistant", "content": decision},
        {"role": "user", "content": 'Tool result for lookup (call route-1):\nlookup: {"word": "latch"}'},
        {
            "role": "user",
            "content": (
                "Tool error for weigh (call route-2):\nthe tool failed: RuntimeError: the scale is broken"
            ),
        },
        {"role": "user", "content": 'Tool result for weigh (call route-3):\nweigh: {"item": "hinge"}'},
        {"role": "assistant", "content": lookup("key")},
        {"role": "user", "content": 'Tool result for lookup (call route-4):\nlookup: {"word": "key"}'},
        {"role": "assistant", "content": NONE},
    ]
    assert read_transcript(path).messages == result.messages
    # One action per call, the round's number on each; the rounds are the decisions.
    assert [(a.round, a.tool, a.text) for a in result.actions] == [
        (1, "lookup", lookup("latch")),
        (1, "weigh", weigh("door")),
        (1, "weigh", weigh("hinge")),
        (2, "lookup", lookup("key")),
        (3, "none", NONE),
    ]
    assert result.rounds == 3
    # The events show each call: chosen, then answered, under its id.
    chosen = [(e.round, e.text) for e in events if isinstance(e, ActionChosen)]
    assert chosen == [(a.round, a.text) for a in result.actions]
    returned = [(e.round, e.call_id, e.tool, e.is_error) for e in events if isinstance(e, ToolReturned)]
    assert returned == [
        (1, "route-1", "lookup", False),
        (1, "route-2", "weigh", True),
        (1, "route-3", "weigh", False),
        (2, "route-4", "lookup", False),
    ]


def test_one_call_under_max_calls_is_the_run_of_one_call_byte_for_byte(
    driver: Driver, tmp_path: Path
) -> None:
    # Only the route, the catalogue's reply format and the repair's shapes say that more was
    # allowed: a run whose decisions make one call each writes what max_calls=1 writes.
    script = ["Sure!", lookup("latch"), NONE]
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    first = driver.loop(ScriptedBackend(list(script)), Shelf(), transcript=one, instructions=False).run(
        QUESTION
    )
    second = driver.loop(
        ScriptedBackend(list(script)), Shelf(), transcript=two, instructions=False, max_calls=2
    ).run(QUESTION)
    tools = Shelf().tools_for_llm()
    differs = [
        index for index, (a, b) in enumerate(zip(first.messages, second.messages, strict=True)) if a != b
    ]
    assert differs == [len(QUESTION) + 1]  # the repair message alone
    assert second.messages[len(QUESTION) + 1]["content"] == repair_message(
        "the reply is neither a JSON object nor an array of 2 of them", tools, max_calls=2
    )
    assert first.actions == second.actions


def test_at_one_call_an_array_is_refused_and_repaired(driver: Driver) -> None:
    shelf, events = Shelf(), list[Event]()
    backend = ScriptedBackend([calls(lookup("latch"), lookup("door")), NONE])
    result = driver.loop(backend, shelf, on_event=events.append).run(QUESTION)
    assert shelf.calls == []
    assert [type(e).__name__ for e in events if isinstance(e, RepairRequested)] == ["RepairRequested"]
    assert backend.requests[0].settings.json_schema == route_schema(shelf.tools_for_llm())
    assert result.actions[-1].tool == "none"


def test_the_catalogue_says_an_array_may_make_up_to_k_calls(driver: Driver) -> None:
    tools = Shelf().tools_for_llm()
    assert "array" not in catalogue_prompt(tools)
    several = catalogue_prompt(tools, max_calls=3)
    assert "a JSON array of 2 to 3 such calls" in several
    assert several.startswith(catalogue_prompt(tools).split("\nFor example")[0])
    for max_calls, text in ((1, catalogue_prompt(tools)), (3, several)):
        backend = ScriptedBackend([NONE])
        driver.loop(backend, Shelf(), max_calls=max_calls).run(QUESTION)
        assert backend.requests[0].messages[0]["content"].startswith(text)


def test_the_limits_count_calls(driver: Driver) -> None:
    # max_rounds bounds the calls of a run: the decision's third call is the run's third, and
    # trips it; the others run, and the run ends with the tools withdrawn.
    shelf, events = Shelf(), list[Event]()
    backend = ScriptedBackend([lookup("a"), calls(lookup("b"), lookup("c")), NONE])
    result = driver.loop(backend, shelf, max_calls=2, max_rounds=2, on_event=events.append).run(QUESTION)
    assert shelf.calls == [("lookup", {"word": "a"}), ("lookup", {"word": "b"})]
    assert result.reason == "max_rounds"
    limited = [(e.call_id, e.limit) for e in events if isinstance(e, LimitReached)]
    assert limited == [("route-3", "max_rounds")]
    assert backend.requests[2].settings.json_schema == route_schema([], max_calls=2)
    # max_repeats counts a call made twice in one decision as a repeat.
    shelf, events = Shelf(), list[Event]()
    backend = ScriptedBackend([calls(lookup("a"), lookup("a"), lookup("b")), NONE])
    result = driver.loop(backend, shelf, max_calls=3, max_repeats=0, on_event=events.append).run(QUESTION)
    assert made(driver, shelf) == [("lookup", {"word": "a"}), ("lookup", {"word": "b"})]
    assert result.reason == "max_repeats"
    assert [(e.call_id, e.limit) for e in events if isinstance(e, LimitReached)] == [
        ("route-2", "max_repeats")
    ]
    notice = result.messages[len(QUESTION) + 2]["content"]
    assert notice.startswith(
        "Tool error for lookup (call route-2):\nNot run: this exact call has already run 1 time"
    )


def test_a_run_killed_after_its_decision_resumes_and_runs_its_calls(driver: Driver, tmp_path: Path) -> None:
    decision = calls(lookup("latch"), weigh("hinge"))
    whole = tmp_path / "whole.jsonl"
    driver.loop(ScriptedBackend([decision, NONE]), Shelf(), max_calls=2, transcript=whole).run(QUESTION)
    data = whole.read_bytes()
    lines = data.splitlines(keepends=True)
    # The header, the caller's messages, the decision: its results are not committed yet.
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[: 1 + len(QUESTION) + 1]))
    shelf, backend = Shelf(), ScriptedBackend([NONE])
    driver.loop(backend, shelf, max_calls=2, transcript=cut).resume()
    assert cut.read_bytes() == data
    assert made(driver, shelf) == written(
        driver, [("lookup", {"word": "latch"}), ("weigh", {"item": "hinge"})]
    )
    # Resumed after its results, nothing runs again.
    cut.write_bytes(b"".join(lines[: 1 + len(QUESTION) + 3]))
    shelf = Shelf()
    driver.loop(ScriptedBackend([NONE]), shelf, max_calls=2, transcript=cut).resume()
    assert cut.read_bytes() == data
    assert shelf.calls == []


def test_max_calls_is_checked_when_the_loop_is_made(driver: Driver) -> None:
    for bad, error in ((0, ValueError), (True, TypeError), ("2", TypeError)):
        with pytest.raises(error, match="max_calls="):
            driver.loop(ScriptedBackend(), Shelf(), max_calls=bad)


class Meeting:
    """An async provider whose two calls each wait until both have started: only concurrent
    calls finish (a sequential pair would wait for ever, so the test bounds it)."""

    def __init__(self, expected: int) -> None:
        self.started = 0
        self.expected = expected
        self.all_started = asyncio.Event()
        self.most_at_once = 0
        self.running = 0

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return [tool("lookup", word={"type": "string"})]

    async def acall(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        self.started += 1
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        if self.started == self.expected:
            self.all_started.set()
        await self.all_started.wait()
        await asyncio.sleep(0.01 if arguments["word"] == "a" else 0)  # "a" ends last
        self.running -= 1
        return ToolOutput(arguments["word"])


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_async_loop_runs_a_decisions_calls_concurrently_within_its_bound(
    anyio_backend: str,
) -> None:
    del anyio_backend
    meeting = Meeting(expected=3)
    backend = AsyncScriptedBackend([calls(lookup("a"), lookup("b"), lookup("c")), NONE])
    loop = AsyncRoutingLoop(backend, meeting, max_calls=3)
    result = await asyncio.wait_for(loop.run(QUESTION), 5)
    assert meeting.most_at_once == 3
    # The results go back in the order of the calls, whichever ended first.
    answered = [m["content"] for m in result.messages[len(QUESTION) + 1 : len(QUESTION) + 4]]
    assert answered == [
        f"Tool result for lookup (call route-{n}):\n{w}" for n, w in ((1, "a"), (2, "b"), (3, "c"))
    ]
    # With a bound of 1 they run one at a time: the first waits for the others, which never come.
    bounded = AsyncRoutingLoop(
        AsyncScriptedBackend([calls(lookup("a"), lookup("b")), NONE]),
        Meeting(expected=2),
        max_calls=2,
        max_concurrent_calls=1,
    )
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(bounded.run(QUESTION), 0.3)
    with pytest.raises(ValueError, match="max_concurrent_calls must be an integer of at least 1"):
        AsyncRoutingLoop(AsyncScriptedBackend(), meeting, max_concurrent_calls=0)


@pytest.mark.model
def test_every_reply_of_the_embedded_model_under_the_k_call_route_parses(
    driver: Driver, tmp_path: Path
) -> None:
    # Under a cap no reply of the route can reach, the grammar leaves the model no reply that
    # parse_routes refuses: no repair is ever asked, whatever it chooses, and the run resumes.
    from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS, guaranteed_cap

    from toolrouting import EmbeddedLlama, Settings

    shelf = Shelf()
    cap = guaranteed_cap(route_schema(shelf.tools_for_llm(), max_calls=3))
    question = [
        {"role": "user", "content": "Look up the latch and the hinge, and weigh the door and the hinge."}
    ]
    path = tmp_path / "run.jsonl"
    with EmbeddedLlama(
        settings=Settings(max_tokens=cap, temperature=TEST_TEMPERATURE, seed=TEST_SEED),
        n_threads=TEST_THREADS,
    ) as model:
        events: list[Event] = []
        result = driver.loop(
            model, shelf, cap=cap, max_calls=3, max_rounds=6, transcript=path, on_event=events.append
        ).run(question)
        assert not [e for e in events if isinstance(e, RepairRequested)]
        assert result.actions[-1].tool == "none"
        assert len(shelf.calls) == sum(isinstance(e, ToolReturned) for e in events)
        per_round: dict[int, int] = {}
        for action in result.actions:
            per_round[action.round] = per_round.get(action.round, 0) + 1
        assert max(per_round.values()) <= 3
        assert read_transcript(path).messages == result.messages


def test_the_benchmarks_cases_of_several_calls_are_each_a_route_of_their_catalogue() -> None:
    # benchmarks/quality/decisions.py --max-calls K asks them: each case's calls are a valid reply of the
    # route of up to four calls over its catalogue, and the scorer matches them in any order.
    from toolrouting import parse_routes, route_tool_names

    cases = corpus.load_parallel_cases()
    assert len(cases) >= 12
    for case in cases:
        tools = corpus.load_catalogue(case.catalogue)
        assert 2 <= len(case.calls) <= 4, case.id
        assert {tool for tool, _ in case.calls} <= set(route_tool_names(tools)), case.id
    made = [("get_weather", {"location": "Lisbon, PT"}), ("get_weather", {"location": "Oslo"})]
    expected = [("get_weather", {"location": "oslo"}), ("get_weather", {"location": "lisbon"})]
    assert corpus.calls_right(expected, made)
    assert not corpus.calls_right(expected, made[:1])
    assert not corpus.calls_right(expected, [*made, made[0]])
    assert not corpus.calls_right(expected, [made[0], made[0]])
    text = calls(*(json.dumps({"tool": tool, "arguments": arguments}) for tool, arguments in made))
    assert parse_routes(text, ["get_weather"], max_calls=4).ok
