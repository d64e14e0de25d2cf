"""The questions files and results folders the batch tests write and read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.slow_model import QUESTION_MARK
from toolrouting._batch import RESULT_SUFFIX


def write_lines(path: Path, *records: Any) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def questions_file(path: Path, count: int) -> Path:
    return write_lines(
        path,
        *({"id": f"q{n}", "question": f"{QUESTION_MARK}q{n}: what does the latch do?"} for n in range(count)),
    )


def results_in(out: Path) -> dict[str, dict[str, Any]]:
    return {
        p.name.removesuffix(RESULT_SUFFIX): json.loads(p.read_text(encoding="utf-8"))
        for p in out.glob(f"*{RESULT_SUFFIX}")
    }
