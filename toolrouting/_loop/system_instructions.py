"""The system instructions: the catalogue the model reads before the conversation, in one system message.

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

__all__ = [
    "INSTRUCTIONS_SEPARATOR",
    "THOUGHT_NOTE",
    "Instructions",
    "caller_system",
    "checked_instructions",
    "instructed",
]

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


# How every rendered catalogue ends, whatever its tools: the reply format and the example, which
# an empty catalogue holds after its one-line head and a blank line. Tool entries are one line
# each, so this end followed by the separator is never inside the listing.
_CATALOGUE_END = catalogue_prompt([]).split("\n\n", 1)[1]


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


def caller_system(first: str, instructions: Instructions) -> str | None:
    """The caller's own text in ``first``, the run's first message when it is a system message,
    as :func:`instructed` wrote it with ``instructions``: all of it without instructions, else
    what follows the instructions and the separator. ``None`` when nothing of the caller's
    follows them, or when ``first`` does not begin with them as they would be written (a
    transcript of another version): the instructions, about routing, never reach the answer.

    The rendered catalogue (``True``) is found by its end, the same in every rendering, so a
    resumed run finds the same split even when the provider's catalogue changed since. The
    last such end counts, and text instructions are taken off as often as they lead: a
    conversation that continues an earlier run's messages holds them merged twice.
    """
    if instructions is False:
        return first or None
    if instructions is True:
        ends = [_CATALOGUE_END + note + INSTRUCTIONS_SEPARATOR for note in ("", "\n" + THOUGHT_NOTE)]
        found = [at + len(end) for end in ends if (at := first.rfind(end)) >= 0]
        if not found:
            return None
        return first[max(found) :] or None
    lead = instructions + INSTRUCTIONS_SEPARATOR
    if not first.startswith(lead):
        return None
    while first.startswith(lead):  # at least once
        first = first[len(lead) :]
    return first or None
