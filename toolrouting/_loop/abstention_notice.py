"""The abstention notice: the message that records a decision the loop turned into ``none``.

It follows the model's reply in the same commit, and says which tool was not called and what
the conversation lacks; resuming a transcript recognises it by its first words and its shape
(:func:`is_abstention_notice`), and the answer request repeats its reason, so it is worded here
once.
"""

from __future__ import annotations

__all__ = ["ABSTAINED_LEAD", "abstention_notice", "is_abstention_notice", "notice_reason"]

#: How every abstention notice begins; resuming a transcript recognises one by it.
ABSTAINED_LEAD = "Not called: "


def abstention_notice(reason: str) -> str:
    """The message that records an abstained decision, after the model's reply."""
    return f"{ABSTAINED_LEAD}{reason}."


def is_abstention_notice(text: str) -> bool:
    """Whether ``text`` is a message :func:`abstention_notice` wrote."""
    return text.startswith(ABSTAINED_LEAD) and text.endswith(".") and "\n" not in text


def notice_reason(text: str) -> str:
    """The reason an abstention notice gives (``get_weather needs city, which ...``)."""
    return text.removeprefix(ABSTAINED_LEAD).removesuffix(".")
