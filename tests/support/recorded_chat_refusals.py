"""The recorded refusals of the chat completions front (tests/serve/test_serve_recorded.py): a body
that is no JSON object, and each field of the wrong type, value or shape."""

from __future__ import annotations

from support.recorded_chat import ASK, FORMAT, FUNCTIONS, HISTORY, REPEATED, SEARCH, TOOLS, ask
from support.recorder import Case, chat
from toolrouting import GrammarError

__all__ = ["CASES"]


def _refusals() -> list[Case]:
    nested = b"[" * 100_000 + b"]" * 100_000
    bad_call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "x", "type": "function", "function": {}}],
    }
    return [
        chat("not JSON", b"{not json"),
        chat("not UTF-8", b'{"model": "\xff"}'),
        chat("NaN", b'{"model": "m", "temperature": NaN}'),
        chat("too deep", nested),
        chat("huge integer", b'{"seed": ' + b"9" * 5000 + b"}"),
        chat("empty body", b""),
        chat("an array", [1, 2]),
        chat("a string", "hello"),
        chat("model not a string", ask(model=3)),
        chat("n of 2", ask(n=2)),
        chat("logprobs", ask(logprobs=True)),
        chat("logprobs not a boolean", ask(logprobs="yes")),
        chat("top_logprobs", ask(top_logprobs=3)),
        chat("top_logprobs not a count", ask(top_logprobs="x")),
        chat("response_format not an object", ask(response_format="json")),
        chat("response_format type", ask(response_format={"type": "xml"})),
        chat("json_schema missing", ask(response_format={"type": "json_schema"})),
        chat(
            "schema name",
            ask(response_format={"type": "json_schema", "json_schema": {"name": "a b", "schema": {}}}),
        ),
        chat(
            "schema not an object",
            ask(response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": []}}),
        ),
        chat(
            "strict not a boolean",
            ask(
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": "a", "schema": {}, "strict": 1},
                }
            ),
        ),
        chat("format with stop", ask(response_format=FORMAT, stop=["x"])),
        chat(
            "format refused by the preflight",
            ask(
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": "p", "schema": {"type": "string", "pattern": "(?=a)b"}},
                }
            ),
            app="grammar",
        ),
        chat(
            "format refused by the grammar",
            ask(response_format=FORMAT),
            GrammarError("/properties/answer minLength: too long", "/properties/answer"),
        ),
        chat(
            "held format refused by the grammar",
            ask(tools=TOOLS, response_format=FORMAT),
            GrammarError(
                "/anyOf/2/properties/answer/properties/answer minLength: no",
                "/anyOf/2/properties/answer/properties/answer",
            ),
        ),
        chat("tools not a list", ask(tools={"search": SEARCH})),
        chat("bad tool entry", ask(tools=[SEARCH, {"type": "function", "function": {"name": "bad name!"}}])),
        chat("tool entry not an object", ask(tools=[SEARCH, 3])),
        chat("tools and functions", ask(tools=TOOLS, functions=FUNCTIONS)),
        chat("functions not a list", ask(functions="search")),
        chat("function not an object", ask(functions=["search"])),
        chat("bad legacy function", ask(functions=[{"name": "bad name!"}])),
        chat("auto without tools", ask(tool_choice="auto")),
        chat("required without tools", ask(tool_choice="required")),
        chat("tool_choice unknown string", ask(tools=TOOLS, tool_choice="any")),
        chat(
            "tool_choice unknown name",
            ask(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "write"}}),
        ),
        chat(
            "tool_choice of a repeated call's tool",
            ask(
                messages=REPEATED,
                tools=TOOLS,
                tool_choice={"type": "function", "function": {"name": "search"}},
            ),
        ),
        chat("tool_choice name missing", ask(tools=TOOLS, tool_choice={"type": "function", "function": {}})),
        chat(
            "allowed_tools bad mode",
            ask(
                tools=TOOLS,
                tool_choice={"type": "allowed_tools", "allowed_tools": {"mode": "none", "tools": []}},
            ),
        ),
        chat(
            "allowed_tools unknown",
            ask(
                tools=TOOLS,
                tool_choice={
                    "type": "allowed_tools",
                    "allowed_tools": {"mode": "auto", "tools": [{"function": {"name": "zz"}}]},
                },
            ),
        ),
        chat("function_call auto without functions", ask(function_call="auto")),
        chat("function_call bad", ask(functions=FUNCTIONS, function_call="required")),
        chat("function_call unknown", ask(functions=FUNCTIONS, function_call={"name": "zz"})),
        chat("function_call name missing", ask(functions=FUNCTIONS, function_call={})),
        chat("stream not a boolean", ask(stream="yes")),
        chat("stream_options not an object", ask(stream=True, stream_options=[])),
        chat("include_usage not a boolean", ask(stream=True, stream_options={"include_usage": 1})),
        chat("max_tokens zero", ask(max_tokens=0)),
        chat("max_tokens text", ask(max_tokens="10")),
        chat("max_tokens boolean", ask(max_tokens=True)),
        chat("max_completion_tokens float", ask(max_completion_tokens=1.5)),
        chat("parallel_tool_calls not a boolean", ask(tools=TOOLS, parallel_tool_calls="no")),
        chat("seed text", ask(seed="7")),
        chat("seed float", ask(seed=1.5)),
        chat("stop empty", ask(stop="")),
        chat("stop of five", ask(stop=["a", "b", "c", "d", "e"])),
        chat("stop not strings", ask(stop=[1])),
        chat("temperature too hot", ask(temperature=3)),
        chat("temperature text", ask(temperature="hot")),
        chat("temperature boolean", ask(temperature=True)),
        chat("top_p over 1", ask(top_p=2)),
        chat("messages missing", {"model": "m"}),
        chat("messages empty", {"model": "m", "messages": []}),
        chat("messages an object", {"model": "m", "messages": {"role": "user"}}),
        chat("message not an object", {"model": "m", "messages": ["hi"]}),
        chat("role unknown", {"model": "m", "messages": [{"role": "robot", "content": "x"}]}),
        chat("content a number", {"model": "m", "messages": [{"role": "user", "content": 5}]}),
        chat("content missing", {"model": "m", "messages": [{"role": "user"}]}),
        chat(
            "image part",
            {
                "model": "m",
                "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
            },
        ),
        chat(
            "text part without text",
            {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": 3}]}]},
        ),
        chat("tool message without id", {"model": "m", "messages": [*ASK, {"role": "tool", "content": "x"}]}),
        chat(
            "tool message unknown id",
            {"model": "m", "messages": [*ASK, {"role": "tool", "tool_call_id": "nope", "content": "x"}]},
        ),
        chat("tool message twice", {"model": "m", "messages": [*HISTORY, HISTORY[-1]]}),
        chat(
            "tool_calls not a list",
            {"model": "m", "messages": [*ASK, {"role": "assistant", "tool_calls": {}}]},
        ),
        chat("tool call shape", {"model": "m", "messages": [*ASK, bad_call]}),
        chat(
            "tool call id not a string",
            {
                "model": "m",
                "messages": [
                    *ASK,
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": 1, "function": {"name": "a", "arguments": "{}"}}],
                    },
                ],
            },
        ),
        chat(
            "tool call arguments not an object",
            {
                "model": "m",
                "messages": [
                    *ASK,
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "1", "function": {"name": "a", "arguments": "[1]"}}],
                    },
                ],
            },
        ),
        chat(
            "tool call name invalid",
            {
                "model": "m",
                "messages": [
                    *ASK,
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "1", "function": {"name": "a b", "arguments": "{}"}}],
                    },
                ],
            },
        ),
        chat("tool call id twice", {"model": "m", "messages": [*HISTORY, HISTORY[1], HISTORY[2]]}),
        chat(
            "both call forms",
            {
                "model": "m",
                "messages": [
                    *ASK,
                    {
                        "role": "assistant",
                        "tool_calls": HISTORY[1]["tool_calls"],
                        "function_call": {"name": "a", "arguments": "{}"},
                    },
                ],
            },
        ),
        chat(
            "function_call message not an object",
            {"model": "m", "messages": [*ASK, {"role": "assistant", "function_call": "a"}]},
        ),
        chat(
            "function_call arguments missing",
            {"model": "m", "messages": [*ASK, {"role": "assistant", "function_call": {"name": "a"}}]},
        ),
        chat(
            "function message without name",
            {"model": "m", "messages": [*ASK, {"role": "function", "content": "x"}]},
        ),
        chat(
            "function message answering nothing",
            {"model": "m", "messages": [*ASK, {"role": "function", "name": "a", "content": "x"}]},
        ),
        chat(
            "decision after an assistant",
            {"model": "m", "messages": [*ASK, {"role": "assistant", "content": "Hm."}], "tools": TOOLS},
        ),
    ]


CASES = _refusals()
