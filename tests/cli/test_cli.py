"""The command line through ``main([...])`` and as ``python -m toolrouting``.

``python tests/cli/test_cli.py`` rewrites the ``--help`` blocks of docs/cli.md from the parser.
"""

from __future__ import annotations

import importlib
import io
import json
import re
import socket
import sys
import tomllib
from pathlib import Path
from typing import Any

# Run as a script (its docstring says how), this module finds support/ in tests/ as under pytest.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pytest
from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS, demo_cap
from support.processes import ROOT, python_m

from toolrouting import ScriptedBackend, parse_route, route_schema, split_routed_result
from toolrouting._cli import EXIT_STATUSES, help_texts, main
from toolrouting._loop.repair_feedback import is_repair_message
from toolrouting._loop.transcript_reader import read_transcript

DOC = ROOT / "docs" / "cli.md"
QUESTION = "What does the latch on the storage-room door do?"
SEARCH = '{"tool": "memory_search", "arguments": {"query": "latch"}}'
READ = '{"tool": "memory_read", "arguments": {"title": "The storage-room latch"}}'
NONE = '{"tool": "none"}'
_EXIT_TABLE = re.compile(r"^\| status \| meaning \|\n\|---\|---\|\n(?:\|.*\|\n)*", re.M)
_BLOCK = re.compile(r"^### `(?P<command>[^`]+) --help`\n\n```text\n(?P<text>.*?)```\n", re.M | re.S)


def _tool(name: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


@pytest.fixture
def catalogue(tmp_path: Path) -> Path:
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps([_tool("memory_search")]), encoding="utf-8")
    return path


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> ScriptedBackend:
    # A fake model in place of the real ones, to drive `run`'s plumbing (progress, outcome,
    # transcript, errors) reply by reply; the real models drive it in the tests marked `model`.
    backend = ScriptedBackend()
    monkeypatch.setattr("toolrouting._cli.run.model_backend", lambda args: backend)
    return backend


def _run_lines(transcript: Path) -> list[tuple[str, str]]:
    messages = read_transcript(transcript).messages
    return [(m["role"], m["content"]) for m in messages]


def test_the_docs_show_every_help_text_as_it_is() -> None:
    documented = {m["command"]: m["text"] for m in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))}
    assert documented == help_texts(), "docs/cli.md is stale: run `python tests/cli/test_cli.py`"


def _exit_table() -> str:
    rows = "".join(f"| {status} | {meaning} |\n" for status, meaning in EXIT_STATUSES.items())
    return f"| status | meaning |\n|---|---|\n{rows}"


def test_the_docs_table_the_exit_statuses_as_they_are() -> None:
    tables = _EXIT_TABLE.findall(DOC.read_text(encoding="utf-8"))
    assert tables == [_exit_table()], "docs/cli.md is stale: run `python tests/cli/test_cli.py`"
    assert set(EXIT_STATUSES) == {0, 1, 2, 130, 141}


def test_the_console_script_is_main() -> None:
    script = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    module, _, name = script["toolrouting"].partition(":")
    assert getattr(importlib.import_module(module), name) is main


def test_help_and_no_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "run" in capsys.readouterr().out
    assert main([]) == 2
    assert "usage: toolrouting" in capsys.readouterr().err
    assert main(["run", "--cap", "0", "q"]) == 2
    assert "'0' is not a positive integer" in capsys.readouterr().err


def test_schema_prints_the_route_schema(catalogue: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", str(catalogue)]) == 0
    assert json.loads(capsys.readouterr().out) == route_schema([_tool("memory_search")])
    catalogue.write_text(json.dumps({"tools": [_tool("memory_search")]}), encoding="utf-8")
    assert main(["schema", str(catalogue)]) == 0
    assert json.loads(capsys.readouterr().out)["anyOf"][0]["properties"]["tool"] == {"const": "memory_search"}


def test_a_bad_catalogue_is_one_error_line(catalogue: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalogue.write_text(json.dumps([_tool("search"), _tool("none")]), encoding="utf-8")
    assert main(["schema", str(catalogue)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("CatalogueError: tool catalogue entry 1: a tool named ")
    assert err.endswith("from the handoff\n")
    assert err.count("\n") == 1
    assert main(["schema", str(catalogue.with_name("absent.json"))]) == 2
    assert "toolrouting schema: error: cannot read" in capsys.readouterr().err
    catalogue.write_text("[{", encoding="utf-8")
    assert main(["parse", str(catalogue), NONE]) == 2
    assert "is not JSON" in capsys.readouterr().err
    catalogue.write_text('"tools"', encoding="utf-8")
    assert main(["schema", str(catalogue)]) == 2
    assert "holds no catalogue" in capsys.readouterr().err


def test_parse_exits_0_on_an_action_and_1_on_a_refusal(
    catalogue: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["parse", str(catalogue), SEARCH]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "ok": True,
        "tool": "memory_search",
        "arguments": {"query": "latch"},
        "text": SEARCH,
    }
    assert main(["parse", str(catalogue), "Sure!"]) == 1
    assert json.loads(capsys.readouterr().out) == {"ok": False, "error": "the reply is not a JSON object"}
    monkeypatch.setattr("sys.stdin", io.StringIO(f"  {NONE}\n"))
    assert main(["parse", str(catalogue)]) == 0
    assert json.loads(capsys.readouterr().out)["tool"] == "none"


def test_python_m_toolrouting_parses_and_prints_schemas(catalogue: Path) -> None:
    accepted = python_m("parse", str(catalogue), stdin=SEARCH)
    assert accepted.returncode == 0, accepted.stderr
    assert json.loads(accepted.stdout)["arguments"] == {"query": "latch"}
    refused = python_m("parse", str(catalogue), '{"tool": "memory_read", "arguments": {}}')
    assert refused.returncode == 1
    assert "is not one of the offered tools" in json.loads(refused.stdout)["error"]
    schema = python_m("schema", str(catalogue))
    assert schema.returncode == 0
    assert json.loads(schema.stdout)["anyOf"][-1]["properties"] == {"tool": {"const": "none"}}
    usage = python_m("bogus")
    assert usage.returncode == 2
    assert "invalid choice" in usage.stderr


def test_run_shows_progress_on_stderr_and_the_outcome_on_stdout(
    scripted: ScriptedBackend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.enqueue("Let me see.", READ, NONE)
    transcript = tmp_path / "run.jsonl"
    assert main(["run", QUESTION, "--transcript", str(transcript)]) == 0
    out, err = capsys.readouterr()
    assert out == "ended: handoff after 2 rounds, 1 tool call\n"
    # The demo's notes are few enough to offer by title: no search, and one read.
    assert err.splitlines() == [
        "round 1: memory_read | none",
        "  repair 1: the reply is not a JSON object",
        "round 1: memory_read | none",
        '  -> memory_read {"title": "The storage-room latch"}',
        '  <- {"records":[{"id":"M4","title":"The storage-room latch","text":"The latch on the '
        "storage-room door …",
        "round 2: none",
        "  -> none",
    ]
    lines = _run_lines(transcript)
    assert lines[1] == ("user", QUESTION)
    assert len(lines) == 7


def test_run_json_answer_and_resume(
    scripted: ScriptedBackend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = tmp_path / "run.jsonl"
    scripted.enqueue(READ, NONE, "It locks by itself.")
    assert main(["run", QUESTION, "--answer", "--json", "--transcript", str(transcript)]) == 0
    outcome = json.loads(capsys.readouterr().out)
    assert outcome["reason"] == "handoff"
    assert outcome["answer"] == "It locks by itself."
    assert [a["tool"] for a in outcome["actions"]] == ["memory_read", "none"]
    assert outcome["messages"][-1] == {"role": "assistant", "content": "It locks by itself."}
    # Cut the transcript back to before the handoff, with a torn line, and resume it.
    data = transcript.read_bytes()
    header, *lines = data.splitlines(keepends=True)
    assert header.startswith(b'{"transcript":"toolrouting"')
    transcript.write_bytes(header + b"".join(lines[:4]) + lines[4][:9])
    scripted.enqueue(NONE, "It locks by itself.")
    assert main(["run", "--resume", "--answer", "--transcript", str(transcript)]) == 0
    out, err = capsys.readouterr()
    assert transcript.read_bytes() == data
    # The answer streams to stdout as it comes, so it comes before the outcome's line.
    assert out == "It locks by itself.\nended: handoff after 2 rounds, 1 tool call\n"
    assert err.startswith('resumed at round 2 after 4 messages; dropped a torn end "{\\"role\\":\\""\n')


def test_run_max_calls_lets_a_decision_make_several_calls(
    scripted: ScriptedBackend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    twice = f"[{READ}, {READ}]"
    scripted.enqueue(twice, NONE)
    transcript = tmp_path / "run.jsonl"
    assert main(["run", QUESTION, "--max-calls", "2", "--json", "--transcript", str(transcript)]) == 0
    outcome = json.loads(capsys.readouterr().out)
    assert [(a["round"], a["tool"]) for a in outcome["actions"]] == [
        (1, "memory_read"),
        (1, "memory_read"),
        (2, "none"),
    ]
    lines = _run_lines(transcript)
    assert lines[2] == ("assistant", twice)
    assert [text.split("\n")[0] for _, text in lines[3:5]] == [
        "Tool result for memory_read (call route-1):",
        "Tool result for memory_read (call route-2):",
    ]
    offered = scripted.requests[0].settings.json_schema
    assert offered is not None
    assert offered["anyOf"][-1]["maxItems"] == 2
    # Without it, a decision is one call: the same reply is refused and repaired.
    scripted.enqueue(twice, NONE)
    assert main(["run", QUESTION, "--json"]) == 0
    outcome = json.loads(capsys.readouterr().out)
    assert [a["tool"] for a in outcome["actions"]] == ["none"]
    assert main(["run", QUESTION, "--max-calls", "0"]) == 2
    assert "--max-calls: '0' is not" in capsys.readouterr().err


def test_run_usage_errors(
    scripted: ScriptedBackend,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # no QUESTION, and nothing on stdin either
    assert main(["run"]) == 2
    assert "the question is missing" in capsys.readouterr().err
    assert main(["run", "--resume"]) == 2
    assert "--resume continues a run from --transcript" in capsys.readouterr().err
    assert main(["run", QUESTION, "--resume", "--transcript", str(tmp_path / "t.jsonl")]) == 2
    assert "--resume takes no QUESTION" in capsys.readouterr().err
    assert main(["run", QUESTION, "--db", str(tmp_path / "absent")]) == 2
    assert "no such database file or folder" in capsys.readouterr().err


def test_run_sampling_and_thread_values_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    # What the values reach on the wire: tests/cli/test_cli_run_options.py.
    argv = ["run", QUESTION, "--base-url", "http://127.0.0.1:9"]
    assert main([*argv, "--threads", "2"]) == 2
    assert "--threads sets the embedded model's threads" in capsys.readouterr().err
    assert main([*argv, "--decoding", "grammar"]) == 2
    assert "--decoding sets how the embedded model decodes" in capsys.readouterr().err
    assert main([*argv, "--prompt-cache-mb", "64"]) == 2
    assert "--prompt-cache-mb sets the embedded model's prompt cache" in capsys.readouterr().err
    assert main([*argv, "--ctx-size", "8192"]) == 2
    assert "--ctx-size sets the embedded model's context" in capsys.readouterr().err
    assert main([*argv, "--chat-template", "t.jinja"]) == 2
    assert "--chat-template sets the embedded model's template" in capsys.readouterr().err
    bad_values = [["--temperature", "-1"], ["--top-p", "nan"], ["--threads", "0"], ["--seed", "x"]]
    bad_values += [["--prompt-cache-mb", "-1"], ["--prompt-cache-mb", "1.5"], ["--ctx-size", "0"]]
    bad_values += [["--prompt-cache-dir-mb", "0"]]
    for bad in (*bad_values, ["--decoding", "greedy"]):
        assert main(["run", QUESTION, *bad]) == 2
        assert "error: argument" in capsys.readouterr().err


def test_run_library_errors_are_one_line(
    scripted: ScriptedBackend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_text("not a database", encoding="utf-8")
    assert main(["run", QUESTION, "--db", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("MemoryStoreError: ")
    assert err.count("\n") == 1
    assert main(["run", QUESTION, "--transcript", str(tmp_path / "no" / "such" / "dir.jsonl")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("TranscriptError: transcript ")
    assert "cannot be written (No such file or directory)" in err
    # A missing file is a usage error, as docs/cli.md tables it.
    assert main(["run", "--resume", "--transcript", str(tmp_path / "absent.jsonl")]) == 2
    assert "absent.jsonl: no such transcript file to continue" in capsys.readouterr().err
    scripted.enqueue("prose", "more prose " * 50)
    assert main(["run", QUESTION]) == 1
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(
        "RepairsExhaustedError: round 1: the reply is still not a valid action after 1 repair"
    )
    assert len(last) < 400


def test_run_over_a_folder_of_notes(scripted: ScriptedBackend, tmp_path: Path) -> None:
    (tmp_path / "pump.txt").write_text("The pump\nPrime it with a cup of water.\n", encoding="utf-8")
    scripted.enqueue('{"tool": "memory_read", "arguments": {"title": "The pump"}}', NONE)
    transcript = tmp_path / "run.jsonl"
    assert (
        main(["run", "How do I prime the pump?", "--db", str(tmp_path), "--transcript", str(transcript)]) == 0
    )
    assert '"title":"The pump"' in _run_lines(transcript)[3][1]


def test_run_against_a_closed_port_retries_then_fails_in_one_line() -> None:
    # Bound and not listening for the whole run: connections are refused, and no other
    # process can take the port in between.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        done = python_m(
            "run", QUESTION, "--base-url", f"http://127.0.0.1:{port}/v1", "--dialect", "llama-cpp-python"
        )
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert [line.split(" in ")[0] for line in lines if "retry" in line] == ["  retry 1", "  retry 2"]
    assert lines[-1].startswith(
        "RetriesExhaustedError: round 1: the backend request failed 3 times: BackendConnect"
    )
    assert done.stdout == ""


def _sampling(cap: int) -> list[str]:
    """The tests' sampling (tests/support/model.py), and a cap no demo action reaches."""
    return [
        *("--cap", str(cap), "--answer-tokens", str(cap)),
        *("--seed", str(TEST_SEED), "--temperature", str(TEST_TEMPERATURE)),
    ]


def _check_run_mechanics(transcript: Path, outcome: dict[str, Any]) -> None:
    """Every routed reply in the transcript was parsed: accepted and answered, or refused and repaired.

    What the model chose is its own business; the loop guarantees the rest: the run ends in a
    named way, and a limit leaves the model only ``none``, so the last action is always the handoff.
    """
    messages = read_transcript(transcript).messages
    assert messages == tuple(outcome["messages"])
    assert outcome["reason"] in ("handoff", "max_rounds", "max_repeats")
    assert outcome["actions"][-1]["tool"] == "none"
    assert [a["round"] for a in outcome["actions"]] == list(range(1, len(outcome["actions"]) + 1))
    names = ("memory_search", "memory_read")
    for reply, following in zip(messages[2::2], messages[3::2], strict=False):
        assert reply["role"] == "assistant"
        route = parse_route(reply["content"], names)
        if is_repair_message(following["content"]):
            continue
        assert route.ok, reply["content"]
        assert route.text == reply["content"]
        assert split_routed_result(following["content"]) is not None
    assert parse_route(messages[-1]["content"], names).tool == "none"


@pytest.mark.model
@pytest.mark.parametrize("decoding", [[], ["--decoding", "grammar"]], ids=["forced", "grammar"])
def test_the_sample_question_on_the_embedded_default_model(tmp_path: Path, decoding: list[str]) -> None:
    transcript = tmp_path / "run.jsonl"
    options = [*_sampling(demo_cap()), "--threads", str(TEST_THREADS), *decoding]
    done = python_m("run", QUESTION, "--json", "--transcript", str(transcript), *options)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    _check_run_mechanics(transcript, outcome)
    assert "round 1: memory_read | none" in done.stderr  # the demo's notes, offered by title


@pytest.mark.model
def test_the_sample_question_over_a_llama_cpp_server(
    llama_cpp_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = tmp_path / "run.jsonl"
    assert main(["models", "--base-url", llama_cpp_server, "--dialect", "llama-cpp-python"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 1  # the one model the server was started with, as --model takes it
    argv = ["run", QUESTION, "--base-url", llama_cpp_server, "--dialect", "llama-cpp-python"]
    argv += ["--model", listed[0]]
    assert main([*argv, "--json", "--transcript", str(transcript), *_sampling(demo_cap())]) == 0
    _check_run_mechanics(transcript, json.loads(capsys.readouterr().out))


def _write_docs() -> None:
    texts = help_texts()
    doc = DOC.read_text(encoding="utf-8")
    missing = set(texts) - {m["command"] for m in _BLOCK.finditer(doc)}
    for command in [c for c in texts if c in missing]:
        doc += f"\n### `{command} --help`\n\n```text\n```\n"
    doc = _BLOCK.sub(
        lambda m: (
            f"### `{m['command']} --help`\n\n```text\n{texts[m['command']]}```\n"
            if m["command"] in texts
            else ""
        ),
        doc,
    )
    doc = _EXIT_TABLE.sub(lambda m: _exit_table(), doc)
    DOC.write_text(doc, encoding="utf-8")


if __name__ == "__main__":
    _write_docs()
