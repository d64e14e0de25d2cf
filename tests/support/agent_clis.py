"""Claude Code and Codex, the agent CLIs as they ship, run against ``toolrouting serve`` on loopback.

scripts/agent-clis.sh installs both from npm at pinned versions into a cache outside the
repository (skipped when cached); :func:`agent_clis` runs it once a session and skips only
where ``node`` is missing. ``toolrouting serve`` runs as a user starts it, a process of its own,
in front of a scripted upstream (a :class:`~support.fault_server.FaultServer` that answers every
routed decision with the action the test gives, until a tool result is in the conversation, or
with :func:`repeating` for as long as the route offers it, and every other request with the
answer's text).

Each CLI runs as docs/serve.md's "Clients as they ship" says to run it, its command and its
configuration read from the page (so the page's are the tested ones): nothing but where serve
is and a dummy key, plus what keeps a test hermetic. HOME is a temporary folder, so no user's
settings, credentials or history are read or written. Claude Code gets
``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``: without it, it looks up api.anthropic.com for
its telemetry and probes ``HEAD /api/hello`` on the base URL (measured with 2.1.332; the
request bodies are the same either way). Codex gets ``[analytics] enabled = false`` and
``[features] plugins = false`` after the page's model provider: without them it looks up
ab.chatgpt.com, chatgpt.com, github.com and api.github.com (0.171.0; the request bodies are the
same either way). It runs in a fresh git repository, as ``codex exec`` expects, with its own
default sandbox (read-only) and approval policy (never).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.fault_server import Behaviour, FaultServer, Handler, completion_body
from support.processes import ROOT, stop

__all__ = [
    "ANSWER",
    "SERVED_MODEL",
    "Served",
    "agent_clis",
    "decisions",
    "documented",
    "offers_by_results",
    "repeating",
    "result_sent_back",
    "routed",
    "run_claude",
    "run_codex",
    "serve_over",
    "serve_process",
    "thought_sent_back",
]

#: The name ``toolrouting serve`` lists for the upstream, which Codex is configured to ask for.
SERVED_MODEL = "toolrouting-test"
#: The scripted upstream's answer, which each CLI must print.
ANSWER = "It is sunny in Paris, 21 C."
#: The longest one CLI run may take: a tool loop of a few requests on loopback takes seconds.
CLI_TIMEOUT = 180.0
#: The longest the install may take: about 360 MB from npm, once.
INSTALL_TIMEOUT = 1200.0

_SCRIPT = ROOT / "scripts" / "agent-clis.sh"
_PAGE = ROOT / "docs" / "serve.md"
_SERVE = (sys.executable, "-m", "toolrouting", "serve")
#: The marker of a tool result in the decision's conversation (the loop's result message).
_RESULT = "Tool result for "


@functools.cache
def _installed() -> dict[str, Path] | str:
    """The CLIs' paths, or why they could not be had; run once a session."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are not installed: Claude Code and Codex are npm packages"
    done = subprocess.run(
        ["sh", str(_SCRIPT)], capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"scripts/agent-clis.sh failed ({done.returncode}):\n{done.stderr[-4000:]}")
    paths = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    return {name: Path(path) for name, path in paths.items()}


def agent_clis() -> dict[str, Path]:
    """``{"claude": PATH, "codex": PATH}``, installed by scripts/agent-clis.sh; the test is skipped
    where node is missing, and fails where the install does."""
    installed = _installed()
    if isinstance(installed, str):
        pytest.skip(installed)
    return installed


def routed(action: dict[str, Any], answer: str = ANSWER) -> Behaviour:
    """The upstream's one behaviour: a routed decision gets ``action`` (``{"tool", "arguments"}``)
    until the conversation holds a tool result, then ``{"tool": "none"}``; any other request (the
    answer, or a reasoning phase before a decision) gets ``answer``.

    A decision is recognised by the route schema in its ``response_format`` (the default
    ``openai`` dialect), and the action fills what that schema asks beyond it (a ``thought``
    slot), so the script holds whatever the route's options.
    """

    def choose(body: dict[str, Any], tools: list[Any]) -> dict[str, Any]:
        done = any(_RESULT in str(message.get("content")) for message in body.get("messages", []))
        return {"tool": "none"} if done else action

    return _deciding(choose, answer)


def repeating(action: dict[str, Any], answer: str = ANSWER) -> Behaviour:
    """The upstream of a model that repeats itself: a routed decision gets ``action`` whenever
    its route offers ``action``'s tool, whatever results the conversation holds, and
    ``{"tool": "none"}`` once the route offers it no more; any other request gets ``answer``."""

    def choose(body: dict[str, Any], tools: list[Any]) -> dict[str, Any]:
        return action if action["tool"] in tools else {"tool": "none"}

    return _deciding(choose, answer)


def _deciding(choose: Callable[[dict[str, Any], list[Any]], dict[str, Any]], answer: str) -> Behaviour:
    """A behaviour whose routed decisions get what ``choose`` picks from the request's body and the
    tools its route offers (filled with the ``thought`` slot the route asks for), and whose other
    requests (the answer, a reasoning phase) get ``answer``. The CLIs send one request at a time,
    so the last body the server read is this request's."""

    def behaviour(handler: Handler) -> None:
        with handler.server.lock:
            body = handler.server.bodies[-1]
        schema = _route_schema(body)
        if schema is None:
            handler.reply(200, completion_body(answer))
            return
        tools = [alternative["properties"]["tool"].get("const") for alternative in schema["anyOf"]]
        chosen = choose(body, tools)
        alternative: dict[str, Any] = (
            schema["anyOf"][tools.index(chosen["tool"])] if chosen["tool"] in tools else {}
        )
        reply = {"thought": "scripted"} if "thought" in alternative.get("properties", {}) else {}
        handler.reply(200, completion_body(json.dumps({**reply, **chosen})))

    return behaviour


def offers_by_results(upstream: FaultServer, tool: str) -> list[tuple[bool, int]]:
    """For each decision the upstream was asked, in order: whether its route offered ``tool``, and
    how many of ``tool``'s results its conversation held."""
    with upstream.lock:
        bodies = list(upstream.bodies)
    seen = []
    for body in bodies:
        schema = _route_schema(body)
        if schema is None:
            continue
        offered = any(a["properties"]["tool"].get("const") == tool for a in schema["anyOf"])
        messages = body.get("messages", [])
        results = sum(str(m.get("content", "")).startswith(f"{_RESULT}{tool} ") for m in messages)
        seen.append((offered, results))
    return seen


def _route_schema(body: Any) -> dict[str, Any] | None:
    """The route schema a decision request carries, or None for any other request."""
    if not isinstance(body, dict):
        return None
    schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
    if isinstance(schema, dict) and isinstance(schema.get("anyOf"), list):
        alternatives = schema["anyOf"]
        if all("tool" in alternative.get("properties", {}) for alternative in alternatives):
            return schema
    return None


def result_sent_back(upstream: FaultServer, tool: str, text: str) -> bool:
    """Whether a request reached the upstream with ``tool``'s result holding ``text``: the call
    was routed, the CLI ran the tool and sent its output back."""
    with upstream.lock:
        bodies = list(upstream.bodies)
    return any(
        str(message.get("content", "")).startswith(f"{_RESULT}{tool} ") and text in str(message["content"])
        for body in bodies
        if isinstance(body, dict)
        for message in body.get("messages", [])
    )


def decisions(upstream: FaultServer) -> list[dict[str, Any]]:
    """The route schemas of the decisions the upstream was asked, in order."""
    with upstream.lock:
        bodies = list(upstream.bodies)
    return [schema for schema in map(_route_schema, bodies) if schema is not None]


def thought_sent_back(upstream: FaultServer) -> bool:
    """Whether a decision's conversation holds an action with the thought the script gave: the
    thinking went out to the CLI, signed, and came back."""
    with upstream.lock:
        bodies = list(upstream.bodies)
    return any(
        str(message.get("content", "")).startswith('{"thought":"scripted"')
        for body in bodies
        if isinstance(body, dict)
        for message in body.get("messages", [])
        if message.get("role") == "assistant"
    )


class Served:
    """A ``toolrouting serve`` process: its base URL, and its stderr drained by a thread (so a
    long session never fills the pipe) into ``lines``, each request's ``--log-json`` object in
    ``records`` too."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.url = ""
        self.lines: list[str] = []
        self.records: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._served = threading.Event()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._lock:
                self.lines.append(line)
                if line.startswith("{"):
                    self.records.append(json.loads(line))
            served = re.fullmatch(r"toolrouting: serving (http://127\.0\.0\.1:\d+/v1)\n", line)
            if served:
                self.url = served.group(1)
                self._served.set()
        self._served.set()

    def wait_served(self, timeout: float) -> str:
        """The base URL once serve says it serves; fails with its stderr where it never does."""
        self._served.wait(timeout)
        assert self.url, "".join(self.lines)
        return self.url

    def logged(self) -> list[dict[str, Any]]:
        """The request log's objects so far (serve started with ``--log-json``)."""
        with self._lock:
            return list(self.records)

    def close(self) -> None:
        if self.process.poll() is None:
            stop(self.process, 10)  # type: ignore[arg-type]
        self._thread.join(10)
        if self.process.stderr is not None:
            self.process.stderr.close()


@contextlib.contextmanager
def serve_process(*options: str, start_limit: float = 60.0) -> Iterator[Served]:
    """``toolrouting serve OPTIONS`` in a process of its own, as a user starts it, on a free port,
    until the block ends; its stderr goes to the test's output on failure."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("TOOLROUTING_API_KEY", "OPENAI_API_KEY", "TOOLROUTING_SERVE_KEY")
    }
    process = subprocess.Popen(
        [*_SERVE, "--port", "0", *options],
        cwd=ROOT,
        env={**environment, "OMP_WAIT_POLICY": "passive"},
        stderr=subprocess.PIPE,
        text=True,
    )
    served = Served(process)
    try:
        served.wait_served(start_limit)
        yield served
    finally:
        served.close()
        sys.stderr.write("".join(served.lines))


@contextlib.contextmanager
def serve_over(upstream: FaultServer, *options: str) -> Iterator[str]:
    """``toolrouting serve`` in a process of its own, in front of ``upstream``, on a free port;
    yields its base URL (``.../v1``). Its stderr goes to the test's output on failure."""
    with serve_process("--base-url", f"{upstream.url}/v1", "--model", SERVED_MODEL, *options) as served:
        yield served.url


def _hermetic(home: Path) -> dict[str, str]:
    """The environment a CLI runs in: the PATH (node, git, a shell) and a HOME of its own."""
    home.mkdir(parents=True, exist_ok=True)
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}


def documented(title: str) -> dict[str, str]:
    """The code blocks of docs/serve.md's subsection ``title`` (of "Clients as they ship"), by
    their language: the commands and configuration a user copies, which the tests run as written."""
    text = _PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n### {title}\n")
    end = min(text.index(mark, start + 1) for mark in ("\n### ", "\n## ") if mark in text[start + 1 :])
    return dict(re.findall(r"^```(\w+)\n(.*?)^```$", text[start:end], flags=re.MULTILINE | re.DOTALL))


def _command(line: str, binary: Path, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """A documented command line (``NAME=VALUE ... program ARGS``) as the argv and environment
    it runs with: the program the installed one, each variable the given value when ``env``
    has one, else the documented one."""
    words = shlex.split(line)
    variables: dict[str, str] = {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        variables[name] = env.get(name, value)
    return [str(binary), *words[1:]], variables


def run_claude(
    claude: Path,
    url: str,
    workdir: Path,
    home: Path,
    *options: str,
    timeout: float = CLI_TIMEOUT,
    command: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """docs/serve.md's Claude Code command (or another page's ``command``, its variables before
    it) in ``workdir``, its ``ANTHROPIC_BASE_URL`` serve's root at ``url``, and telemetry off;
    ``options`` after the documented ones (``--max-turns``)."""
    line = command if command is not None else documented("Claude Code")["sh"].strip()
    argv, variables = _command(line, claude, {"ANTHROPIC_BASE_URL": url.removesuffix("/v1")})
    return _run(
        [*argv, *options],
        workdir,
        {**_hermetic(home), **variables, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
        timeout,
    )


#: What keeps a Codex run hermetic, added to the documented configuration: no analytics, and no
#: plugins (which Codex fetches from chatgpt.com and github.com).
_HERMETIC_CODEX = """
[analytics]
enabled = false

[features]
plugins = false
"""


def run_codex(
    codex: Path, url: str, workdir: Path, home: Path, model: str = SERVED_MODEL, timeout: float = CLI_TIMEOUT
) -> subprocess.CompletedProcess[str]:
    """docs/serve.md's Codex configuration (its ``base_url`` serve's ``url``, its ``model`` the
    name serve lists, ``model``) and command, in ``workdir`` made a git repository; stdin closed, as a
    script's would be."""
    blocks = documented("Codex")
    config = re.sub(r'^base_url = ".*"', f'base_url = "{url}"', blocks["toml"], flags=re.MULTILINE)
    config = re.sub(r'^model = ".*"', f'model = "{model}"', config, flags=re.MULTILINE)
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    (home / ".codex" / "config.toml").write_text(config + _HERMETIC_CODEX, encoding="utf-8")
    argv, variables = _command(blocks["sh"].strip(), codex, {})
    environment = {**_hermetic(home), **variables}
    subprocess.run(["git", "init", "-q", str(workdir)], check=True, env=environment)
    return _run(argv, workdir, environment, timeout)


def _run(
    argv: list[str], workdir: Path, environment: dict[str, str], timeout: float = CLI_TIMEOUT
) -> subprocess.CompletedProcess[str]:
    """A CLI run to its end in ``workdir``, its stdin closed (as a script's would be), its output kept."""
    return subprocess.run(
        argv,
        cwd=workdir,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
