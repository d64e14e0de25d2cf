"""benchmarks/quality/think_template.py: a chat template with ``<think>`` tags that sends a
conversation without reasoning the same bytes as the template it was made from.

The script is run as a user runs it (a test imports no benchmark script). The guarantees: the
variant renders a conversation without ``<think>`` byte-identically, as llama-cpp-python's
formatter renders it for the embedded backend; it cuts an earlier assistant turn to what follows
its last ``</think>``; the embedded backend reads ``<think>``/``</think>`` as its reasoning tags;
and a template that cannot be rewritten is refused with exit status 2 and a message.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.model import TEST_THREADS
from support.paths import ROOT
from support.think_templates import STRIPS_REASONING

from toolrouting import EmbeddedLlama, ReasoningTags, default_model_path

SCRIPT = "benchmarks.quality.think_template"

#: A template of the shape tool-calling templates have: an assistant turn with calls and no
#: content is written apart from one with content, and a tool's reply has its own role.
TOOL_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message.role == 'assistant' and message.tool_calls %}"
    "{{ '<|im_start|>assistant' }}{% for call in message.tool_calls %}"
    "{{ '\\n<tool_call>' + call.function.name + ' ' + (call.function.arguments | tojson) + '</tool_call>' }}"
    "{% endfor %}{{ '<|im_end|>\\n' }}"
    "{% else %}{{ '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

CONVERSATIONS: list[list[dict[str, Any]]] = [
    [{"role": "user", "content": "What is 2 + 2?"}],
    [
        {"role": "system", "content": "Answer in one word."},
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Is it raining?"},
    ],
]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", SCRIPT, *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def _render(template: str, messages: list[dict[str, Any]]) -> str:
    from llama_cpp import llama_chat_format

    formatter: Any = llama_chat_format.Jinja2ChatFormatter(
        template=template, eos_token="</s>", bos_token="<s>"
    )
    prompt: str = formatter(messages=messages).prompt
    return prompt


def _thought(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {**m, "content": "<think>\nA greeting.\n</think>\n\n" + m["content"]}
        if m["role"] == "assistant"
        else m
        for m in messages
    ]


def _variant_of(template: str, tmp_path: Path) -> str:
    given = tmp_path / "template.jinja"
    given.write_text(template, encoding="utf-8")
    done = _run("--template", str(given))
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_tool_calling_template_renders_the_same_bytes_and_cuts_earlier_reasoning(tmp_path: Path) -> None:
    variant = _variant_of(TOOL_TEMPLATE, tmp_path)
    call = {"id": "c1", "type": "function", "function": {"name": "rain", "arguments": {"city": "Oslo"}}}
    with_call: list[dict[str, Any]] = [
        {"role": "user", "content": "Is it raining in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "yes"},
    ]
    for messages in [*CONVERSATIONS, with_call]:
        assert _render(variant, messages) == _render(TOOL_TEMPLATE, messages)
    assert _render(variant, _thought(CONVERSATIONS[1])) == _render(TOOL_TEMPLATE, CONVERSATIONS[1])


@pytest.mark.parametrize(
    ("template", "said"),
    [
        (STRIPS_REASONING, "writes <think> or </think> already"),
        ("{{ 'no conversation at all' }}", "names no messages"),
        (
            "{% if messages | length > 1 %}{{ raise_exception('one question alone') }}{% endif %}"
            "{{ messages[0]['content'] }}",
            "no sample conversation",
        ),
    ],
)
def test_a_template_that_cannot_be_rewritten_is_refused_with_exit_status_2(
    template: str, said: str, tmp_path: Path
) -> None:
    given = tmp_path / "template.jinja"
    given.write_text(template, encoding="utf-8")
    done = _run("--template", str(given))
    assert (done.returncode, done.stdout) == (2, "")
    assert said in done.stderr
    assert str(given) in done.stderr


def test_a_missing_model_is_named_with_exit_status_2(tmp_path: Path) -> None:
    done = _run(str(tmp_path / "absent.gguf"))
    assert done.returncode == 2
    assert "absent.gguf: no such file" in done.stderr


@pytest.mark.model
def test_the_default_models_variant_keeps_its_bytes_and_names_think_tags(tmp_path: Path) -> None:
    done = _run(str(default_model_path()))
    assert done.returncode == 0, done.stderr
    variant = done.stdout
    import llama_cpp

    model = EmbeddedLlama(default_model_path(), n_threads=TEST_THREADS, chat_template=variant)
    try:
        assert model.reasoning_tags == ReasoningTags("<think>", "</think>")
    finally:
        model.close()
    vocabulary = llama_cpp.Llama(str(default_model_path()), vocab_only=True, verbose=False)
    template = vocabulary.metadata["tokenizer.chat_template"]
    vocabulary.close()
    for messages in CONVERSATIONS:
        assert _render(variant, messages) == _render(template, messages)
    assert _render(variant, _thought(CONVERSATIONS[1])) == _render(template, CONVERSATIONS[1])
