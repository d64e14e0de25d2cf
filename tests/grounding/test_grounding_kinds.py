"""Arguments by kind: grounding checks what the conversation must give, never what the model writes.

One test per step of the rule (``toolrouting._grounding.kinds``: a closed choice, a ``format``, the
type, a ``pattern``, the name's head and its other words, the description's opening phrase, the
tool's name, and given when nothing says); the kinds of MCP's reference servers' catalogues as
the servers offer them live; grounding leaving a composed argument unchecked, at the top and
inside an object; and a loop with ``abstain="grounding"`` running a shell command whose words
the conversation never wrote, while it still abstains from a file name the user never gave.
The agent CLIs' catalogues are classed in tests/serve/test_serve_agent_clis.py, from what each CLI sends.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.mcp_servers import git_server, time_server

from toolrouting import (
    FunctionTools,
    MCPTools,
    RoutingLoop,
    ScriptedBackend,
    argument_kind,
    conversation_evidence,
    grounding,
)
from toolrouting._grounding import abstention


def _kind(name: str, schema: dict[str, Any] | None = None, tool: str | None = None) -> str:
    return argument_kind(name, schema or {}, tool).kind


# The rule, step by step.


def test_a_closed_choice_a_format_and_a_type_other_than_text_are_given() -> None:
    assert argument_kind("command", {"enum": ["start", "stop"]}).reason == "a closed choice"
    assert _kind("message", {"const": "hi"}) == _kind("prompt", {"type": "boolean"}) == "given"
    assert _kind("query", {"type": "string", "format": "date"}) == "given"
    assert _kind("x", {"type": "string", "format": "uri"}) == "given"
    assert _kind("x", {"type": "string", "format": "regex"}) == "composed"  # the one format written
    assert _kind("command", {"type": "integer"}) == _kind("code", {"type": ["number", "null"]}) == "given"
    assert _kind("queries", {"type": "array", "items": {"type": "integer"}}) == "given"
    assert _kind("text", {"type": "string", "pattern": "^[A-Z]{3}$"}) == "given"  # a code to match


def test_the_names_head_decides_then_its_other_words() -> None:
    for given in ("file_path", "message_id", "content_type", "queryName", "city", "repo_path", "branch_name"):
        assert _kind(given, {"type": "string"}) == "given", given
    for composed in (
        "command",
        "cmd",
        "pattern",
        "prompt",
        "commit_message",
        "query_string",
        "sqlText",
        "body",
    ):
        assert _kind(composed, {"type": "string"}) == "composed", composed
    # "code" is source code alone or after a language, and a code given after anything else.
    assert _kind("code") == _kind("python_code") == "composed"
    assert _kind("zip_code") == _kind("currency_code") == "given"
    assert argument_kind("commit_message", {}).reason == "name 'message'"


def test_the_descriptions_opening_phrase_decides_a_name_that_says_nothing() -> None:
    def described(text: str) -> str:
        return _kind("x", {"type": "string", "description": text})

    assert described("The absolute path to the file to read") == "given"
    assert described("The command to execute") == "composed"
    assert described("The regular expression pattern to search for in file contents") == "composed"
    assert described("The text to replace it with") == "composed"
    assert described("The ISO currency code, such as EUR") == "given"
    assert described("Python code to run") == "composed"
    # Past its first preposition the phrase is over: the query is what the conditions are for.
    assert described("Conditions for the query.") == "given"
    # A vague word says nothing: the user's message is a message.
    assert described("The user's message to the bunny") == "composed"
    assert argument_kind("x", {"description": "The command to execute"}).reason == "description 'command'"


def test_a_tool_named_for_a_shell_takes_code_and_anything_else_is_given() -> None:
    assert _kind("input", {"type": "string"}, "run_bash") == "composed"
    assert _kind("input", {"type": "string"}, "get_weather") == "given"
    assert argument_kind("value", {}).reason == "nothing says it is written"
    assert _kind("x", "not a schema") == "given"  # type: ignore[arg-type]


# Real catalogues, as their servers offer them.


def _kinds(tools: list[dict[str, Any]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for tool in tools:
        function = tool["function"]
        properties = function["parameters"].get("properties", {})
        for name in function["parameters"].get("required", []):
            found[f"{function['name']}.{name}"] = argument_kind(name, properties[name], function["name"]).kind
    return found


def test_mcp_server_time_asks_only_for_given_values() -> None:
    with MCPTools(time_server()) as tools:
        kinds = _kinds(tools.tools_for_llm())
    assert kinds == {
        "get_current_time.timezone": "given",
        "convert_time.source_timezone": "given",
        "convert_time.time": "given",
        "convert_time.target_timezone": "given",
    }


def test_mcp_server_git_writes_its_commit_message_and_is_given_the_rest(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with MCPTools(git_server(tmp_path)) as tools:
        kinds = _kinds(tools.tools_for_llm())
    assert kinds["git_commit.message"] == "composed"
    given = {"git_status.repo_path", "git_add.files", "git_checkout.branch_name", "git_show.revision"}
    assert {name: kinds[name] for name in given} == dict.fromkeys(given, "given")
    assert [name for name, kind in kinds.items() if kind == "composed"] == ["git_commit.message"]


# Grounding checks what is given.


def test_grounding_leaves_a_composed_argument_unchecked_at_the_top_and_inside_an_object() -> None:
    parameters = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The shell command to run"},
            "cwd": {"type": "string", "description": "The folder to run it in"},
            "change": {
                "type": "object",
                "properties": {"file_path": {"type": "string"}, "new_text": {"type": "string"}},
            },
        },
        "required": ["command", "cwd", "change"],
    }
    evidence = conversation_evidence([{"role": "user", "content": "Fix the typo in notes.txt under docs."}])
    change = {"file_path": "notes.txt", "new_text": "an entirely rewritten paragraph"}
    found = grounding("shell", {"command": "sed -i s/teh/the/ notes.txt", "cwd": "docs", "change": change},
                      parameters, evidence)  # fmt: skip
    assert (found.checked, found.composed, found.grounded) == (("cwd", "change"), ("command",), True)
    # A given value inside the object is still checked.
    invented = {**change, "file_path": "secrets.env"}
    found = grounding("shell", {"command": "ls", "cwd": "docs", "change": invented}, parameters, evidence)
    assert [item.argument for item in found.ungrounded] == ["change"]
    # Checked as before kinds (by_kind=False, for a measurement), the command is ungrounded.
    before = grounding("shell", {"command": "rm -rf build", "cwd": "docs", "change": change}, parameters,
                       evidence, by_kind=False)  # fmt: skip
    assert (before.checked, [item.argument for item in before.ungrounded]) == (
        ("command", "cwd", "change"),
        ["command", "change"],  # the object's new_text too
    )
    # A call of composed arguments only has nothing to check, so it is never abstained from.
    assert abstention("grounding", [("shell", {"command": "rm -rf build"}, parameters)], evidence) is None


def _run_loop(question: str, reply: str) -> Any:
    ran: list[str] = []

    def run_command(command: str) -> str:
        """Run a shell command in the project's folder.

        Args:
            command: The shell command to run.
        """
        ran.append(command)
        return "notes.txt  README.md"

    def read_file(file_path: str) -> str:
        """Read a file of the project.

        Args:
            file_path: The file to read.
        """
        ran.append(file_path)
        return "hello"

    backend = ScriptedBackend([reply, '{"tool": "none"}'])
    loop = RoutingLoop(backend, FunctionTools(run_command, read_file), abstain="grounding")
    return loop.run([{"role": "user", "content": question}]), ran


def test_a_loop_runs_a_command_the_conversation_never_wrote_and_abstains_from_an_invented_file() -> None:
    # "ls -la" shares no word with the question: checked as before, it was abstained from.
    result, ran = _run_loop(
        "What is in this folder?", '{"tool": "run_command", "arguments": {"command": "ls -la"}}'
    )
    assert (result.reason, result.abstained, ran) == ("handoff", None, ["ls -la"])
    result, ran = _run_loop(
        "What is in this folder?", '{"tool": "read_file", "arguments": {"file_path": "x.env"}}'
    )
    assert (result.reason, ran) == ("abstained", [])
    assert result.abstained == "read_file needs file_path, which the conversation does not give"


@pytest.mark.parametrize("command", ["git log --oneline -5", "grep -rn TODO src", "python -m pytest -q"])
def test_any_command_goes_through_where_checking_its_words_abstained(command: str) -> None:
    question = "Look around the project, please."
    # Read as a given value, the command's words are not the conversation's.
    as_given = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    evidence = conversation_evidence([{"role": "user", "content": question}])
    assert not grounding("tool", {"x": command}, as_given, evidence).grounded
    call = json.dumps({"tool": "run_command", "arguments": {"command": command}})
    result, ran = _run_loop(question, call)
    assert (result.reason, ran) == ("handoff", [command])
