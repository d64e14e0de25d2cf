"""The recorded cases of the chat completions front (tests/serve/test_serve_recorded.py), with the
server's own endpoints and what every front shares on the wire: the key, the body's limit, a
path or method no route takes. Its refusals are in recorded_chat_refusals.py."""

from __future__ import annotations

from typing import Any

from support.recorder import SEVERAL, SPACED_CUT, Body, Case, Step, call, chat, fault
from support.serve import BARE_READ as READ
from support.serve import BARE_SEARCH as SEARCH
from toolrouting import (
    BackendConnectError,
    BackendHTTPError,
    BackendResponseError,
    BackendTimeout,
    Completion,
    ContextLengthError,
    GrammarError,
    Usage,
)

__all__ = ["ASK", "CASES", "FORMAT", "FUNCTIONS", "HISTORY", "REPEATED", "SEARCH", "TOOLS", "ask"]

ASK = [{"role": "user", "content": "What does the latch do?"}]
TOOLS = [SEARCH, READ]
ACTION = call("search", {"query": "latch"})
NONE = '{"tool":"none"}'
ANSWER = "The latch holds the door shut."
USED = Completion(text=ACTION, finish_reason="stop", usage=Usage(prompt_tokens=50, completion_tokens=9))
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "sure": {"type": "boolean"}},
    "required": ["answer", "sure"],
}
FORMAT = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True}}


def said(*calls: tuple[str, str, str], content: str | None = None) -> dict[str, Any]:
    """An assistant message of tool calls, each its id, its tool and its arguments' text."""
    tool_calls = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        for call_id, name, arguments in calls
    ]
    return {"role": "assistant", "content": content, "tool_calls": tool_calls}


HISTORY: list[Any] = [
    *ASK,
    said(("call_a", "search", '{"query":"latch"}')),
    {"role": "tool", "tool_call_id": "call_a", "content": "M1: the latch note"},
]
#: The same call made twice (its arguments spaced otherwise: the same JSON value), each result
#: there: past the repeat limit, its tool is withheld from the next decision.
REPEATED: list[Any] = [
    *HISTORY,
    said(("call_b", "search", '{"query": "latch"}')),
    {"role": "tool", "tool_call_id": "call_b", "content": "M1: the latch note"},
]
TWO_CALLS = [
    *ASK,
    said(("c1", "search", '{"query":"a"}'), ("c2", "read", "{}"), content=""),
    {"role": "tool", "tool_call_id": "c2", "content": "read it"},
    {"role": "tool", "tool_call_id": "c1", "content": "found it"},
]
FUNCTIONS = [SEARCH["function"], READ["function"]]
LEGACY_HISTORY: list[Any] = [
    *ASK,
    {"role": "assistant", "content": None, "function_call": {"name": "search", "arguments": '{"query":"x"}'}},
    {"role": "function", "name": "search", "content": "M1"},
]


ask = Body(model="m", messages=ASK)
streamed = ask.streamed


def _successes() -> list[Case]:
    two = ask(messages=TWO_CALLS, tools=TOOLS)
    spaced = call("search", {"query": "the latch on the door"}, spaced=True)
    held = '{"tool":"none","answer":{"answer":"it holds","sure":true}}'
    return [
        chat("answer", ask(), ANSWER),
        chat("answer streamed", streamed(), ANSWER),
        chat("answer streamed with usage", streamed(stream_options={"include_usage": True}), ANSWER),
        chat("answer cut at max_tokens", ask(max_tokens=3), ANSWER),
        chat("answer cut streamed", streamed(max_completion_tokens=2), ANSWER),
        chat("answer with sampling", ask(temperature=0.3, top_p=0.9, seed=7, stop=["\n\n"], n=1), ANSWER),
        chat(
            "answer with one stop string", ask(stop="END", user="u", metadata={"a": "b"}, store=False), ANSWER
        ),
        chat("tool call", ask(tools=TOOLS), USED),
        chat("tool call streamed", streamed(tools=TOOLS), USED),
        chat(
            "tool call streamed with usage",
            streamed(tools=TOOLS, stream_options={"include_usage": True}),
            USED,
        ),
        chat("none then answer", ask(tools=TOOLS), NONE, ANSWER),
        chat("none then answer streamed", streamed(tools=TOOLS), NONE, ANSWER),
        chat("none then an empty answer streamed", streamed(tools=TOOLS), NONE, ""),
        chat("a repeated call withheld", ask(messages=REPEATED, tools=TOOLS), NONE, ANSWER),
        chat("a repeated call withheld streamed", streamed(messages=REPEATED, tools=TOOLS), NONE, ANSWER),
        chat("required", ask(tools=TOOLS, tool_choice="required"), ACTION),
        chat("tool_choice none", ask(tools=TOOLS, tool_choice="none"), ANSWER),
        chat(
            "named function",
            ask(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "read"}}),
            call("read", {}),
        ),
        chat(
            "allowed tools",
            ask(
                tools=TOOLS,
                tool_choice={
                    "type": "allowed_tools",
                    "allowed_tools": {
                        "mode": "required",
                        "tools": [{"type": "function", "function": {"name": "read"}}],
                    },
                },
            ),
            call("read", {}),
        ),
        chat("history of a call", ask(messages=HISTORY, tools=TOOLS), NONE, ANSWER),
        chat("history of two calls", two, NONE, ANSWER),
        chat("history of two calls, one decision", two, NONE, ANSWER, app="calls"),
        chat("history without tools", {"model": "m", "messages": HISTORY}, ANSWER),
        chat(
            "content parts and roles",
            {
                "model": "m",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "developer", "content": [{"type": "text", "text": "Cite notes."}]},
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "Why "}, {"type": "text", "text": "now?"}],
                    },
                    {"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
                    {"role": "user", "content": "Please, with ünïcode ✓."},
                ],
                "tools": TOOLS,
            },
            NONE,
            "Ja ✓",
        ),
        chat("several calls", ask(tools=TOOLS), SEVERAL, app="calls"),
        chat("several calls streamed", streamed(tools=TOOLS), SEVERAL, app="calls"),
        chat("one call of a several-call server", ask(tools=TOOLS), ACTION, app="calls"),
        chat("parallel_tool_calls false", ask(tools=TOOLS, parallel_tool_calls=False), ACTION, app="calls"),
        chat("spaced call", ask(tools=TOOLS), spaced, app="spaced"),
        chat("spaced call streamed", streamed(tools=TOOLS), spaced, app="spaced"),
        chat("spaced answer streamed", streamed(tools=TOOLS), '{"tool": "none"}', "A B C", app="spaced"),
        chat("shortlisted", ask(tools=[*TOOLS, _tool("write")]), ACTION, app="shortlist"),
        chat("shortlist, fewer tools", ask(tools=TOOLS), ACTION, app="shortlist"),
        chat("default answer cap", ask(tools=TOOLS), NONE, "one two three four five", app="short"),
        chat("legacy functions", ask(functions=FUNCTIONS), ACTION),
        chat("legacy functions streamed", streamed(functions=FUNCTIONS), ACTION),
        chat(
            "legacy named function",
            ask(functions=FUNCTIONS, function_call={"name": "read"}),
            call("read", {}),
        ),
        chat("legacy function_call none", ask(functions=FUNCTIONS, function_call="none"), ANSWER),
        chat(
            "legacy history", {"model": "m", "messages": LEGACY_HISTORY, "functions": FUNCTIONS}, NONE, ANSWER
        ),
        chat("response_format", ask(response_format=FORMAT), '{"answer":"x","sure":false}'),
        chat("response_format streamed", streamed(response_format=FORMAT), '{"answer": "x", "sure": false}'),
        chat("json_object", ask(response_format={"type": "json_object"}), "{}"),
        chat("text format", ask(response_format={"type": "text"}), ANSWER),
        chat("answer held by none", ask(tools=TOOLS, response_format=FORMAT), held),
        chat("answer held by none streamed", streamed(tools=TOOLS, response_format=FORMAT), held),
        chat(
            "held answer cut",
            ask(tools=TOOLS, response_format=FORMAT),
            Completion(
                text='{"tool":"none","answer":{"answer":"it ho', finish_reason="length", truncated=True
            ),
        ),
        chat("call beside a format", ask(tools=TOOLS, response_format=FORMAT), ACTION),
        chat(
            "required with a format", ask(tools=TOOLS, tool_choice="required", response_format=FORMAT), ACTION
        ),
        chat(
            "format checked, accepted",
            ask(response_format=FORMAT),
            '{"answer":"x","sure":true}',
            app="grammar",
        ),
        chat("routed on the grammar dialect", ask(tools=TOOLS), ACTION, app="grammar"),
    ]


def _tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": {}}},
    }


def _failures() -> list[Case]:
    upstream = BackendHTTPError(
        503, "http://up/v1", "busy", "the backend answered 503 (busy), key upstream-secret", retry_after=3
    )
    cut = Completion(text='{"tool":"search","arguments":{"query":"la', finish_reason="length", truncated=True)
    past = ContextLengthError(
        "the prompt is 5000 tokens and the context holds 4096", prompt_tokens=5000, n_ctx=4096
    )
    return [
        chat("upstream 503", ask(tools=TOOLS), upstream),
        chat("upstream 503 streamed", streamed(tools=TOOLS), upstream),
        chat("upstream 400", ask(), BackendHTTPError(400, "http://up", "bad", "the backend answered 400")),
        chat("upstream timeout", ask(), BackendTimeout("the backend did not answer within 30 s")),
        chat("prompt past the context", ask(tools=TOOLS), past),
        chat("prompt past the context streamed", streamed(tools=TOOLS), past),
        chat(
            "prompt past a context of 4096", ask(), ContextLengthError("over", prompt_tokens=None, n_ctx=4096)
        ),
        chat("upstream unreachable", ask(), BackendConnectError("connection refused")),
        chat("upstream unreadable", ask(), BackendResponseError("not a chat completion")),
        chat("upstream failure after none", streamed(tools=TOOLS), NONE, BackendTimeout("late")),
        chat("not an action", ask(tools=TOOLS), "Sure, I will search."),
        chat("not an action streamed", streamed(tools=TOOLS), "Sure, I will search."),
        chat("cut at the routing cap", ask(tools=TOOLS), cut),
        chat("cut at the route and answer cap", ask(tools=TOOLS, response_format=FORMAT), cut),
        chat("none where a call is required", ask(tools=TOOLS, tool_choice="required"), NONE),
        chat("unknown tool in the reply", ask(tools=TOOLS), call("write", {})),
        chat("cut after the call's head", streamed(tools=TOOLS), SPACED_CUT, app="spaced"),
        chat(
            "grammar refused on the route",
            ask(tools=TOOLS),
            GrammarError("/anyOf/0/properties/arguments pattern: refused", "/anyOf/0/properties/arguments"),
        ),
        chat("a fault of the server", ask(), fault(ZeroDivisionError)),
        chat("a fault of the server streamed", streamed(), fault(ZeroDivisionError)),
        chat("key missing", ask(), app="keyed"),
        chat("key wrong", ask(), app="keyed", headers={"authorization": "Bearer nope"}),
        chat(
            "key as bearer", ask(), ANSWER, app="keyed", headers={"authorization": "Bearer sk-recorded-key"}
        ),
        chat("key as x-api-key", ask(), ANSWER, app="keyed", headers={"x-api-key": "sk-recorded-key"}),
        chat(
            "secrets redacted",
            ask(),
            upstream,
            app="keyed",
            headers={"authorization": "bearer sk-recorded-key"},
        ),
        chat("body over the limit", b" " * 4_000_001),
        chat("body over the limit, chunked", b" " * 4_000_001, chunked=True),
        Case(
            "content-length over the limit",
            [Step("/v1/chat/completions", b"{}", headers={"content-length": "4000001"})],
        ),
    ]


def _endpoints() -> list[Case]:
    return [
        Case("health", [Step("/health", method="GET")]),
        Case("models", [Step("/v1/models", method="GET")]),
        Case("models without the key", [Step("/v1/models", method="GET")], "keyed"),
        Case("no such path", [Step("/v1/embeddings", {"input": "x"})]),
        Case("no such method", [Step("/v1/chat/completions", method="GET")]),
        Case("health by POST", [Step("/health", {})]),
    ]


CASES = [*_successes(), *_failures(), *_endpoints()]
