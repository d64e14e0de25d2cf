"""Reasoning efforts for benchmarks/quality/bfcl.py: each case asked at each effort, side by side.

``--efforts none,low,medium`` gives every way one handler an effort, named ``WAY@EFFORT`` in the
records. The handler's own client is made to ask for the effort as a user of each API would:
``reasoning_effort`` on chat completions, ``reasoning: {"effort": E}`` on the Responses API, and
nothing for ``none`` (what the handlers send for a model not named like OpenAI's reasoning
models). Serve serves an effort as the route's bounded thought before the decision, of the
budget its table names (docs/serve-reference.md, "Thinking and reasoning").

The cases are split in two halves (even and odd places in each category), so a default fitted on
one half is reported on the other (``halves``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Record = dict[str, Any]


def ask_effort(handler: Any, api: str, effort: str) -> None:
    """Make ``handler``'s client ask for ``effort`` on every request (nothing for ``none``)."""
    if effort == "none":
        return
    value: object
    if api == "responses":
        endpoint, field, value = handler.client.responses, "reasoning", {"effort": effort}
    else:
        endpoint, field, value = handler.client.chat.completions, "reasoning_effort", effort
    create = endpoint.create

    def created(**kwargs: Any) -> Any:
        return create(**{**kwargs, field: value})

    endpoint.create = created


def halves(records: Sequence[Record]) -> list[str]:
    """One line a way and category: the right answers of each half, even places then odd."""
    lines = []
    kinds = dict.fromkeys((record.get("way", "serve"), record["category"]) for record in records)
    for way, category in kinds:
        mine = [r for r in records if r.get("way", "serve") == way and r["category"] == category]
        parts = [mine[0::2], mine[1::2]]
        right = " / ".join(f"{sum(r['valid'] for r in part)}/{len(part)}" for part in parts)
        lines.append(f"{way:12} {category:14} halves {right} right")
    return lines
