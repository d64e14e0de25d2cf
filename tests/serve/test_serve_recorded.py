"""The server's exchanges replay byte for byte: a few hundred requests on all three fronts (chat
completions, Responses, Messages: with and without tools, streamed and whole, structured
output, the legacy functions, stored responses, refusals and upstream failures), each answered
as it was recorded in tests/serve_recorded/.

A case is its requests, sent in-process to a fresh ``serve_app`` over the scripted backend
(tests/support/recorder.py); its record is each answer's status, headers and body, and what the
backend was sent, with only the random ids and the timestamps normalised. The cases are in
tests/support/recorded_chat.py, recorded_chat_refusals.py, recorded_responses.py and recorded_messages.py.

A change meant to alter what the server answers records the cases again, and the commit shows
the difference in tests/serve_recorded/:

    .venv/bin/python tests/serve/test_serve_recorded.py --record
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

# Run as a script (its docstring says how), this module finds support/ in tests/ as under pytest.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pytest
from support import recorded_chat, recorded_chat_refusals, recorded_messages, recorded_responses
from support.paths import TESTS
from support.recorder import Case, record

RECORDED = TESTS / "serve_recorded"

#: Each front's cases, recorded in tests/serve_recorded/FRONT.json.
FRONTS: dict[str, list[Case]] = {
    "chat": [*recorded_chat.CASES, *recorded_chat_refusals.CASES],
    "responses": recorded_responses.CASES,
    "messages": recorded_messages.CASES,
}


def _recorded(front: str) -> dict[str, Any]:
    recorded: dict[str, Any] = json.loads((RECORDED / f"{front}.json").read_text(encoding="utf-8"))
    return recorded


@pytest.mark.parametrize(
    ("front", "case"),
    [
        pytest.param(front, case, id=f"{front}: {case.name}")
        for front, cases in FRONTS.items()
        for case in cases
    ],
)
def test_every_exchange_replays_as_it_was_recorded(front: str, case: Case) -> None:
    assert record(case) == _recorded(front)[case.name]


@pytest.mark.parametrize("front", FRONTS)
def test_every_recorded_case_is_still_a_case(front: str) -> None:
    names = [case.name for case in FRONTS[front]]
    assert len(set(names)) == len(names)
    assert list(_recorded(front)) == names


def _record() -> None:
    RECORDED.mkdir(exist_ok=True)
    for front, cases in FRONTS.items():
        records = {case.name: record(case) for case in cases}
        text = json.dumps(records, ensure_ascii=False, indent=1)
        (RECORDED / f"{front}.json").write_text(text + "\n", encoding="utf-8")
        print(f"tests/serve_recorded/{front}.json: {len(records)} cases")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/serve/test_serve_recorded.py --record")
    _record()
