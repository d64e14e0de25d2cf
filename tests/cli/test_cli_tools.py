"""``toolrouting run`` over real tools (``--mcp``, ``--mcp-config``, ``--tools``), and a reader that stops.

The plumbing is driven by a scripted model reply by reply; the tests marked ``model`` run the
embedded model end to end over a real MCP server and check only the mechanics.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from support.mcp_servers import stdio_test_server, time_server
from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS, guaranteed_cap
from support.paths import ROOT
from support.tools_module import tools_module

from toolrouting import MCPTools, ScriptedBackend, parse_route, route_schema, split_routed_result
from toolrouting._cli import main
from toolrouting._cli.tools import RunTools, asks
from toolrouting._loop.repair_feedback import is_repair_message
from toolrouting._loop.transcript_reader import read_transcript

QUESTION = "What does the note say about the latch?"
LOOKUP = '{"tool": "lookup", "arguments": {"word": "latch"}}'
NONE = '{"tool": "none"}'


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> ScriptedBackend:
    # A fake model in place of the real ones, to drive the plumbing reply by reply.
    backend = ScriptedBackend()
    monkeypatch.setattr("toolrouting._cli.run.model_backend", lambda args: backend)
    return backend


def test_run_over_an_mcp_server(
    scripted: ScriptedBackend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.enqueue(LOOKUP, NONE)
    transcript = tmp_path / "run.jsonl"
    argv = ["run", QUESTION, "--mcp", stdio_test_server("--bounded"), "--transcript", str(transcript)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out == "ended: handoff after 2 rounds, 1 tool call\n"
    assert err.splitlines()[-5:] == [
        "round 1: lookup | shout | none",
        '  -> lookup {"word": "latch"}',
        "  <- The latch sticks in winter.",
        "round 2: lookup | shout | none",
        "  -> none",
    ]
    messages = read_transcript(transcript).messages
    # The loop's instructions: the server's tools, described, in a system message of their own.
    assert messages[0]["role"] == "system"
    assert messages[0]["content"].startswith("You choose the next action. The tools you can call:\nlookup(")
    # The run resumes from its transcript: the servers start again, the run is already done.
    scripted.enqueue(NONE)
    assert (
        main(["run", "--resume", "--mcp", stdio_test_server("--bounded"), "--transcript", str(transcript)])
        == 0
    )
    assert read_transcript(transcript).messages == messages


def test_allow_deny_and_a_config_file(
    scripted: ScriptedBackend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "mcp.json"
    command, *args = shlex.split(stdio_test_server("--bounded"))
    config.write_text(json.dumps({"mcpServers": {"notes": {"command": command, "args": args}}}), "utf-8")
    scripted.enqueue(NONE)
    assert main(["run", QUESTION, "--mcp-config", str(config), "--namespace", "--deny", "*shout"]) == 0
    assert "round 1: notes__lookup | none" in capsys.readouterr().err
    scripted.enqueue(NONE)
    assert main(["run", QUESTION, "--mcp-config", str(config), "--allow", "shout"]) == 0
    assert "round 1: shout | none" in capsys.readouterr().err


def test_python_tools_and_results_cut_to_size(
    scripted: ScriptedBackend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = textwrap.dedent('''
        def read_log(lines: int) -> str:
            """The last lines of the log."""
            return "START" + "x" * 10_000 + "END"

        def ping() -> str:
            """Answer pong."""
            return "pong"

        TOOLS = [read_log, ping]
    ''')
    tools_module(tmp_path, monkeypatch, "my_tools", source)
    scripted.enqueue('{"tool": "read_log", "arguments": {"lines": 3}}', NONE)
    transcript = tmp_path / "run.jsonl"
    assert (
        main(["run", QUESTION, "--tools", "my_tools:TOOLS", "--json", "--transcript", str(transcript)]) == 0
    )
    result = read_transcript(transcript).messages[3]["content"]
    header, body = split_routed_result(result) or ("", "")
    assert header == "Tool result for read_log (call route-1):"
    assert len(body) <= 4000  # MAX_TOOL_RESULT_CHARS
    assert body.startswith("START")
    assert body.endswith("END")
    assert "characters cut ...]" in body
    capsys.readouterr()
    scripted.enqueue(NONE)
    assert main(["run", QUESTION, "--tools", "my_tools:ping"]) == 0
    assert "round 1: ping | none" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--tools", "nowhere_at_all:x"], "cannot import nowhere_at_all"),
        (["--tools", "json"], "name the module and the attribute, as MODULE:NAME"),
        (["--tools", "json:nothing"], "json has no attribute nothing"),
        (["--tools", "json:JSONDecodeError"], "a type is not tools"),
        (["--mcp", "x", "--db", "notes.db"], "--db names the demo store's notes"),
        (["--mcp", "x", "--confirm"], "--confirm asks on the terminal"),
        (["--mcp-config", "absent.json"], "--mcp-config absent.json: no such file"),
    ],
)
def test_tool_options_usage_errors(
    options: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sys_stdin = sys.stdin
    try:
        sys.stdin = io.StringIO("")  # not a terminal
        assert main(["run", QUESTION, *options]) == 2
    finally:
        sys.stdin = sys_stdin
    assert message in capsys.readouterr().err


def test_a_server_that_cannot_start_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", QUESTION, "--mcp", "no-such-mcp-server"]) == 1
    err = capsys.readouterr().err
    why = "cannot run no-such-mcp-server: No such file or directory"
    assert err == f"ToolServerError: MCP server no-such-mcp-server: {why}\n"


def test_run_tools_filters_confirms_and_refuses_clashes() -> None:
    with MCPTools(time_server()) as mcp:
        answers = io.StringIO("y\nn\n")
        prompts = io.StringIO()
        tools = RunTools([mcp], deny=["convert_*"], confirm=asks(answers, prompts))
        assert [t["function"]["name"] for t in tools.tools_for_llm()] == ["get_current_time"]
        assert not tools.call("get_current_time", {"timezone": "UTC"}).is_error
        declined = tools.call("get_current_time", {"timezone": "UTC"})
        assert declined.content == "the user declined the call of get_current_time; it was not run"
        assert tools.call("get_current_time", {"timezone": "UTC"}).is_error  # end of input is a no
        assert prompts.getvalue().startswith('  ? call get_current_time {"timezone": "UTC"} [y/N] ')
        assert tools.call("convert_time", {}).is_error  # denied: not offered, not callable
        from toolrouting import CatalogueError

        with pytest.raises(CatalogueError, match="two tool providers offer a tool named 'get_current_time'"):
            RunTools([mcp, mcp]).tools_for_llm()


def test_schema_into_a_reader_that_stops_ends_quietly(tmp_path: Path) -> None:
    tools = [
        {"type": "function", "function": {"name": f"tool_{k}", "description": "d" * 200}} for k in range(500)
    ]
    catalogue = tmp_path / "wide.json"
    catalogue.write_text(json.dumps(tools), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writer = subprocess.Popen(
        [sys.executable, "-m", "toolrouting", "schema", str(catalogue)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert writer.stdout is not None
    assert writer.stderr is not None
    assert writer.stdout.readline() == b"{\n"
    writer.stdout.close()  # what `| head -n 1` does once it has its line
    assert writer.wait(timeout=60) == 141  # 128 + SIGPIPE, as a shell reports `cat` ended so
    assert writer.stderr.read() == b""  # no traceback
    writer.stderr.close()


def _mechanics(transcript: Path, outcome: dict[str, Any], names: tuple[str, ...]) -> None:
    """Every reply was parsed: accepted and answered under its call id, or refused and repaired."""
    messages = read_transcript(transcript).messages
    assert messages == tuple(outcome["messages"])
    assert outcome["reason"] in ("handoff", "max_rounds", "max_repeats")
    assert outcome["actions"][-1]["tool"] == "none"
    for reply, following in zip(messages[2::2], messages[3::2], strict=False):
        route = parse_route(reply["content"], names)
        if is_repair_message(following["content"]):
            continue
        assert route.ok, reply["content"]
        parts = split_routed_result(following["content"])
        assert parts is not None, following["content"]
        assert parts[0].startswith(
            (f"Tool result for {route.tool} (call route-", f"Tool error for {route.tool} ")
        )


@pytest.mark.model
def test_the_embedded_model_over_an_mcp_server_end_to_end(tmp_path: Path) -> None:
    server = stdio_test_server("--bounded")
    with MCPTools(server) as tools:
        catalogue = tools.tools_for_llm()
    cap = guaranteed_cap(route_schema(catalogue))
    names = tuple(t["function"]["name"] for t in catalogue)
    transcript = tmp_path / "run.jsonl"
    options = ["--cap", str(cap), "--answer-tokens", str(cap), "--seed", str(TEST_SEED)]
    options += ["--temperature", str(TEST_TEMPERATURE), "--threads", str(TEST_THREADS)]
    command = [sys.executable, "-m", "toolrouting", "run", QUESTION, "--mcp", server, "--json"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": "passive"}
    done = subprocess.run(
        [*command, "--transcript", str(transcript), *options],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    _mechanics(transcript, outcome, names)
    # Cut back to the first round's action, and resume: the action is run again and the run ends.
    data = transcript.read_bytes().splitlines(keepends=True)
    transcript.write_bytes(b"".join(data[:4]))
    resumed = subprocess.run(
        [sys.executable, "-m", "toolrouting", "run", "--resume", "--mcp", server, "--json",
         "--transcript", str(transcript), *options],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed at round 1 after 3 messages" in resumed.stderr
    _mechanics(transcript, json.loads(resumed.stdout), names)
