"""Batch runs: one result per question, many in flight, resume of a run cut short, and a real model.

The plumbing tests drive the runs with a fake model (ScriptedBackend, whose reply depends only
on the conversation); ``test_a_batch_on_the_embedded_model`` drives the real model. The
questions file is tests/batch/test_batch_questions.py's, and a real ``toolrouting batch`` process
stopped mid-way tests/cli/test_cli_batch_interrupt.py's.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.batch_files import questions_file, results_in
from support.catalogues import NONE, tool
from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS, guaranteed_cap
from support.slow_model import QUESTION_MARK

from toolrouting import (
    AsyncScriptedBackend,
    BatchProgress,
    BatchQuestion,
    RoutingLoop,
    ScriptedBackend,
    ScriptedRequest,
    ToolOutput,
    arun_batch,
    read_questions,
    read_transcript,
    route_schema,
    run_batch,
)
from toolrouting.demo import MemoryStore

SEARCH = '{"tool": "memory_search", "arguments": {"query": "latch"}}'


def _model(request: ScriptedRequest) -> str:
    """The fake model: search once, then hand off; an answer when no schema is sent."""
    if request.settings.json_schema is None:
        return "The latch holds the door."
    results = sum(1 for m in request.messages if m["content"].startswith("Tool result"))
    return SEARCH if results == 0 else NONE


# --- runs, results, resume (a fake model) ------------------------------------------------------


def test_every_question_gets_one_result_and_a_second_start_runs_nothing(tmp_path: Path) -> None:
    backend = ScriptedBackend([_model] * 40)
    seen: list[BatchProgress] = []
    progress = run_batch(
        questions_file(tmp_path / "q.jsonl", 6),
        tmp_path / "out",
        backend=backend,
        tools=MemoryStore.sample,
        concurrency=3,
        answer=True,
        on_progress=seen.append,
    )
    assert (progress.total, progress.done, progress.failed, progress.started) == (6, 6, 0, 6)
    assert progress.running == 0
    assert progress.decisions == 12  # a search and a handoff each
    assert [p.finished for p in seen] == sorted(p.finished for p in seen)
    assert seen[-1].finished == 6
    results = results_in(tmp_path / "out")
    assert sorted(results) == [f"q{n}" for n in range(6)]
    for id, result in results.items():
        assert (result["id"], result["status"], result["reason"]) == (id, "done", "handoff")
        assert result["answer"] == "The latch holds the door."
        transcript = read_transcript(tmp_path / "out" / f"{id}.jsonl").messages
        assert transcript[0]["role"] == "system"  # the loop's instructions
        assert transcript[1]["content"].startswith(f"{QUESTION_MARK}{id}:")
        assert transcript[-1]["content"] == result["answer"]

    requests = len(backend.requests)
    again = run_batch(tmp_path / "q.jsonl", tmp_path / "out", backend=backend, tools=MemoryStore.sample)
    assert (again.skipped, again.done, again.started, again.resumed) == (6, 6, 0, 0)
    assert len(backend.requests) == requests


def test_every_run_of_a_batch_takes_max_calls(tmp_path: Path) -> None:
    twice = f"[{SEARCH}, {SEARCH.replace('latch', 'door')}]"
    backend = ScriptedBackend([twice, NONE] * 2)
    progress = run_batch(
        questions_file(tmp_path / "q.jsonl", 2), tmp_path / "out", backend=backend, tools=MemoryStore.sample,
        concurrency=1, max_calls=2,
    )  # fmt: skip
    assert (progress.done, progress.failed) == (2, 0)
    assert progress.decisions == 4  # a decision of two calls and a handoff each
    for result in results_in(tmp_path / "out").values():
        assert [(a["round"], a["tool"]) for a in result["actions"]] == [
            (1, "memory_search"),
            (1, "memory_search"),
            (2, "none"),
        ]
    schemas = [request.settings.json_schema for request in backend.requests]
    assert all(schema is not None and schema["anyOf"][-1]["maxItems"] == 2 for schema in schemas)


def test_an_async_backend_runs_every_question_on_the_event_loop(tmp_path: Path) -> None:
    """An async backend is driven by the async loop, a task a run: no thread but the event loop's
    asks the model, the demo store's calls go to worker threads, and requests overlap."""
    asking: set[int] = set()
    flight = {"now": 0, "most": 0}

    async def model(request: ScriptedRequest) -> str:
        asking.add(threading.get_ident())
        flight["now"] += 1
        flight["most"] = max(flight["most"], flight["now"])
        await asyncio.sleep(0.01)
        flight["now"] -= 1
        return _model(request)

    backend = AsyncScriptedBackend([model] * 40)
    path = questions_file(tmp_path / "q.jsonl", 6)

    async def batch() -> tuple[BatchProgress, int]:
        progress = await arun_batch(
            path, tmp_path / "out", backend=backend, tools=MemoryStore.sample, concurrency=3, answer=True
        )
        return progress, threading.get_ident()

    progress, event_loop_thread = asyncio.run(batch())
    assert (progress.total, progress.done, progress.failed, progress.decisions) == (6, 6, 0, 12)
    assert asking == {event_loop_thread}
    assert 1 < flight["most"] <= 3
    results = results_in(tmp_path / "out")
    assert sorted(results) == [f"q{n}" for n in range(6)]
    for id, result in results.items():
        assert (result["status"], result["reason"], result["answer"]) == (
            "done",
            "handoff",
            "The latch holds the door.",
        )
        assert [a["tool"] for a in result["actions"]] == ["memory_search", "none"]
        assert read_transcript(tmp_path / "out" / f"{id}.jsonl").messages[-1]["content"] == result["answer"]
    again = run_batch(path, tmp_path / "out", backend=backend, tools=MemoryStore.sample)
    assert (again.skipped, again.started) == (6, 0)


def test_an_async_run_cut_short_is_resumed(tmp_path: Path) -> None:
    path = questions_file(tmp_path / "q.jsonl", 2)
    out = tmp_path / "out"
    out.mkdir()
    asked = read_questions(path)
    with MemoryStore.sample() as store:
        torn = RoutingLoop(
            ScriptedBackend([SEARCH, RuntimeError("killed")]), store, transcript=out / "q0.jsonl"
        )
        with pytest.raises(RuntimeError):
            torn.run(list(asked[0].messages))
    before = (out / "q0.jsonl").read_bytes()
    backend = AsyncScriptedBackend([_model] * 20)

    progress = run_batch(path, out, backend=backend, tools=MemoryStore.sample)

    assert (progress.resumed, progress.started, progress.done) == (1, 1, 2)
    assert (out / "q0.jsonl").read_bytes().startswith(before)
    assert [a["tool"] for a in results_in(out)["q0"]["actions"]] == ["memory_search", "none"]
    assert sum(1 for r in backend.requests if r.messages[1:2] == asked[0].messages[:1]) == 1


def test_runs_in_flight_never_exceed_the_concurrency(tmp_path: Path) -> None:
    lock = threading.Lock()
    flight = {"now": 0, "most": 0}

    def slow(request: ScriptedRequest) -> str:
        with lock:
            flight["now"] += 1
            flight["most"] = max(flight["most"], flight["now"])
        time.sleep(0.02)
        with lock:
            flight["now"] -= 1
        return _model(request)

    run_batch(
        questions_file(tmp_path / "q.jsonl", 9),
        tmp_path / "out",
        backend=ScriptedBackend([slow] * 40),
        tools=MemoryStore.sample,
        concurrency=3,
    )
    assert 1 < flight["most"] <= 3
    assert len(results_in(tmp_path / "out")) == 9


def test_a_run_cut_short_is_resumed_and_one_never_begun_starts_afresh(tmp_path: Path) -> None:
    path = questions_file(tmp_path / "q.jsonl", 3)
    out = tmp_path / "out"
    out.mkdir()
    asked = read_questions(path)
    # q0 was cut short after its search had run; q1 was killed before its first commit.
    with MemoryStore.sample() as store:
        torn = RoutingLoop(
            ScriptedBackend([SEARCH, RuntimeError("killed")]), store, transcript=out / "q0.jsonl"
        )
        with pytest.raises(RuntimeError):
            torn.run(list(asked[0].messages))
    before = (out / "q0.jsonl").read_bytes()
    (out / "q1.jsonl").write_bytes(b'{"transcript":"toolrouting","vers')
    backend = ScriptedBackend([_model] * 20)

    progress = run_batch(path, out, backend=backend, tools=MemoryStore.sample)

    assert (progress.resumed, progress.started, progress.done) == (1, 2, 3)
    results = results_in(out)
    assert [results[id]["resumed"] for id in ("q0", "q1", "q2")] == [True, False, False]
    assert (out / "q0.jsonl").read_bytes().startswith(before)
    assert [a["tool"] for a in results["q0"]["actions"]] == ["memory_search", "none"]
    # The search was not asked for again: the resume asked only for the next action.
    # (The question follows the loop's instructions, the same system message in every run.)
    assert sum(1 for r in backend.requests if r.messages[1:2] == asked[0].messages[:1]) == 1


def test_a_failed_run_is_kept_and_run_again_only_when_asked(tmp_path: Path) -> None:
    path = questions_file(tmp_path / "q.jsonl", 2)
    refusals = ScriptedBackend(["not an action"] * 2 + ["no"] * 2)
    progress = run_batch(path, tmp_path / "out", backend=refusals, tools=MemoryStore.sample, concurrency=1)
    assert (progress.done, progress.failed) == (0, 2)
    result = results_in(tmp_path / "out")["q0"]
    assert result["status"] == "failed"
    assert result["error"].startswith("RepairsExhaustedError: ")

    backend = ScriptedBackend([_model] * 20)
    assert run_batch(path, tmp_path / "out", backend=backend, tools=MemoryStore.sample).skipped == 2
    assert backend.requests == []
    progress = run_batch(path, tmp_path / "out", backend=backend, tools=MemoryStore.sample, retry_failed=True)
    assert (progress.done, progress.failed, progress.started) == (2, 0, 2)
    assert {r["status"] for r in results_in(tmp_path / "out").values()} == {"done"}


def test_bad_arguments_are_refused_before_any_run(tmp_path: Path) -> None:
    path = questions_file(tmp_path / "q.jsonl", 1)
    backend = ScriptedBackend()
    with pytest.raises(ValueError, match="concurrency must be an integer of at least 1"):
        run_batch(path, tmp_path / "out", backend=backend, tools=MemoryStore.sample, concurrency=0)
    with pytest.raises(TypeError, match="tools= takes a function"):
        run_batch(path, tmp_path / "out", backend=backend, tools=MemoryStore.sample())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cap must be an integer"):
        run_batch(path, tmp_path / "out", backend=backend, tools=MemoryStore.sample, cap=0)
    twice = [BatchQuestion(id="a", messages=({"role": "user", "content": "x"},))] * 2
    with pytest.raises(ValueError, match="two questions have the id 'a'"):
        run_batch(twice, tmp_path / "out", backend=backend, tools=MemoryStore.sample)
    assert backend.requests == []


# --- a real model ------------------------------------------------------------------------------


@pytest.mark.model
@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_batch_on_the_embedded_model(tmp_path: Path, driver: str) -> None:
    """The sync loop in threads over EmbeddedLlama, and the async loop over AsyncEmbeddedLlama."""
    from toolrouting import AsyncEmbeddedLlama, EmbeddedLlama, Settings, default_model_path

    lookup = tool("lookup", word={"type": "string", "enum": ["latch", "door", "key"]})

    class Lookup:
        """One tool whose arguments are bounded, so ``guaranteed_cap`` holds."""

        def tools_for_llm(self) -> list[dict[str, Any]]:
            return [lookup]

        def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
            return ToolOutput(f"The {arguments['word']} holds the storage-room door shut.")

    cap = guaranteed_cap(route_schema([lookup]))
    settings = Settings(temperature=TEST_TEMPERATURE, seed=TEST_SEED, max_tokens=cap)
    path = questions_file(tmp_path / "q.jsonl", 3)
    with EmbeddedLlama(default_model_path(), settings=settings, n_threads=TEST_THREADS) as model:
        backend = model if driver == "sync" else AsyncEmbeddedLlama(model.clone())
        progress = run_batch(path, tmp_path / "out", backend=backend, tools=Lookup, concurrency=2, cap=cap)
        again = run_batch(path, tmp_path / "out", backend=backend, tools=Lookup, concurrency=2, cap=cap)

    # Guarantees only: every question ran once to an end, its record matches its transcript.
    assert (progress.total, progress.done + progress.failed, progress.started) == (3, 3, 3)
    assert progress.failed == 0  # the grammar and a cap no action reaches leave nothing to refuse
    results = results_in(tmp_path / "out")
    assert sorted(results) == ["q0", "q1", "q2"]
    asked = {question.id: question.messages for question in read_questions(path)}
    for id, result in results.items():
        messages = read_transcript(tmp_path / "out" / f"{id}.jsonl").messages
        # The loop's instructions come first, then the question as asked.
        assert messages[0]["role"] == "system"
        assert messages[1 : 1 + len(asked[id])] == asked[id]
        written = [m["content"] for m in messages if m["role"] == "assistant"]
        assert written == [action["text"] for action in result["actions"]]
        assert result["reason"] in ("handoff", "max_rounds", "max_repeats")
    assert (again.skipped, again.started, again.resumed) == (3, 0, 0)
