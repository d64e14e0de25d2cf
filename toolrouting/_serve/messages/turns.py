"""An Anthropic Messages request's ``system`` and ``messages`` read into the core's messages.

``system`` becomes a system message, and so does a ``system`` turn inside ``messages``, in its
place (Claude Code sends its environment and its reminders so, after the first question); an
assistant's ``tool_use`` blocks its tool calls, their ``input`` the arguments object the core
writes as the route grammar writes arguments (so a call this server made comes back as the bytes
the backend wrote), and its ``thinking`` blocks, their signature checked,
the thought its first action is written with; a user's ``tool_result`` blocks the tool messages
that answer them by ``tool_use_id``. A block of a kind the server cannot honour (an image, a
document, another server's redacted thinking) is refused by its place.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from ..._errors import ChatRequestError
from ..._names import tool_name_problem
from ..core import InMessage, ToolCall
from ..fields import flag, json_kind, known_role, shown_value
from ..reasoning import Signer

__all__ = ["read_turns", "referenced_tools"]

#: How text blocks are joined into one message's text: as separate paragraphs.
_BLOCKS_JOINED = "\n\n"
#: A ``tool_reference`` block in a result, as the text the backend reads: the tool it loaded,
#: which the decision then offers.
_LOADED = "Tool loaded: "


def read_turns(system: object, messages: object, *, signer: Signer | None = None) -> tuple[InMessage, ...]:
    """The request's ``system`` and ``messages`` as the core's messages; ``signer`` checks a
    thinking block's signature. A bad one is refused by its path."""
    return (*_system(system), *_messages(messages, signer))


def referenced_tools(messages: object) -> frozenset[str]:
    """The tools a ``tool_reference`` block in a ``tool_result`` names (a tool search's result
    loads a deferred tool so): those the decision may offer although declared ``defer_loading``.
    Only well-formed blocks count; the rest is refused when the turns are read."""
    names: set[str] = set()
    for item in messages if isinstance(messages, list) else ():
        content = item.get("content") if isinstance(item, Mapping) else None
        for block in content if isinstance(content, list) else ():
            inner = block.get("content") if isinstance(block, Mapping) else None
            if (
                not isinstance(block, Mapping)
                or block.get("type") != "tool_result"
                or not isinstance(inner, list)
            ):
                continue
            names.update(
                part["tool_name"]
                for part in inner
                if isinstance(part, Mapping)
                and part.get("type") == "tool_reference"
                and isinstance(part.get("tool_name"), str)
            )
    return frozenset(names)


def _system(value: object) -> tuple[InMessage, ...]:
    if value is None:
        return ()
    text = value if isinstance(value, str) else _texts(value, "system")
    return (InMessage(role="system", content=text),) if text else ()


def _texts(value: object, at: str) -> str:
    """Text blocks' text, joined; any other block is refused by its place."""
    if not isinstance(value, list):
        raise ChatRequestError(f"{at} is a string or a list of text blocks, not {json_kind(value)}", at)
    return _BLOCKS_JOINED.join(_text_block(block, f"{at}[{index}]") for index, block in enumerate(value))


def _text_block(block: object, where: str) -> str:
    kind = block.get("type") if isinstance(block, Mapping) else None
    if not isinstance(block, Mapping) or kind != "text":
        raise _block_refused(kind, where, "text")
    return _text(block, where)


def _text(block: Mapping[str, Any], where: str) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise ChatRequestError(
            f"a text block carries its text as a string, not {json_kind(text)}", f"{where}.text"
        )
    return text


def _block_refused(kind: object, where: str, served: str) -> ChatRequestError:
    if not isinstance(kind, str):
        return ChatRequestError(f"a content block is an object with a type, not {shown_value(kind)}", where)
    return ChatRequestError(
        f"a content block of type {shown_value(kind)} is not served here: only {served} blocks are",
        f"{where}.type",
        code="unsupported_content",
    )


def _messages(value: object, signer: Signer | None) -> list[InMessage]:
    if not isinstance(value, list) or not value:
        raise ChatRequestError(
            f"messages is a non-empty list of messages, not {json_kind(value)}", "messages"
        )
    read: list[InMessage] = []
    # Each tool_use's id, and whether a tool_result answered it: refused here, by Anthropic's
    # paths, before the core pairs them by the messages it is given.
    calls: dict[str, bool] = {}
    for index, item in enumerate(value):
        at = f"messages[{index}]"
        if not isinstance(item, Mapping):
            raise ChatRequestError(f"a message is an object, not {json_kind(item)}", at)
        role = known_role(item, at, ("user", "assistant", "system"))
        if role == "system":
            content = item.get("content")
            text = content if isinstance(content, str) else _texts(content, f"{at}.content")
            read.extend([InMessage(role="system", content=text)] if text else [])
            continue
        read.extend(_turn(role, item.get("content"), f"{at}.content", calls, signer))
    return read


def _blocks(content: object, at: str) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not content:
        raise ChatRequestError(
            f"content is a string or a non-empty list of blocks, not {json_kind(content)}", at
        )
    for index, block in enumerate(content):
        if not isinstance(block, Mapping):
            raise ChatRequestError(f"a content block is an object, not {json_kind(block)}", f"{at}[{index}]")
    return content


def _turn(
    role: str, content: object, at: str, calls: dict[str, bool], signer: Signer | None
) -> list[InMessage]:
    """One turn's blocks. A user's: each tool_result a tool message, a run of text blocks before
    one a user message, and the text after the last one part of that result (a client's note on
    the results, as Claude Code adds: read as a new question, it would be what the answer answers);
    without results, the text is one user message. An assistant's: one message, its text blocks'
    text, its tool_use blocks' calls, and its thinking, checked, the thought of its calls (a
    thinking block beside no call, the answer's, is left out, as Anthropic leaves out earlier
    turns' thinking)."""
    read: list[InMessage] = []
    texts: list[str] = []
    uses: list[ToolCall] = []
    thoughts: list[str] = []
    for index, block in enumerate(_blocks(content, at)):
        where = f"{at}[{index}]"
        kind = block.get("type")
        if kind == "text":
            texts.append(_text(block, where))
        elif kind == "tool_use" and role == "assistant":
            uses.append(_call(block, where, calls))
        elif kind == "thinking" and role == "assistant":
            thoughts.append(_thought(block, where, signer))
        elif kind == "redacted_thinking" and role == "assistant":
            raise ChatRequestError(
                "redacted thinking is another server's (this one never writes it): leave it out",
                f"{where}.type",
                code="invalid_signature",
            )
        elif kind == "tool_result" and role == "user":
            if texts:
                read.append(InMessage(role="user", content=_BLOCKS_JOINED.join(texts)))
                texts = []
            read.append(_result(block, where, calls))
        else:
            raise _block_refused(
                kind, where, "text, thinking and tool_use" if role == "assistant" else "text and tool_result"
            )
    if role == "assistant":
        thought = _BLOCKS_JOINED.join(thoughts) if thoughts and uses else None
        content = _BLOCKS_JOINED.join(texts)
        return [InMessage(role="assistant", content=content, tool_calls=tuple(uses), thought=thought)]
    if texts and read and read[-1].role == "tool":
        last = read[-1]
        read[-1] = dataclasses.replace(last, content=_BLOCKS_JOINED.join([last.content, *texts]))
    elif texts:
        read.append(InMessage(role="user", content=_BLOCKS_JOINED.join(texts)))
    return read


def _thought(block: Mapping[str, Any], where: str, signer: Signer | None) -> str:
    """A thinking block's thought, from its signature, which this server's secret must have signed;
    its ``thinking`` text, when sent, must be the one signed (empty when ``display`` omitted it)."""
    if signer is None:
        raise _block_refused("thinking", where, "text and tool_use")
    signed = signer.read(block.get("signature"), f"{where}.signature")
    text = block.get("thinking")
    if text not in (None, "", signed):
        raise ChatRequestError(
            "the thinking is not the text its signature signs: send the block back as the server wrote it",
            f"{where}.thinking",
            code="invalid_signature",
        )
    return signed


def _result(block: Mapping[str, Any], where: str, calls: dict[str, bool]) -> InMessage:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise ChatRequestError("a tool_result names the tool_use it answers", f"{where}.tool_use_id")
    if calls.get(call_id, True):
        why = "was answered already" if call_id in calls else "is no earlier tool_use"
        raise ChatRequestError(
            f"the tool_result answers {json.dumps(call_id)[:80]}, which {why}",
            f"{where}.tool_use_id",
            code="unknown_tool_call",
        )
    calls[call_id] = True
    is_error = flag(block, "is_error", False, f"{where}.is_error")
    content = block.get("content")
    text = (
        ""
        if content is None
        else content
        if isinstance(content, str)
        else _result_text(content, f"{where}.content")
    )
    return InMessage(role="tool", content=text, tool_call_id=call_id, is_error=is_error)


def _result_text(value: object, at: str) -> str:
    """A tool result's blocks as text: text blocks, and a ``tool_reference`` (a tool search's
    result) as the line that says which tool it loaded."""
    if not isinstance(value, list):
        raise ChatRequestError(f"{at} is a string or a list of text blocks, not {json_kind(value)}", at)
    texts = []
    for index, block in enumerate(value):
        where = f"{at}[{index}]"
        kind = block.get("type") if isinstance(block, Mapping) else None
        if not isinstance(block, Mapping) or kind not in ("text", "tool_reference"):
            raise _block_refused(kind, where, "text and tool_reference")
        if kind == "text":
            texts.append(_text(block, where))
            continue
        name = block.get("tool_name")
        if not isinstance(name, str) or not name:
            raise ChatRequestError("a tool_reference names a tool in tool_name", f"{where}.tool_name")
        texts.append(f"{_LOADED}{name}")
    return _BLOCKS_JOINED.join(texts)


def _call(block: Mapping[str, Any], where: str, calls: dict[str, bool]) -> ToolCall:
    call_id, name, arguments = block.get("id"), block.get("name"), block.get("input")
    if not isinstance(call_id, str) or not call_id:
        raise ChatRequestError(
            f"a tool_use's id is a non-empty string, not {shown_value(call_id)}", f"{where}.id"
        )
    if call_id in calls:
        raise ChatRequestError(f"the tool_use id {json.dumps(call_id)[:80]} is used twice", f"{where}.id")
    calls[call_id] = False
    if not isinstance(name, str):
        raise ChatRequestError(f"a tool_use's name is a string, not {json_kind(name)}", f"{where}.name")
    problem = tool_name_problem(name)
    if problem is not None:
        raise ChatRequestError(problem, f"{where}.name")
    if not isinstance(arguments, Mapping):
        raise ChatRequestError(
            f"a tool_use's input is an object, not {json_kind(arguments)}", f"{where}.input"
        )
    try:
        text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError):
        raise ChatRequestError("the input nests too deeply to send", f"{where}.input") from None
    return ToolCall(id=call_id, name=name, arguments=text, input=arguments)
