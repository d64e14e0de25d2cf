"""The wire fault matrix: the routing loop on OpenAICompatible against a misbehaving loopback server.

Shared by tests/loop/test_loop_wire_faults.py (one test per case) and support/fault_table.py (the table).
Each case queues what the server does for each request (faults and the model's answers) and
says how the run must end: recovered, or failed with a named error whose message matches.
The loop's ``sleep`` only records the delay, so no case waits out a backoff; a refused
connection comes up when the loop asks to wait for the last time it is meant to be refused.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from support.drivers import DRIVERS, Driver
from support.fault_server import (
    Behaviour,
    Fault,
    FaultServer,
    answer_then_go_down,
    close_mid_body,
    completion_body,
    endless_body,
    ok,
    reset,
    reset_mid_body,
    stall_mid_body,
    status,
    trickle,
)
from toolrouting._backends.base import Message
from toolrouting._backends.http import OpenAICompatible
from toolrouting._errors import (
    BackendHTTPError,
    BackendResponseError,
    RepairsExhaustedError,
    RetriesExhaustedError,
    SchemaIgnoredError,
)
from toolrouting._limits import DEFAULT_ROUTING_CAP, MAX_RETRY_AFTER, RETRY_BACKOFF_BASE
from toolrouting._loop.events import Event, RetryScheduled
from toolrouting._loop.transcript_format import encode_header
from toolrouting._loop.transcript_reader import read_transcript
from toolrouting._provider import ToolOutput

__all__ = [
    "CASES",
    "GIVE_UP",
    "QUESTION",
    "TIMEOUT",
    "TRICKLE_GAP",
    "Case",
    "Desk",
    "Outcome",
    "run_case",
    "summary",
]

#: The client's timeout in the cases that never wait for it: a loopback answer takes
#: milliseconds, and the endless body is refused after 16 MB, so however loaded the machine,
#: no answer these cases expect comes near it.
TIMEOUT = 30.0

#: The client's timeout in the cases that wait for it to pass (a stalled or trickled answer,
#: which cannot finish before the server stops, so load only delays the timeout). Their good
#: answers go through the same client, so it is short only next to TIMEOUT: a loopback answer
#: takes about 2 ms, and at most 0.16 s seen in 3,000 with both of 2 cores saturated.
GIVE_UP = 3.0

#: Seconds between the bytes of a trickled answer: a fortieth of GIVE_UP, so no single read
#: times out, while the whole answer (some 200 bytes) takes five times GIVE_UP.
TRICKLE_GAP = GIVE_UP / 40

QUESTION: list[Message] = [
    {"role": "system", "content": "Answer from the notes."},
    {"role": "user", "content": "What does the latch on the storage-room door do?"},
]
LOOKUP = '{"tool": "lookup", "arguments": {"word": "latch"}}'
NONE = '{"tool": "none"}'
#: An action cut off at the completion cap: the JSON stops mid-key.
CUT = '{"tool": "lookup", "argu'
PROSE = "Sure! Let me look that up for you. First I will open the documentation index."

_BACKOFF = (RETRY_BACKOFF_BASE, RETRY_BACKOFF_BASE * 2)


class Desk:
    """A provider with one tool whose answer depends only on its argument."""

    def tools_for_llm(self) -> list[dict[str, Any]]:
        parameters = {
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
            "additionalProperties": False,
        }
        return [{"type": "function", "function": {"name": "lookup", "parameters": parameters}}]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput(f"{arguments['word']}: a fastening that holds a door shut.")


@dataclasses.dataclass(frozen=True)
class Case:
    kind: str
    script: tuple[Behaviour, ...]
    """What the server does for each request in turn; a :class:`Fault` counts as injected."""
    delays: tuple[float, ...] = ()
    """The waits the loop must ask for, in order."""
    error: type[Exception] | None = None
    """``None``: the run recovers and hands off; else the error it must fail with."""
    message: str = ""
    """A regex the error's message must match: it names what was wrong."""
    refusals: int = 0
    """Connections refused before the server listens again: it starts when the loop has waited
    this many times."""
    starts_down: bool = False
    """Whether nothing listens when the run begins."""
    retries: int = 2
    timeout: float = TIMEOUT
    """The client's timeout: :data:`GIVE_UP` where the case waits for it to pass."""


def _fault(kind: str, behaviour: Behaviour) -> Fault:
    return Fault(kind, behaviour)


def _round_two(*faults: Behaviour) -> tuple[Behaviour, ...]:
    """Round 1 looks up, then the faults hit round 2's request, then the model hands off."""
    return (ok(LOOKUP), *faults, ok(NONE))


CASES: tuple[Case, ...] = (
    Case("refused, then up", (ok(LOOKUP), ok(NONE)), _BACKOFF, refusals=2, starts_down=True),
    Case(
        "refused past the budget",
        (),
        _BACKOFF,
        RetriesExhaustedError,
        r"failed 3 times: BackendConnectError: could not connect to .*retries=2 exhausted",
        refusals=99,
        starts_down=True,
    ),
    Case("down mid-run, then up", (answer_then_go_down(LOOKUP), ok(NONE)), _BACKOFF[:1], refusals=1),
    Case("reset before answering", _round_two(_fault("reset", reset)), _BACKOFF[:1]),
    Case("closed mid-body", _round_two(_fault("closed mid-body", close_mid_body)), _BACKOFF[:1]),
    Case("reset mid-body", _round_two(_fault("reset mid-body", reset_mid_body)), _BACKOFF[:1]),
    Case(
        "429 with Retry-After",
        _round_two(_fault("429", status(429, b'{"error": "slow down"}', {"Retry-After": "3"}))),
        (3.0,),
    ),
    Case("429 without Retry-After", _round_two(*[_fault("429", status(429, b"busy"))] * 2), _BACKOFF),
    Case(
        "429 with an unreadable Retry-After",
        _round_two(_fault("429", status(429, b"busy", {"Retry-After": "soon"}))),
        _BACKOFF[:1],
    ),
    Case(
        "503 with a past Retry-After date",
        _round_two(_fault("503", status(503, b"busy", {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}))),
        (0.0,),
    ),
    Case(
        "500 past the budget",
        _round_two(*[_fault("500", status(500, b'{"error": "model exploded"}'))] * 3),
        _BACKOFF,
        RetriesExhaustedError,
        r"failed 3 times: BackendHTTPError: POST .* answered HTTP 500 .*model exploded.*retries=2 exhausted",
    ),
    Case(
        "429 asking for an hour",
        _round_two(_fault("429", status(429, b"busy", {"Retry-After": "3600"}))),
        (),
        RetriesExhaustedError,
        rf"asks to wait 3600 s, over MAX_RETRY_AFTER of {MAX_RETRY_AFTER:g} s",
    ),
    Case(
        "400 bad request",
        _round_two(_fault("400", status(400, b'{"error": "unknown field"}'))),
        (),
        BackendHTTPError,
        r"answered HTTP 400 Bad Request: .*unknown field",
    ),
    Case(
        "stalled mid-body",
        _round_two(_fault("stalled mid-body", stall_mid_body)),
        _BACKOFF[:1],
        timeout=GIVE_UP,
    ),
    Case(
        "slow trickle",
        _round_two(_fault("slow trickle", trickle(TRICKLE_GAP))),
        _BACKOFF[:1],
        timeout=GIVE_UP,
    ),
    Case(
        "truncated JSON body",
        _round_two(_fault("truncated JSON body", status(200, completion_body(LOOKUP)[:40]))),
        (),
        BackendResponseError,
        r"answered HTTP 200 with a body that is not JSON: \"\{\\\"object\\\": \\\"chat\.completion",
    ),
    Case(
        "endless body",
        _round_two(_fault("endless body", endless_body)),
        (),
        BackendResponseError,
        r"answered more than MAX_RESPONSE_BYTES \(16,000,000 bytes\) and was left unread",
    ),
    Case(
        "cut at the cap, then repaired", _round_two(_fault("cut at the cap", ok(CUT, "length")), ok(LOOKUP))
    ),
    Case(
        "cut at the cap twice",
        _round_two(*[_fault("cut at the cap", ok(CUT, "length"))] * 2),
        (),
        RepairsExhaustedError,
        rf"round 2: .*after 1 repair .*cut off at the completion cap of {DEFAULT_ROUTING_CAP} tokens",
    ),
    Case(
        "schema ignored (prose back)",
        _round_two(_fault("prose", ok(PROSE))),
        (),
        SchemaIgnoredError,
        r"may have ignored the schema: it was sent as response_format .* not JSON: \"Sure! Let me",
    ),
)


@dataclasses.dataclass(frozen=True)
class Outcome:
    kind: str
    injected: int
    retried: int
    recovered: bool
    failed_clearly: bool
    transcript_intact: bool
    problems: tuple[str, ...]
    """Every way the run differed from its case; empty when it behaved as promised."""
    transcript: Path


def run_case(case: Case, directory: Path, driver: Driver = DRIVERS["sync"]) -> Outcome:
    """Run ``case`` with its transcript in ``directory`` through ``driver`` (the sync loop unless
    told); the server is stopped before this returns."""
    path = directory / f"{re.sub(r'[^a-z0-9]+', '-', case.kind.lower())}.jsonl"
    delays: list[float] = []
    events: list[Event] = []
    problems: list[str] = []
    result = error = None
    with FaultServer(listening=not case.starts_down) as server:
        server.script.extend(case.script)

        def sleep(seconds: float) -> None:
            delays.append(seconds)
            if not server.listening and len(delays) >= case.refusals:
                server.start()

        with OpenAICompatible(server.url, timeout=case.timeout) as backend:
            # No instructions: the transcript checks compare it with QUESTION as the caller gave it.
            loop = driver.loop(
                backend,
                Desk(),
                retries=case.retries,
                transcript=path,
                sleep=sleep,
                on_event=events.append,
                instructions=False,
            )
            try:
                result = loop.run(QUESTION)
            except Exception as raised:
                error = raised
        last_request = server.last_messages()
        faults = sum(server.faults_served.values())
    retries = [event for event in events if isinstance(event, RetryScheduled)]
    refused = sum("could not connect" in event.error for event in retries)
    if error is not None and "could not connect" in str(error):
        refused += 1

    if tuple(delays) != case.delays:
        problems.append(f"the loop waited {delays}, not {list(case.delays)}")
    recovered = result is not None and result.reason == "handoff"
    if case.error is None and not recovered:
        problems.append(f"the run should recover but raised {type(error).__name__}: {error}")
    failed_clearly = (
        case.error is not None
        and isinstance(error, case.error)
        and re.search(case.message, str(error)) is not None
    )
    if case.error is not None and not failed_clearly:
        problems.append(f"expected {case.error.__name__} matching {case.message!r}, got {error!r}")

    intact = _transcript_problems(path, result.messages if result else None, last_request, error)
    problems.extend(intact)
    return Outcome(
        kind=case.kind,
        injected=faults + refused,
        retried=len(retries),
        recovered=recovered,
        failed_clearly=failed_clearly,
        transcript_intact=not intact,
        problems=tuple(problems),
        transcript=path,
    )


def _transcript_problems(
    path: Path,
    committed: Sequence[Message] | None,
    last_request: list[dict[str, Any]] | None,
    error: Exception | None,
) -> list[str]:
    """How the transcript on disk differs from what the run committed and what the server last saw.

    A request that failed commits nothing, so the server's last request holds every message
    committed before it; after it comes only the reply the loop read (the handoff, or the
    refused reply that exhausted the repairs, unless the cap cut it), and nothing at all when
    the request failed.
    """
    read = read_transcript(path)
    data = path.read_bytes()
    problems = []
    if (
        read.torn_line is not None
        or read.committed_bytes != len(data)
        or not data.startswith(encode_header(len(QUESTION)))
    ):
        problems.append("the transcript is not exactly its committed lines")
    if committed is not None and read.messages != tuple(committed):
        problems.append("the transcript differs from RunResult.messages")
    sent = QUESTION if last_request is None else last_request
    # A reply that exhausted the repairs is committed, unless the cap cut it: on resume nothing
    # would show it was cut, and a complete-looking action could run.
    replied = error is None or (
        isinstance(error, RepairsExhaustedError) and "cut off at the completion cap" not in str(error)
    )
    if [dict(m) for m in read.messages[: len(sent)]] != sent:
        problems.append("the transcript does not begin with the messages of the server's last request")
    extra = read.messages[len(sent) :]
    if len(extra) != int(replied) or any(m["role"] != "assistant" for m in extra):
        problems.append(
            f"after the last request the transcript holds {len(extra)} messages, not {int(replied)}"
        )
    return problems


def summary(outcomes: Sequence[Outcome]) -> str:
    """The table support/fault_table.py prints: one row per fault kind (its runs summed), then the totals.

    ``recovered``, ``failed clearly`` and ``transcript intact`` count runs.
    """
    kinds: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        kinds.setdefault(outcome.kind, []).append(outcome)
    header = ("kind", "runs", "injected", "retried", "recovered", "failed clearly", "transcript intact")
    rows = [_row(kind, runs) for kind, runs in kinds.items()]
    rows.append(_row("total", list(outcomes)))
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "| " + " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) + " |"
        for row in [header, *rows]
    ]
    lines.insert(1, "|" + "|".join("-" * (width + 2) for width in widths) + "|")
    return "\n".join(lines)


def _row(kind: str, runs: Sequence[Outcome]) -> tuple[str, ...]:
    counts = (
        len(runs),
        sum(o.injected for o in runs),
        sum(o.retried for o in runs),
        sum(o.recovered for o in runs),
        sum(o.failed_clearly for o in runs),
        sum(o.transcript_intact for o in runs),
    )
    return (kind, *map(str, counts))
