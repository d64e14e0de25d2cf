"""The real grammar compilers the conformance and preflight tests drive, behind one small face.

Each answers ``error(schema)`` (``None`` when it compiles) and ``accepts(schema, text)``:
whether the grammar it compiled lets a model write exactly ``text``.
"""

from __future__ import annotations

import ctypes
import functools
import json
import math
import re
import subprocess
import sys
from typing import Any, ClassVar

import pytest

from toolrouting import GrammarError
from toolrouting._backends.embedded.backend import check_gbnf
from toolrouting._backends.embedded.llama_internals import llama_grammar_source


def _key(schema: dict[str, Any]) -> str:
    return json.dumps(schema)


class _ByteTokenizer:
    """A tokenizer with one token per byte (and an end token), so llguidance checks raw bytes."""

    eos_token_id = 256
    bos_token_id = None
    tokens: ClassVar[list[bytes]] = [bytes([b]) for b in range(256)] + [b"\xff<eos>"]
    special_token_ids: ClassVar[list[int]] = [256]

    def __call__(self, text: bytes) -> list[int]:
        return list(text)


class Llguidance:
    """llguidance's JSON-schema compiler, fed bytes through a byte-level tokenizer."""

    name = "llguidance"

    def __init__(self) -> None:
        import llguidance

        self._llg = llguidance
        self._tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokenizer()))
        self._grammar = functools.lru_cache(maxsize=64)(self._compile)

    def _compile(self, key: str) -> str:
        return str(self._llg.LLMatcher.grammar_from_json_schema(key))

    def error(self, schema: dict[str, Any]) -> str | None:
        failed, messages = self._llg.LLMatcher.validate_grammar_with_warnings(
            self._grammar(_key(schema)), self._tokenizer
        )
        return messages[0] if failed else None

    def accepts(self, schema: dict[str, Any], text: str) -> bool:
        matcher = self._llg.LLMatcher(self._tokenizer, self._grammar(_key(schema)), log_level=0)
        consumed = matcher.consume_tokens(list(text.encode("utf-8")))
        return bool(consumed and not matcher.is_error() and matcher.is_accepting())


class LlguidanceOurs:
    """llguidance over our route grammar, as the embedded backend's forced path compiles it, fed bytes."""

    name = "llguidance (ours)"

    def __init__(self) -> None:
        import llguidance
        import llguidance.gbnf_to_lark

        self._llg = llguidance
        self._tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokenizer()))

    def grammar(self, schema: Any, *, spaced: bool = False, bounded: bool = False) -> str:
        from toolrouting._backends.embedded.forced_grammar import llguidance_grammar

        return llguidance_grammar(self._llg, json.dumps(schema), "ours", bounded, spaced)

    def error(self, schema: Any, **options: bool) -> str | None:
        matcher = self._llg.LLMatcher(self._tokenizer, self.grammar(schema, **options), log_level=0)
        return str(matcher.get_error()) if matcher.is_error() else None

    def accepts(self, schema: Any, text: str, **options: bool) -> bool:
        matcher = self._llg.LLMatcher(self._tokenizer, self.grammar(schema, **options), log_level=0)
        consumed = matcher.consume_tokens(list(text.encode("utf-8")))
        return bool(consumed and not matcher.is_error() and matcher.is_accepting())


class LlamaCpp:
    """llama-cpp-python's converter (LlamaGrammar.from_json_schema) and llama.cpp's grammar engine.

    The GBNF is parsed by llama.cpp itself (``llama_sampler_init_grammar``) over the default
    model's vocabulary, loaded with ``vocab_only``; a text is accepted when each of its tokens
    survives the grammar sampler in turn and the end-of-generation token does at the end.
    """

    name = "llama.cpp"

    def __init__(self) -> None:
        llama_cpp = pytest.importorskip("llama_cpp")
        from toolrouting._backends.embedded.backend import default_model_path

        self._lib = llama_cpp
        self._llama = llama_cpp.Llama(model_path=str(default_model_path()), vocab_only=True, verbose=False)
        self._vocab = llama_cpp.llama_model_get_vocab(self._llama.model)
        self._eos = llama_cpp.llama_vocab_eos(self._vocab)
        self._gbnf = functools.lru_cache(maxsize=64)(self._convert)

    def _convert(self, key: str) -> str:
        return llama_grammar_source(self._lib.LlamaGrammar.from_json_schema(key, verbose=False))[0]

    def gbnf(self, schema: dict[str, Any]) -> str:
        return self._gbnf(_key(schema))

    def _sampler(self, grammar: str) -> Any:
        return self._lib.llama_sampler_init_grammar(self._vocab, grammar.encode(), b"root")

    def error(self, schema: dict[str, Any]) -> str | None:
        try:
            grammar = self.gbnf(schema)
        except Exception as error:  # the converter's refusals are assertions and lookups
            return f"{type(error).__name__}: {error}"
        try:  # the embedded backend's own check: a grammar nested too deep would crash the parser
            check_gbnf(self._lib, self._vocab, grammar)
        except GrammarError as error:
            return str(error)
        return None

    def accepts(self, schema: dict[str, Any], text: str) -> bool:
        sampler = self._sampler(self.gbnf(schema))
        assert sampler, "the grammar does not parse"
        try:
            for token in self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False):
                if not self._allowed(sampler, token):
                    return False
                self._lib.llama_sampler_accept(sampler, token)
            return self._allowed(sampler, self._eos)
        finally:
            self._lib.llama_sampler_free(sampler)

    def _allowed(self, sampler: Any, token: int) -> bool:
        # Applying the sampler to a one-candidate array masks the candidate (logit -inf) when
        # the grammar forbids it; accepting a forbidden token would abort inside llama.cpp.
        data = (self._lib.llama_token_data * 1)(self._lib.llama_token_data(token, 0.0, 0.0))
        candidates = self._lib.llama_token_data_array(data=data, size=1, selected=-1, sorted=False)
        self._lib.llama_sampler_apply(sampler, ctypes.byref(candidates))
        return math.isfinite(data[0].logit)


class Outlines:
    """outlines-core's JSON schema to regex converter; the regex is matched with Python's ``re``."""

    name = "outlines"

    def __init__(self) -> None:
        json_schema = pytest.importorskip("outlines_core.json_schema")
        self._build = json_schema.build_regex_from_schema

    def error(self, schema: dict[str, Any]) -> str | None:
        try:
            self._build(_key(schema))
        except (ValueError, TypeError) as error:
            return str(error)
        return None

    def accepts(self, schema: dict[str, Any], text: str) -> bool:
        return re.fullmatch(self._build(_key(schema)), text) is not None

    def index_fits(self, schema: dict[str, Any], memory: int, seconds: float) -> bool:
        """Whether outlines-core builds the index a model decodes with (over 95 one-character
        tokens) within ``memory`` bytes of address space and ``seconds``, in a subprocess."""
        return _index_fits(schema, memory, seconds)


_INDEX_PROBE = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]),) * 2)
import outlines_core
from outlines_core.json_schema import build_regex_from_schema
vocabulary = outlines_core.Vocabulary(0, {chr(c): [c] for c in range(32, 127)})
outlines_core.Index(build_regex_from_schema(sys.argv[2]), vocabulary)
print("built")
"""


def _index_fits(schema: dict[str, Any], memory: int, seconds: float) -> bool:
    """Whether outlines-core builds its index of ``schema`` (95 one-character tokens) within ``memory``
    bytes of address space and ``seconds``, in a subprocess, so that a failure costs only it."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _INDEX_PROBE, str(memory), _key(schema)],
            capture_output=True,
            text=True,
            timeout=seconds,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0 and done.stdout.strip() == "built"
