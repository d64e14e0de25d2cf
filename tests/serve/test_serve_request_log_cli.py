"""What ``toolrouting serve`` writes on stderr for each request, as a user runs it: a process of
its own in front of a fake upstream (tests/support/fault_server.py), asked through the real SDKs.

A line of text by default, one JSON object with ``--log-json``, nothing with ``-q``; every line
written once its response is finished, errors included; and never a key, a message's text, a
call's arguments or a tool's result, whichever way it is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from support.fault_server import FaultServer, ok, status
from support.processes import ROOT, stop

#: What no line may hold: the keys the clients send (the right one and a wrong one), the
#: upstream's key, and a word that is only in the messages, the arguments and the tool's result.
KEY = "sk-live-9Qz4rT7wXb2Lm8Kd"
WRONG = "sk-live-WRONGwrongWRONG42"
UPSTREAM_KEY = "sk-upstream-Hh3Jj5Kk7Ll9"
WORD = "Quillfeather"
TOOL: Any = {
    "type": "function",
    "function": {
        "name": "search",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}
CALL = json.dumps({"tool": "search", "arguments": {"query": WORD}})
ASKED: list[Any] = [{"role": "user", "content": f"Where is the {WORD} kept?"}]
RESULT: list[Any] = [
    *ASKED,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "route-1", "type": "function", "function": {"name": "search", "arguments": CALL}}
        ],
    },
    {"role": "tool", "tool_call_id": "route-1", "content": f"The {WORD} is in the shed."},
]
#: The command, as a user's shell runs it.
SERVE = [sys.executable, "-m", "toolrouting", "serve"]
#: The JSON object's fields, as docs/serve-reference.md lists them.
FIELDS = [
    "api",
    "status",
    "stream",
    "tools",
    "offered",
    "prompt_tokens",
    "cached_tokens",
    "completion_tokens",
    "decision",
    "calls",
    "error",
    "seconds",
    "notes",
]


def _cached(text: str) -> bytes:
    """An upstream completion whose usage says the server's cache held 256 of 300 prompt tokens."""
    usage = {"prompt_tokens": 300, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 256}}
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    return json.dumps({"object": "chat.completion", "choices": [choice], "usage": usage}).encode()


@contextlib.contextmanager
def _serve(upstream: str, *options: str) -> Iterator[tuple[str, list[str]]]:
    """``toolrouting serve`` with ``options``: its URL, and once the block ends (the server
    stopped), the lines it wrote on stderr after the one that says where it serves."""
    environment = {k: v for k, v in os.environ.items() if k not in ("TOOLROUTING_API_KEY", "OPENAI_API_KEY")}
    process = subprocess.Popen(
        [*SERVE, "--base-url", upstream, "--model", "m", "--port", "0", *options],
        cwd=ROOT,
        env={**environment, "TOOLROUTING_SERVE_KEY": KEY, "TOOLROUTING_API_KEY": UPSTREAM_KEY},
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines: list[str] = []
    try:
        first = process.stderr.readline()
        served = re.fullmatch(r"toolrouting: serving (http://127\.0\.0\.1:\d+/v1)\n", first)
        assert served, first
        yield served.group(1), lines
    finally:
        stop(process, 10)  # type: ignore[arg-type]
        lines.extend(process.stderr.read().splitlines())
        process.stderr.close()


def _session(url: str, upstream: FaultServer) -> None:
    """One of each: a call, its result answered in a stream, Anthropic's Messages, a wrong key, a
    body that is no request."""
    upstream.script.extend(
        [status(200, _cached(CALL)), ok('{"tool":"none"}'), ok(f"In the {WORD} shed."), ok(CALL)]
    )
    with openai.OpenAI(base_url=url, api_key=KEY, max_retries=0) as client:
        client.chat.completions.create(model="m", messages=ASKED, tools=[TOOL])
        for _ in client.chat.completions.create(model="m", messages=RESULT, tools=[TOOL], stream=True):
            pass
    root = url.removesuffix("/v1")
    with anthropic.Anthropic(base_url=root, api_key=KEY, max_retries=0) as claude:
        tool: Any = {"name": "search", "input_schema": TOOL["function"]["parameters"]}
        claude.messages.create(model="m", max_tokens=64, messages=ASKED, tools=[tool])
    wrong = httpx.post(f"{url}/chat/completions", json={"messages": ASKED}, headers={"x-api-key": WRONG})
    bad = httpx.post(f"{url}/chat/completions", json={"messages": WORD}, headers={"x-api-key": KEY})
    assert (wrong.status_code, bad.status_code) == (401, 400)


def _logged(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith(("toolrouting: chat", "toolrouting: messages", "{"))]


def _nothing_secret(lines: list[str]) -> None:
    text = "\n".join(lines)
    for secret in (KEY, WRONG, UPSTREAM_KEY, WORD):
        assert secret not in text, secret


def test_each_request_gets_a_line_of_text() -> None:
    with FaultServer() as upstream, _serve(f"{upstream.url}/v1") as (url, lines):
        _session(url, upstream)
    logged = _logged(lines)
    assert [re.sub(r" \d+\.\d\ds$", " Ns", line) for line in logged] == [
        "toolrouting: chat 200 tools=1 prompt=300 cached=256 completion=7 decision=search Ns",
        "toolrouting: chat 200 stream tools=1 prompt=18 cached=0 completion=12 decision=none Ns",
        "toolrouting: messages 200 tools=1 prompt=9 cached=0 completion=6 decision=search Ns",
        "toolrouting: chat 401 decision=refused:invalid_api_key Ns",
        "toolrouting: chat 400 decision=refused:invalid_request Ns",
    ]
    assert not any("HTTP/1.1" in line for line in lines), "uvicorn's access log is on as well"
    _nothing_secret(lines)


def test_log_json_writes_one_object_per_request() -> None:
    with FaultServer() as upstream, _serve(f"{upstream.url}/v1", "--log-json") as (url, lines):
        _session(url, upstream)
    objects = [json.loads(line) for line in _logged(lines)]
    assert all(list(record) == FIELDS for record in objects)
    assert [(r["api"], r["status"], r["stream"], r["decision"], r["calls"], r["error"]) for r in objects] == [
        ("chat", 200, False, "call", ["search"], None),
        ("chat", 200, True, "none", [], None),
        ("messages", 200, False, "call", ["search"], None),
        ("chat", 401, False, "refused", [], "invalid_api_key"),
        ("chat", 400, False, "refused", [], "invalid_request"),
    ]
    assert (objects[0]["prompt_tokens"], objects[0]["cached_tokens"]) == (300, 256)
    assert all(isinstance(r["seconds"], float) and r["seconds"] >= 0 for r in objects)
    assert [line for line in lines if not line.startswith("{")] == []  # uvicorn's info lines are off
    _nothing_secret(lines)


def test_quiet_writes_no_line() -> None:
    with FaultServer() as upstream, _serve(f"{upstream.url}/v1", "-q") as (url, lines):
        _session(url, upstream)
    assert lines == []


def test_quiet_and_log_json_together_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from toolrouting._cli import main

    assert main(["serve", "-q", "--log-json", "--port", "0"]) == 2
    assert "argument --log-json: not allowed with argument -q/--quiet" in capsys.readouterr().err
