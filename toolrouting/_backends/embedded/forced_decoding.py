"""Routed requests on the embedded model with forced tokens evaluated, not sampled.

In a routed reply much of the text is fixed by the grammar: ``{"tool":"``, the rest of a tool
name once its prefix is unique, ``","arguments":{"``, each required key. llama.cpp's grammar
sampler still samples those one token at a time, each a full decode of the model. This
decoder asks llguidance for the tokens the grammar forces at each step (the forced bytes in
the tokenizer's own split) and evaluates them with the token sampled before them as one
batch, so a decode costs one call per token the model actually chooses; the rest it samples
from the logits masked to what the grammar allows. The grammar is ``forced_grammar``'s.

The prompt is made ready by the prompt cache (``prompt_cache``): evaluated only past what the
context or a kept state holds, all but its last token, which is evaluated with the first forced
run. numpy is imported only when a :class:`ForcedTokens` is made.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..._errors import BackendError, GrammarError, ModelLoadError
from ..._settings import GrammarChoice
from ..base import Completion, TextDelta, Usage, is_truncated, quoted_cause
from .chat_prompt import ChatPrompt, FormattedPrompt
from .decoding import Conversation, GrammarSampler, Pieces, Sampling, checked_fit
from .forced_grammar import ForcedGrammars
from .prompt_cache import PromptCache
from .reply_text import ReplyText

__all__ = ["ForcedTokens"]


class ForcedTokens:
    """Forced-token decoding over one loaded ``llama_cpp.Llama``: a :class:`Decoding`.

    A request with no schema has nothing to force: llama-cpp-python samples it as it would
    (:class:`GrammarSampler`, with no grammar).
    """

    def __init__(self, llama_cpp: Any, llama: Any, cache: PromptCache, chat: ChatPrompt | None) -> None:
        import numpy

        if chat is None:
            raise ModelLoadError(
                "forced-token decoding formats the conversation with the model's own chat template, and "
                "this GGUF has none; pass forced_tokens=False (toolrouting run --decoding grammar)"
            )
        self._numpy = numpy
        self._llama_cpp = llama_cpp
        self._vocab = llama_cpp.llama_model_get_vocab(llama.model)
        self._chat = chat
        self._cache = cache
        self._grammars = ForcedGrammars(llama_cpp, llama)
        self._unconstrained = GrammarSampler(llama_cpp, llama, cache, chat)

    def compile(self, schema_text: str, choice: GrammarChoice, bounded: bool, spaced: bool) -> Any:
        """The ``LLMatcher`` of a schema's JSON text, checked (``forced_grammar``)."""
        return self._grammars.compile(schema_text, choice, bounded, spaced)

    def run(
        self, llama: Any, conversation: Conversation, compiled: Any, sampling: Sampling, stream: bool
    ) -> Pieces:
        """One chat completion under ``compiled`` (an ``LLMatcher``, left as it is): its text as each
        forced run or sampled token is evaluated, streamed or not, then the whole :class:`Completion`."""
        if compiled is None:
            return self._unconstrained.run(llama, conversation, None, sampling, stream)
        formatted = self._chat.format(conversation)
        return self._forced(llama, formatted.tokens, formatted.stops, compiled, sampling)

    def run_tokens(
        self, llama: Any, prompt: FormattedPrompt, compiled: Any, sampling: Sampling, stream: bool
    ) -> Pieces:
        """:meth:`run` from a formatted prompt's tokens: forced under ``compiled``, sampled without."""
        if compiled is None:
            return self._unconstrained.run_tokens(llama, prompt, None, sampling, stream)
        return self._forced(llama, prompt.tokens, prompt.stops, compiled, sampling)

    def _forced(
        self, llama: Any, prompt: list[int], stops: Sequence[str], compiled: Any, sampling: Sampling
    ) -> Pieces:
        started = time.perf_counter()
        n_ctx = llama.n_ctx()
        checked_fit(len(prompt), n_ctx)
        room = n_ctx - len(prompt)
        cap = room if sampling.max_tokens is None else min(sampling.max_tokens, room)
        text = ReplyText(llama, prompt, [*sampling.stop, *stops])
        matcher = compiled.deep_copy()
        choose = functools.partial(
            self._sample, llama, matcher, sampling, self._numpy.random.default_rng(sampling.seed)
        )
        prepared = self._cache.prepare(prompt)
        decode = _Decode(llama, matcher, prompt[-1:], cap, choose, self._is_end)
        for _ in decode.steps():
            if piece := text.add(decode.written):
                yield TextDelta(piece)
            if text.stopped:
                decode.finish_reason = "stop"
                break
        if piece := text.rest():
            yield TextDelta(piece)
        usage = Usage(
            prompt_tokens=len(prompt), completion_tokens=len(decode.written), cached_tokens=prepared.reused
        )
        first = decode.first_choice
        yield Completion(
            text=text.text,
            finish_reason=decode.finish_reason,
            usage=usage,
            truncated=is_truncated(decode.finish_reason, usage.completion_tokens, sampling.max_tokens),
            raw={
                "forced_tokens": decode.forced,
                "prompt_tokens": len(prompt),
                "reused_prompt_tokens": prepared.reused,
                "restored_prompt_tokens": prepared.restored,
                "completion_tokens": len(decode.written),
                "seconds_to_first_choice": None if first is None else first - started,
            },
        )

    def _sample(self, llama: Any, matcher: Any, sampling: Sampling, rng: Any) -> int:
        """The next token from the last logits, masked to what the grammar allows, sampled as llama.cpp does.

        llama-cpp-python's chain after its grammar: top-k, top-p and min-p on the model's
        distribution, then the temperature, then a draw; greedy at temperature 0.
        """
        np = self._numpy
        n_vocab = llama.n_vocab()
        bitmask = np.zeros((n_vocab + 31) // 32, dtype=np.int32)
        matcher.unsafe_compute_mask_ptr(bitmask.ctypes.data, bitmask.nbytes)
        if matcher.is_error():
            raise _stopped("could not compute the next tokens", matcher)
        allowed = np.flatnonzero(np.unpackbits(bitmask.view(np.uint8), bitorder="little")[:n_vocab])
        if allowed.size == 0:
            raise BackendError("llguidance allows no token here: the grammar has no way to go on")
        pointer = self._llama_cpp.llama_get_logits_ith(llama.ctx, -1)
        logits = np.ctypeslib.as_array(pointer, shape=(n_vocab,))[allowed].astype(np.float64)
        if sampling.temperature <= 0 or allowed.size == 1:
            return int(allowed[int(np.argmax(logits))])
        order = np.argsort(-logits, kind="stable")
        if sampling.top_k > 0:
            order = order[: sampling.top_k]
        ranked = logits[order]
        probabilities = np.exp(ranked - ranked[0])
        probabilities /= probabilities.sum()
        if sampling.top_p < 1.0:
            keep = int(np.searchsorted(np.cumsum(probabilities), sampling.top_p)) + 1
            order, ranked, probabilities = order[:keep], ranked[:keep], probabilities[:keep]
        if sampling.min_p > 0.0:
            keep = int(np.count_nonzero(probabilities >= sampling.min_p * probabilities[0]))
            order, ranked = order[:keep], ranked[:keep]
        weights = np.exp((ranked - ranked[0]) / sampling.temperature)
        choice = int(rng.choice(order.size, p=weights / weights.sum()))
        return int(allowed[order[choice]])

    def _is_end(self, token: int) -> bool:
        return bool(self._llama_cpp.llama_vocab_is_eog(self._vocab, token))


class _Decode:
    """One reply's decode: the tokens written, how many were forced, why it ended."""

    def __init__(
        self,
        llama: Any,
        matcher: Any,
        pending: list[int],
        cap: int,
        choose: Callable[[], int],
        is_end: Callable[[int], bool],
    ) -> None:
        self._llama = llama
        self._matcher = matcher
        self._cap = cap
        self._choose = choose
        """The model's next token, sampled under the matcher from the last logits."""
        self._is_end = is_end
        self._pending = pending
        """What the context lacks before the first forced run: the prompt's last token."""
        self.written: list[int] = []
        self.forced = 0
        self.finish_reason = "length"
        self.first_choice: float | None = None
        """When the model's first own token was sampled (``time.perf_counter()``), if it chose one."""

    def steps(self) -> Iterator[list[int]]:
        """Each run of tokens as it is written: the forced ones, then the one the model chose."""
        matcher, cap, written = self._matcher, self._cap, self.written
        llama = self._llama
        while True:
            forced = list(matcher.compute_ff_tokens())[: cap - len(written)]
            if forced:
                if not matcher.consume_tokens(forced):
                    raise _stopped("refused its own forced tokens", matcher)
                written += forced
                self.forced += len(forced)
                yield forced
            if matcher.is_stopped():
                self.finish_reason = "stop"  # the reply is complete: its tail needs no decode
                return
            if len(written) >= cap:
                return
            llama.eval(self._pending + forced)
            token = self._choose()
            if self.first_choice is None:
                self.first_choice = time.perf_counter()
            if self._is_end(token):
                self.finish_reason = "stop"
                return
            if not matcher.consume_token(token):
                raise _stopped("refused a token its mask allowed", matcher)
            written.append(token)
            self._pending = [token]
            yield [token]
            if len(written) >= cap:
                if matcher.is_stopped():
                    self.finish_reason = "stop"
                return


def _stopped(what: str, matcher: Any) -> GrammarError:
    # The matcher stops where the grammar outgrows its parser limits (FORCED_PARSER_LIMITS), or on
    # a fault of its own: either way the grammar cannot be decoded here, and the sampler can.
    return GrammarError(
        f"llguidance {what} ({quoted_cause(matcher.get_error())}); llama.cpp's grammar sampler decodes "
        "this route instead: forced_tokens=False, or toolrouting run --decoding grammar"
    )
