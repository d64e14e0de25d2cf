"""The embedded model's prompt cache: prompt states kept in memory, restored where a prompt recurs.

llama.cpp holds one context: the keys and values of the tokens it evaluated last. A request
whose prompt starts as the context does evaluates only the rest; one that starts otherwise
evaluates it all. An agent alternates two prompts that start otherwise (the decision's, with the
catalogue's instructions, and the answer's), so each evicts the other and every turn paid for
its whole prompt. :class:`PromptCache` keeps the state of each prompt (the keys and values of
sequence 0, copied out by ``llama_state_seq_get_data``) up to a bounded total of bytes, least
recently used first out, and a new prompt starts from the longest prefix it shares with the
context or with a kept state, whichever is longer; only the rest is evaluated. Given a folder
(:mod:`~toolrouting._backends.embedded.disk_states`), the states are also written to disk once
the request that made them is answered, and a prompt that neither the context nor a state in
memory holds as far looks there for its longest stored prefix: a model loaded again, in this
process or another, starts warm.

A state is saved once a request's prompt is evaluated, which is after the decision's prompt and
after the answer's: a later prompt that shares any prefix of it (the shared instructions, a
conversation so far) restores it and drops what follows the shared part. A state that extends
another takes its place, since it serves every prompt the shorter one served.

**The same bits as a cold start.** llama.cpp rounds a token's keys and values by the batch it
was evaluated in (on the 0.5B measurement model, rows that do not fill a group of four come out
otherwise), and its logits by the batch that produced them. So a prompt is always evaluated
the same way, cache or none: its tokens but the last in blocks of ``EMBEDDED_PROMPT_BLOCK`` at
fixed positions (multiples of the block), its last token with whatever follows it; and what is
reused, from the context or a state, ends at a block's end. Under greedy decoding a reply is
then byte for byte the reply of a cold start (tests/backends/embedded/test_backends_embedded_prompt_cache.py).

llama-cpp-python's own ``LlamaRAMCache`` (``save_state``/``load_state``) fits neither use: it
copies the whole context with a buffer of logits (n_batch by the vocabulary: 297 MB on the 0.5B
model) for each state, 1.3 s to save and 2.8 s to load a 1,500-token prompt where the
sequence's own state took 22 and 10 ms, and it saves only a whole request's tokens, never a
forced-token decode's.
"""

from __future__ import annotations

import ctypes
import dataclasses
from collections.abc import Sequence
from typing import Any

from ..._limits import EMBEDDED_PROMPT_BLOCK
from .disk_states import DiskStates

__all__ = ["PromptCache", "PromptCacheInfo"]

_MIB = 1 << 20


@dataclasses.dataclass(frozen=True, kw_only=True)
class PromptCacheInfo:
    """What an embedded model's prompt cache holds and what it saved, since the model loaded."""

    limit_bytes: int
    """The bound on the states' bytes (``prompt_cache_mb``)."""
    bytes: int
    """The bytes of the states kept now."""
    peak_bytes: int
    """The most bytes the states held at once."""
    states: int
    """The states kept now."""
    restored: int
    """Requests that started from a kept state."""
    reused_tokens: int
    """Prompt tokens not evaluated: held by the context, or restored from a state."""
    restored_tokens: int
    """Of them, those restored from a state."""
    evaluated_tokens: int
    """Prompt tokens evaluated."""
    too_large: int
    """States not kept because one alone is over the limit."""
    disk_limit_bytes: int
    """The bound on the states' bytes on disk (``prompt_cache_dir_mb``); 0 where no folder is given."""
    disk_restored: int
    """Of the requests that started from a state, those that read it from the folder on disk."""
    disk_written: int
    """States written to the folder on disk."""
    disk_removed: int
    """Files in the folder that failed a check (torn, another version or identity) and were removed."""


@dataclasses.dataclass(eq=False)
class _State:
    tokens: Any
    """The prompt's tokens the state holds (a numpy array), a whole number of blocks."""
    data: Any
    """The sequence's state, as ``llama_state_seq_get_data`` wrote it (a ctypes byte array)."""
    size: int

    @property
    def bytes(self) -> int:
        return self.size + int(self.tokens.nbytes)


@dataclasses.dataclass(frozen=True)
class Prepared:
    """A prompt made ready: all but its last token in the context."""

    reused: int
    """Tokens not evaluated: what the context held or a state restored."""
    restored: int
    """Of them, those a kept state restored."""


class PromptCache:
    """Prompt states of one loaded model, bounded by ``limit_mb`` megabytes (0 keeps none).

    Used under the model's lock: :meth:`prepare` before a request's reply is decoded,
    :meth:`settle` after llama-cpp-python decoded one itself.
    """

    def __init__(
        self,
        llama_cpp: Any,
        llama: Any,
        limit_mb: int,
        *,
        block: int = EMBEDDED_PROMPT_BLOCK,
        disk: DiskStates | None = None,
    ) -> None:
        import numpy

        self._numpy = numpy
        self._llama_cpp = llama_cpp
        self._llama = llama
        self._limit = limit_mb * _MIB
        self._block = block
        self._states: list[_State] = []
        """Least recently used first."""
        self._canonical = 0
        """How many of the context's first tokens were evaluated in whole blocks at their positions."""
        self._counts = dict.fromkeys(
            ("restored", "reused", "restored_tokens", "evaluated", "too_large", "peak", "disk_restored"), 0
        )
        self.disk = disk
        """The folder the states are also kept in, or ``None``."""
        self._unwritten: list[_State] = []
        """States saved since the last request was answered, to be written to disk."""

    def info(self) -> PromptCacheInfo:
        counts = self._counts
        return PromptCacheInfo(
            limit_bytes=self._limit,
            bytes=self._bytes(),
            peak_bytes=counts["peak"],
            states=len(self._states),
            restored=counts["restored"],
            reused_tokens=counts["reused"],
            restored_tokens=counts["restored_tokens"],
            evaluated_tokens=counts["evaluated"],
            too_large=counts["too_large"],
            disk_limit_bytes=0 if self.disk is None else self.disk.limit_bytes,
            disk_restored=counts["disk_restored"],
            disk_written=0 if self.disk is None else self.disk.counts["written"],
            disk_removed=0 if self.disk is None else self.disk.counts["removed"],
        )

    def clear(self) -> None:
        """Drop every state (the model is closing), the states not yet on disk written first."""
        self.write_behind()
        if self.disk is not None:
            self.disk.close()
        self._states.clear()
        self._canonical = 0

    def write_behind(self) -> None:
        """Hand the states saved for the request just answered to the disk's writer thread."""
        unwritten, self._unwritten = self._unwritten, []
        if self.disk is not None:
            for state in unwritten:
                self.disk.store(state.tokens, state.data, state.size)

    def prepare(self, prompt: Sequence[int]) -> Prepared:
        """Bring the context to hold ``prompt`` but its last token, evaluating only what neither
        the context nor a kept state holds, and keep the prompt's state."""
        np, llama, block = self._numpy, self._llama, self._block
        tokens = np.asarray(prompt, dtype=np.intc)
        target = len(tokens) - 1
        held = llama.input_ids[: min(llama.n_tokens, self._canonical)]
        start = _floor(self._common(held, tokens[:target]), block)
        best: _State | None = None
        for state in self._states:
            shared = _floor(self._common(state.tokens, tokens[:target]), block)
            if shared > start:
                best, start = state, shared
        read = False
        if self.disk is not None and start < _floor(target, block):
            for shared, name in self.disk.candidates(tokens[:target], block, start):
                loaded = self.disk.load(name)
                if loaded is not None:
                    best, start = self._admit(_State(loaded[0], loaded[1], len(loaded[1]))), shared
                    read = True
                    break
        restored = 0
        if best is not None:
            restored = start if self._restore(best) else 0
            start = restored  # a state refused leaves the context empty
            self._counts["disk_restored"] += read and bool(restored)
        self._forget_from(start)
        whole = _floor(target, block)
        for at in range(start, whole, block):
            llama.eval(tokens[at : at + block].tolist())
        self._canonical = max(start, whole)
        if whole > start:
            self._save(tokens[:whole])
        if whole < target:
            llama.eval(tokens[whole:target].tolist())
        self._count(len(tokens), start, restored)
        return Prepared(reused=start, restored=restored)

    def settle(self, prompt: Sequence[int]) -> None:
        """After llama-cpp-python decoded ``prompt`` itself: it evaluates again what it does not
        find in the context (a template it formats otherwise), so that much is no longer ours."""
        np, llama = self._numpy, self._llama
        tokens = np.asarray(prompt, dtype=np.intc)
        kept = self._common(llama.input_ids[: llama.n_tokens], tokens[: len(tokens) - 1])
        if kept < len(tokens) - 1:
            self._counts["evaluated"] += len(tokens) - 1 - kept
        self._canonical = _floor(min(self._canonical, kept), self._block)

    def _count(self, total: int, reused: int, restored: int) -> None:
        counts = self._counts
        counts["reused"] += reused
        counts["evaluated"] += total - reused
        counts["restored"] += bool(restored)
        counts["restored_tokens"] += restored

    def _common(self, held: Any, tokens: Any) -> int:
        """How many first tokens ``held`` and ``tokens`` share."""
        size = min(len(held), len(tokens))
        differ = self._numpy.flatnonzero(held[:size] != tokens[:size])
        return int(differ[0]) if differ.size else size

    def _forget_from(self, position: int) -> None:
        """Make the context hold its first ``position`` tokens alone."""
        llama = self._llama
        memory = self._llama_cpp.llama_get_memory(llama.ctx)
        self._llama_cpp.llama_memory_seq_rm(memory, -1, position, -1)
        llama.n_tokens = position
        self._canonical = min(self._canonical, position)

    def _restore(self, state: _State) -> bool:
        """Put ``state`` in the context; ``False`` (and the state dropped) where llama.cpp refuses it."""
        llama_cpp, llama = self._llama_cpp, self._llama
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llama.ctx), False)
        llama.n_tokens = 0
        self._canonical = 0
        kept = state in self._states
        if kept:
            self._states.remove(state)
        if llama_cpp.llama_state_seq_set_data(llama.ctx, state.data, state.size, 0) != state.size:
            llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llama.ctx), False)
            return False
        llama.input_ids[: len(state.tokens)] = state.tokens
        llama.n_tokens = len(state.tokens)
        self._canonical = len(state.tokens)
        if kept:
            self._states.append(state)  # the most recently used
        return True

    def _save(self, tokens: Any) -> None:
        """Keep the context's state, which holds ``tokens`` alone, within the limit, and mark it to
        be written to disk."""
        if self._limit <= 0 and self.disk is None:
            return
        llama_cpp, llama = self._llama_cpp, self._llama
        size = int(llama_cpp.llama_state_seq_get_size(llama.ctx, 0))
        if self.disk is None and size + tokens.nbytes > self._limit:
            self._counts["too_large"] += 1
            return
        for state in self._states:
            if len(state.tokens) >= len(tokens) and self._common(state.tokens, tokens) == len(tokens):
                self._states.remove(state)  # one that extends it serves whatever this would
                self._states.append(state)
                return
        data = (ctypes.c_uint8 * size)()
        written = int(llama_cpp.llama_state_seq_get_data(llama.ctx, data, size, 0))
        if written != size:
            return
        state = self._admit(_State(tokens=tokens.copy(), data=data, size=size))
        if self.disk is not None:
            self._unwritten.append(state)

    def _admit(self, state: _State) -> _State:
        """Keep ``state`` in memory within the limit, where it fits (it is returned either way)."""
        if self._limit <= 0:
            return state
        tokens = state.tokens
        if state.bytes > self._limit:
            self._counts["too_large"] += 1
            return state
        self._states = [
            state
            for state in self._states
            if not (
                len(state.tokens) < len(tokens) and self._common(state.tokens, tokens) == len(state.tokens)
            )
        ]
        while self._states and self._bytes() + state.bytes > self._limit:
            self._states.pop(0)
        self._states.append(state)
        self._counts["peak"] = max(self._counts["peak"], self._bytes())
        return state

    def _bytes(self) -> int:
        return sum(state.bytes for state in list(self._states))


def _floor(count: int, block: int) -> int:
    return count - count % block
