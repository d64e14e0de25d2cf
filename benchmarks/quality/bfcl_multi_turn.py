"""The leaderboard's multi-turn categories for benchmarks/quality/bfcl.py: a conversation of turns,
each argument maybe taken from an earlier call's result.

    /tmp/bfclvenv/bin/python -m benchmarks.quality.bfcl --model MODEL.gguf --categories multi_turn_base \\
        --cases 2 --out multi.json --way "off=serve --abstain off" --way "grounding=serve --abstain grounding"

A multi-turn case (``multi_turn_base`` and its variants) holds a user message a turn and the
classes of a simulated world (a file system, a trading account, a vehicle ...) in their initial
state. The handler's own ``inference`` runs it (``inference_multi_turn_FC``): each turn's message
is sent with the whole conversation so far; every call the model makes is executed against the
leaderboard's simulated classes and its result sent back as a ``tool`` message, step after step,
until the model answers without a call (the turn's end) or 20 steps pass (the case is then
failed). The leaderboard's own checker scores the case (``_evaluate_single_multi_turn_entry``,
as its ``multi_turn_runner`` does): every turn's calls and the ground truth's are executed from
the initial state, and the case is right when after each turn the classes' states match and the
ground truth's results are among the model's.

The leaderboard keeps each simulated instance by the model's name and the case's id for the
whole process, so that a turn goes on from the last one's state; a case asked of a second way
would go on from the first way's. Each case is therefore started from the initial state by
forgetting its instances first (``_fresh``).

A record holds the case's turns (``turns``: each turn's message, and each step's calls with
their results, or its text; the step's tokens and seconds), every call in order (``calls``, each
with its turn), the checker's verdict (``valid``, ``error_type``, and its first message in
``note``), and the case's tokens and seconds summed.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import time
from typing import Any

Record = dict[str, Any]

#: The multi-turn categories: the plain one, a function held back until a later turn, a
#: parameter the user does not give, a long context of files and records.
MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")


def _fresh(entry: Record) -> None:
    """Forget every simulated instance the leaderboard keeps for ``entry`` (the handler's and the
    checker's, under any model name), so that it starts from its initial state."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    kept = vars(multi_turn_utils)
    ends = tuple(
        re.sub(r"[-./:]", "_", f"_{entry['id']}_{name}_instance") for name in entry["involved_classes"]
    )
    for name in [name for name in kept if name.endswith(ends)]:
        del kept[name]


def _step(log: list[Record]) -> Record:
    """One step of the handler's log: the calls with their results, or the text."""
    said = next((item["content"] for item in log if item["role"] == "assistant"), None)
    if not isinstance(said, list):
        return {"text": said}
    calls = [{"name": name, "arguments": arguments} for call in said for name, arguments in call.items()]
    return {"calls": calls, "results": [item["content"] for item in log if item["role"] == "tool"]}


def _turns(metadata: Record) -> list[Record]:
    """Each turn the handler ran: its message and its steps, each with its tokens and seconds."""
    logs = [log for log in metadata.get("inference_log", []) if isinstance(log, dict)]
    turns = []
    for index, log in enumerate(logs):
        steps = [_step(log[f"step_{n}"]) for n in range(len(log)) if f"step_{n}" in log]
        for field, name in (("input_token_count", "input_tokens"), ("output_token_count", "output_tokens")):
            for step, count in zip(steps, metadata[field][index], strict=False):
                step[name] = count
        for step, seconds in zip(steps, metadata["latency"][index], strict=False):
            step["seconds"] = round(seconds, 3)
        query = log.get("begin_of_turn_query") or []
        turns.append({"query": " ".join(m["content"] for m in query if m["role"] == "user"), "steps": steps})
    return turns


def run_multi_turn(
    handler: Any, category: str, entry: Record, prompt: Record, answer: Record | None
) -> Record:
    """One multi-turn case asked and scored: each turn's calls and results, and the checker's verdict."""
    import openai
    from bfcl_eval.eval_checker.eval_runner import _evaluate_single_multi_turn_entry

    if answer is None:
        raise ValueError(f"{entry['id']}: a multi-turn case is scored against its ground truth, and has none")
    record: Record = {
        "id": entry["id"],
        "category": category,
        "question": [
            " ".join(m["content"] for m in turn if m["role"] == "user") for turn in entry["question"]
        ],
        "tools": handler._compile_tools({}, json.loads(json.dumps(entry)))["tools"],
    }
    _fresh(entry)
    started_at = time.perf_counter()
    try:
        # The handler prints every step; its log comes back in the metadata instead.
        with contextlib.redirect_stdout(io.StringIO()):
            result, metadata = handler.inference(
                json.loads(json.dumps(entry)), include_input_log=False, exclude_state_log=True
            )
    except openai.APIError as error:
        return {**record, "outcome": "error", "valid": False, "note": str(error)[:300]}
    verdict = _evaluate_single_multi_turn_entry(
        handler, entry["id"], result, answer["ground_truth"], copy.deepcopy(prompt),
        handler.registry_name, category,
    )  # fmt: skip
    seconds = round(time.perf_counter() - started_at, 3)
    turns = _turns(metadata)
    failure = verdict.get("error") or {}
    message = failure.get("error_message") or ""  # the runner's own a list, the checker's a text
    message = message[0] if isinstance(message, list) and message else message
    steps = [step for turn in turns for step in turn["steps"]]
    return {
        **record,
        "outcome": "answered",
        "turns": turns,
        "calls": [
            {"turn": index, **call}
            for index, turn in enumerate(turns)
            for step in turn["steps"]
            for call in step.get("calls", [])
        ],
        "text": None,
        "valid": bool(verdict["valid"]),
        "error_type": failure.get("error_type"),
        "note": None if verdict["valid"] else str(message)[:300],
        "input_tokens": sum(step.get("input_tokens") or 0 for step in steps),
        "output_tokens": sum(step.get("output_tokens") or 0 for step in steps),
        "seconds": seconds,
    }


def brief(record: Record) -> str:
    """A record as the run's log line shows it: a multi-turn case's calls by name, a turn
    apart; a case of one question its calls; else the start of its text or note."""
    turns = record.get("turns")
    if turns is not None:
        return " | ".join(
            ", ".join(call["name"] for step in turn["steps"] for call in step.get("calls", [])) or "-"
            for turn in turns
        )
    return str(record.get("calls") or (record.get("text") or record.get("note") or "")[:80])
