"""The recorded cases of the Responses front (tests/serve/test_serve_recorded.py): ``POST /v1/responses``,
a stored response read back, deleted and continued."""

from __future__ import annotations

from support.recorder import (
    LAST_ID,
    SEVERAL,
    Body,
    Case,
    Step,
    call,
    response,
    shared_failures,
    shared_successes,
)
from support.serve import BARE_READ, BARE_SEARCH
from toolrouting import BackendHTTPError, Completion, GrammarError, Usage
from toolrouting._serve.reasoning import Signer

__all__ = ["CASES"]

SEARCH = {"type": "function", **BARE_SEARCH["function"]}
READ = {"type": "function", **BARE_READ["function"]}
TOOLS = [SEARCH, READ]
QUESTION = "What does the latch do?"
ACTION = call("search", {"query": "latch"})
NONE = '{"tool":"none"}'
ANSWER = "The latch holds the door shut."
USED = Completion(text=ACTION, finish_reason="stop", usage=Usage(prompt_tokens=50, completion_tokens=9))
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
FORMAT = {
    "format": {"type": "json_schema", "name": "verdict", "schema": SCHEMA, "strict": True, "description": "d"}
}
ITEMS = [
    {"role": "user", "content": QUESTION},
    {"role": "assistant", "content": [{"type": "output_text", "text": "Searching."}]},
    {"type": "function_call", "call_id": "call_1", "name": "search", "arguments": '{"query":"latch"}'},
    {"type": "function_call", "call_id": "call_2", "name": "read", "arguments": ""},
    {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "R"}]},
    {"type": "function_call_output", "call_id": "call_1", "output": "M1"},
]


ask = Body(model="m", input=QUESTION)
THOUGHT = '{"thought":"a word","tool":"search","arguments":{"query":"latch"}}'
streamed = ask.streamed


def _successes() -> list[Case]:
    items = ask(input=ITEMS, tools=TOOLS)
    held = '{"tool":"none","answer":{"answer":"it holds"}}'
    return [
        *shared_successes(response, ask, "max_output_tokens", TOOLS, ANSWER, USED),
        response(
            "echoed fields",
            ask(
                instructions="Be brief.",
                metadata={"k": "v"},
                temperature=0.5,
                top_p=0.5,
                truncation="auto",
                store=False,
                reasoning={"summary": "auto"},
                include=["reasoning.encrypted_content"],
                service_tier="auto",
                text={"verbosity": "low"},
                user="u",
            ),
            ANSWER,
        ),
        response("required", ask(tools=TOOLS, tool_choice="required"), ACTION),
        response(
            "reasoning",
            ask(
                tools=TOOLS,
                reasoning={"effort": "minimal", "summary": "auto"},
                include=["reasoning.encrypted_content"],
            ),
            THOUGHT,
        ),
        response("reasoning streamed", streamed(tools=TOOLS, reasoning={"effort": "low"}), THOUGHT),
        response(
            "reasoning sent back",
            ask(
                tools=TOOLS,
                reasoning={"effort": "minimal"},
                input=[
                    ITEMS[0],
                    {
                        "type": "reasoning",
                        "summary": [],
                        "encrypted_content": Signer("recorded").sign("a word"),
                    },
                    *ITEMS[1:],
                ],
            ),
            '{"thought":"done","tool":"none"}',
            ANSWER,
        ),
        response("hosted tool left out", ask(tools=[*TOOLS, {"type": "web_search_preview"}]), ACTION),
        response(
            "namespace",
            ask(tools=[{"type": "namespace", "name": "notes", "description": "The notes.", "tools": TOOLS}]),
            call("notes.search", {"query": "latch"}),
        ),
        response("tool_choice none", ask(tools=TOOLS, tool_choice="none"), ANSWER),
        response(
            "named function",
            ask(tools=TOOLS, tool_choice={"type": "function", "name": "read"}),
            call("read", {}),
        ),
        response(
            "allowed tools",
            ask(
                tools=TOOLS,
                tool_choice={
                    "type": "allowed_tools",
                    "mode": "auto",
                    "tools": [{"type": "function", "name": "read"}],
                },
            ),
            NONE,
            ANSWER,
        ),
        response("input items", items, NONE, ANSWER),
        response("input items, one decision", items, NONE, ANSWER, app="calls"),
        response("several calls", ask(tools=TOOLS), SEVERAL, app="calls"),
        response("several calls streamed", streamed(tools=TOOLS), SEVERAL, app="calls"),
        response(
            "parallel_tool_calls false", ask(tools=TOOLS, parallel_tool_calls=False), ACTION, app="calls"
        ),
        response(
            "spaced call streamed",
            streamed(tools=TOOLS),
            call("search", {"query": "the latch"}, spaced=True),
            app="spaced",
        ),
        response("text.format", ask(text=FORMAT), '{"answer":"x"}'),
        response("text.format streamed", streamed(text=FORMAT), '{"answer": "x"}'),
        response("json_object", ask(text={"format": {"type": "json_object"}}), "{}"),
        response("text format", ask(text={"format": {"type": "text"}}), ANSWER),
        response("answer held by none", ask(tools=TOOLS, text=FORMAT), held),
        response("answer held by none streamed", streamed(tools=TOOLS, text=FORMAT), held),
        response(
            "shortlisted",
            ask(tools=[*TOOLS, {"type": "function", "name": "write", "parameters": {"type": "object"}}]),
            ACTION,
            app="shortlist",
        ),
        Case(
            "continued",
            [
                Step("/v1/responses", ask(tools=TOOLS), [USED]),
                Step(
                    "/v1/responses",
                    {
                        "model": "m",
                        "previous_response_id": LAST_ID,
                        "tools": TOOLS,
                        "input": [{"type": "function_call_output", "call_id": "route-1", "output": "M1"}],
                    },
                    [NONE, ANSWER],
                ),
                Step(
                    "/v1/responses",
                    {
                        "model": "m",
                        "previous_response_id": LAST_ID,
                        "input": "And then?",
                        "instructions": "Short.",
                    },
                    [ANSWER],
                ),
            ],
        ),
        Case(
            "continued streamed",
            [
                Step("/v1/responses", streamed(tools=TOOLS), [USED]),
                Step(
                    "/v1/responses",
                    {
                        "model": "m",
                        "stream": True,
                        "previous_response_id": LAST_ID,
                        "tools": TOOLS,
                        "input": [{"type": "function_call_output", "call_id": "route-1", "output": "M1"}],
                    },
                    [NONE, ANSWER],
                ),
            ],
        ),
        Case(
            "stored, read, deleted",
            [
                Step("/v1/responses", ask(), [ANSWER]),
                Step(f"/v1/responses/{LAST_ID}", method="GET"),
                Step(f"/v1/responses/{LAST_ID}", method="DELETE"),
                Step(f"/v1/responses/{LAST_ID}", method="GET"),
                Step(f"/v1/responses/{LAST_ID}", method="DELETE"),
                Step("/v1/responses", ask(previous_response_id=LAST_ID)),
            ],
        ),
        Case(
            "not stored",
            [
                Step("/v1/responses", ask(store=False), [ANSWER]),
                Step(f"/v1/responses/{LAST_ID}", method="GET"),
                Step("/v1/responses", ask(previous_response_id=LAST_ID)),
            ],
        ),
        Case("stored response without the key", [Step("/v1/responses/resp_x", method="GET")], "keyed"),
        Case("stored response by POST", [Step("/v1/responses/resp_x", {})]),
    ]


def _refusals() -> list[Case]:
    return [
        response("not JSON", b"[1,"),
        response("not an object", [ASK_ITEM]),
        response("background", ask(background=True)),
        response("conversation", ask(conversation="conv_1")),
        response("prompt", ask(prompt={"id": "p"})),
        response("reasoning effort", ask(reasoning={"effort": "huge"})),
        response(
            "reasoning not this server's",
            ask(
                tools=TOOLS,
                input=[{"type": "reasoning", "summary": [], "encrypted_content": "AQ"}, *ITEMS[1:]],
            ),
        ),
        response("additional tools", ask(input=[{"type": "additional_tools", "tools": []}])),
        response("reasoning not an object", ask(reasoning="high")),
        response("top_logprobs", ask(top_logprobs=2)),
        response("include not a list", ask(include="x")),
        response("include unknown", ask(include=["file_search_call.results", "nope"])),
        response("include logprobs", ask(include=["message.output_text.logprobs"])),
        response("model not a string", ask(model=[])),
        response("instructions not a string", ask(instructions=3)),
        response("previous not a string", ask(previous_response_id=3)),
        response("previous unknown", ask(previous_response_id="resp_nope")),
        response("input missing", {"model": "m"}),
        response("input empty", ask(input=[])),
        response("input a number", ask(input=3)),
        response("item not an object", ask(input=["hi"])),
        response("item role", ask(input=[{"role": "tool", "content": "x"}])),
        response("item type", ask(input=[{"type": "item_reference", "id": "x"}])),
        response(
            "call without call_id", ask(input=[{"type": "function_call", "name": "a", "arguments": "{}"}])
        ),
        response(
            "output unknown call",
            ask(
                input=[
                    {"role": "user", "content": "q"},
                    {"type": "function_call_output", "call_id": "zz", "output": "x"},
                ]
            ),
        ),
        response(
            "call arguments not an object",
            ask(
                input=[
                    {"role": "user", "content": "q"},
                    {"type": "function_call", "call_id": "c", "name": "search", "arguments": "[]"},
                ]
            ),
        ),
        response(
            "content part image",
            ask(input=[{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]),
        ),
        response("tools not a list", ask(tools=SEARCH)),
        response("client tool of another shape", ask(tools=[{"type": "local_shell"}])),
        response("bad tool", ask(tools=[{"type": "function", "name": "bad name!"}])),
        response("tool_choice bad", ask(tools=TOOLS, tool_choice="any")),
        response("tool_choice unknown", ask(tools=TOOLS, tool_choice={"type": "function", "name": "zz"})),
        response("tool_choice built-in", ask(tools=TOOLS, tool_choice={"type": "web_search_preview"})),
        response(
            "tool_choice allowed bad",
            ask(tools=TOOLS, tool_choice={"type": "allowed_tools", "mode": "x", "tools": []}),
        ),
        response("auto without tools", ask(tool_choice="auto")),
        response("max_output_tokens zero", ask(max_output_tokens=0)),
        response("text not an object", ask(text="json")),
        response("text.format type", ask(text={"format": {"type": "yaml"}})),
        response("text.format name", ask(text={"format": {"type": "json_schema", "name": "", "schema": {}}})),
        response("parallel_tool_calls text", ask(parallel_tool_calls="x")),
        response("stream text", ask(stream="x")),
        response("store text", ask(store=1)),
        response("metadata not an object", ask(metadata=[])),
        response("temperature too hot", ask(temperature=2.5)),
        response(
            "ends with an assistant",
            ask(tools=TOOLS, input=[{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]),
        ),
        response(
            "format refused by the preflight",
            ask(
                text={
                    "format": {
                        "type": "json_schema",
                        "name": "p",
                        "schema": {"type": "string", "pattern": "(?=a)b"},
                    }
                }
            ),
            app="grammar",
        ),
        response(
            "held format refused by the grammar",
            ask(tools=TOOLS, text=FORMAT),
            GrammarError("/$defs/none.x minLength: no", "/$defs/none.x"),
        ),
    ]


ASK_ITEM = {"role": "user", "content": QUESTION}


def _failures() -> list[Case]:
    upstream = BackendHTTPError(503, "http://up/v1", "busy", "the backend answered 503 (busy)", retry_after=2)
    return shared_failures(response, ask, TOOLS, ANSWER, upstream, KeyError)


CASES = [*_successes(), *_refusals(), *_failures()]
