"""The demo: a store of notes searched with SQLite FTS5, its sample notes and its prompt.

It is what ``toolrouting run`` routes over when no other tools are named, and a small,
complete example of a tool provider whose catalogue narrows as a run goes.
"""

from .prompt import SYSTEM_PROMPT
from .store import MemoryStore, sample_notes

__all__ = ["SYSTEM_PROMPT", "MemoryStore", "sample_notes"]
