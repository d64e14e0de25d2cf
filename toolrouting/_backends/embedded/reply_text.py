"""A reply's text as its tokens are written: decoded a piece at a time (UTF-8 split across tokens
held until whole), cut at the first stop string, and held back only where it might begin one."""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from typing import Any

__all__ = ["ReplyText"]


class ReplyText:
    """The reply's text as its tokens come, held back only where it might be a stop string's start."""

    def __init__(self, llama: Any, prompt: list[int], stops: Sequence[str]) -> None:
        self._llama = llama
        self._prompt = prompt
        self._stops = [stop for stop in stops if stop]
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        self._bytes = 0
        self.text = ""
        self._sent = 0
        self.stopped = False

    def add(self, written: list[int]) -> str:
        """The new text that can be handed out now that ``written`` are the reply's tokens."""
        data = self._llama.detokenize(written, prev_tokens=self._prompt)
        self.text += self._decoder.decode(data[self._bytes :])
        self._bytes = len(data)
        start = max(0, self._sent - max((len(stop) for stop in self._stops), default=0))
        found = [at for stop in self._stops if (at := self.text.find(stop, start)) >= 0]
        if found:
            self.text, self.stopped = self.text[: min(found)], True
            return self.rest()
        held = max((_held(self.text, stop) for stop in self._stops), default=0)
        piece = self.text[self._sent : len(self.text) - held]
        self._sent += len(piece)
        return piece

    def rest(self) -> str:
        """The text not handed out yet; the reply has ended."""
        piece = self.text[self._sent :]
        self._sent = len(self.text)
        return piece


def _held(text: str, stop: str) -> int:
    """How many characters at the end of ``text`` could begin ``stop``."""
    for size in range(min(len(stop) - 1, len(text)), 0, -1):
        if text.endswith(stop[:size]):
            return size
    return 0
