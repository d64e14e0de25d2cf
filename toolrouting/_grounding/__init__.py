"""Grounding: whether a routed call's required arguments come from the conversation.

The numbers a text names (``numbers``), its dates and times (``dates``), its words compared
without case, accents, punctuation or plurals (``words``); an argument's kind, a value given or
one the model composes, read from its schema (``kinds``); a conversation read into the evidence
a call is checked against (``evidence``); a call's arguments held against it (``check``); and
abstention, the policy that turns a decision whose call lacks half its arguments into ``none`` (``policy``).
Pure functions of their arguments: no model, no I/O.
"""

from .check import WORD_SHARE, Grounding, Kind, Ungrounded, checked_arguments, grounding
from .evidence import Evidence, conversation_evidence
from .kinds import COMPOSED_WORDS, GIVEN_WORDS, ArgumentClass, ArgumentKind, argument_kind
from .policy import ABSTAIN_POLICIES, ABSTAIN_SHARE, AbstainPolicy, Abstention, abstention, checked_policy

__all__ = [
    "ABSTAIN_POLICIES",
    "ABSTAIN_SHARE",
    "COMPOSED_WORDS",
    "GIVEN_WORDS",
    "WORD_SHARE",
    "AbstainPolicy",
    "Abstention",
    "ArgumentClass",
    "ArgumentKind",
    "Evidence",
    "Grounding",
    "Kind",
    "Ungrounded",
    "abstention",
    "argument_kind",
    "checked_arguments",
    "checked_policy",
    "conversation_evidence",
    "grounding",
]
