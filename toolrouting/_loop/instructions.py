"""What the loop tells the model before the conversation: the catalogue, in one system message.

The route schema constrains sampling and is never shown to the model; without this text a
model chooses among tool names it has never seen explained. By default a run renders the
provider's catalogue as the run starts (``catalogue_prompt``) into a system message. When the
caller's conversation starts with a system message of its own, the two become one message,
the rendered catalogue first and the caller's text after it, never replaced.

The message is built once, before anything is committed, and goes into the transcript with
the caller's messages (the header counts it among them). Every round sends it unchanged, so
the prefix a server caches is never invalidated by the loop, even when the provider narrows
its catalogue later (the grammar, not the text, is what enforces the narrower offer). A
resumed run sends the bytes the transcript holds and never renders again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._backends import Message
from .._catalogue_prompt import catalogue_prompt

__all__ = ["INSTRUCTIONS_SEPARATOR", "THOUGHT_NOTE", "Instructions", "checked_instructions", "instructed"]

#: ``True``: the run-start catalogue, rendered; a string: that text instead; ``False``: nothing.
Instructions = bool | str

#: What goes between the loop's instructions and the caller's own system message.
INSTRUCTIONS_SEPARATOR = "\n\n"


#: What the rendered catalogue adds when the route has a reasoning slot, which the grammar puts
#: before "tool": without it the catalogue's reply format would contradict the grammar.
THOUGHT_NOTE = (
    'Begin the reply with "thought": a few words on what the user needs and which tool, if any, '
    'does it; then "tool".'
)


def checked_instructions(instructions: object) -> Instructions:
    """``instructions`` when it is one of the forms :data:`Instructions` allows, else an error."""
    if isinstance(instructions, bool):
        return instructions
    if not isinstance(instructions, str):
        raise TypeError(
            "instructions= is True (the catalogue, rendered), a str of your own, or False (none), "
            f"not {type(instructions).__name__}"
        )
    if not instructions.strip():
        raise ValueError("instructions= is an empty text; give the text to send, or False to send none")
    return instructions


def instructed(
    conversation: Sequence[Message],
    instructions: Instructions,
    tools: Sequence[Mapping[str, Any]],
    *,
    thought: int | None = None,
    max_calls: int = 1,
) -> list[Message]:
    """``conversation`` with the instructions in its system message: merged into the caller's
    first message when that is a system message, else a system message of their own in front.
    The rendered catalogue says how to fill a reasoning slot when the route has one, and that a
    reply may make up to ``max_calls`` calls when that is above 1."""
    if instructions is False:
        return list(conversation)
    if instructions is True:
        text = catalogue_prompt(tools, max_calls=max_calls) + (
            "\n" + THOUGHT_NOTE if thought is not None else ""
        )
    else:
        text = instructions
    first = conversation[0] if conversation else None
    if first is not None and first["role"] == "system":
        merged = Message(role="system", content=text + INSTRUCTIONS_SEPARATOR + first["content"])
        return [merged, *conversation[1:]]
    return [Message(role="system", content=text), *conversation]
