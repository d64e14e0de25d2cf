"""A conversation as the model's own chat template writes it, in tokens: what the model evaluates.

llama-cpp-python's ``create_chat_completion`` formats a conversation with the GGUF's chat
template (``tokenizer.chat_template``) through its ``Jinja2ChatFormatter`` and tokenizes the text
with the template's special tokens. Forced-token decoding evaluates the same tokens itself, and
the prompt cache evaluates them before llama-cpp-python's own decoding does, so that it finds
them in the context; both format here, as llama-cpp-python does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from .llama_internals import token_text

__all__ = ["ChatPrompt", "FormattedPrompt"]


@dataclasses.dataclass(frozen=True)
class FormattedPrompt:
    """A conversation's tokens, and the stop strings its template names."""

    tokens: list[int]
    stops: list[str]


class ChatPrompt:
    """The GGUF's chat template over one loaded ``llama_cpp.Llama``; :meth:`of` is ``None`` without one."""

    def __init__(self, llama: Any, formatter: Any) -> None:
        self._llama = llama
        self._formatter = formatter

    @classmethod
    def of(cls, llama: Any) -> ChatPrompt | None:
        """The template of ``llama``'s GGUF as llama-cpp-python formats it, ``None`` where it has none."""
        from llama_cpp import llama_chat_format

        template = llama.metadata.get("tokenizer.chat_template")
        if not template:
            return None
        eos, bos = llama.token_eos(), llama.token_bos()
        formatter = llama_chat_format.Jinja2ChatFormatter(
            template=template,
            eos_token=token_text(llama, eos) if eos != -1 else "",
            bos_token=token_text(llama, bos) if bos != -1 else "",
            stop_token_ids=[eos],
        )
        return cls(llama, formatter)

    def format(self, conversation: Sequence[Mapping[str, str]]) -> FormattedPrompt:
        """The conversation's tokens as ``create_chat_completion`` evaluates them."""
        formatted = self._formatter(messages=list(conversation))
        tokens: list[int] = self._llama.tokenize(
            formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
        )
        stop = formatted.stop
        stops = [] if stop is None else [stop] if isinstance(stop, str) else list(stop)
        return FormattedPrompt(tokens=tokens, stops=stops)
