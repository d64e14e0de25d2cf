"""A shortlisted run's transcript: each round's offer recorded, and resume sending what the run offered.

The scripted backend is a fake by design: it records exactly what each request was sent. Its
replies are a function of the conversation (test_loop_shortlist's ``_script``), so a resumed run
must send, and write, what the run left alone did.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.catalogues import QUESTION
from support.drivers import Driver
from support.loop_shortlist import ASKED, GIT, Repo, _script, offered

from toolrouting import IndexedRanker, ScriptedBackend, read_transcript
from toolrouting._errors import TranscriptError
from toolrouting._loop.transcript_format import OFFERS_VERSION, encode_header, encode_message, encode_offer

K = 3


def _run(driver: Driver, path: Path | None, **options: Any) -> ScriptedBackend:
    backend = ScriptedBackend([_script] * 8)
    driver.loop(backend, Repo(), transcript=path, answer=True, shortlist=K, **options).run(ASKED)
    return backend


def _resume(driver: Driver, path: Path, repo: Repo | None = None, **options: Any) -> ScriptedBackend:
    backend = ScriptedBackend([_script] * 8)
    driver.loop(backend, repo or Repo(), transcript=path, answer=True, shortlist=K, **options).resume()
    return backend


def test_each_rounds_offer_is_a_line_of_its_own_before_its_first_request(
    tmp_path: Path, driver: Driver
) -> None:
    path = tmp_path / "run.jsonl"
    backend = _run(driver, path)
    lines = path.read_bytes().splitlines(keepends=True)
    assert lines[0] == encode_header(2, OFFERS_VERSION)  # the question and the instructions
    read = read_transcript(path)
    assert read.version == OFFERS_VERSION
    # Three rounds (the second repaired once), each offer where its round began.
    routed = [r for r in backend.requests if r.settings.json_schema is not None]
    assert [offer.at for offer in read.offers] == [2, 4, 8]
    assert [list(offer.offered) for offer in read.offers] == [
        offered(routed[0]),
        offered(routed[1]),
        offered(routed[3]),
    ]
    assert {offer.catalogue for offer in read.offers} == {len(GIT)}
    assert [lines[3], lines[6], lines[11]] == [encode_offer(o.offered, len(GIT)) for o in read.offers]
    assert read.messages[:8] == routed[3].messages


def test_resume_from_every_commit_point_sends_and_writes_what_the_run_did(
    tmp_path: Path, driver: Driver
) -> None:
    whole = tmp_path / "whole.jsonl"
    reference = _run(driver, whole).requests
    data = whole.read_bytes()
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    # After the caller's commit (its header and two lines), at every line end and inside each line.
    for cut in sorted({*ends[2:], *(end + 7 for end in ends[2:-1])}):
        path = tmp_path / f"cut-{cut}.jsonl"
        path.write_bytes(data[:cut])
        resumed = _resume(driver, path).requests
        assert path.read_bytes() == data, f"resumed from byte {cut}"
        assert resumed == reference[len(reference) - len(resumed) :], f"resumed from byte {cut}"


def test_the_recorded_offer_wins_over_another_ranker_and_catalogue_order(
    tmp_path: Path, driver: Driver
) -> None:
    whole = tmp_path / "whole.jsonl"
    reference = _run(driver, whole).requests
    lines = whole.read_bytes().splitlines(keepends=True)
    # Killed just after round 2's offer went on disk, before its request was answered.
    path = tmp_path / "killed.jsonl"
    path.write_bytes(b"".join(lines[:7]))
    assert json.loads(lines[6])["offered"] == offered(reference[1])

    def backwards(tools: Any, query: str) -> list[float]:
        return [float(index) for index in range(len(tools))]  # the last tools best: another offer

    resumed = _resume(driver, path, Repo(tools=GIT[::-1]), ranker=backwards).requests
    # The round recorded sends the run's bytes: its tools, in its order, through its repair.
    assert resumed[:2] == reference[1:3]
    assert offered(resumed[2]) != offered(reference[3])  # round 3 was not recorded: ranked anew


def test_a_run_ranked_by_meanings_resumes_with_its_offers_where_words_alone_rank(
    tmp_path: Path, driver: Driver
) -> None:
    """A run of the hybrid ranker resumed by BM25 alone (the default, or the hybrid asked for
    where the extra is missing): the recorded round sends what the run sent."""
    whole = tmp_path / "whole.jsonl"
    reference = _run(driver, whole, ranker=IndexedRanker(semantic=True)).requests
    lines = whole.read_bytes().splitlines(keepends=True)
    words = IndexedRanker(semantic=False)
    alone = _run(driver, tmp_path / "words.jsonl", ranker=words).requests
    assert offered(alone[1]) != offered(reference[1])  # BM25 offers round 2 other tools
    # Killed just after round 2's offer went on disk, before its request was answered.
    path = tmp_path / "killed.jsonl"
    path.write_bytes(b"".join(lines[:7]))
    assert json.loads(lines[6])["offered"] == offered(reference[1])
    resumed = _resume(driver, path, ranker=words).requests
    assert resumed[:2] == reference[1:3]  # round 2 and its repair, byte for byte


def test_a_recorded_tool_gone_from_the_catalogue_is_a_clear_error(tmp_path: Path, driver: Driver) -> None:
    whole = tmp_path / "whole.jsonl"
    _run(driver, whole)
    lines = whole.read_bytes().splitlines(keepends=True)
    path = tmp_path / "killed.jsonl"
    path.write_bytes(b"".join(lines[:7]))
    gone = json.loads(lines[6])["offered"][0]
    with pytest.raises(TranscriptError, match=rf"line 7: the round it records offered '{gone}', which the"):
        _resume(driver, path, Repo(hidden=(gone,)))
    assert path.read_bytes() == b"".join(lines[:7])


def test_a_transcript_without_offers_resumes_with_a_shortlist(tmp_path: Path, driver: Driver) -> None:
    # Written without shortlist=, version 3, every tool offered: resumed with shortlist=K at least
    # the catalogue, it goes on in its own format, to the same bytes.
    whole = tmp_path / "whole.jsonl"
    backend = ScriptedBackend([_script] * 8)
    driver.loop(backend, Repo(), transcript=whole, answer=True).run(ASKED)
    data = whole.read_bytes()
    assert read_transcript(whole).version == 3
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    for cut in ends[2:]:
        path = tmp_path / f"cut-{cut}.jsonl"
        path.write_bytes(data[:cut])
        resumed = ScriptedBackend([_script] * 8)
        driver.loop(resumed, Repo(), transcript=path, answer=True, shortlist=len(GIT)).resume()
        assert path.read_bytes() == data
        assert resumed.requests == backend.requests[len(backend.requests) - len(resumed.requests) :]


def test_a_transcript_without_offers_resumed_with_a_narrower_shortlist_ranks_each_round(
    tmp_path: Path, driver: Driver
) -> None:
    whole = tmp_path / "whole.jsonl"
    driver.loop(ScriptedBackend([_script] * 8), Repo(), transcript=whole, answer=True).run(ASKED)
    lines = whole.read_bytes().splitlines(keepends=True)
    path = tmp_path / "killed.jsonl"
    path.write_bytes(b"".join(lines[:5]))  # round 1 and its result: version 3, no offers
    resumed = _resume(driver, path)
    assert len(offered(resumed.requests[0])) <= K + 1  # the K best and the tool called
    assert b'"offered"' not in path.read_bytes()  # a version 3 file holds none
    assert read_transcript(path).version == 3


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        ([encode_offer(["git_log"], 12)], None),
        ([b'{"offered":["git_log"]}\n'], 'line 4: is not an offer {"offered"'),
        ([b'{"offered":["none"],"catalogue":12}\n'], "line 4: is not an offer"),
        ([b'{"offered":["a","a"],"catalogue":12}\n'], "line 4: is not an offer"),
        ([b'{"offered":["a","b"],"catalogue":1}\n'], "line 4: is not an offer"),
        ([b'{"offered":["a b"],"catalogue":4}\n'], "line 4: is not an offer"),
        ([b'{"offered":[],"catalogue":0}\n'], None),
    ],
)
def test_an_offer_line_is_read_back_or_refused_by_name(
    tmp_path: Path, lines: list[bytes], problem: str | None
) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(
        encode_header(2, OFFERS_VERSION)
        + encode_message(QUESTION[0], commit=2)
        + encode_message(QUESTION[1])
        + b"".join(lines)
    )
    if problem is None:
        (offer,) = read_transcript(path).offers
        assert (offer.at, offer.line) == (2, 4)
    else:
        with pytest.raises(TranscriptError, match=problem.replace("{", r"\{")):
            read_transcript(path)


def test_an_offer_inside_a_commit_or_in_an_older_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    offer = encode_offer(["git_log"], 12)
    path.write_bytes(
        encode_header(2, OFFERS_VERSION)
        + encode_message(QUESTION[0], commit=2)
        + offer
        + encode_message(QUESTION[1])
    )
    with pytest.raises(TranscriptError, match="line 3: records an offer inside the commit of line 2"):
        read_transcript(path)
    path.write_bytes(
        encode_header(2) + encode_message(QUESTION[0], commit=2) + encode_message(QUESTION[1]) + offer
    )
    with pytest.raises(TranscriptError, match="line 4: is not a message"):
        read_transcript(path)
