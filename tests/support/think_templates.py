"""Chat templates with the ``<think>`` tags of reasoning models, over the default model's own.

Neither project model was trained to reason in tags, so the tests give SmolLM2 the two layouts
reasoning templates use: one whose generation prompt opens the tags itself (DeepSeek-R1's), and
one that only strips earlier turns' reasoning, so that the model (here: the backend) opens them
(Qwen3's). Both drop an earlier assistant turn's reasoning, as those templates do.
"""

from __future__ import annotations

__all__ = ["OPENS_THINKING", "STRIPS_THINKING"]

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
OPENS_THINKING = _template("<|im_start|>assistant\\n<think>\\n")

#: The generation prompt is the plain one; ``<think>`` is written only where earlier turns' is dropped.
STRIPS_THINKING = _template("<|im_start|>assistant\\n")
