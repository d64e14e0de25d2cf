"""The questions file of a batch: JSON Lines, one question a line, each with an id.

A line is an object with an ``id`` and either ``question`` (a string, asked as the user after
the batch's system prompt) or ``messages`` (the whole conversation, ending with a user
message), and optionally ``meta`` (any JSON value, copied into the question's result). Blank
lines are skipped. The id names the question's files in the output folder, so it is a short
name of letters, digits, ``.``, ``_`` and ``-``, unique in the file.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from typing import Any

from .._backends import ROLES, Message
from .._errors import QuestionsFileError
from .._json import shown
from .._limits import MAX_QUESTION_ID_CHARS, SHOWN_VALUE_CHARS

__all__ = ["QUESTION_KEYS", "BatchQuestion", "read_questions"]

#: The keys a question line may have.
QUESTION_KEYS = ("id", "question", "messages", "meta")

_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


@dataclasses.dataclass(frozen=True, kw_only=True)
class BatchQuestion:
    """One question of a batch: its id, the conversation its run starts from, and its line."""

    id: str
    messages: tuple[Message, ...]
    meta: Any = None
    """The line's ``meta`` value, copied into the result as it is; ``None`` when absent."""
    line: int = 0
    """The 1-based line of the questions file it came from; 0 when it was built in code."""


def read_questions(path: str | os.PathLike[str], *, system: str | None = None) -> list[BatchQuestion]:
    """The questions in the JSON Lines file at ``path``; ``system`` heads every ``question``'s conversation.

    A line that is not a question, or an id used twice, is a :class:`QuestionsFileError` that
    names the line; nothing is run until the whole file reads.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as file:
            data = file.read()
    except OSError as error:
        raise QuestionsFileError(name, 0, f"cannot be read ({error.strerror or error})") from error
    questions: list[BatchQuestion] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        question = _question(name, number, raw, system)
        # Case folded: on macOS and Windows, q1 and Q1 would name the same files.
        key = question.id.casefold()
        if key in seen:
            raise QuestionsFileError(
                name,
                number,
                f"the id {question.id!r} is already line {seen[key]}'s (ids differing only in case name "
                "the same files on some file systems); give each an id of its own",
            )
        seen[key] = number
        questions.append(question)
    if not questions:
        raise QuestionsFileError(
            name, 0, 'holds no question: write one a line, {"id": "q1", "question": "..."}'
        )
    return questions


def _question(path: str, number: int, raw: bytes, system: str | None) -> BatchQuestion:
    def refuse(reason: str) -> QuestionsFileError:
        return QuestionsFileError(path, number, reason)

    try:
        record: Any = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise refuse(f"is not UTF-8 ({error.reason} at byte {error.start})") from None
    except (ValueError, RecursionError) as error:
        raise refuse(f"is not a JSON line ({error})") from None
    if not isinstance(record, dict):
        raise refuse(f'is a JSON {type(record).__name__}, not an object {{"id": ..., "question": ...}}')
    unknown = [key for key in record if key not in QUESTION_KEYS]
    if unknown:
        raise refuse(
            f"has the key {shown(unknown[0], SHOWN_VALUE_CHARS)}; a question takes {', '.join(QUESTION_KEYS)}"
        )
    identity = record.get("id")
    if not isinstance(identity, str) or not _ID.fullmatch(identity) or len(identity) > MAX_QUESTION_ID_CHARS:
        raise refuse(
            f"has the id {shown(identity, SHOWN_VALUE_CHARS)}; an id is a string of 1 to "
            f"{MAX_QUESTION_ID_CHARS} letters, digits, '.', '_' or '-', not starting with '.' "
            "(it names the question's files)"
        )
    if ("question" in record) == ("messages" in record):
        raise refuse('needs either "question" (a string) or "messages" (a conversation), not both or neither')
    if "question" in record:
        text = record["question"]
        if not isinstance(text, str) or not text.strip():
            raise refuse(
                f'has the question {shown(text, SHOWN_VALUE_CHARS)}; "question" is a non-empty string'
            )
        head = [] if system is None else [Message(role="system", content=system)]
        messages = (*head, Message(role="user", content=text))
    else:
        messages = _messages(record["messages"], refuse)
    return BatchQuestion(id=identity, messages=messages, meta=record.get("meta"), line=number)


def _messages(value: Any, refuse: Any) -> tuple[Message, ...]:
    if not isinstance(value, list) or not value:
        raise refuse('has "messages" that are not a non-empty list of {"role": ..., "content": ...}')
    messages: list[Message] = []
    for index, message in enumerate(value):
        if (
            not isinstance(message, dict)
            or set(message) != {"role", "content"}
            or message["role"] not in ROLES
            or not isinstance(message["content"], str)
        ):
            raise refuse(
                f'has message {index} that is not {{"role": "system"|"user"|"assistant", "content": "..."}}'
            )
        messages.append(Message(role=message["role"], content=message["content"]))
    if messages[-1]["role"] != "user":
        raise refuse('has "messages" that end with an assistant or system message; a run answers a user')
    return tuple(messages)
