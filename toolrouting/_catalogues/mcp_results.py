"""An MCP ``tools/call`` result as a :class:`ToolOutput`: what the model reads of what the server answered.

The result is taken as the wire shape (``{"content": [...], "structuredContent"?, "isError"?}``,
as the SDK's ``model_dump(by_alias=True)`` writes it), so nothing here depends on the SDK:

- text blocks are joined, one per line;
- ``structuredContent`` is written as compact JSON when no block carries text (a server that
  sends both sends the same data twice, and the text is what it meant the model to read);
- images, audio, resource links and embedded binary resources are described in one line each
  (``[image: image/png, 5120 bytes]``) rather than dropped, so the model knows they came;
- ``isError`` makes it an error result;
- a result longer than the limit keeps its head and tail around a marker (``cut_middle``).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from .._limits import SHOWN_NAME_CHARS
from .._provider import ToolOutput, cut_middle

__all__ = ["block_text", "tool_output"]


def tool_output(result: Mapping[str, Any], limit: int) -> ToolOutput:
    """The :class:`ToolOutput` of one ``tools/call`` result, cut to ``limit`` characters."""
    blocks = result.get("content")
    blocks = blocks if isinstance(blocks, list) else []
    parts = [block_text(block) for block in blocks]
    has_text = any(isinstance(block, Mapping) and block.get("type") == "text" for block in blocks)
    structured = result.get("structuredContent")
    if structured is not None and not has_text:
        parts.insert(0, json.dumps(structured, ensure_ascii=False, separators=(",", ":")))
    text = "\n".join(parts)
    is_error = result.get("isError") is True
    if not text:
        text = (
            "the tool reported an error and gave no content" if is_error else "(the tool returned no content)"
        )
    return ToolOutput(cut_middle(text, limit), is_error=is_error)


def block_text(block: object) -> str:
    """One content block as text: a text block's text, any other block described in one line."""
    if not isinstance(block, Mapping):
        return f"[a content block that is a {type(block).__name__}]"
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind}: {_short(block.get('mimeType'))}, {_size(block.get('data'))}]"
    if kind == "resource_link":
        name = block.get("title") or block.get("name")
        mime = f", {_short(block.get('mimeType'))}" if block.get("mimeType") else ""
        return f"[resource link: {_short(name)} at {_short(block.get('uri'))}{mime}]"
    if kind == "resource":
        resource = block.get("resource")
        if not isinstance(resource, Mapping):
            return "[resource: no contents]"
        if isinstance(resource.get("text"), str):
            return str(resource["text"])
        mime = f", {_short(resource.get('mimeType'))}" if resource.get("mimeType") else ""
        return f"[resource: {_short(resource.get('uri'))}{mime}, {_size(resource.get('blob'))}]"
    return f"[{_short(kind)} content]"


def _short(value: object) -> str:
    text = "unknown" if value is None else str(value)
    return text if len(text) <= SHOWN_NAME_CHARS else text[: SHOWN_NAME_CHARS - 1] + "…"


def _size(data: object) -> str:
    """The size of base64 ``data`` once decoded, as the model should read it."""
    if not isinstance(data, str):
        return "no data"
    try:
        return f"{len(base64.b64decode(data, validate=True))} bytes"
    except (binascii.Error, ValueError):
        return f"{len(data)} characters of data that is not base64"
