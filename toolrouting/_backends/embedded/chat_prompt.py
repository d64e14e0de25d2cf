"""A conversation as the model's own chat template writes it, in tokens: what the model evaluates.

llama-cpp-python's ``create_chat_completion`` formats a conversation with the GGUF's chat
template (``tokenizer.chat_template``) through its ``Jinja2ChatFormatter`` and tokenizes the text
with the template's special tokens. Forced-token decoding evaluates the same tokens itself, and
the prompt cache evaluates them before llama-cpp-python's own decoding does, so that it finds
them in the context; both format here, as llama-cpp-python does.

A template may be given in place of the GGUF's (``EmbeddedLlama(chat_template=...)``). A template
that writes ``<think>`` and ``</think>`` has the model's own reasoning syntax
(:attr:`ChatPrompt.tags`): a reply asked to reason first is opened with ``<think>`` when the
template's generation prompt does not open it already (:meth:`ChatPrompt.opening`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ..reasoning_tags import ReasoningTags, reasoning_tags
from .llama_internals import token_text

__all__ = ["ChatPrompt", "FormattedPrompt"]


@dataclasses.dataclass(frozen=True)
class FormattedPrompt:
    """A conversation's tokens, and the stop strings its template names."""

    tokens: list[int]
    stops: list[str]


class ChatPrompt:
    """The GGUF's chat template over one loaded ``llama_cpp.Llama``; :meth:`of` is ``None`` without one."""

    def __init__(self, llama: Any, formatter: Any, tags: ReasoningTags | None = None) -> None:
        self._llama = llama
        self._formatter = formatter
        self.tags = tags
        """The model's own reasoning tags, ``None`` where its template writes none."""

    @classmethod
    def of(cls, llama: Any, template: str | None = None) -> ChatPrompt | None:
        """``template`` (the GGUF's own when ``None``) over ``llama`` as llama-cpp-python formats it,
        ``None`` where there is none."""
        from llama_cpp import llama_chat_format

        template = template or llama.metadata.get("tokenizer.chat_template")
        if not template:
            return None
        eos, bos = llama.token_eos(), llama.token_bos()
        formatter = llama_chat_format.Jinja2ChatFormatter(
            template=template,
            eos_token=token_text(llama, eos) if eos != -1 else "",
            bos_token=token_text(llama, bos) if bos != -1 else "",
            stop_token_ids=[eos],
        )
        return cls(llama, formatter, reasoning_tags(template))

    @property
    def formatter(self) -> Any:
        """llama-cpp-python's ``Jinja2ChatFormatter`` of the template."""
        return self._formatter

    def format(self, conversation: Sequence[Mapping[str, str]]) -> FormattedPrompt:
        """The conversation's tokens as ``create_chat_completion`` evaluates them."""
        formatted = self._formatter(messages=list(conversation))
        tokens: list[int] = self._llama.tokenize(
            formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
        )
        stop = formatted.stop
        stops = [] if stop is None else [stop] if isinstance(stop, str) else list(stop)
        return FormattedPrompt(tokens=tokens, stops=stops)

    def opening(self, prompt: Sequence[int]) -> list[int]:
        """The tokens that open the model's reasoning after ``prompt`` (a conversation's tokens,
        :meth:`format`): none where the template's generation prompt opened it already, else
        the open tag and a line break, as reasoning templates write it."""
        assert self.tags is not None, "a template without reasoning tags opens no reasoning"
        tail = self._llama.detokenize(list(prompt[-8:]), special=True).decode("utf-8", errors="ignore")
        opening = self.tags.opening(tail)
        return self.tokens(opening) if opening else []

    def tokens(self, text: str) -> list[int]:
        """``text``'s tokens where it follows a prompt: no BOS, the template's special tokens read."""
        found: list[int] = self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        return found
