"""The demo-question benchmark's baseline: the answer request of earlier versions, exactly.

The benchmark (benchmarks/quality/demo_questions.py) compares the loop's answer request with the one
earlier versions wrote (``earlier_answer_request``), on the same scripted read of a note; this
pins the earlier one's bytes, so the baseline cannot drift with the loop's wording. The
scripted backend is a fake by design: no model is asked here.
"""

from __future__ import annotations

import json

from toolrouting import Message, RoutingLoop, ScriptedBackend
from toolrouting._loop import answer_request, earlier_answer_request
from toolrouting._loop.answer_request import is_answer_request
from toolrouting.demo import MemoryStore


def test_the_earlier_answer_request_asks_the_question_first_on_the_same_results() -> None:
    messages = [Message(role="user", content="Which key opens the storage room?")]
    action = {"tool": "memory_read", "arguments": {"title": "Where the keys hang"}}
    with MemoryStore.sample(titles=True) as store:
        result = RoutingLoop(ScriptedBackend([json.dumps(action), '{"tool": "none"}']), store).run(messages)
    # The run's conversation: the instructions the loop put first, then the question.
    now = answer_request(result.messages, 2)
    earlier = earlier_answer_request(result.messages, 2)
    read = result.messages[3]["content"].split("\n", 1)[1]  # the result, after its header
    assert now == (
        f"What was found:\n{read}\n\nQuestion: Which key opens the storage room?\n"
        "Answer the question in plain words, from what was found above."
    )
    assert earlier == (
        f"Question: Which key opens the storage room?\n\nWhat the tools returned:\nmemory_read: {read}\n\n"
        "Now answer the question in plain words, from the tool results above."
    )
    assert is_answer_request(earlier)  # a resumed run still recognises it
