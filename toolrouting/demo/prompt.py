"""What the demo adds to the loop's instructions: where the answers are, and the first action."""

from __future__ import annotations

from .store import MemoryStore

__all__ = ["SEARCH_PROMPT", "SYSTEM_PROMPT", "demo_prompt"]

#: The demo's own system message, for its notes offered by title (``MemoryStore(titles=True)``).
#: The loop puts the catalogue in front of it; this says only what the catalogue cannot: that
#: the answers are in the notes, and which action comes first. The example names no title: a
#: small model copies an example's words, and the grammar, not the example, holds it to a title
#: that exists. Without the example SmolLM2-135M answered ``none`` at once in 9 runs of 12.
SYSTEM_PROMPT = (
    "The answers are in the notes, never in general knowledge. First read the note whose title fits "
    'the question: {"tool": "memory_read", "arguments": {"title": "TITLE"}}.'
)

#: The demo's system message for a store too large to list, searched first: memory_read,
#: absent from the run-start catalogue, is offered once a search has listed notes.
SEARCH_PROMPT = (
    "The questions are about a store of notes, and their answers are in the notes, not in general "
    "knowledge. memory_read, offered once a search has listed notes, reads them. Answer none only "
    "once you have read the note that answers the question; until then, search the notes for the "
    "question's words with memory_search."
)


def demo_prompt(store: MemoryStore) -> str:
    """The demo's system message for ``store``: :data:`SYSTEM_PROMPT` when it offers its notes
    by title, else :data:`SEARCH_PROMPT`."""
    return SEARCH_PROMPT if store.listed_titles() is None else SYSTEM_PROMPT
