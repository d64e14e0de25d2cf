"""A decision's reply read: the answer a route's ``none`` holds, or the calls it makes, and the
decision's thought.

The thought is the route's ``thought`` slot where the decision has one, or what the model
reasoned in its own tags (``Completion.reasoning``) where the backend reasons so
(``Decision.reasoning_budget``). A reply that is no valid action is the backend's failure: a
:class:`BackendResponseError` that quotes it and says what was wrong.
"""

from __future__ import annotations

from ..._backends import Completion
from ..._errors import BackendResponseError
from ..._names import NONE_TOOL
from ..._parse import quote_reply
from ..._parse_calls import parse_routes
from ..._result_messages import routed_call_id
from ..._route_schema import answer_head
from .call_pieces import cut_thought
from .conversation import Conversation, arguments_text, without_thought
from .exchange import ToolCall
from .plan import Decision

__all__ = ["accepted_calls", "held_answer"]


def held_answer(
    decision: Decision, completion: Completion, *, spaced: bool
) -> tuple[str, bool, str | None] | None:
    """The answer a route's ``none`` holds, whether the cap cut it, and the decision's thought;
    ``None`` when the reply is not such a ``none`` (:func:`accepted_calls` then reads it)."""
    if not decision.answers:
        return None
    routes = parse_routes(
        completion.text,
        decision.names,
        max_calls=decision.max_calls,
        answer=True,
        thought=decision.thought,
    )
    if routes.ok and routes.calls[0].answer is not None:
        return (
            routes.calls[0].answer,
            completion.truncated,
            _thought(decision, completion, routes.calls[0].thought),
        )
    head = answer_head(spaced=spaced)
    text = completion.text
    if decision.thought is not None:  # the thought as far as it was written, when it was closed
        thought = cut_thought(text, spaced)
        text = without_thought(text, thought, spaced=spaced)
    else:
        thought = _thought(decision, completion, None)
    if completion.truncated and text.startswith(head):
        return text[len(head) :], True, thought  # what the answer had so far
    return None


def accepted_calls(
    decision: Decision, completion: Completion, conversation: Conversation, *, cap: int, spaced: bool
) -> tuple[tuple[ToolCall, ...], str | None]:
    """The calls a decision makes, none for ``none``, and its thought (the calls' thoughts joined,
    when it made several); a reply that is no valid action is refused (``cap``: the routing cap)."""
    routes = parse_routes(
        completion.text,
        decision.names,
        max_calls=decision.max_calls,
        answer=decision.answers,
        thought=decision.thought,
    )
    route = routes.calls[0] if routes.ok else None
    if completion.truncated:
        problem = (
            f"it was cut off at the cap of the route and its answer ({cap} tokens and the answer's)"
            if decision.answers
            else f"it was cut off at the routing cap of {cap} tokens"
        )
    elif route is None:
        problem = str(routes.error)
    elif route.tool == NONE_TOOL and not decision.handoff:
        problem = "it is none, and the request's tool_choice demands a tool call"
    else:
        problem = None
    if problem is not None:
        raise BackendResponseError(
            f"the backend's reply is not a valid action: {problem} ({quote_reply(completion.text)}); "
            "check that the backend enforces the route schema"
        )
    thoughts = [call.thought for call in routes.calls if call.thought is not None]
    thought = _thought(decision, completion, "\n\n".join(thoughts))
    calls: list[ToolCall] = []
    for number, call in enumerate(routes.calls, start=conversation.calls + 1):
        if call.tool == NONE_TOOL or call.tool is None or call.text is None:
            return (), thought
        text = without_thought(call.text, call.thought, spaced=spaced)
        arguments = arguments_text(text, call.tool, call.arguments or {}, spaced=spaced)
        calls.append(ToolCall(id=routed_call_id(number), name=call.tool, arguments=arguments))
    return tuple(calls), thought


def _thought(decision: Decision, completion: Completion, slot: str | None) -> str | None:
    """The decision's thought: the model's own reasoning where it reasoned in its tags, the
    route's slot (``slot``) where the decision has one, else none."""
    if decision.reasoning_budget is not None:
        return completion.reasoning or ""
    return slot if decision.thought is not None else None
