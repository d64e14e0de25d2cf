"""The pages' shell lines run as a reader runs them: each block a session of its own.

A :class:`Session` runs a block's lines in order, each through ``bash -c`` in a fresh working
folder, with a HOME of its own (so ``~`` is the test's, and no user's settings are read) and
``toolrouting`` the entry point beside the running Python on the PATH, under a hard limit each.
An ``export`` line's variables reach the lines after it in the block. A server line
(``toolrouting serve``, ``llama-server``) starts the server on a free port, checks it answers
a real request, and leaves it running for the block's later lines until the block's next line
that starts a server of its kind, or the block's end; serve is then stopped as Ctrl-C stops it,
and must end with the status docs/cli.md gives for that (130). Each other line's exit status
and what the command guarantees are checked; never which tool a model picks.

The placeholders a line has are put in place by the caller's table (``stand_ins``): a stand-in
either puts a file of the placeholder's name in the working folder (the line then runs as
written) or gives the text put in its place.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.agent_clis import Served, agent_clis, run_claude
from support.docs import ShellLine
from support.llama_server import llama_server_binary, start_on_free_port
from support.processes import stop
from support.think_templates import WEATHER
from toolrouting._cli.exits import DONE, FAILED, INTERRUPTED

__all__ = ["KEY", "LINE_LIMIT", "QUESTION", "START_LIMIT", "Session", "StandIn"]

#: The question a ``"..."`` stands for, and the first of the questions file.
QUESTION = "What does the latch on the storage-room door do?"
#: The key the serve the test starts for a page's ``http://127.0.0.1:8000`` requires.
KEY = "sesame"
#: Seconds one line may take to its end: a run or batch on the default model, two cores.
LINE_LIMIT = 300.0
#: Seconds a server may take to load its model and answer.
START_LIMIT = 120.0
#: Seconds Claude Code's session may take: two turns of a cold prompt of about 4,300 tokens on
#: busy cores (tests/serve/test_serve_agent_sessions.py gives its sessions as long).
CLAUDE_LIMIT = 420.0
#: Seconds a stopped server may take to end.
STOP_LIMIT = 30.0

#: What stands in for a placeholder: the text put in its place, or a function of the session and
#: the placeholder that puts a file or starts a server and returns that text.
StandIn = str | Callable[["Session", str], str]

_VARIABLES = re.compile(r"^((?:[A-Z_][A-Z0-9_]*=\S*\s+)*)(.*)$")
_PORT = re.compile(r"--port \d+")


class Session:
    """One block's lines run in order in ``folder``'s ``work`` with ``folder``'s ``home`` as HOME;
    ``llama_server()`` is the URL of a llama-server the test runs (called only where a line needs one)."""

    def __init__(
        self, folder: Path, stand_ins: Mapping[str, StandIn], llama_server: Callable[[], str]
    ) -> None:
        self.folder = folder / "work"
        self.home = folder / "home"
        self.folder.mkdir(parents=True)
        self.home.mkdir(parents=True)
        self.stand_ins = stand_ins
        self._llama_server = llama_server
        path = os.pathsep.join(
            [str(Path(sys.executable).parent), str(llama_server_binary().parent), os.environ.get("PATH", "")]
        )
        keys = ("TOOLROUTING_API_KEY", "OPENAI_API_KEY", "TOOLROUTING_SERVE_KEY", "XDG_CACHE_HOME")
        self.env = {k: v for k, v in os.environ.items() if k not in keys and not k.startswith("ANTHROPIC_")}
        self.env.update(HOME=str(self.home), PATH=path, OMP_WAIT_POLICY="passive")
        self.served: Served | None = None
        self.own_llama: tuple[subprocess.Popen[bytes], str] | None = None
        self.served_key: str | None = None

    # The stand-ins' helpers.

    def llama_url(self) -> str:
        """The block's own llama-server, where a line started one, else the test's."""
        return self.own_llama[1] if self.own_llama else self._llama_server()

    def serve_url(self) -> str:
        """The root URL of the block's ``toolrouting serve``; where none runs, one the session starts
        on the default model, requiring :data:`KEY`."""
        if self.served is None:
            self._start_serve(f"TOOLROUTING_SERVE_KEY={KEY} toolrouting serve")
        assert self.served is not None
        return self.served.url.removesuffix("/v1")

    def prepared(self, text: str) -> str:
        """``text`` with each placeholder it has put in place (longest first)."""
        for placeholder in sorted(self.stand_ins, key=len, reverse=True):
            if placeholder in text:
                stand_in = self.stand_ins[placeholder]
                text = text.replace(
                    placeholder, stand_in if isinstance(stand_in, str) else stand_in(self, placeholder)
                )
        return text

    # Running a line.

    def run(self, line: ShellLine) -> None:
        """Run ``line`` as the block's next line and check what its command guarantees."""
        words = line.commands()[0]
        program, verb = words[0], (words[1] if len(words) > 1 else "")
        if program == "toolrouting" and verb == "serve":
            self._start_serve(line.text)
        elif program == "llama-server":
            self._start_llama_server(line.text)
        elif program == "export":
            self._export(line.text)
        elif program == "claude":
            self._claude(self.prepared(line.text))
        elif program == "toolrouting":
            self._one_shot(verb, words, self.prepared(line.text))
        else:
            raise AssertionError(f"{line.page}: no way to run {line.text!r}")

    def _bash(self, text: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", text],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=LINE_LIMIT,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    def _export(self, text: str) -> None:
        """The variables the line exports, in the environment of the block's later lines."""
        text = self.prepared(text)
        done = self._bash(f"{text}\nenv -0")
        assert done.returncode == 0, done.stderr
        self.env = dict(item.split("=", 1) for item in done.stdout.split("\0") if "=" in item)
        exported = dict(word.split("=", 1) for word in shlex.split(text, comments=True)[1:])
        assert {name: self.env.get(name) for name in exported} == exported
        if "OPENAI_BASE_URL" in exported and self.served is not None:
            # What README.md's line says it is for: the openai SDK, given nothing, asks serve.
            listed = self._bash(
                'python -c "import openai; print(*(m.id for m in openai.OpenAI().models.list()))"'
            )
            assert listed.stdout.split() == [m["id"] for m in self._models(self.served_key)], listed.stderr

    def _one_shot(self, verb: str, words: list[str], text: str) -> None:
        done = self._bash(text)
        said = f"{text}\nexit {done.returncode}\nstdout: {done.stdout[-3000:]}\nstderr: {done.stderr[-3000:]}"
        if verb == "run":
            assert done.returncode == DONE, said
            if "--answer" in words:
                assert done.stdout.strip(), said
            if "--transcript" in words:
                transcript = self.folder / words[words.index("--transcript") + 1]
                lines = transcript.read_text(encoding="utf-8").splitlines()
                assert lines, said
                assert all(isinstance(json.loads(row), dict) for row in lines), said
        elif verb == "batch":
            self._check_batch(words, done.returncode, said)
        elif verb == "models":
            assert done.returncode == DONE, said
            listed = done.stdout.split()
            assert listed, said
            if self.served is not None and self.served.url.removesuffix("/v1") in text:
                assert listed == [model["id"] for model in self._models(self.served_key)], said
        elif verb == "schema":
            assert done.returncode == DONE, said
            schema = json.loads(done.stdout)
            offered = [alternative["properties"]["tool"]["const"] for alternative in schema["anyOf"]]
            assert len(offered) > 1, said
            assert offered[-1] == "none", said
        elif verb == "parse":
            assert done.returncode == DONE, said
            assert json.loads(done.stdout) == {"ok": True, "tool": "none", "text": words[3]}, said
        elif verb == "preflight":
            assert done.returncode in (DONE, FAILED), said
            findings = done.stdout.splitlines()
            shape = r"(info|warning|error) /\S* \S+: .+ \[.+\]|no findings: .+"
            assert findings, said
            assert all(re.fullmatch(shape, row) for row in findings), said
            assert ("error /" in done.stdout) == (done.returncode == FAILED), said
        else:
            raise AssertionError(f"no guarantee known for toolrouting {verb}: {said}")

    def _check_batch(self, words: list[str], status: int, said: str) -> None:
        """One whole result per question; exit 1 exactly when a question failed (docs/cli.md)."""
        questions = [
            json.loads(row)["id"] for row in (self.folder / words[2]).read_text().splitlines() if row
        ]
        out = self.folder / words[words.index("--out") + 1]
        results = {path.name.removesuffix(".result.json"): path for path in out.glob("*.result.json")}
        assert sorted(results) == sorted(questions), said
        statuses = [json.loads(results[name].read_text())["status"] for name in questions]
        assert set(statuses) <= {"done", "failed"}, said
        assert status == (FAILED if "failed" in statuses else DONE), said

    # The servers.

    def _start_serve(self, text: str) -> None:
        self._stop_serve()
        text = self.prepared(text)
        text = (
            _PORT.sub("--port 0", text)
            if _PORT.search(text)
            else _after(text, "toolrouting serve", " --port 0")
        )
        variables, command = _VARIABLES.fullmatch(text).groups()  # type: ignore[union-attr]
        key = dict(pair.split("=", 1) for pair in variables.split()).get(
            "TOOLROUTING_SERVE_KEY", self.env.get("TOOLROUTING_SERVE_KEY")
        )
        process = subprocess.Popen(
            ["bash", "-c", f"{variables}exec {command}"],
            cwd=self.folder,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.served, self.served_key = Served(process), key
        try:
            self.served.wait_served(START_LIMIT)
            self._check_served(key)
        except BaseException:
            self._stop_serve()
            raise

    def _models(self, key: str | None) -> list[dict[str, Any]]:
        assert self.served is not None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        reply = httpx.get(f"{self.served.url}/models", headers=headers, timeout=30)
        assert reply.status_code == 200, reply.text
        models: list[dict[str, Any]] = reply.json()["data"]
        return models

    def _check_served(self, key: str | None) -> None:
        """/health answers; /v1 refuses a request without the key it requires and takes one with
        it; /v1/models lists a model, and a chat completion that must call the one tool calls it."""
        assert self.served is not None
        url = self.served.url
        assert httpx.get(f"{url.removesuffix('/v1')}/health", timeout=30).status_code == 200
        if key:
            assert httpx.get(f"{url}/models", timeout=30).status_code == 401
        (model,) = self._models(key)
        body = {
            "model": model["id"],
            "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
            "tools": WEATHER,  # one tool whose route is bounded, far below the routing cap
            "tool_choice": "required",
        }
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        reply = httpx.post(f"{url}/chat/completions", json=body, headers=headers, timeout=LINE_LIMIT)
        assert reply.status_code == 200, f"{reply.text}\n{''.join(self.served.lines[-20:])}"
        calls = reply.json()["choices"][0]["message"]["tool_calls"]
        assert calls, reply.text
        assert all(call["function"]["name"] == "get_weather" for call in calls), reply.text

    def _start_llama_server(self, text: str) -> None:
        self._stop_llama_server()
        text = self.prepared(text)
        assert _PORT.search(text), text

        def command(port: int) -> list[str]:
            return ["bash", "-c", f"cd {self.folder} && exec {_PORT.sub(f'--port {port}', text)}"]

        def healthy(url: str) -> bool:
            return httpx.get(f"{url}/health", timeout=2.0).status_code == 200

        if not llama_server_binary().is_file():
            pytest.skip(
                f"no llama-server at {llama_server_binary()}: build it with sh scripts/build-llama-server.sh"
            )
        self.own_llama = start_on_free_port(
            command,
            self.folder.parent / "llama-server.log",
            healthy,
            what=text,
            limit=START_LIMIT,
            env=self.env,
        )

    def _claude(self, text: str) -> None:
        """README's Claude Code line, through the block's serve (the exported variables point at
        it), with Claude Code's own bound on its turns; ends at exit 0 or at that bound."""
        claude = agent_clis()["claude"]
        assert self.served is not None, "the block starts serve before Claude Code"
        variables = " ".join(
            f"{name}={self.env[name]}" for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")
        )
        before = len(self.served.lines)
        done = run_claude(
            claude,
            self.served.url,
            self.folder,
            self.home,
            "--max-turns",
            "2",
            timeout=CLAUDE_LIMIT,
            command=f"{variables} {text}",
        )
        log = "".join(self.served.lines[-20:])
        said = f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}\nserve:\n{log}"
        bounded = done.returncode == 1 and "Reached max turns (2)" in done.stdout
        assert done.returncode == 0 or bounded, said
        assert any(line.startswith("toolrouting: messages ") for line in self.served.lines[before:]), said

    def _stop_serve(self) -> None:
        """Stop the block's serve as Ctrl-C stops it: it must end with the status for that."""
        served, self.served = self.served, None
        if served is not None:
            running = served.process.poll() is None
            if running:
                served.process.send_signal(signal.SIGINT)
                with contextlib.suppress(subprocess.TimeoutExpired):  # killed by close, failed below
                    served.process.wait(timeout=STOP_LIMIT)
            served.close()
            assert not running or served.process.returncode == INTERRUPTED, "".join(served.lines[-20:])

    def _stop_llama_server(self) -> None:
        own, self.own_llama = self.own_llama, None
        if own is not None:
            stop(own[0], grace=15)

    def close(self) -> None:
        """Stop the servers the block started."""
        try:
            self._stop_serve()
        finally:
            self._stop_llama_server()


def _after(text: str, command: str, added: str) -> str:
    """``text`` with ``added`` right after ``command``, before any comment."""
    index = text.index(command) + len(command)
    return text[:index] + added + text[index:]
