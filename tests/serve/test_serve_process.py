"""``toolrouting serve`` as a user starts it: a process of its own, on a free port, stopped by Ctrl-C."""

# ruff: noqa: F811 - the fixtures imported from support.serve_process are the tests' parameters
from __future__ import annotations

import signal
import socket
import subprocess

import httpx
import pytest
from support.fault_server import FaultServer, ok
from support.processes import python_m
from support.serve_process import (
    _serving,
    serve,  # noqa: F401 - fixtures shared with other tests
)

QUESTION = [{"role": "user", "content": "hi"}]
KEY = {"Authorization": "Bearer sesame"}
ACTION = '{"tool":"weather","arguments":{}}'
TOOL = {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}


def test_serve_answers_refuses_and_stops_on_ctrl_c(serve: tuple[subprocess.Popen[str], str]) -> None:
    process, url = serve
    key = {"Authorization": "Bearer sesame"}
    assert httpx.get(url.removesuffix("/v1") + "/health").json() == {"status": "ok"}
    assert httpx.get(f"{url}/models").status_code == 401  # the key from TOOLROUTING_SERVE_KEY
    assert [m["id"] for m in httpx.get(f"{url}/models", headers=key).json()["data"]] == ["m"]
    body = {"model": "m", "messages": QUESTION, "tools": [TOOL]}
    failed = httpx.post(f"{url}/chat/completions", json=body, headers=key, timeout=60)
    assert failed.status_code == 502
    error = failed.json()["error"]
    assert error["code"] == "BackendConnectError"
    assert error["type"] == "upstream_error"
    assert "Traceback" not in failed.text
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) in (0, 130)


def test_an_address_in_use_is_one_usage_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = python_m(
            "serve", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--port", port, timeout=60
        )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"toolrouting serve: error: cannot listen on 127.0.0.1:{port} (Address already in use)"
    ]


def test_a_backend_option_that_does_not_fit_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from toolrouting._cli import main

    assert main(["serve", "--api-key", "sk-test-key", "--port", "0"]) == 2
    assert "--api-key is for a server named with --base-url" in capsys.readouterr().err


def test_shortlist_offers_the_upstream_the_k_tools_ranked_best() -> None:
    tools = [
        {
            "type": "function",
            "function": {"name": name, "description": text, "parameters": {"type": "object"}},
        }
        for name, text in (
            ("search", "Search the notes."),
            ("weather", "The forecast."),
            ("read", "Read a note."),
        )
    ]
    question = [{"role": "user", "content": "What is the forecast?"}]
    with FaultServer() as upstream, _serving(f"{upstream.url}/v1", "--shortlist", "1") as (_, url):
        body = {"model": "m", "messages": question, "tools": tools, "tool_choice": "required"}
        upstream.script.append(ok(ACTION))
        answered = httpx.post(f"{url}/chat/completions", json=body, headers=KEY, timeout=60)
        sent = upstream.bodies[0]
    assert answered.status_code == 200, answered.text
    assert answered.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "weather"
    schema = sent["response_format"]["json_schema"]["schema"]
    assert [alternative["properties"]["tool"]["const"] for alternative in schema["anyOf"]] == ["weather"]
    assert "search" not in sent["messages"][0]["content"]


def test_a_shortlist_that_is_no_positive_integer_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from toolrouting._cli import main

    assert main(["serve", "--shortlist", "0"]) == 2
    assert "argument --shortlist: '0' is not a positive integer" in capsys.readouterr().err


def test_the_secret_from_the_environment_checks_the_thinking_sent_back() -> None:
    from toolrouting._serve.reasoning import Signer

    tool = {"name": "search", "input_schema": {"type": "object"}}
    use = {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "M1"}

    def sent_back(signed_by: str) -> dict[str, object]:
        thinking = {"type": "thinking", "thinking": "", "signature": Signer(signed_by).sign("a word")}
        return {
            "model": "m",
            "max_tokens": 64,
            "tools": [tool],
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [thinking, use]},
                {"role": "user", "content": [result]},
            ],
        }

    with (
        FaultServer() as upstream,
        _serving(f"{upstream.url}/v1", TOOLROUTING_SERVE_SECRET="s3cret") as (_, url),
    ):
        upstream.script.extend([ok(), ok("It latches.")])
        root = url.removesuffix("/v1")
        kept = httpx.post(f"{root}/v1/messages", json=sent_back("s3cret"), headers=KEY, timeout=60)
        other = httpx.post(f"{root}/v1/messages", json=sent_back("another"), headers=KEY, timeout=60)
        sent = upstream.bodies[0]["messages"][-2]
    assert kept.status_code == 200, kept.text
    assert sent == {"role": "assistant", "content": '{"thought":"a word","tool":"search","arguments":{}}'}
    assert other.status_code == 400
    assert "s3cret" not in other.text
    assert other.json()["error"]["message"].startswith("messages[1].content[0].signature: ")
