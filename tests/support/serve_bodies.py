"""A chat completions body read as a front reads it, for the serve core's tests."""

from __future__ import annotations

from typing import Any


def body(**fields: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "What does the latch do?"}], **fields}
