"""An Anthropic Messages request body read into the one :class:`ChatRequest` the core serves, or
refused with where and why.

The Messages front's only translation in: ``system`` becomes a system message; an assistant's
``tool_use`` blocks its tool calls, their ``input`` written as the route grammar writes
arguments (compact or spaced as the backend's settings say), so a call this server made comes
back as the bytes the backend wrote; a user's ``tool_result`` blocks the tool messages that
answer them by ``tool_use_id``. ``tools`` become function declarations and ``tool_choice`` the
core's offer. What the server cannot honour (images, documents, thinking, server tools,
structured output) is refused by the field that asks for it; what is harmless to leave alone
(``metadata``, ``cache_control``, ``service_tier``) is accepted. ``tool_choice``'s
``disable_parallel_tool_use: true`` makes a decision one call; absent or false, it may make up
to the server's ``max_calls``, one ``tool_use`` block each.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._errors import ChatRequestError
from .._json import is_count
from .._names import tool_name_problem
from .choice import ToolChoice
from .conversation import written_arguments
from .fields import json_kind, number_field, shown_value
from .request import ChatRequest, InMessage, ToolCall

__all__ = ["read_messages_request"]

#: How text blocks are joined into one message's text: as separate paragraphs.
_BLOCKS_JOINED = "\n\n"
_CHOICES = '{"type": "auto"}, {"type": "any"}, {"type": "tool", "name": NAME} or {"type": "none"}'
_UNSUPPORTED = "unsupported_content"


def read_messages_request(body: object, *, spaced: bool, counting: bool = False) -> ChatRequest:
    """The Messages request ``body`` (decoded JSON) as a :class:`ChatRequest`; ``spaced`` is the
    backend's layout of arguments. ``counting`` reads a ``count_tokens`` body, which has no
    ``max_tokens``."""
    if not isinstance(body, Mapping):
        raise ChatRequestError(f"the body is a JSON object, not {json_kind(body)}")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise ChatRequestError(f"a model name is a string, not {json_kind(model)}", "model")
    _refuse_unserved(body)
    max_tokens = body.get("max_tokens")
    if max_tokens is None and not counting:
        raise ChatRequestError("max_tokens is required", "max_tokens")
    if max_tokens is not None and not is_count(max_tokens, 1):
        raise ChatRequestError(
            f"a token cap is a positive integer, not {shown_value(max_tokens)}", "max_tokens"
        )
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise ChatRequestError(f"metadata is an object, not {json_kind(metadata)}", "metadata")
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise ChatRequestError(f"stream is a boolean, not {json_kind(stream)}", "stream")
    top_k = body.get("top_k")
    if top_k is not None and not is_count(top_k, 0):
        raise ChatRequestError(f"top_k is a non-negative integer, not {shown_value(top_k)}", "top_k")
    tools = _tools(body.get("tools"))
    choice = body.get("tool_choice")
    return ChatRequest(
        model=model,
        messages=(*_system(body.get("system")), *_messages(body.get("messages"), spaced)),
        tools=tools,
        tool_choice=_tool_choice(choice, tools),
        max_tokens=max_tokens,
        temperature=number_field(body, "temperature", 1.0),
        top_p=number_field(body, "top_p", 1.0),
        top_k=top_k,
        seed=None,
        stop=_stops(body.get("stop_sequences")),
        stream=bool(stream),
        include_usage=True,
        # _tool_choice checked that the flag, when sent, is a boolean.
        parallel_tool_calls=not (isinstance(choice, Mapping) and choice.get("disable_parallel_tool_use")),
    )


def _refuse_unserved(body: Mapping[str, Any]) -> None:
    """The fields that would change the reply in a way the server cannot honour, refused by name."""
    thinking = body.get("thinking")
    if thinking is not None and not (isinstance(thinking, Mapping) and thinking.get("type") == "disabled"):
        raise ChatRequestError(
            "extended thinking is not served: the backend writes no thinking blocks",
            "thinking",
            code="unsupported_parameter",
        )
    for field, why in (
        ("mcp_servers", "the server connects to no MCP server"),
        ("container", "the server runs no container"),
        ("output_format", "the server constrains the tool decision itself"),
    ):
        if body.get(field) is not None:
            raise ChatRequestError(f"{field} is not served: {why}", field, code="unsupported_parameter")
    output = body.get("output_config")
    if isinstance(output, Mapping) and output.get("format") is not None:
        raise ChatRequestError(
            "structured output is not served: the server constrains the tool decision itself",
            "output_config.format",
            code="unsupported_parameter",
        )


def _stops(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(stop, str) and stop for stop in value):
        raise ChatRequestError("stop_sequences is a list of non-empty strings", "stop_sequences")
    return tuple(value)


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
        code=_UNSUPPORTED,
    )


def _messages(value: object, spaced: bool) -> list[InMessage]:
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
        role = item.get("role")
        content = item.get("content")
        if role not in ("user", "assistant"):
            raise ChatRequestError(
                f"the role {shown_value(role)} is not user or assistant", f"{at}.role", code="unknown_role"
            )
        read.extend(_turn(role, content, f"{at}.content", spaced, calls))
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


def _turn(role: str, content: object, at: str, spaced: bool, calls: dict[str, bool]) -> list[InMessage]:
    """One turn's blocks. A user's: each run of text blocks one user message, each tool_result a
    tool message. An assistant's: one message, its text blocks' text and its tool_use blocks' calls."""
    read: list[InMessage] = []
    texts: list[str] = []
    uses: list[ToolCall] = []
    for index, block in enumerate(_blocks(content, at)):
        where = f"{at}[{index}]"
        kind = block.get("type")
        if kind == "text":
            texts.append(_text(block, where))
        elif kind == "tool_use" and role == "assistant":
            uses.append(_call(block, where, spaced, calls))
        elif kind == "tool_result" and role == "user":
            if texts:
                read.append(InMessage(role="user", content=_BLOCKS_JOINED.join(texts)))
                texts = []
            read.append(_result(block, where, calls))
        else:
            raise _block_refused(
                kind, where, "text and tool_use" if role == "assistant" else "text and tool_result"
            )
    if role == "assistant":
        return [InMessage(role="assistant", content=_BLOCKS_JOINED.join(texts), tool_calls=tuple(uses))]
    if texts:
        read.append(InMessage(role="user", content=_BLOCKS_JOINED.join(texts)))
    return read


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
    is_error = block.get("is_error")
    if is_error is not None and not isinstance(is_error, bool):
        raise ChatRequestError(f"is_error is a boolean, not {json_kind(is_error)}", f"{where}.is_error")
    content = block.get("content")
    text = (
        ""
        if content is None
        else content
        if isinstance(content, str)
        else _texts(content, f"{where}.content")
    )
    return InMessage(role="tool", content=text, tool_call_id=call_id, is_error=bool(is_error))


def _call(block: Mapping[str, Any], where: str, spaced: bool, calls: dict[str, bool]) -> ToolCall:
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
        text = written_arguments(arguments, spaced=spaced)
    except (ValueError, RecursionError):
        raise ChatRequestError("the input nests too deeply to send", f"{where}.input") from None
    return ToolCall(id=call_id, name=name, arguments=text)


def _tools(value: object) -> tuple[dict[str, Any], ...]:
    """The client tools as function declarations (the core's one catalogue shape); a server tool
    is refused by its type."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ChatRequestError(f"tools is a list of tools, not {json_kind(value)}", "tools")
    declared = []
    for index, tool in enumerate(value):
        at = f"tools[{index}]"
        if not isinstance(tool, Mapping):
            raise ChatRequestError(f"a tool is an object, not {json_kind(tool)}", at)
        if tool.get("type") not in (None, "custom"):
            raise ChatRequestError(
                f"a tool of type {shown_value(tool.get('type'))} is not served: only client tools "
                "(name, description, input_schema) are",
                f"{at}.type",
                code="unsupported_tool",
            )
        if not isinstance(tool.get("input_schema"), Mapping):
            raise ChatRequestError(
                f"a tool's input_schema is an object, not {json_kind(tool.get('input_schema'))}",
                f"{at}.input_schema",
            )
        function: dict[str, Any] = {"name": tool.get("name")}
        if "description" in tool:
            function["description"] = tool["description"]
        function["parameters"] = tool["input_schema"]
        declared.append({"type": "function", "function": function})
    return tuple(declared)


def _tool_choice(value: object, tools: tuple[dict[str, Any], ...]) -> ToolChoice:
    if value is None:
        return ToolChoice("auto" if tools else "none")
    kind = value.get("type") if isinstance(value, Mapping) else None
    if not isinstance(value, Mapping) or kind not in ("auto", "any", "tool", "none"):
        raise ChatRequestError(f"tool_choice is {_CHOICES}", "tool_choice")
    disable = value.get("disable_parallel_tool_use")
    if disable is not None and not isinstance(disable, bool):
        raise ChatRequestError(
            f"disable_parallel_tool_use is a boolean, not {json_kind(disable)}",
            "tool_choice.disable_parallel_tool_use",
        )
    if kind == "none":
        return ToolChoice("none")
    if not tools:
        raise ChatRequestError(f"tool_choice {kind!r} needs tools to choose from", "tool_choice")
    if kind == "auto":
        return ToolChoice("auto")
    if kind == "any":
        return ToolChoice("required")
    name = value.get("name")
    if not isinstance(name, str):
        raise ChatRequestError(f"tool_choice is {_CHOICES}", "tool_choice.name")
    if name not in [tool["function"]["name"] for tool in tools]:
        raise ChatRequestError(
            f"tool_choice names {shown_value(name)}, which tools does not declare",
            "tool_choice.name",
            code="unknown_tool",
        )
    return ToolChoice("required", (name,))
