"""``toolrouting run`` in a process of its own, against what breaks a command line: tools and
providers that raise or exit, text that is not UTF-8 (in a tool's result, a server's answer, an
argument), stdin closed, missing files. Each ends in one line and a status docs/cli.md tables,
never a traceback. The server is the fault tests' real HTTP server on loopback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.catalogues import NONE
from support.fault_server import FaultServer, ok
from support.processes import ROOT, python_m

from toolrouting._loop.transcript_reader import read_transcript

QUESTION = "What does the latch on the storage-room door do?"

#: The tools a run imports with --tools: a provider whose catalogue raises or exits, a tool that
#: exits, a tool whose result holds a lone surrogate.
TOOLS = '''
from toolrouting import ToolOutput


class Broken:
    def tools_for_llm(self):
        raise RuntimeError("the catalogue is down")

    def call(self, name, arguments):
        return ToolOutput("never")


class Exiting(Broken):
    def tools_for_llm(self):
        raise SystemExit(5)


broken = Broken()
exiting = Exiting()


def quits(word: str) -> str:
    """Quit the process."""
    raise SystemExit(5)


def surrogate(word: str) -> str:
    """Answer text that is not UTF-8."""
    return "bad \\ud800 byte"
'''


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer() as served:
        yield served


@pytest.fixture
def tools(tmp_path: Path) -> dict[str, str]:
    """The environment that lets ``--tools hostile_tools:NAME`` import :data:`TOOLS`."""
    (tmp_path / "hostile_tools.py").write_text(TOOLS, encoding="utf-8")
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _one_line(done: subprocess.CompletedProcess[str], status: int) -> str:
    assert "Traceback" not in done.stderr
    assert done.returncode == status, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr


@pytest.mark.parametrize(
    ("provider", "line"),
    [("broken", "RuntimeError: the catalogue is down\n"), ("exiting", "SystemExit: 5\n")],
)
def test_a_provider_that_raises_or_exits_is_one_line_and_status_1(
    server: FaultServer, tools: dict[str, str], provider: str, line: str
) -> None:
    done = python_m(
        "run", QUESTION, "--base-url", server.url, "--tools", f"hostile_tools:{provider}", env=tools
    )
    assert _one_line(done, 1) == line
    assert done.stdout == ""


def test_a_tool_that_exits_is_a_tool_error_and_the_run_goes_on(
    server: FaultServer, tools: dict[str, str], tmp_path: Path
) -> None:
    transcript = tmp_path / "run.jsonl"
    server.script.extend([ok('{"tool": "quits", "arguments": {"word": "x"}}'), ok(NONE)])
    argv = ["run", QUESTION, "-q", "--base-url", server.url, "--tools", "hostile_tools:quits"]
    done = python_m(*argv, "--transcript", str(transcript), env=tools)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "ended: handoff after 2 rounds, 1 tool call\n"
    results = [m["content"] for m in read_transcript(transcript).messages if m["content"].startswith("Tool")]
    assert results == ["Tool error for quits (call route-1):\nthe tool failed: SystemExit: 5"]


def test_a_lone_surrogate_reaches_the_server_as_u_fffd_and_the_transcript_as_it_was(
    server: FaultServer, tools: dict[str, str], tmp_path: Path
) -> None:
    transcript = tmp_path / "run.jsonl"
    server.script.extend([ok('{"tool": "surrogate", "arguments": {"word": "x"}}'), ok(NONE)])
    argv = ["run", QUESTION, "-q", "--base-url", server.url, "--tools", "hostile_tools:surrogate"]
    done = python_m(*argv, "--transcript", str(transcript), env=tools)
    assert (done.returncode, done.stderr) == (0, "")
    assert server.bodies[1]["messages"][-1]["content"].endswith("bad \ufffd byte")
    assert transcript.read_text().count('bad \\ud800 byte"}') == 1  # escaped, as it was


@pytest.mark.parametrize("as_json", [False, True])
def test_an_answer_holding_a_lone_surrogate_is_printed(server: FaultServer, as_json: bool) -> None:
    server.script.extend([ok(NONE), ok("It locks \ud800 the door.")])
    done = python_m("run", QUESTION, "--base-url", server.url, "--answer", *(["--json"] if as_json else []))
    assert "Traceback" not in done.stderr
    assert done.returncode == 0, done.stderr
    if as_json:
        assert json.loads(done.stdout)["answer"] == "It locks \ud800 the door."
    else:
        assert "It locks \\ud800 the door." in done.stdout


def test_an_argument_that_is_not_utf8_is_a_usage_error(server: FaultServer) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolrouting", "run", b"caf\xe9 latch", "--base-url", server.url],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == b"toolrouting: error: argument 2 is not UTF-8 text (a bad byte at character 3)\n"
    assert server.bodies == []


@pytest.mark.parametrize(
    ("question", "line"),
    [
        (["-"], "toolrouting run: error: stdin is closed: give the text as an argument, or open stdin\n"),
        ([], 'toolrouting run: error: the question is missing: toolrouting run "What does the latch do?"\n'),
    ],
)
def test_stdin_closed_is_a_usage_error(server: FaultServer, question: list[str], line: str) -> None:
    command = [sys.executable, "-m", "toolrouting", "run", *question, "--base-url", server.url]
    done = subprocess.run(
        ["sh", "-c", 'exec "$@" <&-', "sh", *command],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert _one_line(done, 2) == line
    assert server.bodies == []


def test_missing_files_are_usage_errors(tmp_path: Path) -> None:
    missing = tmp_path / "missing.gguf"
    done = python_m("run", QUESTION, "--model", str(missing))
    assert _one_line(done, 2) == (
        f"toolrouting run: error: --model {missing}: no such GGUF file (with --base-url it names a "
        "server's model)\n"
    )
    absent = tmp_path / "absent.jsonl"
    done = python_m("run", "--resume", "--transcript", str(absent))
    assert _one_line(done, 2) == (
        f"toolrouting run: error: --resume --transcript {absent}: no such transcript file to continue\n"
    )
    assert not absent.exists()
