"""The response object a reply is written as, in OpenAI's Responses shapes (``shapes``): its output
items (its reasoning first when the decision reasoned, then a ``message`` with one ``output_text``
part, or one ``function_call`` for each call the decision made, in the order written), its usage,
the request's fields it repeats (``ResponseEcho``), and a deleted response. The stream's events
that carry these items are ``writer``'s.

The response's id is ``resp_`` and the reply's key; its output items' are ``msg_``, ``rs_`` or
``fc_`` and the reply's item key (the calls after the first add their index, :func:`call_item_id`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping

from ..._backends import Usage
from ..._limits import CHARS_PER_TOKEN
from ..core import Reply, ReplyIds, ToolCall
from ..reasoning import Signer
from .shapes import (
    DeletedResponse,
    FunctionCallItem,
    ItemStatus,
    MessageItem,
    OutputItem,
    OutputText,
    ReasoningItem,
    ResponseEcho,
    ResponseObject,
    ResponsesUsage,
)

__all__ = [
    "Namespaces",
    "ReasoningOutput",
    "call_item",
    "call_item_id",
    "deleted_body",
    "message_item",
    "reasoning_item",
    "response_body",
    "text_part",
]


def call_item_id(ids: ReplyIds, index: int) -> str:
    """The id of the output item of the response's call at ``index`` (from 0), each its own."""
    return f"fc_{ids.item}" if index == 0 else f"fc_{ids.item}_{index}"


def _usage(usage: Usage, thought: str | None = None) -> ResponsesUsage:
    # The backends count the decision's tokens whole: the thought's share is estimated from its
    # characters, at the rule of thumb its budget was turned into characters by.
    reasoning = 0 if not thought else min(math.ceil(len(thought) / CHARS_PER_TOKEN), usage.completion_tokens)
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens, "cache_write_tokens": 0},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": usage.total_tokens,
    }


def message_item(ids: ReplyIds, text: str | None, status: ItemStatus) -> MessageItem:
    """The answer's message item; ``None``: the item as it is added, its part not yet."""
    return {
        "id": f"msg_{ids.item}",
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": [] if text is None else [text_part(text)],
    }


def text_part(text: str) -> OutputText:
    """The message's one ``output_text`` part."""
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


#: A namespace's tools by the name they are offered under (``NAMESPACE.NAME``): the two a call of
#: one is written back as.
Namespaces = Mapping[str, tuple[str, str]]


def call_item(
    ids: ReplyIds, call: ToolCall, index: int, status: ItemStatus, namespaces: Namespaces
) -> FunctionCallItem:
    """The output item of the response's call at ``index``, its ``namespace`` apart when its tool
    is a namespace's (``namespaces``)."""
    space, name = namespaces.get(call.name, (None, call.name))
    item_id, arguments = call_item_id(ids, index), call.arguments
    if space is None:
        return {
            "id": item_id,
            "type": "function_call",
            "call_id": call.id,
            "name": name,
            "arguments": arguments,
            "status": status,
        }
    return {
        "id": item_id,
        "type": "function_call",
        "call_id": call.id,
        "name": name,
        "namespace": space,
        "arguments": arguments,
        "status": status,
    }


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReasoningOutput:
    """How a reply's thought is written: with its ``summary`` too (``reasoning.summary`` asked),
    and its signature as ``encrypted_content`` (``include`` asked for it), by ``signer``."""

    summary: bool = False
    signer: Signer | None = None


def reasoning_item(
    ids: ReplyIds, thought: str, reasoning: ReasoningOutput, status: ItemStatus = "completed"
) -> ReasoningItem:
    """The reasoning item of a thought: its text as ``reasoning_text``, the summary when asked (the
    bounded thought is its own summary), the signed thought when asked."""
    item: ReasoningItem = {
        "id": f"rs_{ids.item}",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": thought}] if reasoning.summary and thought else [],
        "content": [{"type": "reasoning_text", "text": thought}] if thought else [],
        "status": status,
    }
    if reasoning.signer is not None:
        item["encrypted_content"] = reasoning.signer.sign(thought)
    return item


def _output(
    reply: Reply, ids: ReplyIds, namespaces: Namespaces, reasoning: ReasoningOutput
) -> list[OutputItem]:
    """The reply's output items: its reasoning first when it has a thought, then one for each of
    its calls, in order, or its answer as one message."""
    first: list[OutputItem] = [] if reply.thought is None else [reasoning_item(ids, reply.thought, reasoning)]
    if reply.calls:
        return [
            *first,
            *(call_item(ids, call, index, "completed", namespaces) for index, call in enumerate(reply.calls)),
        ]
    status: ItemStatus = "incomplete" if reply.finish_reason == "length" else "completed"
    return [*first, message_item(ids, reply.content or "", status)]


def response_body(
    ids: ReplyIds,
    echo: ResponseEcho,
    reply: Reply | None,
    namespaces: Namespaces | None = None,
    reasoning: ReasoningOutput | None = None,
) -> ResponseObject:
    """A ``response`` object, with the request's fields it ``echo`` es: in progress (no reply yet,
    no output), or the reply's, ``incomplete`` when the answer was cut at its cap; a call of a
    namespace's tool is written with its ``namespace`` (``namespaces``)."""
    cut = reply is not None and reply.finish_reason == "length"
    status: ItemStatus = "in_progress" if reply is None else "incomplete" if cut else "completed"
    return {
        "id": f"resp_{ids.key}",
        "object": "response",
        "created_at": ids.created,
        "status": status,
        "completed_at": None if reply is None or cut else int(time.time()),
        "background": False,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
        "model": ids.model,
        "output": []
        if reply is None
        else _output(reply, ids, namespaces or {}, reasoning or ReasoningOutput()),
        "reasoning": echo["reasoning"],
        "usage": None if reply is None else _usage(reply.usage, reply.thought),
        "user": None,
        "instructions": echo["instructions"],
        "metadata": echo["metadata"] or {},
        "tools": echo["tools"],
        "tool_choice": echo["tool_choice"],
        "parallel_tool_calls": echo["parallel_tool_calls"],
        "temperature": echo["temperature"],
        "top_p": echo["top_p"],
        "max_output_tokens": echo["max_output_tokens"],
        "previous_response_id": echo["previous_response_id"],
        "text": echo["text"],
        "truncation": echo["truncation"],
        "store": echo["store"],
    }


def deleted_body(response_id: str) -> DeletedResponse:
    """What ``DELETE /v1/responses/{id}`` answers."""
    return {"id": response_id, "object": "response", "deleted": True}
