"""The embedded model's context: the rule on made-up models and machines, the GGUF read for it,
and the real model loaded by it, refusing a prompt past it with the count it counts by.

The rule's tests give its inputs by hand (a shape, the bytes available); the real model's are
marked ``model``.
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path
from typing import Any

import pytest
from support.model import TEST_THREADS

from toolrouting import ContextLengthError, EmbeddedLlama, Message, default_model_path
from toolrouting._backends.embedded.context_size import (
    ModelShape,
    available_memory,
    choose_context,
    model_shape,
)
from toolrouting._backends.embedded.gguf_metadata import GGUFError, gguf_metadata
from toolrouting._limits import EMBEDDED_MIN_N_CTX, EMBEDDED_PROMPT_CACHE_MB

GIB = 1 << 30
MIB = 1 << 20
#: The default model's: 30 layers, 3 KV heads of 64, 16-bit keys and values.
SMOLLM = ModelShape(trained=8192, kv_bytes_per_token=30 * 3 * (64 + 64) * 2)


def llama_metadata(**more: Any) -> dict[str, Any]:
    return {
        "general.architecture": "llama",
        "llama.context_length": 8192,
        "llama.block_count": 30,
        "llama.embedding_length": 576,
        "llama.attention.head_count": 9,
        "llama.attention.head_count_kv": 3,
        **more,
    }


def test_a_tokens_cache_bytes_follow_from_the_layers_and_heads() -> None:
    assert model_shape(llama_metadata()) == SMOLLM
    # Key and value lengths given apart, and a KV head count for each layer.
    shape = model_shape(
        llama_metadata(
            **{
                "llama.block_count": 2,
                "llama.attention.head_count_kv": (4, 0),
                "llama.attention.key_length": 192,
                "llama.attention.value_length": 128,
            }
        )
    )
    assert shape == ModelShape(trained=8192, kv_bytes_per_token=4 * (192 + 128) * 2)
    # No KV head count: every head has its own keys and values, as llama.cpp reads it.
    no_kv = llama_metadata()
    del no_kv["llama.attention.head_count_kv"]
    assert model_shape(no_kv).kv_bytes_per_token == 30 * 9 * 128 * 2


@pytest.mark.parametrize(
    "metadata",
    [
        {},
        {"general.architecture": "llama", "llama.context_length": 8192},
        llama_metadata(**{"llama.attention.head_count": (9, 9)}),  # an array that is not a layer's each
        llama_metadata(**{"llama.embedding_length": None}),
    ],
    ids=["nothing", "no-layers", "bad-heads", "no-width"],
)
def test_a_gguf_that_does_not_give_its_attentions_shape_has_no_bytes_a_token(metadata: Any) -> None:
    assert model_shape(metadata).kv_bytes_per_token is None


def test_the_default_is_the_trained_context_where_the_memory_holds_it() -> None:
    choice = choose_context(SMOLLM, 16 * GIB)
    assert choice.n_ctx == 8192
    assert choice.bound is not None
    assert choice.bound > 8192
    assert "the model's trained context" in choice.line()


def test_the_default_is_capped_where_a_quarter_of_the_memory_does_not_hold_it() -> None:
    per_token = 12 * 1024
    shape = ModelShape(trained=131072, kv_bytes_per_token=per_token)
    choice = choose_context(shape, 2 * GIB)
    assert choice.n_ctx == choice.bound
    assert choice.n_ctx % 256 == 0
    assert choice.n_ctx * per_token <= 2 * GIB // 4 < (choice.n_ctx + 256) * per_token
    assert choice.line().startswith(f"context {choice.n_ctx:,} tokens: capped by memory")
    assert "131,072" in choice.line()


def test_the_default_is_never_under_its_least_nor_past_the_trained_context() -> None:
    tight = choose_context(SMOLLM, 100 * MIB)
    assert tight.bound is not None
    assert tight.bound < EMBEDDED_MIN_N_CTX
    assert tight.n_ctx == EMBEDDED_MIN_N_CTX
    assert "the least the default takes" in tight.line()
    small = ModelShape(trained=2048, kv_bytes_per_token=SMOLLM.kv_bytes_per_token)
    assert choose_context(small, 100 * MIB).n_ctx == 2048
    assert choose_context(small, 64 * GIB).n_ctx == 2048


def test_what_cannot_be_read_leaves_the_context_uncapped_and_says_so() -> None:
    unknown_memory = choose_context(SMOLLM, None)
    assert unknown_memory.n_ctx == 8192
    assert "the available memory could not be read" in unknown_memory.line()
    unknown_shape = choose_context(ModelShape(trained=32768, kv_bytes_per_token=None), 1 * GIB)
    assert unknown_shape.n_ctx == 32768
    assert "does not give its attention's shape" in unknown_shape.line()
    nothing = choose_context(ModelShape(trained=None, kv_bytes_per_token=None), None)
    assert (nothing.n_ctx, nothing.prompt_cache_mb) == (EMBEDDED_MIN_N_CTX, EMBEDDED_PROMPT_CACHE_MB)


def test_an_n_ctx_given_is_taken_past_the_trained_context_and_the_memory_and_the_line_says_so() -> None:
    choice = choose_context(SMOLLM, 1 * GIB, n_ctx=65536)
    assert choice.n_ctx == 65536
    line = choice.line()
    assert "as asked (n_ctx)" in line
    assert "past the model's trained context of 8,192" in line
    assert "past the 11,520 tokens a 1/4 share of 1.0 GiB available holds" in line
    padded = choose_context(SMOLLM, 16 * GIB, n_ctx=300)
    assert padded.n_ctx == 512
    assert "300 padded" in padded.line()


def test_the_prompt_cache_holds_four_whole_contexts_within_a_quarter_of_the_memory() -> None:
    per_token = SMOLLM.kv_bytes_per_token
    assert per_token is not None
    roomy = choose_context(SMOLLM, 16 * GIB)
    assert roomy.prompt_cache_mb == 4 * 8192 * per_token // MIB
    assert "4 whole contexts" in roomy.line()
    tight = choose_context(SMOLLM, 2 * GIB)
    assert tight.prompt_cache_mb == 2 * GIB // 4 // MIB
    assert "prompt cache 512 MiB, a 1/4 share of 2.0 GiB available" in tight.line()
    given = choose_context(SMOLLM, 2 * GIB, prompt_cache_mb=3)
    assert given.prompt_cache_mb == 3
    assert "prompt cache 3 MiB, as asked" in given.line()


def test_the_available_memory_is_read_on_this_machine() -> None:
    free = available_memory()
    assert free is not None
    assert free > 0


def _string(text: str) -> bytes:
    return struct.pack("<Q", len(text)) + text.encode()


def _gguf(pairs: list[bytes]) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(pairs)) + b"".join(pairs)


def test_the_gguf_metadata_is_read_past_its_vocabulary(tmp_path: Path) -> None:
    vocabulary = struct.pack("<IQ", 8, 3) + b"".join(_string(token) for token in ("a", "bc", "<s>"))
    pairs = [
        _string("general.architecture") + struct.pack("<I", 8) + _string("llama"),
        _string("tokenizer.ggml.tokens") + struct.pack("<I", 9) + vocabulary,
        _string("llama.context_length") + struct.pack("<II", 4, 4096),
        _string("llama.attention.head_count_kv") + struct.pack("<IIQ", 9, 5, 2) + struct.pack("<ii", 2, 4),
        _string("llama.rope.freq_base") + struct.pack("<If", 6, 10000.0),
    ]
    path = tmp_path / "made.gguf"
    path.write_bytes(_gguf(pairs) + b"\0" * 64)
    assert gguf_metadata(path) == {
        "general.architecture": "llama",
        "tokenizer.ggml.tokens": None,
        "llama.context_length": 4096,
        "llama.attention.head_count_kv": (2, 4),
        "llama.rope.freq_base": 10000.0,
    }
    path.write_bytes(_gguf(pairs)[:-6])
    with pytest.raises(GGUFError, match="past the end of the file"):
        gguf_metadata(path)
    path.write_bytes(b"not a gguf file at all, but long enough")
    with pytest.raises(GGUFError, match="magic"):
        gguf_metadata(path)


@pytest.mark.parametrize("value", [0, -1, True, 1.5, "4096"])
def test_n_ctx_is_a_whole_number_of_tokens(value: Any) -> None:
    with pytest.raises(ValueError, match="n_ctx is the context in tokens"):
        EmbeddedLlama(n_ctx=value)


@pytest.mark.model
def test_the_default_model_loads_with_the_rules_context_and_logs_it(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="toolrouting.embedded"):
        backend = EmbeddedLlama(n_threads=TEST_THREADS)
    with backend:
        choice = backend.context
        assert choice.trained == 8192
        assert choice.asked is None
        assert backend.n_ctx == choice.n_ctx
        assert (
            choice.n_ctx
            == choose_context(model_shape(gguf_metadata(default_model_path())), choice.available_bytes).n_ctx
        )
        assert backend.prompt_cache_info().limit_bytes == choice.prompt_cache_mb * MIB
    said = [record.getMessage() for record in caplog.records if record.name == "toolrouting.embedded"]
    [line] = [message for message in said if message.startswith("context ")]
    assert line == choice.line()
    assert line.startswith(f"context {choice.n_ctx:,} tokens: ")


@pytest.mark.model
def test_a_tokens_bytes_are_what_llama_cpp_keeps_for_it() -> None:
    """The rule's bytes a token against llama.cpp's own: a sequence's state grows by them (and
    the few bytes of the token's position) for each token evaluated."""
    import llama_cpp

    with EmbeddedLlama(n_ctx=512, n_threads=TEST_THREADS) as backend:
        llama = backend._model.llama
        sizes = []
        for tokens in (64, 192):
            llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llama.ctx), True)
            llama.n_tokens = 0
            llama.eval(list(range(100, 100 + tokens)))
            sizes.append(llama_cpp.llama_state_seq_get_size(llama.ctx, 0))
        per_token = (sizes[1] - sizes[0]) / 128
        assert backend.context.kv_bytes_per_token is not None
        assert 0 <= per_token - backend.context.kv_bytes_per_token <= 16


#: Far past a 512-token context.
LONG: list[Message] = [{"role": "user", "content": "latch " * 700}]


@pytest.mark.model
@pytest.mark.parametrize("forced", [True, False], ids=["forced", "grammar"])
def test_a_prompt_past_the_context_is_refused_by_the_count_count_prompt_tokens_gives(forced: bool) -> None:
    with EmbeddedLlama(n_ctx=512, n_threads=TEST_THREADS, forced_tokens=forced) as backend:
        assert backend.n_ctx == 512
        counted = backend.count_prompt_tokens(LONG)
        assert counted is not None
        assert counted > 512
        routed = backend.clone(settings=backend.settings.clone(json_schema={"type": "object"}))
        for way in (backend, routed):
            with pytest.raises(ContextLengthError) as whole:
                way.complete(LONG)
            with pytest.raises(ContextLengthError) as streamed:
                list(way.stream(LONG))
            for refused in (whole.value, streamed.value):
                assert (refused.prompt_tokens, refused.n_ctx) == (counted, 512)
                assert not refused.retryable
        # The model is whole after the refusals: a prompt that fits is answered.
        assert backend.clone(settings=backend.settings.clone(max_tokens=4)).complete(
            [{"role": "user", "content": "hi"}]
        ).usage.prompt_tokens == backend.count_prompt_tokens([{"role": "user", "content": "hi"}])


@pytest.mark.model
@pytest.mark.parametrize(("options", "n_ctx"), [([], None), (["--ctx-size", "1024"], 1024)])
def test_the_command_line_sets_the_context_and_prints_the_line(
    options: list[str], n_ctx: int | None, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolrouting._cli.parser import build_parser
    from toolrouting._cli.run import model_backend

    args = build_parser().parse_args(
        ["run", "What does the latch do?", "--threads", str(TEST_THREADS), *options]
    )
    backend = model_backend(args)
    assert isinstance(backend, EmbeddedLlama)
    with backend:
        assert backend.context.asked == n_ctx
        if n_ctx is not None:
            assert backend.n_ctx == n_ctx
        assert f"toolrouting: {backend.context.line()}\n" in capsys.readouterr().err
