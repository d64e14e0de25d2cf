"""A GGUF's own chat template with ``<think>`` tags, for measuring reasoning in the model's own syntax.

Run: .venv/bin/python -m benchmarks.quality.think_template MODEL.gguf > think.jinja
     .venv/bin/python -m benchmarks.quality.think_template --template TEMPLATE.jinja > think.jinja

Prints the model's chat template (``tokenizer.chat_template`` in its metadata) with one change,
the one reasoning templates such as Qwen3's and DeepSeek-R1's make: an earlier assistant turn's
content is cut to what follows its last ``</think>``, so a conversation carries no earlier
reasoning. The generation prompt is the template's own, so the backend opens ``<think>`` itself
(``ChatPrompt.opening``). Given to ``toolrouting serve --chat-template FILE``, the variant makes
serve spend a request's reasoning budget between the tags instead of in the route's ``thought``
slot, while a request without reasoning is sent the same bytes as under the GGUF's own template.

The change is generic: a preamble rebinds ``messages`` to a copy whose assistant contents are
cut, before the template's own text, which is left as it is. That is checked here, not assumed:
sample conversations without ``<think>`` (with tools, and an assistant turn with a tool call
where the template takes one) must render byte-identically under both templates, and one with
an earlier thought must render as the GGUF's own template renders it without the thought. A
template that fails either check, has no ``messages``, or writes ``<think>`` already is refused
with a message, exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["Refused", "reasoning_variant", "rendered"]

#: Rebinds ``messages`` before the template runs. Reasoning between <think> and </think>: an
#: assistant turn keeps what follows its last </think>, as Qwen3's and DeepSeek-R1's templates do.
#: Built with ``+`` and ``dict(...)``, as the sandbox llama-cpp-python renders in allows no mutation.
_PREAMBLE = (
    "{# Reasoning is written between <think> and </think>; an earlier assistant turn keeps what "
    "follows its last </think>. #}"
    "{% set _reasoning = namespace(messages=[]) %}"
    "{% for _message in messages %}"
    "{% if _message['role'] == 'assistant' and _message['content'] is string "
    "and '</think>' in _message['content'] %}"
    "{% set _reasoning.messages = _reasoning.messages + "
    "[dict(_message, content=_message['content'].split('</think>')[-1].lstrip())] %}"
    "{% else %}{% set _reasoning.messages = _reasoning.messages + [_message] %}{% endif %}"
    "{% endfor %}"
    "{% set messages = _reasoning.messages %}"
)

_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read_note",
            "description": "A note by its title.",
            "parameters": {
                "type": "object",
                "properties": {"title": {"type": "string"}},
                "required": ["title"],
            },
        },
    }
]
_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "read_note", "arguments": {"title": "latch"}},
}

#: Conversations without ``<think>``: each must render the same bytes under both templates.
_PLAIN: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = [
    ([{"role": "user", "content": "What is 2 + 2?"}], None),
    (
        [
            {"role": "system", "content": "You answer briefly."},
            {"role": "user", "content": "Hi."},
            {"role": "assistant", "content": "Hello. How can I help?"},
            {"role": "user", "content": "What does the latch note say?"},
        ],
        _TOOLS,
    ),
    (
        [
            {"role": "user", "content": "What does the latch note say?"},
            {"role": "assistant", "content": None, "tool_calls": [_CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "It holds the door shut."},
            {"role": "user", "content": "And the lock?"},
        ],
        _TOOLS,
    ),
]

_THOUGHT = "<think>\nThe user greets me.\n</think>\n\n"


class Refused(ValueError):
    """A template this script cannot rewrite safely; the message says why."""


def rendered(template: str, messages: Sequence[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """``messages`` as llama-cpp-python's formatter renders them under ``template``, generation prompt
    included (what the embedded backend tokenizes)."""
    from llama_cpp import llama_chat_format

    # Untyped: the formatter's annotations name TypedDicts a template's messages need not match.
    formatter: Any = llama_chat_format.Jinja2ChatFormatter(
        template=template, eos_token="</s>", bos_token="<s>"
    )
    prompt: str = formatter(messages=list(messages), tools=tools).prompt
    return prompt


def reasoning_variant(template: str) -> str:
    """``template`` with earlier assistant turns' reasoning cut (module docstring), checked to
    render a conversation without ``<think>`` byte-identically; :class:`Refused` where it cannot be."""
    if "<think>" in template or "</think>" in template:
        raise Refused("the template writes <think> or </think> already: give it to serve as it is")
    if "messages" not in template:
        raise Refused("the template names no messages, so there is nothing to rebind")
    variant = _PREAMBLE + template
    cut = 0
    for messages, tools in _PLAIN:
        try:
            own = rendered(template, messages, tools)
        except Exception:  # a conversation the template does not take is skipped
            continue
        try:
            ours = rendered(variant, messages, tools)
        except Exception as error:  # any failure of the variant is a refusal
            raise Refused(f"the variant fails where the template renders: {error}") from error
        if ours != own:
            raise Refused(f"the variant renders other bytes than the template: {ours!r} against {own!r}")
        if not any(m["role"] == "assistant" and isinstance(m["content"], str) for m in messages):
            continue
        thought = [
            dict(m, content=_THOUGHT + m["content"]) if m["role"] == "assistant" and m["content"] else m
            for m in messages
        ]
        if rendered(variant, thought, tools) != own:
            raise Refused("the variant does not cut an earlier assistant turn's reasoning")
        cut += 1
    if cut == 0:
        raise Refused(
            "the template renders no sample conversation with an assistant turn: nothing was checked"
        )
    return variant


def main(argv: Sequence[str] | None = None) -> None:
    """Print the variant of the GGUF's own template (or of ``--template``'s); exit 2 with a message
    where it cannot be made."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("model", type=Path, nargs="?", help="the GGUF model whose chat template is rewritten")
    parser.add_argument(
        "--template", type=Path, help="a chat template's text to rewrite in place of a GGUF's"
    )
    args = parser.parse_args(argv)
    source: Path | None = args.template or args.model
    if source is None or (args.template and args.model):
        parser.error("give a GGUF model or --template FILE, one of the two")
    if not source.is_file():
        parser.exit(2, f"think_template: {source}: no such file\n")
    if args.template:
        template = source.read_text(encoding="utf-8")
    else:
        import llama_cpp

        llama = llama_cpp.Llama(str(source), vocab_only=True, verbose=False)
        template = llama.metadata.get("tokenizer.chat_template", "")
    if not template:
        parser.exit(2, f"think_template: {source} has no chat template (tokenizer.chat_template)\n")
    try:
        variant = reasoning_variant(template)
    except Refused as refused:
        parser.exit(2, f"think_template: {source}: {refused}\n")
    sys.stdout.write(variant)


if __name__ == "__main__":
    main()
