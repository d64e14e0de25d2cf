"""A request's messages as the conversation ``RoutingLoop`` would send, and an action as its text.

A run's conversation has three roles; a chat request has five. System and developer messages
are system messages. An assistant's tool call is the action it stands for, written as the
route grammar writes it (the route core's ``action_text``: ``{"tool":NAME,"arguments":ARGS}``,
spaced as the backend's settings say), with the arguments' own text kept verbatim: so when the
call was this server's reply, the backend is sent back, byte for byte, what it wrote, and
consecutive requests of one conversation share their prefix. A tool message is the result
message the loop would commit, under the call id the loop would have given that call: the n-th
call of the conversation is ``route-n``, whatever id the client knows it by. On a server whose
decisions make up to ``max_calls`` calls (above 1), an assistant message of several calls is
the one decision a run with ``max_calls`` commits: their actions in one JSON array, as the
route grammar writes it, then each result in the order of the calls. The calls made since the
question whose results came (``Conversation.made``) are what the repeat limit counts.
"""

from __future__ import annotations

import collections
import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..._backends import Message, ReasoningTags
from ..._errors import ChatRequestError
from ..._names import tool_name_problem
from ..._result_messages import routed_call_id, routed_result_text
from ..._route_schema import action_head, action_text, route_separators
from .exchange import InMessage, ServeRequest, ToolCall

__all__ = [
    "Conversation",
    "arguments_text",
    "conversation_of",
    "ends_with_user",
    "thought_head",
    "without_thought",
    "written_arguments",
]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Conversation:
    """A request's messages translated: the messages, where the question ends, the calls so far."""

    messages: tuple[Message, ...]
    question: int
    """How many of ``messages`` come up to and with the last user message that is not a result:
    the run's own conversation, as the loop's answer request counts it."""
    calls: int
    """Tool calls the conversation holds: the next one is ``routed_call_id(calls + 1)``."""
    made: tuple[tuple[str, dict[str, Any]], ...] = ()
    """The calls made since the question whose results the conversation holds, in order: each
    its tool and its arguments (the run a loop would count repeats in: ``repeated_tools``)."""


def arguments_text(reply: str, tool: str, arguments: dict[str, Any], *, spaced: bool) -> str:
    """The arguments' JSON text of an accepted action: the reply's own text when it has the
    grammar's layout (so ``action_text`` gives the reply back), else the arguments written
    compactly."""
    head = action_head(tool, spaced=spaced)
    if reply.startswith(head) and reply.endswith("}"):
        inner = reply[len(head) : -1]
        try:
            if json.loads(inner) == arguments:
                return inner
        except (ValueError, RecursionError):
            pass
    return written_arguments(arguments, spaced=spaced)


def thought_head(thought: str, *, spaced: bool) -> str:
    """What an action with a reasoning slot begins with, as the route grammar writes it: the
    ``thought`` first (``{"thought":"...",``), then the action's own keys."""
    comma, colon = route_separators(spaced)
    return f'{{"thought"{colon}{json.dumps(thought, ensure_ascii=False)}{comma}'


def without_thought(text: str, thought: str | None, *, spaced: bool) -> str:
    """A reply's text without its ``thought`` member, so an action reads as one without the slot;
    the text itself when it has none, or writes it otherwise (another server's layout)."""
    if thought is None:
        return text
    head = thought_head(thought, spaced=spaced)
    return "{" + text[len(head) :] if text.startswith(head) else text


def written_arguments(arguments: Mapping[str, Any], *, spaced: bool) -> str:
    """An arguments object's JSON text as the route grammar writes it: compact, or spaced as the
    backend's settings say."""
    return json.dumps(arguments, ensure_ascii=False, separators=route_separators(spaced))


def conversation_of(
    request: ServeRequest, *, spaced: bool, max_calls: int = 1, tags: ReasoningTags | None = None
) -> Conversation:
    """The request's messages as a run's conversation; a call or result that cannot be one is refused.

    ``max_calls`` is the server's: above 1, several calls of one message are one decision.
    ``tags`` are the backend's model's own reasoning tags: a decision's thought sent back is
    written between them before its action, as the model wrote it, not in the route's slot.
    """
    built = _Built(spaced, several=max_calls > 1, tags=tags)
    for index, message in enumerate(request.messages):
        at = f"messages[{index}]"
        if message.role == "tool":
            built.result(message, at)
            continue
        built.flush()
        if message.role in ("system", "developer"):
            built.add("system", message.content)
        elif message.role == "user":
            built.add("user", message.content)
            built.question = len(built.messages)
        else:
            built.assistant(message, at)
    built.flush()
    made = tuple(
        (tool, arguments)
        for call_id, (tool, arguments, question) in built.made.items()
        if question == built.question and call_id in built.answered
    )
    return Conversation(
        messages=tuple(built.messages), question=built.question, calls=len(built.calls), made=made
    )


class _Built:
    """The conversation as it is built, and the calls of the last assistant message still open.

    A run makes one call a round, answered before the next: an assistant message with several
    calls (from another server's history) becomes that, each action followed by its result,
    in the order of the calls, whatever order their tool messages come in.
    """

    def __init__(self, spaced: bool, *, several: bool = False, tags: ReasoningTags | None = None) -> None:
        self.spaced = spaced
        self.tags = tags
        self.several = several
        """Whether several calls of one message are one decision (an array), not one round each."""
        self.together = False
        """Whether the open calls are one decision's, whose actions went out as one array."""
        self.messages: list[Message] = []
        self.question = 0
        self.calls: dict[str, tuple[str, str, str]] = {}
        """Each call by the client's id: its tool, its routed id, the action it stands for."""
        self.answered: set[str] = set()
        self.made: dict[str, tuple[str, dict[str, Any], int]] = {}
        """Each call by the client's id: its tool, its arguments, and ``question`` when it was made."""
        self.open: collections.deque[str] = collections.deque()
        """The last assistant message's calls not yet followed by their results (the first sent)."""
        self.waiting: dict[str, str] = {}

    def add(self, role: Literal["system", "user", "assistant"], content: str) -> None:
        self.messages.append(Message(role=role, content=content))

    def assistant(self, message: InMessage, at: str) -> None:
        if not message.tool_calls:
            self.add("assistant", message.content)
            return
        for position, call in enumerate(message.tool_calls):
            where = (
                f"{at}.function_call" if message.function_call else f"{at}.tool_calls[{position}].function"
            )
            action = self._action(call, where)
            self.calls[call.id] = (call.name, routed_call_id(len(self.calls) + 1), action)
            self.open.append(call.id)
        thought = message.thought
        if thought is not None and self.tags is None:  # the reasoning the decision began with, as it wrote it
            first = self.open[0]
            tool, routed, action = self.calls[first]
            self.calls[first] = (tool, routed, thought_head(thought, spaced=self.spaced) + action[1:])
        # In the model's own tags, the thought comes before the decision, as the model wrote it.
        reasoned = "" if thought is None or self.tags is None else self.tags.block(thought)
        # A text the assistant wrote beside its calls is not part of the actions they stand for.
        if self.several and len(self.open) > 1:
            actions = [self.calls[call_id][2] for call_id in self.open]
            self.add("assistant", reasoned + "[" + route_separators(self.spaced)[0].join(actions) + "]")
            self.together = True
            return
        self.add("assistant", reasoned + self.calls[self.open[0]][2])

    def _action(self, call: ToolCall, where: str) -> str:
        """The action ``call`` stands for; ``where`` is its function's path (``name`` and
        ``arguments`` are under it, the call's ``id`` beside it)."""
        if call.id in self.calls:
            at = where.removesuffix(".function")
            raise ChatRequestError(f"the call id {json.dumps(call.id)[:80]} is used twice", f"{at}.id")
        problem = tool_name_problem(call.name)
        if problem is not None:
            raise ChatRequestError(problem, f"{where}.name")
        if call.input is not None:
            arguments = written_arguments(call.input, spaced=self.spaced)
        else:
            arguments = call.arguments if call.arguments.strip() else "{}"
        try:
            value = json.loads(arguments)
        except (ValueError, RecursionError):
            value = None
        if not isinstance(value, dict):
            raise ChatRequestError("the arguments are not a JSON object's text", f"{where}.arguments")
        self.made[call.id] = (call.name, value, self.question)
        return action_text(call.name, arguments, spaced=self.spaced)

    def result(self, message: InMessage, at: str) -> None:
        call_id = message.tool_call_id or ""
        if call_id not in self.calls or call_id in self.answered:
            why = (
                "was answered already"
                if call_id in self.answered
                else "is no earlier assistant message's call"
            )
            raise ChatRequestError(
                f"the tool message answers the call {json.dumps(call_id)[:80]}, which {why}",
                f"{at}.tool_call_id",
                code="unknown_tool_call",
            )
        self.answered.add(call_id)
        tool, routed, _ = self.calls[call_id]
        text = routed_result_text(tool, routed, message.content, is_error=message.is_error)
        if call_id not in self.open:  # a call of an earlier message, answered late
            self.add("user", text)
            return
        self.waiting[call_id] = text
        while self.together and self.open and self.open[0] in self.waiting:
            # One decision's calls: their results in the order of the calls, and no action between.
            self.add("user", self.waiting.pop(self.open.popleft()))
        if self.together:
            self.together = bool(self.open)
            return
        while self.open and self.open[0] in self.waiting:
            self.add("user", self.waiting.pop(self.open.popleft()))
            if self.open:
                self.add("assistant", self.calls[self.open[0]][2])

    def flush(self) -> None:
        """Before another message: the open calls' actions, with the results that came, in order."""
        if self.together:  # one decision: its actions went out already, as one array
            self.together = False
            while self.open:
                first = self.open.popleft()
                if first in self.waiting:
                    self.add("user", self.waiting.pop(first))
            return
        while self.open:
            first = self.open.popleft()
            if first in self.waiting:
                self.add("user", self.waiting.pop(first))
            if self.open:
                self.add("assistant", self.calls[self.open[0]][2])


def ends_with_user(messages: Sequence[Message]) -> bool:
    """Whether a decision can be asked: the conversation ends with a user message or a result,
    with only system text after it (a client may add its reminders after the question)."""
    turns = [message for message in messages if message["role"] != "system"]
    return bool(turns) and turns[-1]["role"] == "user"
