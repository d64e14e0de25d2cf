"""What the demo adds to the loop's instructions: what the notes are, and how its two tools meet."""

from __future__ import annotations

__all__ = ["SYSTEM_PROMPT"]

#: The demo's own system message. The loop puts the catalogue in front of it; this says only
#: what the catalogue cannot: what the notes are, and that memory_read, absent from the
#: run-start catalogue, is offered once a search has listed notes.
SYSTEM_PROMPT = (
    "The questions are about a store of notes, and their answers are in the notes, not in general "
    "knowledge. memory_read, offered once a search has listed notes, reads them. Answer none only "
    "once you have read the note that answers the question; until then, search the notes for the "
    "question's words with memory_search."
)
