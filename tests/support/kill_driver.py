"""A routing run for tests/loop/test_loop_kill.py to kill:
``python -m support.kill_driver run|resume TRANSCRIPT [async] [calls] [shortlist]``, from tests/.

The model is a fake (a ScriptedBackend whose reply depends only on the conversation it is
sent), so an interrupted run resumed must write the same bytes as a run left alone. It
refuses once, calls a tool that raises, is cut at its cap once with a valid action, and
then answers. The tools take a little real time and count their calls, so kills land at
varied points and a resume that forgot the calls would write other bytes.

After every committed message the driver reports ``committed N`` (N messages on disk so
far), so the killer knows how far the run got; ``torn TEXT`` when a resume dropped a torn
line; ``finished REASON`` at the end. From the command line it prints them; tests/loop/test_loop_kill.py
and tests/loop/test_loop_kill_bytes.py fork it with :func:`child`, which sends them on a pipe.
``async`` runs it through the :class:`AsyncRoutingLoop` (behind the sync face of
tests/support/drivers.py) instead;
``calls`` drives the run with ``max_calls=2`` (:func:`model_of_calls`), whose decisions make two
calls at once; ``shortlist`` drives it with ``shortlist=2`` over the two tools hidden among
distractors, which the ranker ranks below them, so each round's offer is recorded in the transcript.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

from support.catalogues import lookup, tool
from support.drivers import DRIVERS, DriverName
from toolrouting._backends.base import Completion, Message, Usage
from toolrouting._backends.scripted import ScriptedBackend, ScriptedRequest
from toolrouting._errors import TranscriptError
from toolrouting._loop import machine as _machine
from toolrouting._loop.events import Event, Resumed
from toolrouting._loop.repair_feedback import REPAIR_LEAD
from toolrouting._loop.transcript_format import encode_commit, encode_header
from toolrouting._loop.transcript_writer import TranscriptWriter
from toolrouting._provider import ToolOutput
from toolrouting._result_messages import split_routed_result

__all__ = ["CALLED", "QUESTION", "Counter", "backend", "child", "drive", "loop", "model", "model_of_calls"]

QUESTION: list[Message] = [
    {"role": "system", "content": "Answer from the notes."},
    {"role": "user", "content": "What does the latch on the storage-room door do?"},
]
#: Seconds a tool call and a model reply take: enough to spread the kill points over a run.
TOOL_SECONDS = 0.015
MODEL_SECONDS = 0.004

_WORDS = ("latch", "door", "hinge", "spring", "key")
#: The tools a shortlisted run's two hide among, ahead of them in the catalogue: none shares a
#: word with the question or the results, so the shortlist of two is lookup and explode.
_DISTRACTORS = ("weather_now", "send_email", "convert_units", "git_status")
ANSWER = "The latch keeps the storage-room door shut until the key turns it."

#: Every tool call this process made, in order, as ``tool json-arguments``: what a resume runs.
CALLED: list[str] = []
#: How long a driver told to stop at a byte waits there for the killer's SIGKILL.
STOPPED_SECONDS = 60.0


def _calls(*calls: str) -> str:
    """A decision of several calls, as the route of up to K calls writes one: a JSON array."""
    return "[" + ", ".join(calls) + "]"


def _seen(request: ScriptedRequest) -> tuple[int, int] | None:
    """After the model's pause: how many results and repairs the conversation holds; ``None``
    when the request asks for the answer."""
    time.sleep(MODEL_SECONDS)
    if request.settings.json_schema is None:
        return None
    users = [m["content"] for m in request.messages if m["role"] == "user"]
    return sum(1 for m in users if split_routed_result(m)), sum(1 for m in users if m.startswith(REPAIR_LEAD))


def model(request: ScriptedRequest) -> str | Completion:
    """The fake model: its next reply from how many results and repairs the conversation holds."""
    seen = _seen(request)
    if seen is None:
        return ANSWER
    results, repairs = seen
    if results == 0 and repairs == 0:
        return "Let me search the notes first."
    if results == 1:
        return '{"tool": "explode", "arguments": {}}'
    if results == 3 and repairs == 1:
        # A whole action, yet the server says the cap cut it: refused, never run.
        return Completion(text=lookup("hinge"), finish_reason="length", usage=Usage(), truncated=True)
    words = (_WORDS[0], None, *_WORDS[1:])
    return lookup(str(words[results])) if results < len(words) else '{"tool": "none"}'


def model_of_calls(request: ScriptedRequest) -> str | Completion:
    """The fake model of a run with ``max_calls=2``: decisions of two calls beside single ones.

    It refuses once, then calls two lookups at once, a lookup beside a tool that raises, is cut
    at its cap once with a valid array, makes one call alone, two more at once (one a repeat),
    and then answers.
    """
    seen = _seen(request)
    if seen is None:
        return ANSWER
    results, repairs = seen
    if results == 0:
        return "Let me search the notes first." if repairs == 0 else _calls(lookup("latch"), lookup("door"))
    if results == 2:
        return _calls(lookup("hinge"), '{"tool": "explode", "arguments": {}}')
    if results == 4 and repairs == 1:
        # A whole decision, yet the server says the cap cut it: refused, never run.
        cut = _calls(lookup("spring"), lookup("key"))
        return Completion(text=cut, finish_reason="length", usage=Usage(), truncated=True)
    if results == 4:
        return lookup("spring")
    if results == 5:
        return _calls(lookup("key"), lookup("latch"))
    return '{"tool": "none"}'


class Counter:
    """Two tools: ``lookup`` numbers its answers (state that resume restores), ``explode`` raises.

    ``by_word`` numbers each word's lookups apart (a word's second lookup is its note 2): the
    calls of one decision may run concurrently, in any order, and must still answer alike.
    """

    def __init__(self, by_word: bool = False, distractors: bool = False) -> None:
        self.by_word = by_word
        self.distractors = distractors
        self.seen: collections.Counter[str] = collections.Counter()

    @property
    def calls(self) -> int:
        return self.seen.total()

    def tools_for_llm(self) -> list[dict[str, Any]]:
        word = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}
        tools: list[dict[str, Any]] = [
            {"type": "function", "function": {"name": "lookup", "parameters": word}},
            {"type": "function", "function": {"name": "explode", "parameters": {"type": "object"}}},
        ]
        if not self.distractors:
            return tools
        tools[0]["function"]["description"] = "Look up a word of the storage-room notes."
        tools[1]["function"]["description"] = "Test the latch."
        return [*(tool(name) for name in _DISTRACTORS), *tools]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        CALLED.append(f"{name} {json.dumps(arguments, sort_keys=True)}")
        time.sleep(TOOL_SECONDS)
        if name == "explode":
            raise RuntimeError("the tool blew up")
        word = arguments["word"]
        self.seen[word] += 1
        number = self.seen[word] if self.by_word else self.calls
        return ToolOutput(f"note {number}: {word} is part of the storage-room door.")

    def restore(self, calls: Sequence[tuple[str, dict[str, Any], ToolOutput]]) -> None:
        self.seen = collections.Counter(arguments["word"] for tool, arguments, _ in calls if tool == "lookup")


def backend(max_calls: int = 1) -> ScriptedBackend:
    return ScriptedBackend([model if max_calls == 1 else model_of_calls] * 30)


def loop(
    transcript: str, kind: DriverName = "sync", max_calls: int = 1, shortlist: bool = False, **options: Any
) -> Any:
    """The run to kill; ``max_calls=2`` is the run whose decisions make two calls at once, and
    ``shortlist`` the run of ``shortlist=2`` over its tools and distractors."""
    if shortlist:
        options["shortlist"] = 2
    return DRIVERS[kind].loop(
        backend(max_calls),
        Counter(by_word=max_calls > 1, distractors=shortlist),
        transcript=transcript,
        answer=True,
        max_calls=max_calls,
        **options,
    )


class _Reporting(TranscriptWriter):
    """The loop's writer, saying when each message is on disk (test instrumentation)."""

    report: Callable[[str], object] = print
    committed = 0
    commits: list[int] = []  # noqa: RUF012 (one run a process)
    """The file's size after each commit."""

    stop_at: int | None = None
    """A byte of the file to stop at, inside the commit that would write it: the bytes before it
    are written and fsync'd, ``stopped`` is reported, and the driver waits to be killed there."""

    def append(self, *messages: Message) -> None:
        stop = _Reporting.stop_at
        size = os.path.getsize(self.path)
        data = (b"" if self._headed else encode_header(len(messages), self.version)) + encode_commit(
            messages, self.version
        )
        if stop is not None and size <= stop < size + len(data):
            with open(self.path, "ab") as file:
                file.write(data[: stop - size])
                file.flush()
                os.fsync(file.fileno())
            _Reporting.report("stopped")
            time.sleep(STOPPED_SECONDS)  # the killer's SIGKILL lands here, at that very byte
        super().append(*messages)
        _Reporting.commits.append(os.path.getsize(self.path))
        for _ in messages:
            _Reporting.committed += 1
            _Reporting.report(f"committed {_Reporting.committed}")

    def offer(self, offered: Sequence[str], catalogue: int) -> None:
        super().offer(offered, catalogue)
        _Reporting.commits.append(os.path.getsize(self.path))  # a commit of its own, no message


def _on_event(event: Event) -> None:
    if isinstance(event, Resumed):
        _Reporting.committed = event.messages
        if event.torn_line is not None:
            _Reporting.report(f"torn {event.torn_line!r}")


def drive(
    mode: str,
    transcript: str,
    report: Callable[[str], object],
    kind: DriverName = "sync",
    stop_at: int | None = None,
    max_calls: int = 1,
    shortlist: bool = False,
) -> list[int]:
    """Run (``mode`` ``run``) or resume the driver's run through the ``kind`` loop; returns the
    file size after each commit. ``stop_at`` stops it at that byte of the file, to be killed;
    ``max_calls=2`` drives the run of decisions of two calls, ``shortlist`` the shortlisted run."""
    _Reporting.report, _Reporting.committed, _Reporting.commits = report, 0, []
    _Reporting.stop_at = stop_at
    CALLED.clear()
    _machine.TranscriptWriter = _Reporting  # type: ignore[attr-defined]
    try:
        run = loop(transcript, kind, max_calls, shortlist, on_event=_on_event)
        result = run.run(QUESTION) if mode == "run" else run.resume()
    finally:
        _machine.TranscriptWriter = TranscriptWriter  # type: ignore[attr-defined]
    report(f"finished {result.reason}")
    return _Reporting.commits


def child(
    mode: str,
    transcript: str,
    connection: Connection,
    kind: DriverName = "sync",
    stop_at: int | None = None,
    max_calls: int = 1,
    shortlist: bool = False,
) -> None:
    """:func:`drive` in a process forked by tests/loop/test_loop_kill.py, reporting on ``connection``."""
    try:
        drive(mode, transcript, connection.send, kind, stop_at, max_calls, shortlist)
    except BaseException:
        connection.send(f"error {traceback.format_exc()}")
        raise


def main(argv: list[str]) -> int:
    mode, transcript, *rest = argv
    try:
        drive(
            mode,
            transcript,
            lambda line: print(line, flush=True),
            "async" if "async" in rest else "sync",
            max_calls=2 if "calls" in rest else 1,
            shortlist="shortlist" in rest,
        )
    except TranscriptError as error:  # a second writer, above all: refused, and said so
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
