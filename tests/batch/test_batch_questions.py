"""The questions file of a batch: questions read with their system prompt and meta, and a bad line,
an empty file or a missing one refused by name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.batch_files import write_lines

from toolrouting import (
    BatchQuestion,
    QuestionsFileError,
    read_questions,
)


def test_questions_are_read_with_the_system_prompt_and_their_meta(tmp_path: Path) -> None:
    messages = [{"role": "system", "content": "Own prompt."}, {"role": "user", "content": "Hi?"}]
    path = write_lines(
        tmp_path / "q.jsonl",
        {"id": "a", "question": "What?", "meta": {"expected": "M4"}},
        "",
        {"id": "b.2", "messages": messages},
    )
    first, second = read_questions(path, system="Be brief.")
    assert first == BatchQuestion(
        id="a",
        messages=({"role": "system", "content": "Be brief."}, {"role": "user", "content": "What?"}),
        meta={"expected": "M4"},
        line=1,
    )
    assert second.messages == tuple(messages)
    assert second.line == 3


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{not json", "is not a JSON line"),
        ("[1, 2]", "is a JSON list, not an object"),
        ('{"question": "What?"}', "has the id None"),
        ('{"id": "../up", "question": "What?"}', "has the id '../up'"),
        ('{"id": ".hidden", "question": "What?"}', "not starting with '.'"),
        ('{"id": "a", "qestion": "What?"}', "has the key 'qestion'; a question takes id, question"),
        ('{"id": "a"}', 'needs either "question"'),
        ('{"id": "a", "question": "x", "messages": []}', "not both or neither"),
        ('{"id": "a", "question": "  "}', '"question" is a non-empty string'),
        ('{"id": "a", "messages": [{"role": "user", "content": 1}]}', "has message 0 that is not"),
        ('{"id": "a", "messages": [{"role": "assistant", "content": "x"}]}', "a run answers a user"),
        ('{"id": "b", "question": "x"}', "the id 'b' is already line 1's"),
        ('{"id": "B", "question": "x"}', "the id 'B' is already line 1's (ids differing only in case"),
    ],
)
def test_a_bad_line_is_refused_by_its_number(tmp_path: Path, line: str, problem: str) -> None:
    path = write_lines(tmp_path / "q.jsonl", {"id": "b", "question": "First?"}, line)
    with pytest.raises(QuestionsFileError, match=r"q\.jsonl, line 2: ") as caught:
        read_questions(path)
    assert caught.value.line == 2
    assert problem in caught.value.reason


def test_an_empty_or_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(QuestionsFileError, match="holds no question"):
        read_questions(write_lines(tmp_path / "q.jsonl", ""))
    with pytest.raises(QuestionsFileError, match="cannot be read"):
        read_questions(tmp_path / "absent.jsonl")
