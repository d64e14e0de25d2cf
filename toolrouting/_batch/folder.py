"""The output folder of a batch: per question its transcript, and its result once the run has ended.

``ID.jsonl`` is the run's transcript, written as the loop commits it. ``ID.result.json`` is
written when the run has ended, to a temporary file that is fsync'd and then renamed into
place, the folder fsync'd after: a kill leaves no result or a whole one. So a result on disk
is what says a question is finished; a transcript without one is a run cut short, resumed on
the next start.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from .._errors import TranscriptError
from .._loop import read_transcript

__all__ = ["RESULT_SUFFIX", "TRANSCRIPT_SUFFIX", "BatchFolder", "Stage"]

RESULT_SUFFIX = ".result.json"
TRANSCRIPT_SUFFIX = ".jsonl"

#: Where a question stands in the folder: finished (``done`` or ``failed``), cut short with
#: something of its run committed (``torn``), or not begun (``new``).
Stage = Literal["done", "failed", "torn", "new"]


class BatchFolder:
    """The folder at ``path``, made if missing; each question's files are named by its id."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)

    def transcript(self, id: str) -> Path:
        return self.path / f"{id}{TRANSCRIPT_SUFFIX}"

    def result(self, id: str) -> Path:
        return self.path / f"{id}{RESULT_SUFFIX}"

    def stage(self, id: str) -> Stage:
        """Where question ``id`` stands: its result's status, else whether its run committed anything."""
        record = self.read_result(id)
        if record is not None:
            return "failed" if record.get("status") == "failed" else "done"
        return "torn" if self._committed(id) else "new"

    def read_result(self, id: str) -> dict[str, Any] | None:
        """Question ``id``'s result, ``None`` when it has none yet."""
        try:
            text = self.result(id).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        value = json.loads(text)  # written whole by write_result, or not at all
        if not isinstance(value, dict):
            raise ValueError(f"{self.result(id)} holds no result object")
        return value

    def write_result(self, id: str, record: dict[str, Any]) -> None:
        """Put question ``id``'s result in place at once: a kill leaves the old state or the new."""
        target = self.result(id)
        staging = target.with_name(f".{target.name}.partial")
        data = json.dumps(record, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"
        with open(staging, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(staging, target)
        _sync_folder(self.path)

    def _committed(self, id: str) -> bool:
        """Whether ``id``'s transcript holds at least the caller's messages, so its run can resume.

        A run killed before its first commit leaves an empty file, or a header whose messages
        never landed; it is started again. A transcript damaged otherwise is resumed, and the
        resume says what is wrong with it.
        """
        path = self.transcript(id)
        if not path.exists():
            return False
        try:
            read = read_transcript(path)
        except TranscriptError:
            return True
        return len(read.messages) >= max(read.caller_messages or 0, 1)


def _sync_folder(path: Path) -> None:
    """fsync the folder, so the rename that put a result in place survives a power cut too."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:  # a platform that cannot open a folder (Windows) syncs its renames itself
        return
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
