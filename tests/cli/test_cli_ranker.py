"""``--ranker`` beside ``--shortlist K`` in ``toolrouting run``, ``batch`` and ``serve``: BM25 alone
unless it names the hybrid, refused without ``--shortlist``, and what it names reaches every
round's ranking.

The scripted backends are fakes in place of the models, to drive the plumbing reply by reply;
what is asserted is which ranker ranked, never a model's choice.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path
from typing import Any

import pytest
from support.tools_module import tools_module

from toolrouting import AsyncScriptedBackend, IndexedRanker, ScriptedBackend, default_ranker
from toolrouting._cli import main
from toolrouting._cli.arguments import UsageError
from toolrouting._cli.ranking import ranked_by, ranker_of

QUESTION = "Which city is sunny?"
NONE = '{"tool": "none"}'
TOOLS = textwrap.dedent('''
    def read_note(word: str) -> str:
        """Read the note about a word."""
        return "noted"

    def weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    TOOLS = [read_note, weather]
''')


def _args(shortlist: int | None, ranker: str | None) -> argparse.Namespace:
    return argparse.Namespace(shortlist=shortlist, ranker=ranker)


def test_the_default_and_bm25_are_the_processs_one_ranker_and_hybrid_is_asked_for() -> None:
    assert ranker_of(_args(3, None)) is default_ranker()
    assert ranker_of(_args(3, "bm25")) is default_ranker()
    assert ranker_of(_args(None, None)) is None
    hybrid = ranker_of(_args(3, "hybrid"))
    assert hybrid is not None
    assert hybrid.semantic


def test_without_the_extra_the_hybrid_is_a_usage_error_that_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault injection: the extra's table made to look uninstalled."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "wordllama" else real(name, *a)
    )
    with pytest.raises(UsageError, match=r"--ranker hybrid: .*pip install 'toolrouting\[semantic\]'"):
        ranker_of(_args(3, "hybrid"))
    assert ranked_by(3, ranker_of(_args(3, None))) == (
        "a request of more than 3 tools is offered the 3 ranked best by BM25 alone"
    )


@pytest.mark.parametrize("command", ["run", "batch"])
def test_a_ranker_without_a_shortlist_or_of_no_known_name_is_a_usage_error(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = [QUESTION] if command == "run" else [str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "out")]
    (tmp_path / "q.jsonl").write_text('{"id": "q1", "question": "?"}\n', encoding="utf-8")
    assert main([command, *where, "--ranker", "bm25"]) == 2
    assert "--ranker ranks the tools of --shortlist K; give --shortlist too" in capsys.readouterr().err
    assert main([command, *where, "--shortlist", "1", "--ranker", "words"]) == 2
    assert "argument --ranker: invalid choice: 'words'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _ranking(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each catalogue indexed for a shortlist was indexed by the hybrid, recorded on the way."""
    seen: list[bool] = []
    real = IndexedRanker.index

    def recorded(self: IndexedRanker, tools: Any) -> Any:
        seen.append(self.semantic)
        return real(self, tools)

    monkeypatch.setattr(IndexedRanker, "index", recorded)
    return seen


@pytest.mark.parametrize(("ranker", "semantic"), [("bm25", False), ("hybrid", True)])
def test_run_ranks_its_shortlist_with_the_ranker_named(
    ranker: str, semantic: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = tools_module(tmp_path, monkeypatch, "ranked_tools", TOOLS)
    monkeypatch.setattr("toolrouting._cli.run.model_backend", lambda args: ScriptedBackend([NONE]))
    seen = _ranking(monkeypatch)
    assert main(["run", QUESTION, "--tools", tools, "--shortlist", "1", "--ranker", ranker, "-q"]) == 0
    assert seen
    assert set(seen) == {semantic}


@pytest.mark.parametrize(("ranker", "semantic"), [("bm25", False), ("hybrid", True)])
def test_batch_ranks_every_runs_shortlist_with_the_ranker_named(
    ranker: str, semantic: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = tools_module(tmp_path, monkeypatch, "ranked_batch_tools", TOOLS)
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "q1", "question": "?"}\n{"id": "q2", "question": "?"}\n', encoding="utf-8")
    backend = AsyncScriptedBackend([NONE, NONE])
    monkeypatch.setattr("toolrouting._cli.batch.async_model_backend", lambda args: backend)
    seen = _ranking(monkeypatch)
    out = tmp_path / "out"
    command = ["batch", str(questions), "--out", str(out), "--tools", tools, "--shortlist", "1", "-q"]
    assert main([*command, "--ranker", ranker]) == 0
    assert seen
    assert set(seen) == {semantic}
