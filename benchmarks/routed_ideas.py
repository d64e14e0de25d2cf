"""The ideas measured against the default routed decision, each a way of versus_native.py.

Three change what the model is told and nothing else (``Routed`` with other instructions):

- ``server-routed-none-first``: the sentence on ``none`` moved to the top of the instructions
  (the schema keeps ``none`` last);
- ``server-routed-example``: one worked example after the instructions, on a made-up tool that
  no case's catalogue has;
- ``server-routed-format``: the reply format told as the function call a chat template's tools
  section already describes.

``server-routed-two-step`` decides in two constrained requests. First a capped yes/no: told
the catalogue, the model answers whether a listed tool does what the user asks
(``{"answer": "yes"}`` or ``{"answer": "no"}``, nothing else possible). "no" is the decision
``none``, and the second step is skipped. "yes" asks for the tool: the default instructions,
the route's grammar without ``none`` (``route_schema(tools, handoff=False)``), so the model
chooses which tool and its arguments. This is KoboldCpp's tool poll, constrained on both
steps. Its cost is both requests: their prompt and completion tokens added, their seconds end
to end.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from native_ways import Reply, Routed

from toolrouting import (
    Backend,
    Completion,
    Message,
    catalogue_prompt,
    parse_route,
    route_schema,
    route_tool_names,
    routed_backend,
)
from toolrouting._loop import instructed

#: The sentence of the rendered catalogue that says when to answer ``none``.
NONE_SENTENCE = 'Reply {"tool": "none"} when no tool above does what the user asks'


def none_first(tools: Sequence[dict[str, Any]]) -> str:
    """The loop's default instructions with the sentence on ``none`` moved up, before the tools
    (one of the ideas measured against the default; the schema keeps ``none`` last)."""
    text = catalogue_prompt(tools)
    start = text.index(NONE_SENTENCE)
    end = text.index(". ", start) + 2
    sentence = text[start:end].strip().replace(" above", "")
    return sentence + "\n" + text[:start] + text[end:]


#: One worked example, after the reply format: a made-up tool that no case's catalogue has, one
#: request it does not do and one it does (the call last, as the reply format ends).
WORKED_EXAMPLE = (
    "For example, if the only tool were find_recipe(ingredient: string), which finds recipes "
    'that use an ingredient: "Book me a table for two tonight" gets {"tool": "none"}, as '
    'finding recipes does not book tables; "What can I cook with lentils?" gets '
    '{"tool": "find_recipe", "arguments": {"ingredient": "lentils"}}.'
)


def worked_example(tools: Sequence[dict[str, Any]]) -> str:
    """The loop's default instructions with :data:`WORKED_EXAMPLE` after them (one of the ideas
    measured against the default)."""
    return catalogue_prompt(tools) + "\n" + WORKED_EXAMPLE


#: Where the rendered catalogue's reply format starts: everything after it is the frame.
REPLY_FORMAT = "Reply with one JSON object and nothing else"

#: The reply format told as the function call a chat template's tools section already
#: describes (its ``{"name": <function-name>, "arguments": <args-json-object>}``), with
#: ``"tool"`` for the name and ``{"tool": "none"}`` as the reply that calls no function; the
#: sentence on when to answer ``none`` is the default's.
KNOWN_FORMAT = (
    "Your reply is your function call, the JSON object of a tool call and nothing else: "
    '{"tool": <function-name>, "arguments": <args-json-object>}, "tool" first. {"tool": "none"} '
    'calls no function: you answer the user yourself. Reply {"tool": "none"} when no tool above '
    "does what the user asks, or when no tool is needed (a greeting, thanks, general knowledge, "
    "or the tool results above already answer it). Otherwise call the tool that does what the "
    "user asks."
)


def known_format(tools: Sequence[dict[str, Any]]) -> str:
    """The loop's default instructions with their reply format told as :data:`KNOWN_FORMAT`
    (one of the ideas measured against the default)."""
    text = catalogue_prompt(tools)
    return text[: text.index(REPLY_FORMAT)] + KNOWN_FORMAT


#: The ideas that change only the instructions: each way's renderer of them.
VARIANTS: dict[str, Callable[[Sequence[dict[str, Any]]], str]] = {
    "server-routed-none-first": none_first,
    "server-routed-example": worked_example,
    "server-routed-format": known_format,
}
TWO_STEP = "server-routed-two-step"
IDEAS = (*VARIANTS, TWO_STEP)


def idea_way(name: str, backend: Backend, cap: int) -> Routed | TwoStep:
    """The way ``name`` (one of :data:`IDEAS`) on ``backend``."""
    return TwoStep(backend, cap) if name == TWO_STEP else Routed(backend, cap, VARIANTS[name])


#: The first step's completion cap: ``{"answer":"yes"}`` is under ten tokens.
YES_NO_CAP = 16

YES_NO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}

#: The first step's question, in place of the rendered catalogue's reply format; the cases for
#: "no" are those the default instructions give for ``none``.
QUESTION = (
    "Does a tool above do what the user asks? Reply with one JSON object and nothing else: "
    '{"answer": "yes"} when a tool above does what the user asks; {"answer": "no"} when no '
    "tool above does it, or when no tool is needed (a greeting, thanks, general knowledge, or the "
    "tool results above already answer it)."
)


def question(tools: Sequence[dict[str, Any]]) -> str:
    """The catalogue as the default instructions list it, then :data:`QUESTION`."""
    text = catalogue_prompt(tools)
    return text[: text.index(REPLY_FORMAT)] + QUESTION


class TwoStep:
    """A yes/no on whether a listed tool fits, then, on yes, the tool (``none`` not offered)."""

    def __init__(self, backend: Backend, cap: int) -> None:
        self.backend = backend
        self.cap = cap

    def decide(self, tools: list[dict[str, Any]], messages: list[Message]) -> Reply:
        reply = Reply(tool=None)
        started = time.perf_counter()
        asking = routed_backend(self.backend, YES_NO_SCHEMA, YES_NO_CAP)
        first = asking.complete(instructed(messages, question(tools), tools))
        self._count(reply, first)
        reply.text = first.text
        try:
            answer = json.loads(first.text)["answer"]
        except (ValueError, TypeError, KeyError) as error:
            reply.malformed = f"the yes/no reply does not parse: {error}"[:200]
            answer = None
        if answer == "yes":
            choosing = routed_backend(self.backend, route_schema(tools, handoff=False), self.cap)
            second = choosing.complete(instructed(messages, True, tools))
            self._count(reply, second)
            route = parse_route(second.text, route_tool_names(tools))
            reply.text = first.text + " " + second.text
            reply.tool = route.tool if route.ok else None
            reply.arguments = route.arguments if route.ok else None
            reply.malformed = None if route.ok else route.error
        reply.seconds = time.perf_counter() - started
        return reply

    @staticmethod
    def _count(reply: Reply, completion: Completion) -> None:
        reply.prompt_tokens += completion.usage.prompt_tokens
        reply.completion_tokens += completion.usage.completion_tokens
        reply.truncated = reply.truncated or completion.truncated
