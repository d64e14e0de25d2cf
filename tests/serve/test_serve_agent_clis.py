"""Claude Code and Codex, as they ship from npm, complete a tool loop through ``toolrouting serve``.

Each runs on its defaults (tests/support/agent_clis.py says what is set, and why), against a
serve process over a scripted upstream: the route's decision is a call of one of the CLI's
own tools, the CLI runs it, sends its result back, and prints the answer. Only what serve and
the grammar guarantee is asserted: the call reached the CLI and was run (its output is in the
next decision's conversation), the answer was printed, and the CLI exited 0. Each CLI's
catalogue, read back from the route schema serve sent, is classed by argument kind
(``toolrouting.argument_kind``): its commands, prompts and texts are composed, its paths given;
and Codex's shell command runs with ``--abstain grounding``, which checks only what is given.
Over an upstream that routes one call again and again, the session ends all the same: serve
withholds the call's tool past the repeat limit, which the routes the upstream was sent show.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.agent_clis import (
    ANSWER,
    agent_clis,
    decisions,
    offers_by_results,
    repeating,
    result_sent_back,
    routed,
    run_claude,
    run_codex,
    serve_over,
    thought_sent_back,
)
from support.fault_server import FaultServer

from toolrouting import argument_kind
from toolrouting._limits import DEFAULT_MAX_REPEATS

#: The file the routed call reads; its text is what must come back as the tool's result.
WEATHER = "The weather in Paris: sunny, 21 C."
#: Scripted behaviours queued for one run: more than a tool loop's requests (a decision, a
#: second decision after the result, the answer, and a reasoning phase before each decision).
_QUEUED = 20


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "weather.txt").write_text(WEATHER + "\n", encoding="utf-8")
    return folder


def _explained(done: object) -> str:
    return f"the CLI's output:\n{getattr(done, 'stdout', '')}\n{getattr(done, 'stderr', '')}"


def _kinds(schema: dict[str, Any]) -> dict[str, str]:
    """Each required argument of the catalogue a decision offered (the route schema's
    alternatives: each a tool and its parameters), as ``TOOL.ARGUMENT``, with its kind."""
    found: dict[str, str] = {}
    for alternative in schema["anyOf"]:
        tool = alternative["properties"]["tool"]["const"]
        parameters = alternative["properties"].get("arguments", {})
        for name in parameters.get("required", []):
            found[f"{tool}.{name}"] = argument_kind(name, parameters["properties"][name], tool).kind
    return found


def _tool_loop(
    run: Callable[[str], subprocess.CompletedProcess[str]],
    tool: str,
    arguments: dict[str, Any],
    *options: str,
) -> FaultServer:
    """``run(url)`` against serve over an upstream whose decisions call ``tool``: the guarantees
    of one tool loop checked, the upstream returned for what else its requests show."""
    with FaultServer() as upstream:
        upstream.script.extend([routed({"tool": tool, "arguments": arguments})] * _QUEUED)
        with serve_over(upstream, *options) as url:
            done = run(url)
    assert done.returncode == 0, _explained(done)
    assert ANSWER in done.stdout, _explained(done)
    assert result_sent_back(upstream, tool, WEATHER), _explained(done)
    return upstream


def test_claude_code_runs_a_routed_call_and_prints_the_answer(workdir: Path, tmp_path: Path) -> None:
    claude = agent_clis()["claude"]
    # Read is one of Claude Code's read-only tools, which it runs without asking.
    upstream = _tool_loop(
        lambda url: run_claude(claude, url, workdir, tmp_path / "home"), "Read", {"file_path": "weather.txt"}
    )
    # Its default model asks for adaptive thinking: each decision had its thought first, and the
    # signed thinking block came back with the call it preceded.
    assert all("thought" in schema["anyOf"][0]["properties"] for schema in decisions(upstream))
    assert thought_sent_back(upstream)
    kinds = _kinds(decisions(upstream)[0])
    expected = {
        "Bash.command": "composed",
        "Agent.prompt": "composed",
        "Write.content": "composed",
        "Read.file_path": "given",
        "Edit.file_path": "given",
    }
    assert {name: kinds.get(name) for name in expected} == expected


def test_codex_runs_a_routed_call_and_prints_the_answer(workdir: Path, tmp_path: Path) -> None:
    codex = agent_clis()["codex"]
    # exec_command runs a shell command in Codex's own sandbox (read-only by default).
    upstream = _tool_loop(
        lambda url: run_codex(codex, url, workdir, tmp_path / "home"),
        "exec_command",
        {"cmd": "cat weather.txt"},
    )
    # Its reasoning summary names no effort: no reasoning is served.
    assert not any("thought" in schema["anyOf"][0]["properties"] for schema in decisions(upstream))
    kinds = _kinds(decisions(upstream)[0])
    assert (kinds.get("exec_command.cmd"), kinds.get("view_image.path")) == ("composed", "given")


def test_codex_runs_a_shell_command_with_abstention_on(workdir: Path, tmp_path: Path) -> None:
    # The command is the model's to write: grounding checks only given arguments, so the call
    # goes out and runs, though neither the question nor Codex's own instructions write "xxd"
    # (read as a given value, the command would be abstained from).
    codex = agent_clis()["codex"]
    _tool_loop(
        lambda url: run_codex(codex, url, workdir, tmp_path / "home"),
        "exec_command",
        {"cmd": "xxd -p weather.txt | xxd -r -p"},
        "--abstain",
        "grounding",
    )


@pytest.mark.parametrize(
    ("cli", "call"),
    [
        ("claude", {"tool": "Read", "arguments": {"file_path": "weather.txt"}}),
        ("codex", {"tool": "exec_command", "arguments": {"cmd": "cat weather.txt"}}),
    ],
)
def test_a_session_whose_model_repeats_one_call_ends(
    workdir: Path, tmp_path: Path, cli: str, call: dict[str, Any]
) -> None:
    """A model that routes the same call again and again, its result already in the conversation:
    serve withholds its tool once the call passed the repeat limit, the model can only route
    ``none``, and the CLI prints the answer and exits."""
    binary = agent_clis()[cli]
    run = run_claude if cli == "claude" else run_codex
    with FaultServer() as upstream:
        upstream.script.extend([repeating(call)] * _QUEUED)
        with serve_over(upstream) as url:
            done = run(binary, url, workdir, tmp_path / "home")
    assert done.returncode == 0, _explained(done)
    assert ANSWER in done.stdout, _explained(done)
    seen = offers_by_results(upstream, call["tool"])
    # The tool is offered while its one call has run at most max_repeats times, and never after.
    assert [offered for offered, _ in seen] == [runs <= DEFAULT_MAX_REPEATS for _, runs in seen], seen
    assert seen[-1] == (False, DEFAULT_MAX_REPEATS + 1), seen
