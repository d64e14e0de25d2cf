"""Routed requests on the embedded model with forced tokens evaluated, not sampled.

In a routed reply much of the text is fixed by the schema: ``{"tool":"``, the rest of a tool
name once its prefix is unique, ``","arguments":{"``, each required key. llama.cpp's grammar
sampler still samples those one token at a time, each a full decode of the model. This
decoder asks llguidance for the tokens the schema forces at each step and evaluates them
with the token sampled before them as one batch, so a decode costs one call per token the
model actually chooses; the rest it samples from the logits masked to what the schema allows.

llguidance compiles the schema to compact JSON (no whitespace, properties in the order the
schema gives them: ``tool`` first). llguidance and numpy are imported only when a
:class:`ForcedDecoder` is made (llguidance ships with ``toolrouting[embedded]``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import BackendError, GrammarError, ModelLoadError
from .._json import plain, quoted
from .._limits import GRAMMAR_CACHE_SIZE, MAX_CAUSE_QUOTE
from .._settings import Settings
from .base import Completion, Usage, is_truncated

__all__ = ["ForcedDecoder", "ForcedSampling", "require_forced_decoding"]

_INSTALL = "pip install 'toolrouting[embedded]' (or: pip install llguidance)"
# What a compact route reply looks like: no whitespace between tokens of JSON, as the route's
# own examples are written; llguidance then forces every separator and every required key.
_JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"}
# llama-cpp-python's sampling defaults for a setting the request leaves unset, so that a
# request samples alike on either path.
_DEFAULT_TEMPERATURE = 0.2
_DEFAULT_TOP_P = 0.95
_DEFAULT_TOP_K = 40
_DEFAULT_MIN_P = 0.05


@dataclasses.dataclass(frozen=True, kw_only=True)
class ForcedSampling:
    """How one request samples the tokens the schema leaves open; temperature 0 is greedy."""

    temperature: float = _DEFAULT_TEMPERATURE
    top_p: float = _DEFAULT_TOP_P
    top_k: int = _DEFAULT_TOP_K
    min_p: float = _DEFAULT_MIN_P
    seed: int | None = None
    """``None`` draws a fresh seed."""

    @classmethod
    def of(cls, settings: Settings, seed: int | None) -> ForcedSampling:
        """The sampling of ``settings``, with ``seed`` where they name none."""
        values: dict[str, Any] = {"seed": settings.seed if settings.seed is not None else seed}
        for name in ("temperature", "top_p", "top_k"):
            value = getattr(settings, name)
            if value is not None:
                values[name] = value
        return cls(**values)


class ForcedDecoder:
    """The forced-token decode loop over one loaded ``llama_cpp.Llama``.

    It builds llguidance's view of the model's vocabulary on its first request (about a
    second, once per model) and compiles each distinct schema once (a cache). The caller
    holds the model's lock around :meth:`complete`.
    """

    def __init__(self, llama_cpp: Any, llama: Any) -> None:
        self._llguidance = require_forced_decoding()
        import numpy

        self._numpy = numpy
        self._llama_cpp = llama_cpp
        self._llama = llama
        self._vocab = llama_cpp.llama_model_get_vocab(llama.model)
        self._chat_format = _chat_formatter(llama)
        self._tokenizer: Any = None
        self._matchers = functools.lru_cache(maxsize=GRAMMAR_CACHE_SIZE)(self._compile)

    def complete(
        self, conversation: Sequence[Mapping[str, str]], settings: Settings, sampling: ForcedSampling
    ) -> Completion:
        """One routed chat completion: ``settings.json_schema`` decides what may be written."""
        if settings.json_schema is None:
            raise ValueError("forced decoding needs settings.json_schema")
        matcher = self._matchers(_schema_text(settings.json_schema)).deep_copy()
        llama = self._llama
        formatted = self._chat_format(messages=list(conversation))
        prompt: list[int] = llama.tokenize(
            formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
        )
        n_ctx = llama.n_ctx()
        if len(prompt) >= n_ctx:
            raise BackendError(
                f"the conversation is {len(prompt)} tokens, past the context; a conversation longer "
                f"than the context needs a larger n_ctx (this backend has n_ctx={n_ctx})"
            )
        room = n_ctx - len(prompt)
        cap = room if settings.max_tokens is None else min(settings.max_tokens, room)
        stops = [*settings.stop, *_stops(formatted.stop)]
        written, finish_reason, forced = self._decode(matcher, prompt, cap, stops, sampling)
        text = llama.detokenize(written, prev_tokens=prompt).decode("utf-8", errors="ignore")
        for stop in stops:
            if stop and stop in text:
                text, finish_reason = text[: text.index(stop)], "stop"
        usage = Usage(prompt_tokens=len(prompt), completion_tokens=len(written))
        return Completion(
            text=text,
            finish_reason=finish_reason,
            usage=usage,
            truncated=is_truncated(finish_reason, usage.completion_tokens, settings.max_tokens),
            raw={"forced_tokens": forced, "prompt_tokens": len(prompt), "completion_tokens": len(written)},
        )

    def _decode(
        self, matcher: Any, prompt: list[int], cap: int, stops: Sequence[str], sampling: ForcedSampling
    ) -> tuple[list[int], str, int]:
        """The tokens written, why writing stopped, and how many of them were forced."""
        llama = self._llama
        pending = prompt[_reuse_prefix(llama, prompt) :]
        written: list[int] = []
        forced_count = 0
        rng = self._numpy.random.default_rng(sampling.seed)
        while True:
            forced = list(matcher.compute_ff_tokens())[: cap - len(written)]
            if forced and not matcher.consume_tokens(forced):
                raise BackendError(
                    f"llguidance refused its own forced tokens ({_cause(matcher.get_error())})"
                )
            written += forced
            forced_count += len(forced)
            if matcher.is_stopped():
                return written, "stop", forced_count  # the reply is complete: its tail needs no decode
            if len(written) >= cap:
                return written, "length", forced_count
            if stops and self._stopped(written, len(forced) + 1, stops):
                return written, "stop", forced_count
            llama.eval(pending + forced)
            token = self._sample(matcher, sampling, rng)
            if self._llama_cpp.llama_vocab_is_eog(self._vocab, token):
                return written, "stop", forced_count
            if not matcher.consume_token(token):
                raise BackendError(
                    f"llguidance refused a token its mask allowed ({_cause(matcher.get_error())})"
                )
            written.append(token)
            pending = [token]
            if len(written) >= cap:
                return written, "stop" if matcher.is_stopped() else "length", forced_count

    def _stopped(self, written: list[int], new: int, stops: Sequence[str]) -> bool:
        """Whether the last ``new`` tokens completed a stop string; a token writes at least one byte,
        so the tail this reads holds any stop string they completed."""
        tail = written[-(new + max(len(stop.encode("utf-8")) for stop in stops)) :]
        text = self._llama.detokenize(tail).decode("utf-8", errors="ignore")
        return any(stop and stop in text for stop in stops)

    def _sample(self, matcher: Any, sampling: ForcedSampling, rng: Any) -> int:
        """The next token from the last logits, masked to what the schema allows, sampled as llama.cpp does.

        llama-cpp-python's chain: top-k, top-p and min-p on the model's distribution, then the
        temperature, then a draw; greedy at temperature 0.
        """
        np = self._numpy
        llama = self._llama
        n_vocab = llama.n_vocab()
        words = (n_vocab + 31) // 32
        bitmask = np.zeros(words, dtype=np.int32)
        matcher.unsafe_compute_mask_ptr(bitmask.ctypes.data, bitmask.nbytes)
        if matcher.is_error():
            raise BackendError(
                f"llguidance could not compute the next tokens ({_cause(matcher.get_error())})"
            )
        allowed = np.flatnonzero(np.unpackbits(bitmask.view(np.uint8), bitorder="little")[:n_vocab])
        if allowed.size == 0:
            raise BackendError("llguidance allows no token here: the schema has no way to go on")
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

    def _compile(self, schema_text: str) -> Any:
        llguidance = self._llguidance
        try:
            grammar = llguidance.LLMatcher.grammar_from_json_schema(schema_text, defaults=_JSON_OPTIONS)
        except ValueError as error:
            raise GrammarError(f"llguidance cannot read the JSON schema ({_cause(error)})") from error
        matcher = llguidance.LLMatcher(self._lltokenizer(), grammar, log_level=0)
        if matcher.is_error():
            raise GrammarError(
                f"llguidance refused the JSON schema ({_cause(matcher.get_error())}); "
                'preflight(schema, "llguidance") names the keywords at fault'
            )
        return matcher

    def _lltokenizer(self) -> Any:
        if self._tokenizer is None:  # the caller holds the model's lock: one request builds it
            from llguidance.llamacpp import lltokenizer_from_vocab

            # llguidance reads token attributes through a name llama-cpp-python deprecates.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                self._tokenizer = lltokenizer_from_vocab(self._vocab)
        return self._tokenizer


def require_forced_decoding() -> Any:
    """The ``llguidance`` module; :class:`ModelLoadError` naming the install command where it is missing."""
    try:
        import llguidance
        import llguidance.llamacpp
    except ImportError as error:
        raise ModelLoadError(
            f"forced-token decoding needs llguidance, which is not installed; install it with: {_INSTALL}, "
            "or pass forced_tokens=False"
        ) from error
    return llguidance


def _chat_formatter(llama: Any) -> Any:
    """The GGUF's own chat template as llama-cpp-python formats it for ``create_chat_completion``."""
    from llama_cpp import llama_chat_format

    template = llama.metadata.get("tokenizer.chat_template")
    if not template:
        raise ModelLoadError(
            "forced-token decoding formats the conversation with the model's own chat template, and this "
            "GGUF has none; pass forced_tokens=False"
        )
    eos, bos = llama.token_eos(), llama.token_bos()
    return llama_chat_format.Jinja2ChatFormatter(
        template=template,
        eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
        bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
        stop_token_ids=[eos],
    )


def _reuse_prefix(llama: Any, prompt: list[int]) -> int:
    """How much of ``prompt`` the model's context holds already, as llama-cpp-python reuses it.

    At least the last prompt token is evaluated again, for its logits.
    """
    held = llama.input_ids[: llama.n_tokens].tolist()
    common = 0
    for mine, theirs in zip(held, prompt[:-1], strict=False):
        if mine != theirs:
            break
        common += 1
    llama.n_tokens = common
    return common


def _stops(stop: str | list[str] | None) -> list[str]:
    if stop is None:
        return []
    return [stop] if isinstance(stop, str) else list(stop)


def _schema_text(schema: Mapping[str, Any]) -> str:
    try:
        return json.dumps(plain(schema), sort_keys=False, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as error:
        raise GrammarError(
            f"the JSON schema is not JSON ({_cause(error)}); a schema holds only JSON values"
        ) from error


def _cause(cause: object) -> str:
    return quoted(str(cause), MAX_CAUSE_QUOTE)
