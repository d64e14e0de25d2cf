"""The recorded cases of the Messages front (tests/serve/test_serve_recorded.py): ``POST /v1/messages``
and ``/v1/messages/count_tokens``."""

from __future__ import annotations

from typing import Any

from support.recorder import SEVERAL, Body, Case, Step, call, message, shared_failures, shared_successes
from support.serve import BARE_READ, BARE_SEARCH
from toolrouting import BackendHTTPError, Completion, Usage
from toolrouting._serve.reasoning import Signer

__all__ = ["CASES"]


def _tool(declaration: dict[str, Any]) -> dict[str, Any]:
    function = declaration["function"]
    return {"name": function["name"], "description": "a tool", "input_schema": function["parameters"]}


SEARCH, READ = _tool(BARE_SEARCH), _tool(BARE_READ)
TOOLS = [SEARCH, READ]
ASK = [{"role": "user", "content": "What does the latch do?"}]
ACTION = call("search", {"query": "latch"})
NONE = '{"tool":"none"}'
ANSWER = "The latch holds the door shut."
USED = Completion(text=ACTION, finish_reason="stop", usage=Usage(prompt_tokens=50, completion_tokens=9))
USE = {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"query": "latch"}}
HISTORY: list[Any] = [
    *ASK,
    {"role": "assistant", "content": [{"type": "text", "text": "Let me look."}, USE]},
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "M1"}]},
            {"type": "text", "text": "And?"},
        ],
    },
]


ask = Body(model="claude", max_tokens=100, messages=ASK)
#: A decision that reasoned first, and its thinking block as the recorder's app signs it.
THOUGHT = '{"thought":"the latch is a word","tool":"search","arguments":{"query":"latch"}}'
SIGNED = {"type": "thinking", "thinking": "", "signature": Signer("recorded").sign("the latch is a word")}
streamed = ask.streamed


def count(name: str, body: Any, app: str = "plain") -> Case:
    return Case(name, [Step("/v1/messages/count_tokens", body)], app)


def _successes() -> list[Case]:
    return [
        *shared_successes(message, ask, "max_tokens", TOOLS, ANSWER, USED),
        message("any", ask(tools=TOOLS, tool_choice={"type": "any"}), ACTION),
        message(
            "named tool", ask(tools=TOOLS, tool_choice={"type": "tool", "name": "read"}), call("read", {})
        ),
        message("tool_choice none", ask(tools=TOOLS, tool_choice={"type": "none"}), ANSWER),
        message("tool_choice auto", ask(tools=TOOLS, tool_choice={"type": "auto"}), NONE, ANSWER),
        message(
            "history", {"model": "c", "max_tokens": 9, "messages": HISTORY, "tools": TOOLS}, NONE, ANSWER
        ),
        message(
            "history with an error result",
            {
                "model": "c",
                "max_tokens": 9,
                "tools": TOOLS,
                "messages": [
                    *ASK,
                    {"role": "assistant", "content": [USE]},
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "toolu_1",
                                "content": "boom",
                                "is_error": True,
                            }
                        ],
                    },
                ],
            },
            NONE,
            ANSWER,
        ),
        message(
            "history, spaced",
            {"model": "c", "max_tokens": 9, "messages": HISTORY, "tools": TOOLS},
            '{"tool": "none"}',
            ANSWER,
            app="spaced",
        ),
        message(
            "system and sampling",
            ask(system="Be brief.", temperature=0.2, top_p=0.5, top_k=40, stop_sequences=["END"]),
            ANSWER,
        ),
        message(
            "system blocks",
            ask(system=[{"type": "text", "text": "A."}, {"type": "text", "text": "B."}]),
            ANSWER,
        ),
        message(
            "accepted fields",
            ask(metadata={"user_id": "u"}, thinking={"type": "disabled"}, service_tier="auto"),
            ANSWER,
            headers={"anthropic-version": "2023-06-01", "anthropic-beta": "x"},
        ),
        message("thinking", ask(tools=TOOLS, thinking={"type": "enabled", "budget_tokens": 32}), THOUGHT),
        message(
            "thinking over the cap, served within it",
            ask(tools=TOOLS, max_tokens=4096, thinking={"type": "enabled", "budget_tokens": 1024}),
            THOUGHT,
        ),
        message(
            "adaptive thinking streamed, display omitted",
            streamed(
                tools=TOOLS,
                thinking={"type": "adaptive", "display": "omitted"},
                output_config={"effort": "low"},
            ),
            THOUGHT,
        ),
        message(
            "thinking sent back",
            ask(
                tools=TOOLS,
                thinking={"type": "enabled", "budget_tokens": 32},
                messages=[
                    *ASK,
                    {"role": "assistant", "content": [SIGNED, USE]},
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "M1"}],
                    },
                ],
            ),
            '{"thought":"done","tool":"none"}',
            ANSWER,
        ),
        message("several calls", ask(tools=TOOLS), SEVERAL, app="calls"),
        message("several calls streamed", streamed(tools=TOOLS), SEVERAL, app="calls"),
        message(
            "one call of a several-call server",
            ask(tools=TOOLS, tool_choice={"type": "auto", "disable_parallel_tool_use": True}),
            ACTION,
            app="calls",
        ),
        message(
            "spaced call streamed",
            streamed(tools=TOOLS),
            call("search", {"query": "the latch"}, spaced=True),
            app="spaced",
        ),
        message(
            "shortlisted",
            ask(tools=[*TOOLS, {"name": "write", "input_schema": {"type": "object"}}]),
            ACTION,
            app="shortlist",
        ),
        count("count", {"model": "c", "messages": ASK}),
        count("count with tools", {"model": "c", "messages": ASK, "tools": TOOLS, "system": "S"}),
        count(
            "count with tool_choice none",
            {"model": "c", "messages": ASK, "tools": TOOLS, "tool_choice": {"type": "none"}},
        ),
    ]


def _refusals() -> list[Case]:
    return [
        message("not JSON", b"{"),
        message("not an object", 3),
        message("model not a string", ask(model=1)),
        message("thinking over max_tokens", ask(thinking={"type": "enabled", "budget_tokens": 1024})),
        message("thinking type", ask(thinking={"type": "always"})),
        message("adaptive effort", ask(thinking={"type": "adaptive"}, output_config={"effort": "huge"})),
        message(
            "thinking not this server's",
            ask(
                tools=TOOLS,
                messages=[
                    *ASK,
                    {
                        "role": "assistant",
                        "content": [{"type": "thinking", "thinking": "x", "signature": "AQ"}, USE],
                    },
                ],
            ),
        ),
        message(
            "redacted thinking",
            ask(
                messages=[
                    *ASK,
                    {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"}]},
                ]
            ),
        ),
        message("mcp_servers", ask(mcp_servers=[])),
        message("output_format", ask(output_format={"type": "json_schema"})),
        message("container", ask(container="container_1")),
        message("output_config.format", ask(output_config={"format": {"type": "json_schema"}})),
        message("max_tokens missing", {"model": "c", "messages": ASK}),
        message("max_tokens zero", ask(max_tokens=0)),
        message("metadata not an object", ask(metadata="x")),
        message("stream text", ask(stream="x")),
        message("top_k negative", ask(top_k=-1)),
        message("temperature over 1", ask(temperature=1.5)),
        message("tools not a list", ask(tools=SEARCH)),
        message("tool not an object", ask(tools=["search"])),
        message("server tool", ask(tools=[{"type": "web_search_20250305", "name": "web_search"}])),
        message("input_schema missing", ask(tools=[{"name": "search"}])),
        message("bad tool name", ask(tools=[{"name": "bad name!", "input_schema": {"type": "object"}}])),
        message("tool_choice a string", ask(tools=TOOLS, tool_choice="auto")),
        message("tool_choice type", ask(tools=TOOLS, tool_choice={"type": "required"})),
        message("tool_choice without a name", ask(tools=TOOLS, tool_choice={"type": "tool"})),
        message("tool_choice unknown", ask(tools=TOOLS, tool_choice={"type": "tool", "name": "zz"})),
        message("tool_choice without tools", ask(tool_choice={"type": "any"})),
        message(
            "disable_parallel_tool_use text",
            ask(tools=TOOLS, tool_choice={"type": "auto", "disable_parallel_tool_use": "yes"}),
        ),
        message("stop_sequences bad", ask(stop_sequences="END")),
        message("system bad", ask(system=[{"type": "image"}])),
        message("system a number", ask(system=3)),
        message("messages empty", ask(messages=[])),
        message("message not an object", ask(messages=["hi"])),
        message("role system", ask(messages=[{"role": "system", "content": "x"}])),
        message("content empty", ask(messages=[{"role": "user", "content": []}])),
        message("block not an object", ask(messages=[{"role": "user", "content": ["x"]}])),
        message(
            "image block", ask(messages=[{"role": "user", "content": [{"type": "image", "source": {}}]}])
        ),
        message("block without a type", ask(messages=[{"role": "user", "content": [{"text": "x"}]}])),
        message(
            "text not a string", ask(messages=[{"role": "user", "content": [{"type": "text", "text": 3}]}])
        ),
        message("tool_use from the user", ask(messages=[{"role": "user", "content": [USE]}])),
        message(
            "tool_result without an id",
            ask(
                messages=[
                    *ASK,
                    {"role": "assistant", "content": [USE]},
                    {"role": "user", "content": [{"type": "tool_result"}]},
                ]
            ),
        ),
        message(
            "tool_result unknown",
            ask(messages=[*ASK, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "zz"}]}]),
        ),
        message(
            "tool_result twice",
            ask(
                messages=[
                    *HISTORY[:2],
                    {"role": "user", "content": [HISTORY[2]["content"][0], HISTORY[2]["content"][0]]},
                ]
            ),
        ),
        message(
            "is_error text",
            ask(
                messages=[
                    *ASK,
                    {"role": "assistant", "content": [USE]},
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": "yes"}],
                    },
                ]
            ),
        ),
        message("tool_use id twice", ask(messages=[*ASK, {"role": "assistant", "content": [USE, USE]}])),
        message(
            "tool_use id missing",
            ask(
                messages=[
                    *ASK,
                    {"role": "assistant", "content": [{"type": "tool_use", "name": "a", "input": {}}]},
                ]
            ),
        ),
        message(
            "tool_use name not a string",
            ask(
                messages=[
                    *ASK,
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t", "name": 3, "input": {}}],
                    },
                ]
            ),
        ),
        message(
            "tool_use name invalid",
            ask(
                messages=[
                    *ASK,
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t", "name": "a b", "input": {}}],
                    },
                ]
            ),
        ),
        message(
            "tool_use input not an object",
            ask(
                messages=[
                    *ASK,
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t", "name": "a", "input": []}],
                    },
                ]
            ),
        ),
        message(
            "ends with an assistant",
            ask(tools=TOOLS, messages=[*ASK, {"role": "assistant", "content": "Hm."}]),
        ),
        count("count not an object", []),
        count("count with a bad tool", {"model": "c", "messages": ASK, "tools": [{"name": "x"}]}),
        count("count without the key", {"model": "c", "messages": ASK}, "keyed"),
    ]


def _failures() -> list[Case]:
    upstream = BackendHTTPError(429, "http://up/v1", "slow down", "the backend answered 429", retry_after=1.5)
    return [
        *shared_failures(message, ask, TOOLS, ANSWER, upstream, IndexError),
        Case("no such path under messages", [Step("/v1/messages/batches", {})]),
        Case("no such method on messages", [Step("/v1/messages", method="GET")]),
        message("body over the limit", b" " * 4_000_001),
    ]


CASES = [*_successes(), *_refusals(), *_failures()]
