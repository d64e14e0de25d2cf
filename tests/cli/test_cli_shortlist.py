"""``toolrouting run --shortlist K`` and ``toolrouting batch --shortlist K``, and ``run_batch(shortlist=)``.

The scripted backends are fakes in place of the models, to drive the plumbing reply by reply.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from support.tools_module import tools_module

from toolrouting import AsyncScriptedBackend, ScriptedBackend, ScriptedRequest, read_transcript, run_batch
from toolrouting._cli import main
from toolrouting._loop.transcript_format import OFFERS_VERSION

QUESTION = "What does the note say about the latch?"
READ = '{"tool": "read_note", "arguments": {"word": "latch"}}'
NONE = '{"tool": "none"}'
TOOLS = textwrap.dedent('''
    def read_note(word: str) -> str:
        """Read the note about a word."""
        return f"The {word} sticks in winter."

    def ping() -> str:
        """Answer pong."""
        return "pong"

    def weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    TOOLS = [read_note, ping, weather]
''')


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    # A module name of its own: another test file imports a my_tools.py of other tools.
    return tools_module(tmp_path, monkeypatch, "shortlisted_tools", TOOLS)


def _model(request: ScriptedRequest) -> str:
    """Read the note once, then hand off."""
    results = sum(1 for m in request.messages if m["content"].startswith("Tool result"))
    return READ if results == 0 else NONE


def test_run_shortlist_offers_the_k_best_tools_and_records_them(
    tools: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = ScriptedBackend([_model] * 2)
    monkeypatch.setattr("toolrouting._cli.run.model_backend", lambda args: backend)
    transcript = tmp_path / "run.jsonl"
    assert main(["run", QUESTION, "--tools", tools, "--shortlist", "1", "--transcript", str(transcript)]) == 0
    err = capsys.readouterr().err
    assert "round 1: read_note | none (shortlisted from 3 tools)" in err
    assert "round 2: read_note | none (shortlisted from 3 tools)" in err  # ranked best, and kept
    read = read_transcript(transcript)
    assert read.version == OFFERS_VERSION
    assert [offer.offered for offer in read.offers] == [("read_note",), ("read_note",)]
    system = read.messages[0]["content"]
    assert "read_note(" in system
    assert "ping(" not in system
    assert "weather(" not in system
    # Resumed, the run is already done: nothing is sent, the file stays.
    data = transcript.read_bytes()
    assert (
        main(["run", "--resume", "--tools", tools, "--shortlist", "1", "--transcript", str(transcript)]) == 0
    )
    assert transcript.read_bytes() == data
    assert len(backend.requests) == 2


@pytest.mark.parametrize("command", ["run", "batch"])
@pytest.mark.parametrize("value", ["0", "-2", "three", "1.5", ""])
def test_a_shortlist_that_is_not_a_positive_integer_is_a_usage_error(
    command: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = [QUESTION] if command == "run" else [str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "out")]
    assert main([command, *where, "--shortlist", value]) == 2
    assert f"argument --shortlist: {value!r} is not a positive integer" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_batch_shortlist_reaches_every_run(
    tools: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "q1", "question": "What does the note say?"}\n', encoding="utf-8")
    backend = AsyncScriptedBackend([_model] * 2)
    monkeypatch.setattr("toolrouting._cli.batch.async_model_backend", lambda args: backend)
    out = tmp_path / "out"
    assert main(["batch", str(questions), "--out", str(out), "--tools", tools, "--shortlist", "2", "-q"]) == 0
    read = read_transcript(out / "q1.jsonl")
    assert read.version == OFFERS_VERSION
    assert [len(offer.offered) for offer in read.offers] == [2, 2]
    assert {offer.catalogue for offer in read.offers} == {3}


def test_run_batch_takes_shortlist(tmp_path: Path) -> None:
    from toolrouting.demo import MemoryStore

    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "q1", "question": "What does the latch do?"}\n', encoding="utf-8")
    backend = ScriptedBackend([NONE])
    progress = run_batch(questions, tmp_path / "out", backend=backend, tools=MemoryStore.sample, shortlist=1)
    assert (progress.done, progress.failed) == (1, 0)
    assert read_transcript(tmp_path / "out" / "q1.jsonl").version == OFFERS_VERSION
    with pytest.raises(ValueError, match="shortlist must be an integer of at least 1, not 0"):
        run_batch(questions, tmp_path / "again", backend=backend, tools=MemoryStore.sample, shortlist=0)


def test_a_shortlist_that_leaves_nothing_out_says_nothing(
    tools: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = ScriptedBackend([_model] * 2)
    monkeypatch.setattr("toolrouting._cli.run.model_backend", lambda args: backend)
    assert main(["run", QUESTION, "--tools", tools, "--shortlist", "3"]) == 0
    assert "round 1: read_note | ping | weather | none\n" in capsys.readouterr().err
