"""The demo: a store of notes searched with SQLite FTS5, its sample notes and its prompt.

It is what ``toolrouting run`` routes over when no other tools are named, and a small,
complete example of a tool provider whose catalogue narrows as a run goes.
"""

from .prompt import SEARCH_PROMPT, SYSTEM_PROMPT, demo_prompt
from .store import MemoryStore, sample_notes

__all__ = ["SEARCH_PROMPT", "SYSTEM_PROMPT", "MemoryStore", "demo_prompt", "sample_notes"]
