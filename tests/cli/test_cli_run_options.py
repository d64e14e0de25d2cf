"""``toolrouting run``'s options against a real HTTP server on loopback: sampling, the system text,
the question from stdin, and quiet output.

The server is support/cli_http.py's: http.server in a thread, answering chat completions
from a queue.
"""
# ruff: noqa: F811 - the fixtures imported from support.cli_http are the tests' parameters

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli_http import (  # noqa: F401 - the server on loopback, and no key from the environment
    NONE,
    QUESTION,
    READ,
    LoopbackServer,
    no_ambient_key,
    run_argv,
    server,
    toolrouting_process,
)
from support.processes import ROOT

from toolrouting import catalogue_prompt
from toolrouting._cli import main
from toolrouting.demo import SYSTEM_PROMPT, MemoryStore


def test_sampling_options_reach_the_routed_requests_and_the_answer(
    server: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.replies.extend([(200, READ), (200, NONE), (200, "It locks by itself.")])
    sampling = ["--temperature", "0.7", "--top-p", "0.9", "--seed", "11", "--answer"]
    assert main([*run_argv(server.url, "--cap", "64", "--answer-tokens", "99"), *sampling]) == 0
    assert capsys.readouterr().out.startswith("It locks by itself.\n")  # streamed, before the outcome
    bodies = server.chat_bodies()
    assert len(bodies) == 3
    for body in bodies:
        assert (body["temperature"], body["top_p"], body["seed"]) == (0.7, 0.9, 11)
    assert [body["max_tokens"] for body in bodies] == [64, 64, 99]
    assert ["response_format" in body for body in bodies] == [True, True, False]
    assert main(run_argv(server.url)) == 0
    default = server.chat_bodies()[-1]
    assert default["temperature"] == 0.0
    assert "top_p" not in default
    assert "seed" not in default


def test_system_text_is_added_to_the_demo_prompt(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*run_argv(server.url), "--system", "Answer in French."]) == 0
    system = server.chat_bodies()[-1]["messages"][0]
    # The loop's instructions (the demo's catalogue) first, then the demo's note, then the caller's.
    with MemoryStore.sample(titles=True) as store:  # as the command makes it
        catalogue = catalogue_prompt(store.tools_for_llm())
    assert system == {"role": "system", "content": f"{catalogue}\n\n{SYSTEM_PROMPT}\n\nAnswer in French."}
    instructions = tmp_path / "system.txt"
    instructions.write_text("Cite the note ids.\n", encoding="utf-8")
    assert main([*run_argv(server.url), "--system-file", str(instructions)]) == 0
    sent = server.chat_bodies()[-1]["messages"][0]["content"]
    assert sent == f"{catalogue}\n\n{SYSTEM_PROMPT}\n\nCite the note ids."
    capsys.readouterr()
    for bad, problem in [
        (["--system", "x", "--system-file", str(instructions)], "not allowed with argument"),
        (["--system-file", str(tmp_path / "absent.txt")], "--system-file"),
        (["--system", "  "], "--system adds nothing"),
    ]:
        assert main([*run_argv(server.url), *bad]) == 2
        assert problem in capsys.readouterr().err
    resume = ["run", "--resume", "--transcript", str(tmp_path / "t.jsonl"), "--system", "x"]
    assert main(resume) == 2
    assert "--resume takes no --system" in capsys.readouterr().err


def test_the_question_comes_from_stdin_when_it_is_not_a_terminal(
    server: LoopbackServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = ["run", "--base-url", server.url]
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{QUESTION}\n"))
    assert main(base) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("How do I prime the pump?"))
    assert main([*base, "-"]) == 0
    asked = [body["messages"][1]["content"] for body in server.chat_bodies()]
    assert asked == [QUESTION, "How do I prime the pump?"]
    monkeypatch.setattr("sys.stdin", io.StringIO(" \n"))
    assert main(base) == 2
    assert "the question is missing" in capsys.readouterr().err


def test_a_terminal_is_never_read_for_the_question(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

        def read(self, size: int | None = -1) -> str:
            raise AssertionError("the terminal was read")

    monkeypatch.setattr("sys.stdin", Terminal())
    assert main(["run", "--base-url", "http://127.0.0.1:9"]) == 2
    assert "the question is missing" in capsys.readouterr().err


def test_stdin_as_a_process_reads_utf8_and_refuses_other_bytes(server: LoopbackServer) -> None:
    done = toolrouting_process("run", "--base-url", server.url, "-q", stdin="Où est la clé ?\n")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert server.chat_bodies()[-1]["messages"][1]["content"] == "Où est la clé ?"
    latin1 = subprocess.run(
        [sys.executable, "-m", "toolrouting", "run", "--base-url", server.url],
        input="clé".encode("latin-1"),
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert latin1.returncode == 2
    assert b"stdin is not UTF-8 text" in latin1.stderr


def test_quiet_prints_no_progress_only_the_outcome(
    server: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.replies.extend([(200, READ), (200, NONE)])
    assert main([*run_argv(server.url), "--quiet"]) == 0
    assert capsys.readouterr() == ("ended: handoff after 2 rounds, 1 tool call\n", "")
    assert main([*run_argv(server.url), "-q", "--dialect", "ollama"]) == 2  # errors still show
    assert "name one with --model (toolrouting models lists them)" in capsys.readouterr().err


def test_the_prompt_cache_folder_options_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", QUESTION, "--base-url", "http://127.0.0.1:9"]
    assert main([*argv, "--prompt-cache-dir", "states"]) == 2
    assert "--prompt-cache-dir keeps the embedded model's prompt states" in capsys.readouterr().err
    assert main(["run", QUESTION, "--prompt-cache-dir-mb", "64"]) == 2
    assert "--prompt-cache-dir-mb bounds the folder --prompt-cache-dir names" in capsys.readouterr().err
    assert main(["run", QUESTION, "--prompt-cache-dir", __file__]) == 2
    assert "a file, not a folder for the prompt states" in capsys.readouterr().err
