"""What the demo tells the model before the user's question."""

from __future__ import annotations

__all__ = ["SYSTEM_PROMPT"]

#: The demo's system message: what its two tools are for, and when to hand off.
SYSTEM_PROMPT = (
    "You answer questions from a store of notes. Each turn, choose one action: memory_search to find "
    "notes about the question, memory_read to read notes a search listed, or none once you have what "
    "you need."
)
