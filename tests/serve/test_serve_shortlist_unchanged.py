"""``serve_app(..., shortlist=K)`` off, or over a request of at most K tools: every byte the
backend is sent is what it was sent without it. The same requests on every front, served on
loopback, to the scripted backend (its messages and settings) and to an OpenAI-compatible
upstream (the bodies it reads); the comparison is shown able to fail with a shortlist that narrows.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from support.fault_server import FaultServer, Handler, completion_body
from support.serve import served
from support.serve_shortlist import MESSAGES, QUESTION, TOOLS, K, name_of, offered

from toolrouting import AsyncOpenAICompatible, AsyncScriptedBackend, ScriptedRequest
from toolrouting._serve import serve_app


def _conversation() -> list[Any]:
    call = {"id": "c9", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"a"}'}}
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c9", "content": "sunny"},
    ]


CHOICES: list[Any] = [
    None,
    "required",
    {"type": "function", "function": {"name": "play_music"}},
    {
        "type": "allowed_tools",
        "allowed_tools": {"mode": "required", "tools": [{"function": {"name": "git_status"}}]},
    },
]


def _respond(request: ScriptedRequest) -> str:
    """A decision's first offered tool (``none`` when it comes first), or an answer's text."""
    if request.settings.json_schema is None:
        return "An answer."
    tool = offered(request)[0]
    return '{"tool":"none"}' if tool == "none" else f'{{"tool":"{tool}","arguments":{{}}}}'


def _requests(url: str, *, streams: bool = True) -> list[tuple[str, dict[str, Any]]]:
    """The same requests on every front: each tool_choice on chat completions (whole, and
    streamed when ``streams``), the Responses API and the Messages API."""
    flat = [{"type": "function", **tool["function"]} for tool in TOOLS]
    anthropic_tools = [{"name": name_of(t), "input_schema": t["function"]["parameters"]} for t in TOOLS]
    asked: list[tuple[str, dict[str, Any]]] = []
    for choice in CHOICES:
        for stream in (False, True) if streams else (False,):
            body: dict[str, Any] = {
                "model": "m",
                "messages": _conversation(),
                "tools": TOOLS,
                "stream": stream,
            }
            asked.append(
                (f"{url}/chat/completions", body if choice is None else {**body, "tool_choice": choice})
            )
    asked.append((f"{url}/responses", {"model": "m", "input": QUESTION, "tools": flat}))
    messages = {"model": "m", "max_tokens": 9, "messages": MESSAGES, "tools": anthropic_tools}
    asked.append((f"{url.removesuffix('/v1')}/v1/messages", messages))
    return asked


def _ask(app: Any, *, streams: bool = True) -> None:
    with served(app) as url:
        for address, body in _requests(url, streams=streams):
            answered = httpx.post(address, json=body, timeout=30)
            assert answered.status_code == 200, answered.text


def _sent(shortlisted: int | None) -> list[tuple[Any, ...]]:
    """What the scripted backend is sent for the same requests, under ``shortlist=``."""
    backend = AsyncScriptedBackend([_respond] * 64)
    _ask(serve_app(backend, model="m", shortlist=shortlisted))
    return [(request.messages, request.settings) for request in backend.requests]


def test_off_or_at_most_k_tools_the_backend_is_sent_the_same_messages_and_settings() -> None:
    without = _sent(None)
    assert len(without) >= 10
    assert _sent(len(TOOLS)) == without
    assert _sent(len(TOOLS) + 5) == without
    assert _sent(K) != without  # the comparison can fail


def _answer_first_offered(handler: Handler) -> None:
    """An upstream's reply: a decision's first offered tool (``none`` when it comes first), or text."""
    format_ = handler.server.bodies[-1].get("response_format")
    if format_ is None:
        handler.reply(200, completion_body("An answer."))
        return
    tool = format_["json_schema"]["schema"]["anyOf"][0]["properties"]["tool"]["const"]
    handler.reply(
        200, completion_body('{"tool":"none"}' if tool == "none" else f'{{"tool":"{tool}","arguments":{{}}}}')
    )


def _wire(shortlisted: int | None) -> list[str]:
    """The bodies an OpenAI-compatible upstream reads for the same requests, as JSON text in the
    order sent, under ``shortlist=``."""
    with FaultServer() as upstream:
        upstream.script.extend([_answer_first_offered] * 64)
        backend = AsyncOpenAICompatible(f"{upstream.url}/v1", model="m")
        _ask(serve_app(backend, model="m", shortlist=shortlisted, owned=True), streams=False)
        return [json.dumps(body) for body in upstream.bodies]


def test_off_or_at_most_k_tools_an_upstream_reads_the_same_bodies() -> None:
    without = _wire(None)
    assert len(without) >= 6
    assert _wire(len(TOOLS)) == without
    assert _wire(K) != without  # the comparison can fail
