"""The answer request after the handoff: the question and what the tools returned, compactly.

A small model answers the long alternation of JSON actions and result headers with one more
action, or with talk about the actions themselves. The answer request is one user message
instead: the caller's question, then the results of the calls that succeeded (newest first
to keep, shown oldest first, each bounded and the whole bounded), then what to do. It is
committed like any message, so a resumed run sends the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._backends import Message
from .._limits import ANSWER_CONTEXT_CHARS, ANSWER_RESULT_CHARS
from .._provider import cut_middle
from .._result_messages import read_routed_result
from .feedback import ANSWER_PROMPT

__all__ = ["ANSWER_LEAD", "answer_request", "is_answer_request"]

#: How every answer request begins; resuming a transcript recognises one by it and its end.
ANSWER_LEAD = "Question: "

_RESULTS = "What the tools returned:"
_NO_RESULTS = "What the tools returned: nothing (no tool call succeeded)."
_LEFT_OUT = "({count} earlier result{s} left out, to fit.)"


def answer_request(messages: Sequence[Message], conversation: int) -> str:
    """The answer request for a run whose first ``conversation`` messages are the caller's."""
    question = _question(messages[:conversation])
    results = _results(messages[conversation:])
    kept: list[str] = []
    used = 0
    for tool, content in reversed(results):
        head = f"{tool}: "
        entry = head + cut_middle(content, ANSWER_RESULT_CHARS - len(head))
        if used + len(entry) > ANSWER_CONTEXT_CHARS:
            break
        kept.append(entry)
        used += len(entry)
    kept.reverse()
    if not kept:
        body = _NO_RESULTS
    else:
        left_out = len(results) - len(kept)
        lines = [
            _RESULTS,
            *([_LEFT_OUT.format(count=left_out, s="s" * (left_out != 1))] if left_out else []),
            *kept,
        ]
        body = "\n".join(lines)
    return f"{ANSWER_LEAD}{question}\n\n{body}\n\n{ANSWER_PROMPT}"


def is_answer_request(text: str) -> bool:
    """Whether ``text`` is a message :func:`answer_request` wrote, or the bare answer prompt
    that transcripts written before it hold."""
    return text == ANSWER_PROMPT or (text.startswith(ANSWER_LEAD) and text.endswith("\n\n" + ANSWER_PROMPT))


def _question(conversation: Sequence[Message]) -> str:
    """The caller's question: the last user message of the conversation the run started from."""
    for message in reversed(conversation):
        if message["role"] == "user":
            return message["content"]
    return ""


def _results(run: Sequence[Message]) -> list[tuple[str, str]]:
    """``(tool, content)`` of every result message in the run that is not an error, in order;
    a result identical to an earlier one is shown once."""
    results: list[tuple[str, str]] = []
    for message in run:
        result = read_routed_result(message["content"]) if message["role"] == "user" else None
        if result is None or result.is_error:
            continue
        if (result.tool, result.content) not in results:
            results.append((result.tool, result.content))
    return results
