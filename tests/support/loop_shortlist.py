"""The git catalogue and the scripted runs the loop's shortlist tests share."""

from __future__ import annotations

import copy
import json
from typing import Any

from support.catalogues import NONE
from support.paths import TESTS
from toolrouting import ScriptedRequest, ToolOutput, tools_from
from toolrouting._loop.repair_feedback import is_repair_message
from toolrouting._result_messages import split_routed_result

GIT: list[dict[str, Any]] = [
    dict(spec)
    for spec in tools_from(json.loads((TESTS / "catalogues" / "mcp" / "mcp-server-git.json").read_text()))
]


ASKED = [{"role": "user", "content": "Which files have I staged?"}]
OUTPUTS = {
    "git_diff_staged": "Check the log of recent commits next.",
    "git_log": "commit 1a2b: Add the notes",
}


def call(name: str, **arguments: Any) -> str:
    return json.dumps({"tool": name, "arguments": {"repo_path": ".", **arguments}})


class Repo:
    """The git server's tools; ``hidden`` are left out of the catalogue, ``hide_called`` leaves
    out each tool once it has been called (a provider narrowing its own catalogue)."""

    def __init__(
        self, tools: list[dict[str, Any]] = GIT, hidden: tuple[str, ...] = (), hide_called: bool = False
    ):
        self.tools = tools
        self.hidden = set(hidden)
        self.hide_called = hide_called
        self.called: list[str] = []

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(t) for t in self.tools if t["function"]["name"] not in self.hidden]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        self.called.append(name)
        if self.hide_called:
            self.hidden.discard("git_log")
            self.hidden.add(name)
        return ToolOutput(OUTPUTS.get(name, f"{name}: done"))


def offered(request: ScriptedRequest) -> list[str]:
    """The tools a routed request's schema offers, ``none`` aside."""
    schema = request.settings.json_schema
    assert schema is not None
    return [
        branch["properties"]["tool"]["const"]
        for branch in schema["anyOf"]
        if branch["properties"]["tool"]["const"] != "none"
    ]


def _script(request: ScriptedRequest) -> str:
    """A model that answers from how many results the conversation holds: the run's replies are a
    function of what it is sent, as a resumed run's must be."""
    if request.settings.json_schema is None:
        return "Only notes.md is staged."
    results = sum(1 for m in request.messages if m["role"] == "user" and split_routed_result(m["content"]))
    repairs = sum(1 for m in request.messages if is_repair_message(m["content"]))
    if results == 0:
        return call("git_diff_staged")
    if results == 1 and repairs == 0:
        return "git log, please"  # refused, and repaired within the round
    if results == 1:
        return call("git_log")
    return NONE
