"""Abstention in a run: a decision whose calls the conversation cannot fill, turned into ``none``.

With ``abstain="grounding"`` every accepted decision that calls a tool is held against the
run's evidence (``_grounding``): the caller's system text without the loop's instructions, the
caller's turns, and the results of the calls so far, never the loop's own repair messages or
answer requests, which list the catalogue. A decision with an argument the conversation does
not give is not run: the model's reply is committed as written, and after it, in the same
commit, the notice that records why (``abstention_notice``: ``Not called: get_weather
needs city, which the conversation does not give.``). The run then ends as after a handoff,
and the answer request says what was missing, so the answer asks the user for it or says that
no tool here does what is asked. Resume reads the notice back, so a resumed run writes the bytes
an uninterrupted one writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._backends import Message
from .._catalogue_checks import checked_catalogue
from .._grounding import AbstainPolicy, Abstention, abstention, conversation_evidence
from .._result_messages import read_routed_result
from .abstention_notice import is_abstention_notice
from .answer_request import is_answer_request
from .repair_feedback import is_repair_message
from .result import Action
from .system_instructions import Instructions, caller_system

__all__ = ["abstained_decision", "run_evidence_messages"]


def run_evidence_messages(
    messages: Sequence[Message], conversation: int, instructions: Instructions
) -> list[Message]:
    """The messages a run's calls are held against: the caller's, with the instructions the loop
    merged into the first taken out, and the results the run has committed since."""
    kept: list[Message] = []
    for at, message in enumerate(messages):
        text = message["content"]
        if message["role"] == "assistant":
            continue
        if at == 0 and message["role"] == "system":
            own = caller_system(text, instructions)
            if own:
                kept.append(Message(role="system", content=own))
            continue
        if at >= conversation and read_routed_result(text) is None:
            continue  # the run's own: repairs, notices, the answer request
        if message["role"] == "user" and (
            is_repair_message(text) or is_answer_request(text) or is_abstention_notice(text)
        ):
            continue  # an earlier run's, in a conversation that continues it
        kept.append(message)
    return kept


def abstained_decision(
    policy: AbstainPolicy,
    actions: Sequence[Action],
    tools: Sequence[Mapping[str, Any]],
    messages: Sequence[Message],
    conversation: int,
    instructions: Instructions,
) -> Abstention | None:
    """Whether ``policy`` turns a decision's calls (``actions``, of the offered ``tools``) into
    ``none``, held against the run's messages so far."""
    if policy == "off" or not actions or actions[0].arguments is None:
        return None
    parameters = {tool.name: tool.parameters for tool in checked_catalogue(tools)}
    evidence = conversation_evidence(run_evidence_messages(messages, conversation, instructions))
    calls = [(action.tool, action.arguments or {}, parameters.get(action.tool, {})) for action in actions]
    return abstention(policy, calls, evidence)
