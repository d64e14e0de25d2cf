"""How the embedded model decodes a request: one way, chosen when the backend is made.

There are two ways, each a :class:`Decoding`: forced tokens with llguidance, the default
(``forced_decoding``), and llama-cpp-python's own ``create_chat_completion`` under llama.cpp's
grammar sampler (:class:`GrammarSampler`, here). A way has one method to compile (a request's
schema into what it decodes under; the backend keeps the compiled ones in its grammar cache) and
one to run (one request, piece by piece), from a conversation or from the tokens of a prompt
already formatted (a reply that goes on after the model's reasoning, ``reasoning_budget``).
:class:`Sampling` is the one place where a request's settings become what either way samples with.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from ..._errors import BackendError, ContextLengthError
from ..._settings import GrammarChoice, Settings
from ..base import Completion, TextDelta, Usage, is_truncated, quoted_cause
from ..streams import ChunkReader
from .chat_prompt import ChatPrompt, FormattedPrompt
from .grammar_check import compile_grammar
from .prompt_cache import PromptCache
from .reply_text import ReplyText

__all__ = ["Conversation", "Decoding", "GrammarSampler", "Pieces", "Sampling", "checked_fit"]

#: A conversation as llama-cpp-python takes it: each message's role and content.
Conversation = Sequence[Mapping[str, str]]
#: What a decoding hands out: text pieces, then the whole completion.
Pieces = Iterator[TextDelta | Completion]

# llama-cpp-python's sampling defaults (those of ``Llama.create_chat_completion``) for a setting
# the request leaves unset, so that a request samples alike either way.
_DEFAULT_TEMPERATURE = 0.2
_DEFAULT_TOP_P = 0.95
_DEFAULT_TOP_K = 40
_DEFAULT_MIN_P = 0.05

# llama-cpp-python's refusal of a prompt past the context, from its create_completion.
_PAST_CONTEXT = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)")


def checked_fit(prompt_tokens: int, n_ctx: int) -> None:
    """A :class:`ContextLengthError` for a prompt of ``prompt_tokens`` that leaves no room in a
    context of ``n_ctx`` tokens for a token of its reply (llama-cpp-python's own test)."""
    if prompt_tokens >= n_ctx:
        raise _past_context(prompt_tokens, n_ctx)


def _past_context(prompt_tokens: int, n_ctx: int) -> ContextLengthError:
    return ContextLengthError(
        f"the prompt is {prompt_tokens} tokens and the context holds {n_ctx}, none left for the "
        f"reply; a conversation longer than the context needs a larger n_ctx (--ctx-size; this "
        f"backend has n_ctx={n_ctx})",
        prompt_tokens=prompt_tokens,
        n_ctx=n_ctx,
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class Sampling:
    """How one request samples: its cap and stop strings, the sampler's settings, its seed.

    Temperature 0 is greedy.
    """

    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    temperature: float = _DEFAULT_TEMPERATURE
    top_p: float = _DEFAULT_TOP_P
    top_k: int = _DEFAULT_TOP_K
    min_p: float = _DEFAULT_MIN_P
    seed: int | None = None
    """``None`` draws a fresh seed."""

    @classmethod
    def of(cls, settings: Settings, seed: int | None) -> Sampling:
        """The sampling of ``settings``, with ``seed`` where they name none."""
        values: dict[str, Any] = {
            "max_tokens": settings.max_tokens,
            "stop": settings.stop,
            "seed": settings.seed if settings.seed is not None else seed,
        }
        for name in ("temperature", "top_p", "top_k"):
            value = getattr(settings, name)
            if value is not None:
                values[name] = value
        return cls(**values)

    def arguments(self, fresh_seed: int) -> dict[str, Any]:
        """The keyword arguments of llama-cpp-python's ``create_chat_completion``; ``fresh_seed``
        is its value for a fresh draw, given where no seed is."""
        return {
            "max_tokens": self.max_tokens,
            "stop": list(self.stop),
            "seed": fresh_seed if self.seed is None else self.seed,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "min_p": self.min_p,
        }


class Decoding(Protocol):
    """A way the embedded model decodes; the backend holds its lock around ``run``."""

    def compile(self, schema_text: str, choice: GrammarChoice, bounded: bool, spaced: bool) -> Any:
        """What a request whose schema is ``schema_text`` (its JSON text) decodes under, checked:
        :class:`GrammarError` where it is refused, before the model is touched."""
        ...

    def run(
        self, llama: Any, conversation: Conversation, compiled: Any, sampling: Sampling, stream: bool
    ) -> Pieces:
        """One chat completion on ``llama`` (the loaded ``llama_cpp.Llama``) under ``compiled``
        (``None``: no schema, nothing to constrain): :class:`TextDelta` pieces, then the whole
        :class:`Completion`. Without ``stream`` the pieces may be left out."""
        ...

    def run_tokens(
        self, llama: Any, prompt: FormattedPrompt, compiled: Any, sampling: Sampling, stream: bool
    ) -> Pieces:
        """:meth:`run` from a formatted prompt's tokens, stopped at its stop strings too."""
        ...


class GrammarSampler:
    """llama-cpp-python's own decoding: ``create_chat_completion``, under llama.cpp's grammar
    sampler where the request has a schema.

    The prompt cache makes the prompt ready first (all but its last token, as the GGUF's chat
    template writes it), so llama-cpp-python finds it in the context and evaluates the last
    token alone. A GGUF without a chat template is formatted by llama-cpp-python's own
    fallback, and evaluated by it alone.
    """

    def __init__(self, llama_cpp: Any, llama: Any, cache: PromptCache, chat: ChatPrompt | None) -> None:
        vocab = llama_cpp.llama_model_get_vocab(llama.model)
        self._compile = functools.partial(compile_grammar, llama_cpp, vocab)
        self._fresh_seed: int = llama_cpp.LLAMA_DEFAULT_SEED
        self._n_ctx: int = llama.n_ctx()
        self._chat = chat
        self._cache = cache
        self._is_end = functools.partial(llama_cpp.llama_vocab_is_eog, vocab)

    def compile(self, schema_text: str, choice: GrammarChoice, bounded: bool, spaced: bool) -> Any:
        """The ``LlamaGrammar`` of a schema's JSON text, parsed by llama.cpp first (``grammar_check``)."""
        return self._compile(schema_text, choice, bounded, spaced)

    def run(
        self, llama: Any, conversation: Conversation, compiled: Any, sampling: Sampling, stream: bool
    ) -> Pieces:
        """The completion whole, or llama-cpp-python's ``stream=True`` pieces then the completion."""
        arguments = sampling.arguments(self._fresh_seed)
        if compiled is not None:
            arguments["grammar"] = compiled
        prompt = None if self._chat is None else self._chat.format(conversation).tokens
        if prompt is not None:
            checked_fit(len(prompt), self._n_ctx)
        cached = 0 if prompt is None else self._cache.prepare(prompt).reused
        try:
            if not stream:
                yield self._complete(llama, conversation, sampling, arguments, cached)
                return
            chunks = ChunkReader("the embedded model")
            try:
                for chunk in llama.create_chat_completion(list(conversation), stream=True, **arguments):
                    if piece := chunks.chat_chunk(chunk):
                        yield TextDelta(piece)
            except ValueError as error:
                raise self._refused(error) from error
            completion = chunks.completion(sampling.max_tokens)
            # llama-cpp-python's stream reports no usage; the prompt's tokens are known here.
            prompted = completion.usage.prompt_tokens or (0 if prompt is None else len(prompt))
            usage = dataclasses.replace(completion.usage, prompt_tokens=prompted, cached_tokens=cached)
            yield dataclasses.replace(completion, usage=usage)
        finally:
            if prompt is not None:
                self._cache.settle(prompt)

    def run_tokens(
        self, llama: Any, prompt: FormattedPrompt, compiled: Any, sampling: Sampling, stream: bool
    ) -> Pieces:
        """The prompt's tokens made ready by the prompt cache, then llama-cpp-python's ``generate``
        under ``compiled`` (the grammar sampler's, or nothing): each token it samples counted,
        at most ``sampling.max_tokens``, as ``create_completion`` samples them."""
        tokens = prompt.tokens
        checked_fit(len(tokens), self._n_ctx)
        room = self._n_ctx - len(tokens)
        cap = room if sampling.max_tokens is None else min(sampling.max_tokens, room)
        text = ReplyText(llama, tokens, [*sampling.stop, *prompt.stops])
        written: list[int] = []
        finish_reason = "length"
        cached = self._cache.prepare(tokens).reused
        llama.set_seed(self._fresh_seed if sampling.seed is None else sampling.seed)
        sampled = llama.generate(
            tokens,
            top_k=sampling.top_k,
            top_p=sampling.top_p,
            min_p=sampling.min_p,
            temp=sampling.temperature,
            grammar=compiled,
        )
        try:
            while len(written) < cap:
                token = next(sampled)
                if self._is_end(token):
                    finish_reason = "stop"
                    break
                written.append(token)
                piece = text.add(written)
                if piece and stream:
                    yield TextDelta(piece)
                if text.stopped:
                    finish_reason = "stop"
                    break
        except ValueError as error:
            raise self._refused(error) from error
        finally:
            sampled.close()
            self._cache.settle(tokens)
        if (piece := text.rest()) and stream:
            yield TextDelta(piece)
        usage = Usage(prompt_tokens=len(tokens), completion_tokens=len(written), cached_tokens=cached)
        yield Completion(
            text=text.text,
            finish_reason=finish_reason,
            usage=usage,
            truncated=is_truncated(finish_reason, len(written), sampling.max_tokens),
        )

    def _complete(
        self,
        llama: Any,
        conversation: Conversation,
        sampling: Sampling,
        arguments: dict[str, Any],
        cached: int,
    ) -> Completion:
        try:
            response = llama.create_chat_completion(messages=list(conversation), **arguments)
        except ValueError as error:
            raise self._refused(error) from error
        choice = response["choices"][0]
        finish_reason = choice.get("finish_reason")
        usage = Usage(
            prompt_tokens=response["usage"]["prompt_tokens"],
            completion_tokens=response["usage"]["completion_tokens"],
            cached_tokens=cached,
        )
        return Completion(
            text=choice["message"].get("content") or "",
            finish_reason=finish_reason,
            usage=usage,
            truncated=is_truncated(finish_reason, usage.completion_tokens, sampling.max_tokens),
            raw=response,
        )

    def _refused(self, error: ValueError) -> BackendError:
        past = _PAST_CONTEXT.search(str(error))
        if past is not None:  # a GGUF without a chat template, formatted by llama-cpp-python
            return _past_context(int(past[1]), int(past[2]))
        return BackendError(
            f"llama.cpp refused the request ({quoted_cause(error)}); a conversation longer than the "
            f"context needs a larger n_ctx (this backend has n_ctx={self._n_ctx})"
        )
