"""``toolrouting run --abstain grounding`` and ``toolrouting batch --abstain grounding``.

The scripted backends are fakes in place of the models, to drive the plumbing reply by reply.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from support.tools_module import tools_module

from toolrouting import AsyncScriptedBackend, ScriptedBackend, read_transcript
from toolrouting._cli import main

QUESTION = "Will it rain tomorrow?"
CALL = '{"tool": "weather", "arguments": {"city": "Paris"}}'
REASON = "weather needs city, which the conversation does not give"
TOOLS = textwrap.dedent('''
    def weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    TOOLS = [weather]
''')


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return tools_module(tmp_path, monkeypatch, "abstaining_tools", TOOLS)


def test_run_abstains_says_why_and_resumes_as_it_ended(
    tools: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = ScriptedBackend([CALL, "Which city?"])
    monkeypatch.setattr("toolrouting._cli.run.model_backend", lambda args: backend)
    transcript = tmp_path / "run.jsonl"
    options = ["--tools", tools, "--abstain", "grounding", "--answer", "--transcript", str(transcript)]
    assert main(["run", QUESTION, *options]) == 0
    out, err = capsys.readouterr()
    assert f"  abstained: {REASON}; the call was not run" in err
    assert "Which city?" in out
    assert "ended: abstained after 1 round, 0 tool calls" in out
    data = transcript.read_bytes()
    assert main(["run", "--resume", *options, "--json"]) == 0
    assert transcript.read_bytes() == data
    outcome = json.loads(capsys.readouterr().out)
    assert (outcome["reason"], outcome["abstained"]) == ("abstained", REASON)


def test_run_without_abstain_runs_the_call(
    tools: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = ScriptedBackend([CALL, '{"tool": "none"}'])
    monkeypatch.setattr("toolrouting._cli.run.model_backend", lambda args: backend)
    assert main(["run", QUESTION, "--tools", tools]) == 0
    assert "ended: handoff after 2 rounds, 1 tool call" in capsys.readouterr().out


def test_a_policy_that_is_not_one_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", QUESTION, "--abstain", "always"]) == 2
    assert "argument --abstain: invalid choice: 'always'" in capsys.readouterr().err


def test_batch_abstain_reaches_every_run(tools: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(f'{{"id": "q1", "question": "{QUESTION}"}}\n', encoding="utf-8")
    backend = AsyncScriptedBackend([CALL])
    monkeypatch.setattr("toolrouting._cli.batch.async_model_backend", lambda args: backend)
    out = tmp_path / "out"
    assert (
        main(["batch", str(questions), "--out", str(out), "--tools", tools, "--abstain", "grounding", "-q"])
        == 0
    )
    *_, notice = read_transcript(out / "q1.jsonl").messages
    assert notice["content"] == f"Not called: {REASON}."
    result = json.loads((out / "q1.result.json").read_text(encoding="utf-8"))
    assert (result["reason"], result["abstained"]) == ("abstained", REASON)
