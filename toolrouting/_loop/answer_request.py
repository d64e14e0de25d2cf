"""The answer request after the handoff: the caller's context, then what was found and the question.

A small model answers the long alternation of JSON actions and result headers with one more
action, or with talk about the actions themselves. The answer request is one user message
instead: the results of the calls that succeeded (newest first to keep, shown oldest first,
a blank line apart, each bounded and the whole bounded), then the caller's question and what
to do. The question comes last, nearest the answer; the results are "what was found", not
what "the tools returned", and no tool is named: laid out that way, both models the
benchmarks run answered from the text more often and spoke of "the tool" less
(docs/benchmarks/decisions.md, "The answer request's wording"). It is committed like any message, so a
resumed run sends the same bytes.

The answer is asked with the caller's context before that request (:func:`answer_conversation`):
one system message of the caller's own system (and, through ``serve``, developer) messages,
without the loop's instructions, which are about routing; then the conversation's earlier
turns, the questions and the answers in words (earlier actions, results and the loop's own
requests left out, as this turn's are), the newest kept within ``ANSWER_HISTORY_CHARS``. All of
it is read from the caller's messages, so a resumed run sends the same bytes too. An answer
request of an earlier shape is sent alone, as its version sent it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from .._backends import Message
from .._limits import ANSWER_CONTEXT_CHARS, ANSWER_HISTORY_CHARS, ANSWER_RESULT_CHARS
from .._provider import cut_middle
from .._result_messages import read_routed_result
from .abstention_notice import abstention_notice, is_abstention_notice
from .repair_feedback import is_repair_message
from .system_instructions import Instructions, caller_system

__all__ = [
    "ABSTAINED_ASK",
    "ANSWER_LEAD",
    "ANSWER_PROMPT",
    "EARLIER_ANSWER_PROMPT",
    "answer_conversation",
    "answer_request",
    "earlier_answer_request",
    "is_answer_request",
]

#: How every answer request begins; resuming a transcript recognises one by it and its end.
ANSWER_LEAD = "What was found:"

#: How the answer request ends, after the question. Without it a small model answers the last
#: tool result with one more action, in the shape it has been writing.
ANSWER_PROMPT = "Answer the question in plain words, from what was found above."

#: After an abstention's reason: what the answer does about it.
ABSTAINED_ASK = "Ask the user for what is missing, or say that no tool here does what is asked."

#: The answer prompt of earlier versions: transcripts written before the answer request existed
#: hold it as a message of its own, and later ones end their answer request with it.
EARLIER_ANSWER_PROMPT = "Now answer the question in plain words, from the tool results above."

_NO_RESULTS = f"{ANSWER_LEAD} nothing (no tool call succeeded)."
_LEFT_OUT = "({count} earlier result{s} left out, to fit.)"
# The question's line; the answer requests of earlier versions began with it.
_QUESTION = "Question: "


def answer_request(messages: Sequence[Message], conversation: int, *, abstained: str | None = None) -> str:
    """The answer request for a run whose first ``conversation`` messages are the caller's.

    After an abstention (the run's notice, or the reason ``abstained`` gives), the request says
    what was not called and why, and to ask the user for what is missing."""
    question = _question(messages[:conversation])
    notices = [m["content"] for m in messages[conversation:] if is_abstention_notice(m["content"])]
    notice = abstention_notice(abstained) if abstained else next(iter(notices), None)
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
    said = f"\n\n{notice} {ABSTAINED_ASK}" if notice else ""
    return f"{found}{said}\n\n{_QUESTION}{question}\n{ANSWER_PROMPT}"


def answer_conversation(
    messages: Sequence[Message],
    conversation: int,
    *,
    instructions: Instructions = False,
    asked: str | None = None,
    abstained: str | None = None,
) -> list[Message]:
    """What the answer is asked with, for a run whose first ``conversation`` messages are the
    caller's: the caller's system text, the earlier turns, then the answer request, ``asked``
    as committed or else built. ``instructions`` are what the loop put into the first message
    (``False`` for none), so that they are left out. A request of an earlier shape goes alone."""
    request = answer_request(messages, conversation, abstained=abstained) if asked is None else asked
    last = Message(role="user", content=request)
    if not request.startswith(ANSWER_LEAD):
        return [last]
    return [*_context(messages, conversation, instructions), last]


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


def _context(messages: Sequence[Message], conversation: int, instructions: Instructions) -> list[Message]:
    """The caller's system text as one message, then the turns before the question that fit.

    Every system message counts, in order, wherever it is: a client may send system text after
    the question (Claude Code sends its environment so), and the answer needs it as much as the
    decision did."""
    asked_at = max((at for at, m in enumerate(messages[:conversation]) if m["role"] == "user"), default=0)
    systems: list[str] = []
    turns: list[Message] = []
    for at, message in enumerate(messages):
        if message["role"] == "system":
            text = caller_system(message["content"], instructions) if at == 0 else message["content"]
            systems.extend([text] if text else [])
        elif at < asked_at and _is_turn(message):
            turns.append(message)
    kept: list[Message] = []
    used = 0
    for message in reversed(turns):
        used += len(message["content"])
        if used > ANSWER_HISTORY_CHARS:
            break
        kept.append(message)
    while kept and kept[-1]["role"] != "user":  # the history opens with a question
        kept.pop()
    kept.reverse()
    system = [Message(role="system", content="\n\n".join(systems))] if systems else []
    return [*system, *kept]


def _is_turn(message: Message) -> bool:
    """Whether an earlier message is a question or an answer in words: not an action, a
    result, or a request the loop wrote."""
    text = message["content"]
    if message["role"] == "user":
        return not (
            read_routed_result(text)
            or is_answer_request(text)
            or is_repair_message(text)
            or is_abstention_notice(text)
        )
    try:
        action = json.loads(text)
    except (ValueError, RecursionError):
        return True
    return not (isinstance(action, dict) and isinstance(action.get("tool"), str))
