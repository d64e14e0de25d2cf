"""Grounding: whether a routed call's required arguments come from the conversation.

The numbers a text names (``numbers``), its dates and times (``dates``), its words compared
without case, accents, punctuation or plurals (``words``); a conversation read into the evidence
a call is checked against (``evidence``); and a call's arguments held against it (``check``).
Pure functions of their arguments: no model, no I/O.
"""

from .check import WORD_SHARE, Grounding, Kind, Ungrounded, checked_arguments, grounding
from .evidence import Evidence, conversation_evidence

__all__ = [
    "WORD_SHARE",
    "Evidence",
    "Grounding",
    "Kind",
    "Ungrounded",
    "checked_arguments",
    "conversation_evidence",
    "grounding",
]
