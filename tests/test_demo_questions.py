"""The demo-question benchmark's baseline: the answer request of earlier versions, exactly.

The benchmark compares the loop's answer request with the one earlier versions wrote, on the
same scripted read of a note; this pins the earlier one's bytes, so the baseline cannot drift
with the loop's wording. The scripted backend is a fake by design: no model is asked here.
"""

from __future__ import annotations

import sys
from pathlib import Path

from toolrouting import Message, RoutingLoop
from toolrouting.demo import MemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
try:
    import demo_questions
finally:
    sys.path.pop(0)


def test_the_earlier_answer_request_asks_the_question_first_on_the_same_results() -> None:
    messages = [Message(role="user", content="Which key opens the storage room?")]
    with MemoryStore.sample(titles=True) as store:
        result = RoutingLoop(demo_questions.scripted("M2"), store).run(messages)
    # The run's conversation: the instructions the loop put first, then the question.
    now = demo_questions.answer_request(result.messages, 2)
    earlier = demo_questions.earlier_answer_request(result.messages, 2)
    read = result.messages[3]["content"].split("\n", 1)[1]  # the result, after its header
    assert now == (
        f"What was found:\n{read}\n\nQuestion: Which key opens the storage room?\n"
        "Answer the question in plain words, from what was found above."
    )
    assert earlier == (
        f"Question: Which key opens the storage room?\n\nWhat the tools returned:\nmemory_read: {read}\n\n"
        "Now answer the question in plain words, from the tool results above."
    )
