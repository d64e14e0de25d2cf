"""The answer request after the handoff: its shape, its bounds, its context, its bytes on resume.

The scripted backend is a fake by design: it records what the answer request was sent; what
a model would answer is not the point here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.catalogues import NONE, QUESTION, lookup, tool
from support.drivers import Driver

from toolrouting import ScriptedBackend, ToolOutput
from toolrouting._limits import ANSWER_CONTEXT_CHARS, ANSWER_HISTORY_CHARS, ANSWER_RESULT_CHARS
from toolrouting._loop.answer_request import ANSWER_LEAD, ANSWER_PROMPT, EARLIER_ANSWER_PROMPT, answer_request
from toolrouting._loop.system_instructions import caller_system, instructed
from toolrouting._loop.transcript_format import encode_header, encode_message


class Shelf:
    """Answers ``lookup`` with a text of the asked length, or an error for ``missing``."""

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return [tool("lookup", word={"type": "string"})]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        word = arguments["word"]
        if word == "missing":
            return ToolOutput("no entry for missing", is_error=True)
        if word.startswith("long"):
            return ToolOutput(word + ":" + "x" * int(word[4:]))
        return ToolOutput(f"{word}: a fastening.")


#: A conversation with two system messages of the caller's and an earlier turn before the question.
CONTEXT: list[Any] = [
    {"role": "system", "content": "Always answer in French."},
    {"role": "user", "content": "Which key opens the shed?"},
    {"role": "assistant", "content": "The brass key."},
    {"role": "system", "content": "Be brief."},
    *QUESTION[1:],
]
#: What the answer to CONTEXT after one read of "latch" is asked with, byte for byte.
CONTEXT_ASKED = (
    {"role": "system", "content": "Always answer in French.\n\nBe brief."},
    CONTEXT[1],
    CONTEXT[2],
    {
        "role": "user",
        "content": (
            f"{ANSWER_LEAD}\nlatch: a fastening.\n\nQuestion: {QUESTION[-1]['content']}\n{ANSWER_PROMPT}"
        ),
    },
)


def _answered(driver: Driver, *words: str, path: Path | None = None) -> tuple[ScriptedBackend, str]:
    backend = ScriptedBackend([*(lookup(word) for word in words), NONE, "The answer."])
    result = driver.loop(backend, Shelf(), answer=True, transcript=path, max_repeats=5).run(QUESTION)
    # The caller's own system message (the loop's instructions left out), then the request.
    assert backend.requests[-1].messages == (QUESTION[0], result.messages[-2])
    return backend, result.messages[-2]["content"]


def test_the_request_holds_the_question_and_the_results_that_succeeded(driver: Driver) -> None:
    _, asked = _answered(driver, "latch", "missing", "latch", "door")
    assert asked == (
        f"{ANSWER_LEAD}\nlatch: a fastening.\n\ndoor: a fastening.\n\n"
        f"Question: {QUESTION[-1]['content']}\n{ANSWER_PROMPT}"
    )
    assert "{" not in asked  # none of the run's JSON actions
    assert "Tool result for" not in asked


def test_the_request_is_bounded_and_keeps_the_newest_results(driver: Driver) -> None:
    _, asked = _answered(driver, "long3000", "long2800", "long1900", "latch")
    frame = len(answer_request([QUESTION[-1]], 1))
    results = asked.split(f"{ANSWER_LEAD}\n", 1)[1].split("\n\nQuestion: ", 1)[0]
    assert len(asked) <= frame + ANSWER_CONTEXT_CHARS + 100
    assert "(1 earlier result left out, to fit.)" in results
    assert results.endswith("\n\nlatch: a fastening.")
    assert all(len(line) <= ANSWER_RESULT_CHARS for line in results.splitlines())


def test_no_result_says_so(driver: Driver) -> None:
    _, asked = _answered(driver, "missing")
    assert asked.startswith(f"{ANSWER_LEAD} nothing (no tool call succeeded).\n\nQuestion: ")


def test_a_resumed_run_sends_the_request_it_committed_or_builds_the_same_one(
    tmp_path: Path, driver: Driver
) -> None:
    whole = tmp_path / "whole.jsonl"
    backend, _ = _answered(driver, "latch", path=whole)
    lines = whole.read_bytes().splitlines(keepends=True)
    # Killed after the handoff (the request not yet committed), and after the request.
    for kept in (len(lines) - 2, len(lines) - 1):
        killed = tmp_path / f"killed{kept}.jsonl"
        killed.write_bytes(b"".join(lines[:kept]))
        resumed = ScriptedBackend(["The answer."])
        result = driver.loop(resumed, Shelf(), answer=True, transcript=killed).resume()
        assert resumed.requests[0].messages == backend.requests[-1].messages
        assert result.answer == "The answer."
        assert killed.read_bytes() == whole.read_bytes()


@pytest.mark.parametrize(
    "asked",
    [
        # Written before the answer request existed: the prompt alone, after the handoff.
        EARLIER_ANSWER_PROMPT,
        # Written by versions that asked the question first, then what the tools returned.
        f"Question: {QUESTION[-1]['content']}\n\nWhat the tools returned:\nlookup: latch\n\n"
        f"{EARLIER_ANSWER_PROMPT}",
    ],
    ids=["bare-prompt", "question-first"],
)
def test_a_transcript_with_an_earlier_answer_request_still_resumes(
    tmp_path: Path, driver: Driver, asked: str
) -> None:
    old = [*QUESTION, {"role": "assistant", "content": NONE}, {"role": "user", "content": asked}]
    path = tmp_path / "old.jsonl"
    path.write_bytes(encode_header(2) + b"".join(encode_message(m) for m in old))  # type: ignore[arg-type]
    backend = ScriptedBackend(["The answer."])
    result = driver.loop(backend, Shelf(), answer=True, transcript=path).resume()
    assert backend.requests[0].messages == (old[-1],)
    assert result.answer == "The answer."


@pytest.mark.parametrize("instructions", [True, "Route the question to a tool.", False], ids=str)
def test_the_answer_is_asked_with_the_callers_system_messages_and_earlier_turns(
    driver: Driver, instructions: bool | str
) -> None:
    backend = ScriptedBackend([lookup("latch"), NONE, "La réponse."])
    result = driver.loop(backend, Shelf(), answer=True, instructions=instructions).run(CONTEXT)
    assert backend.requests[-1].messages == CONTEXT_ASKED  # the loop's instructions left out
    assert result.messages[-2] == CONTEXT_ASKED[-1]  # the request is what is committed
    assert backend.requests[0].messages[0]["content"].endswith("Always answer in French.")


def test_an_earlier_runs_messages_give_the_history_its_questions_and_answers_only(driver: Driver) -> None:
    first = ScriptedBackend([lookup("door"), NONE, "It is a fastening."])
    earlier = driver.loop(first, Shelf(), answer=True).run(QUESTION)
    backend = ScriptedBackend([lookup("latch"), NONE, "Yes."])
    follow_up = {"role": "user", "content": "And the latch?"}
    driver.loop(backend, Shelf(), answer=True).run([*earlier.messages, follow_up])
    system, *history, asked = backend.requests[-1].messages
    assert system == QUESTION[0]  # neither run's catalogue, though the first is merged in twice
    assert history == [QUESTION[1], {"role": "assistant", "content": "It is a fastening."}]
    assert asked["content"].endswith(f"Question: And the latch?\n{ANSWER_PROMPT}")


def test_a_long_history_is_cut_from_the_oldest_turns(driver: Driver) -> None:
    turn = ANSWER_HISTORY_CHARS // 3
    turns: list[Any] = []
    for number in range(4):
        turns += [
            {"role": "user", "content": f"question {number} " + "q" * turn},
            {"role": "assistant", "content": f"answer {number}"},
        ]
    backend = ScriptedBackend([lookup("latch"), NONE, "The answer."])
    driver.loop(backend, Shelf(), answer=True).run([*turns, QUESTION[1]])
    history = backend.requests[-1].messages[:-1]  # no system message of the caller's here
    assert sum(len(m["content"]) for m in history) <= ANSWER_HISTORY_CHARS
    assert history == tuple(turns[-4:])  # the newest whole turns, opening with a question


def test_a_resumed_run_asks_the_answer_with_the_same_context(tmp_path: Path, driver: Driver) -> None:
    whole = tmp_path / "whole.jsonl"
    backend = ScriptedBackend([lookup("latch"), NONE, "La réponse."])
    driver.loop(backend, Shelf(), answer=True, transcript=whole).run(CONTEXT)
    lines = whole.read_bytes().splitlines(keepends=True)
    for kept in (len(lines) - 2, len(lines) - 1):  # killed before the request, and after it
        killed = tmp_path / f"killed{kept}.jsonl"
        killed.write_bytes(b"".join(lines[:kept]))
        resumed = ScriptedBackend(["La réponse."])
        # A provider whose catalogue changed since: the caller's text is found all the same.
        driver.loop(resumed, Renamed(), answer=True, transcript=killed).resume()
        assert resumed.requests[0].messages == CONTEXT_ASKED
        assert killed.read_bytes() == whole.read_bytes()


class Renamed(Shelf):
    def tools_for_llm(self) -> list[dict[str, Any]]:
        return [*super().tools_for_llm(), tool("define", word={"type": "string"})]


@pytest.mark.parametrize("thought", [None, 30])
@pytest.mark.parametrize("instructions", [True, "Route the question to a tool."], ids=str)
def test_the_callers_system_text_is_found_after_the_instructions(
    instructions: bool | str, thought: int | None
) -> None:
    tools = Shelf().tools_for_llm()
    [merged, _] = instructed(QUESTION, instructions, tools, thought=thought)
    assert caller_system(merged["content"], instructions) == QUESTION[0]["content"]
    [alone, _] = instructed(QUESTION[1:], instructions, tools, thought=thought)
    assert caller_system(alone["content"], instructions) is None  # the instructions only
    assert caller_system("Written by another version.", instructions) is None
    assert caller_system("Answer from the notes.", False) == "Answer from the notes."
