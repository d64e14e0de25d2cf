"""The loop's shortlist (``shortlist=K``): what each round offers, and that nothing else changes.

The scripted backend is a fake by design: it records exactly what each request was sent, the
messages and the route schema, which is what these tests compare. The catalogue is the git MCP
server's (tests/catalogues/mcp), twelve tools, answered from fixed texts.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from support.catalogues import NONE, tool
from support.drivers import Driver
from support.loop_shortlist import ASKED, GIT, Repo, _script, call, offered
from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS

from benchmarks.common.corpus import load_cases, load_catalogue
from toolrouting import (
    ActionChosen,
    EmbeddedLlama,
    Event,
    RepairRequested,
    RepairsExhaustedError,
    RoundStarted,
    RoutingLoop,
    ScriptedBackend,
    Settings,
    ToolOutput,
    bm25_scores,
    catalogue_prompt,
    read_transcript,
    route_schema,
    shortlist,
    shortlist_query,
)
from toolrouting._limits import SHORTLIST_KEPT_TOOLS
from toolrouting._loop.offer import kept_tools
from toolrouting._loop.result import Action
from toolrouting.demo.store import MemoryStore


def names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    return [tool["function"]["name"] for tool in tools]


def started(events: list[Event]) -> list[RoundStarted]:
    return [event for event in events if isinstance(event, RoundStarted)]


def test_round_one_offers_exactly_the_shortlist_of_the_callers_messages(driver: Driver) -> None:
    # BM25 alone, whose words this test follows: round 2's result ranks round 1's tool off.
    backend = ScriptedBackend([call("git_diff_staged"), NONE])
    events = list(driver.loop(backend, Repo(), shortlist=3, ranker=bm25_scores).iter_run(ASKED))
    first = shortlist(GIT, shortlist_query(ASKED), 3, ranker=bm25_scores)
    assert names(first) == ["git_diff_staged", "git_add", "git_show"]
    # The instructions and the route are both the three tools', and the event says so.
    assert backend.requests[0].messages[0] == {"role": "system", "content": catalogue_prompt(first)}
    assert backend.requests[0].settings.json_schema == route_schema(first)
    rounds = started(events)
    assert rounds[0] == RoundStarted(round=1, choices=(*names(first), "none"), catalogue=12)
    # Round 2 ranks the question and the result read, and keeps the tool round 1 called.
    read = list(backend.requests[1].messages)
    second = shortlist(GIT, shortlist_query(read), 3, ranker=bm25_scores)
    assert "git_diff_staged" not in names(second)  # ranked off by the result's words ...
    expected = [name for name in names(GIT) if name in {*names(second), "git_diff_staged"}]
    assert offered(backend.requests[1]) == expected  # ... and kept, in catalogue order
    assert rounds[1].choices == (*expected, "none")
    # The system message is round 1's, byte for byte: the prefix a server caches stays.
    assert backend.requests[1].messages[0] == backend.requests[0].messages[0]


def test_a_tool_not_offered_is_outside_the_route_and_refused_by_the_parser(driver: Driver) -> None:
    backend = ScriptedBackend([call("git_branch", branch_type="local"), NONE])
    events = list(driver.loop(backend, Repo(), shortlist=3).iter_run(ASKED))
    assert "git_branch" not in offered(backend.requests[0])
    (repair,) = [event for event in events if isinstance(event, RepairRequested)]
    assert repair.problem == 'the tool "git_branch" is not one of the offered tools'
    # The valid shapes the repair lists are the offer's.
    shapes = backend.requests[1].messages[-1]["content"].splitlines()[2:-1]
    assert [json.loads(line.split(" when ")[0].replace("...", "0"))["tool"] for line in shapes] == [
        *offered(backend.requests[0]),
        "none",
    ]
    # The repaired request offers the round's tools again, chosen once for the round.
    assert offered(backend.requests[1]) == offered(backend.requests[0])
    assert [e.tool for e in events if isinstance(e, ActionChosen)] == ["none"]


def test_the_tools_called_are_kept_beside_the_k_best(driver: Driver) -> None:
    # A ranker that counts each tool's name in the query: each result names the next tool.
    def counted(tools: Any, query: str) -> list[float]:
        return [float(query.count(t["function"]["name"])) for t in tools]

    class Chain:
        def tools_for_llm(self) -> list[dict[str, Any]]:
            return [tool(name, word={"type": "string"}) for name in ("alpha", "beta", "gamma", "delta")]

        def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
            return ToolOutput({"alpha": "beta beta", "beta": "gamma gamma gamma"}[name])

    replies = [json.dumps({"tool": name, "arguments": {"word": "w"}}) for name in ("alpha", "beta")]
    backend = ScriptedBackend([*replies, NONE])
    loop = driver.loop(backend, Chain(), shortlist=1, ranker=counted)
    events = list(loop.iter_run([{"role": "user", "content": "alpha"}]))
    assert [e.choices for e in started(events)] == [
        ("alpha", "none"),
        ("alpha", "beta", "none"),  # beta ranked best, alpha kept
        ("alpha", "beta", "gamma", "none"),
    ]


def test_the_tools_kept_are_bounded_the_latest_called_first() -> None:
    actions = [Action(round=n, tool=f"t{n}", arguments={}, text="") for n in range(SHORTLIST_KEPT_TOOLS + 3)]
    actions.append(Action(round=99, tool="t0", arguments={}, text=""))
    kept = kept_tools(actions)
    assert len(kept) == SHORTLIST_KEPT_TOOLS
    assert kept[:2] == ["t0", f"t{SHORTLIST_KEPT_TOOLS + 2}"]


@pytest.mark.parametrize("k", [12, 40])
def test_with_k_at_least_the_catalogue_every_request_is_byte_identical(driver: Driver, k: int) -> None:
    plain, listed = ScriptedBackend([_script] * 6), ScriptedBackend([_script] * 6)
    without = driver.loop(plain, Repo(), answer=True).run(ASKED)
    with_k = driver.loop(listed, Repo(), answer=True, shortlist=k).run(ASKED)
    assert len(plain.requests) == 5
    assert listed.requests == plain.requests  # every message and every setting, the schema's too
    assert with_k.messages == without.messages


def test_a_store_narrowing_its_own_catalogue_within_k_sends_the_same_bytes(driver: Driver) -> None:
    search = '{"tool": "memory_search", "arguments": {"query": "latch"}}'
    read = '{"tool": "memory_read", "arguments": {"ids": ["M4"]}}'
    question = [{"role": "user", "content": "What does the latch on the storage-room door do?"}]
    sent = []
    for options in ({}, {"shortlist": 2}):
        backend = ScriptedBackend([search, read, NONE])
        with MemoryStore.sample() as store:
            driver.loop(backend, store, **options).run(question)
        sent.append(backend.requests)
    assert sent[0] == sent[1]
    # The store offers memory_search, then memory_read alone, then both: within K, all of it.
    assert [offered(r) for r in sent[1]] == [
        ["memory_search"],
        ["memory_read"],
        ["memory_search", "memory_read"],
    ]


def test_a_provider_narrowing_a_large_catalogue_is_shortlisted_from_what_it_offers(driver: Driver) -> None:
    # The repo hides git_log until a call, then hides each tool once called: the kept tool goes
    # when the provider drops it, and git_log may be offered once it is there.
    repo = Repo(hidden=("git_log",), hide_called=True)
    backend = ScriptedBackend([call("git_diff_staged"), call("git_log"), NONE])
    events = list(driver.loop(backend, repo, shortlist=3).iter_run(ASKED))
    rounds = started(events)
    assert [r.catalogue for r in rounds] == [11, 11, 10]
    assert "git_log" not in rounds[0].choices
    assert "git_diff_staged" not in rounds[1].choices
    assert "git_log" in rounds[1].choices
    assert not {"git_log", "git_diff_staged"} & set(rounds[2].choices)  # called, kept, but gone
    assert repo.called == ["git_diff_staged", "git_log"]


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"shortlist": 0}, ValueError, "shortlist must be an integer of at least 1, not 0"),
        ({"shortlist": True}, ValueError, "shortlist must be an integer of at least 1"),
        ({"shortlist": "3"}, ValueError, "shortlist must be an integer of at least 1"),
        ({"ranker": len}, TypeError, "ranker= ranks the tools of shortlist=K; give shortlist= too"),
        (
            {"shortlist": 3, "ranker": "bm25"},
            TypeError,
            r"ranker= takes a callable \(tools, query\) -> scores, not str",
        ),
    ],
)
def test_a_bad_shortlist_or_ranker_is_refused_when_the_loop_is_made(
    driver: Driver, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        driver.loop(ScriptedBackend(), Repo(), **options)


@pytest.mark.model
def test_a_real_model_names_only_offered_tools_and_is_told_only_of_round_ones(
    driver: Driver, tmp_path: Path
) -> None:
    # What a real model writes is its own; that it can name only what each round offered, and is
    # told of no other tool, is the grammar's and the loop's guarantee.
    settings = Settings(max_tokens=64, temperature=TEST_TEMPERATURE, seed=TEST_SEED)
    events: list[Event] = []
    path = tmp_path / "run.jsonl"
    with EmbeddedLlama(settings=settings, n_threads=TEST_THREADS, seed=TEST_SEED) as model:
        loop = driver.loop(
            model, Repo(), shortlist=3, max_rounds=2, cap=64, on_event=events.append, transcript=path
        )
        with contextlib.suppress(RepairsExhaustedError):  # replies cut at the cap: the run so far holds
            loop.run(ASKED)
    first = names(shortlist(GIT, shortlist_query(ASKED), 3))
    rounds = started(events)
    assert rounds[0].choices == (*first, "none")
    system = read_transcript(path).messages[0]["content"]
    assert [name for name in names(GIT) if f"\n{name}(" in system] == first
    offers = {event.round: set(event.choices) for event in rounds}
    chosen = [event for event in events if isinstance(event, ActionChosen)]
    assert all(event.tool in offers[event.round] for event in chosen)
    assert all(len(event.choices) <= 3 + SHORTLIST_KEPT_TOOLS + 1 for event in rounds)


def test_round_one_is_the_shortlist_the_benchmark_measures_on_every_decision_case() -> None:
    # benchmarks/quality/shortlist.py scores shortlist(tools, shortlist_query(case.messages), K): the
    # loop's first round offers that very list, for every case and catalogue it runs on.
    checked = 0
    for case in load_cases():
        tools = load_catalogue(case.catalogue)
        messages = [*case.messages] if case.messages[-1]["role"] == "user" else None
        if messages is None or len(tools) <= 2:
            continue
        events = list(RoutingLoop(ScriptedBackend([NONE]), Fixed(tools), shortlist=2).iter_run(messages))
        expected = names(shortlist(tools, shortlist_query(case.messages), 2))
        assert started(events)[0].choices == (*expected, "none"), case.id
        checked += 1
    assert checked >= 100


class Fixed:
    """A provider of a fixed catalogue whose tools are never called here."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.tools = tools

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return self.tools

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        raise AssertionError("the handoff calls no tool")
