"""The answer request after the handoff: what the tools found and the question, compactly.

A small model answers the long alternation of JSON actions and result headers with one more
action, or with talk about the actions themselves. The answer request is one user message
instead: the results of the calls that succeeded (newest first to keep, shown oldest first,
a blank line apart, each bounded and the whole bounded), then the caller's question and what
to do. The question comes last, nearest the answer; the results are "what was found", not
what "the tools returned", and no tool is named: laid out that way, both models the
benchmarks run answered from the text more often and spoke of "the tool" less
(docs/benchmarks.md, "The answer request's wording"). It is committed like any message, so a
resumed run sends the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._backends import Message
from .._limits import ANSWER_CONTEXT_CHARS, ANSWER_RESULT_CHARS
from .._provider import cut_middle
from .._result_messages import read_routed_result
from .feedback import ANSWER_PROMPT, EARLIER_ANSWER_PROMPT

__all__ = ["ANSWER_LEAD", "answer_request", "earlier_answer_request", "is_answer_request"]

#: How every answer request begins; resuming a transcript recognises one by it and its end.
ANSWER_LEAD = "What was found:"

_NO_RESULTS = f"{ANSWER_LEAD} nothing (no tool call succeeded)."
_LEFT_OUT = "({count} earlier result{s} left out, to fit.)"
# The question's line; the answer requests of earlier versions began with it.
_QUESTION = "Question: "


def answer_request(messages: Sequence[Message], conversation: int) -> str:
    """The answer request for a run whose first ``conversation`` messages are the caller's."""
    question = _question(messages[:conversation])
    results = _results(messages[conversation:])
    kept: list[str] = []
    used = 0
    for content in reversed(results):
        entry = cut_middle(content, ANSWER_RESULT_CHARS)
        if used + len(entry) > ANSWER_CONTEXT_CHARS:
            break
        kept.append(entry)
        used += len(entry)
    kept.reverse()
    if not kept:
        found = _NO_RESULTS
    else:
        left_out = len(results) - len(kept)
        note = f"\n{_LEFT_OUT.format(count=left_out, s='s' * (left_out != 1))}" if left_out else ""
        found = f"{ANSWER_LEAD}{note}\n" + "\n\n".join(kept)
    return f"{found}\n\n{_QUESTION}{question}\n{ANSWER_PROMPT}"


def is_answer_request(text: str) -> bool:
    """Whether ``text`` is a message :func:`answer_request` wrote, one that earlier versions
    wrote (the question first), or the bare answer prompt of transcripts older still."""
    return (
        (text.startswith(ANSWER_LEAD) and text.endswith("\n" + ANSWER_PROMPT))
        or text == EARLIER_ANSWER_PROMPT
        or (text.startswith(_QUESTION) and text.endswith("\n\n" + EARLIER_ANSWER_PROMPT))
    )


def earlier_answer_request(messages: Sequence[Message], conversation: int) -> str:
    """The answer request as earlier versions wrote it, which :func:`is_answer_request` still
    recognises: the question first, then "What the tools returned:" and each result that
    succeeded after its tool's name (the newest kept, each and all bounded alike), then
    ``EARLIER_ANSWER_PROMPT``. The benchmarks set it against :func:`answer_request`."""
    question = _question(messages[:conversation])
    results: list[str] = []
    for message in messages[conversation:]:
        result = read_routed_result(message["content"]) if message["role"] == "user" else None
        if result is not None and not result.is_error:
            head = f"{result.tool}: "
            entry = head + cut_middle(result.content, ANSWER_RESULT_CHARS - len(head))
            if entry not in results:
                results.append(entry)
    kept: list[str] = []
    for entry in reversed(results):
        if sum(map(len, kept)) + len(entry) > ANSWER_CONTEXT_CHARS:
            break
        kept.insert(0, entry)
    left_out = len(results) - len(kept)
    lines = [_LEFT_OUT.format(count=left_out, s="s" * (left_out != 1))] if left_out else []
    body = (
        "\n".join(["What the tools returned:", *lines, *kept])
        if kept
        else "What the tools returned: nothing (no tool call succeeded)."
    )
    return f"{_QUESTION}{question}\n\n{body}\n\n{EARLIER_ANSWER_PROMPT}"


def _question(conversation: Sequence[Message]) -> str:
    """The caller's question: the last user message of the conversation the run started from."""
    for message in reversed(conversation):
        if message["role"] == "user":
            return message["content"]
    return ""


def _results(run: Sequence[Message]) -> list[str]:
    """The content of every result message in the run that is not an error, in order; a
    content identical to an earlier one is shown once."""
    results: list[str] = []
    for message in run:
        result = read_routed_result(message["content"]) if message["role"] == "user" else None
        if result is not None and not result.is_error and result.content not in results:
            results.append(result.content)
    return results
