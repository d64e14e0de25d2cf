"""Chat templates with the ``<think>`` tags of reasoning models, over the default model's own.

Neither project model was trained to reason in tags, so the tests give SmolLM2 the two layouts
reasoning templates use: one whose generation prompt opens the tags itself (DeepSeek-R1's), and
one that only strips earlier turns' reasoning, so that the model (here: the backend) opens them
(Qwen3's). Both drop an earlier assistant turn's reasoning, as those templates do.
"""

from __future__ import annotations

from typing import Any

from toolrouting import Completion, Message, ReasoningTags, parse_route

__all__ = ["ASKED", "OPENS_REASONING", "STRIPS_REASONING", "THINK", "WEATHER", "reasoned_then_routed"]

THINK = ReasoningTags("<think>", "</think>")
ASKED: list[Message] = [{"role": "user", "content": "What is the weather in Paris?"}]
#: One tool whose route is bounded (a city of at most 24 characters), far below the tests' caps.
WEATHER: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "maxLength": 24}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }
]

_SYSTEM = (
    "{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful "
    "AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}{% endif %}"
)
_TURN = (
    "{% set content = message['content'].split('</think>')[-1].lstrip() if message['role'] == 'assistant' "
    "and '<think>' in message['content'] else message['content'] %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>\\n' }}"
)


def _template(generation: str) -> str:
    return (
        "{% for message in messages %}" + _SYSTEM + _TURN + "{% endfor %}"
        "{% if add_generation_prompt %}{{ '" + generation + "' }}{% endif %}"
    )


#: The generation prompt opens the reasoning: ``<|im_start|>assistant\n<think>\n``.
OPENS_REASONING = _template("<|im_start|>assistant\\n<think>\\n")

#: The generation prompt is the plain one; ``<think>`` is written only where earlier turns' is dropped.
STRIPS_REASONING = _template("<|im_start|>assistant\\n")


def reasoned_then_routed(reply: Completion, budget: int, context: str) -> None:
    """What a reply reasoned first guarantees whatever the model writes: a thought of at most
    ``budget`` tokens with no close tag, a whole route under its grammar (``WEATHER``'s, within
    the cap), and ``context`` (what the model was given and wrote, as text) holding the thought
    closed between the tags right before the reply, after the one opening of the reply."""
    assert reply.reasoning is not None
    assert THINK.close not in reply.reasoning
    assert reply.raw is not None
    assert reply.raw["reasoning_tokens"] <= budget
    assert not reply.truncated
    assert parse_route(reply.text, ["get_weather"]).ok
    opened = "<|im_start|>assistant\n<think>\n"
    written = reply.reasoning.rstrip()
    assert context.count(opened) == 1
    assert context[context.index(opened) :].startswith(
        opened + (written + "\n" if written else "\n") + "</think>\n\n"
    )
