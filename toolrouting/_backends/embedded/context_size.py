"""The embedded model's context and prompt cache, sized from the model and the machine's memory.

llama.cpp makes the context with the model, so its size is chosen before the model loads, from
the GGUF's metadata (``gguf_metadata``): the context the model was trained with
(``<arch>.context_length``, what llama.cpp reports as ``n_ctx_train``) and the bytes a token's
keys and values take in the KV cache, 16-bit each (llama-cpp-python's default cache type):
``2 bytes × layers × KV heads × (key length + value length)``, the key and value lengths being
the GGUF's ``attention.key_length`` and ``value_length``, or the embedding length over the heads.

**The rule.** ``n_ctx=None`` is the trained context, capped by what the memory holds: the KV
cache at most ``1/EMBEDDED_MEMORY_SHARE`` of the memory available when the model loads
(``MemAvailable`` in ``/proc/meminfo``, within a cgroup's ``memory.max``; else
``os.sysconf``'s free pages), rounded down to a multiple of 256 tokens, and never under
``EMBEDDED_MIN_N_CTX`` (or the trained context where that is smaller). A GGUF that does not give
its attention's shape, or a machine whose free memory cannot be read, gets its trained context
uncapped. An ``n_ctx`` given is taken as it is (rounded up to a multiple of 256, as llama.cpp
pads it), past the trained context or the memory's bound too (llama.cpp runs it); the line says so.

**The prompt cache.** ``prompt_cache_mb=None`` holds ``EMBEDDED_PROMPT_CACHE_CONTEXTS`` states of
the whole context (a state costs the KV cache of its tokens), within another
``1/EMBEDDED_MEMORY_SHARE`` of the available memory; ``EMBEDDED_PROMPT_CACHE_MB`` where neither
can be known.

The choice is :class:`ContextChoice`, logged once as one line at INFO on the
``toolrouting.embedded`` logger (``toolrouting run``, ``batch`` and ``serve`` print it to stderr).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..._errors import ModelLoadError
from ..._limits import (
    EMBEDDED_MEMORY_SHARE,
    EMBEDDED_MIN_N_CTX,
    EMBEDDED_PROMPT_CACHE_CONTEXTS,
    EMBEDDED_PROMPT_CACHE_MB,
)
from ..base import quoted_cause
from .gguf_metadata import GGUFError, gguf_metadata

__all__ = [
    "ContextChoice",
    "ModelShape",
    "available_memory",
    "choose_context",
    "model_context",
    "model_shape",
]

_LOG = logging.getLogger("toolrouting.embedded")

#: llama.cpp pads a context to a multiple of this many tokens; the default is one already.
_STEP = 256
#: Bytes of one key or value element in the cache: 16-bit floats.
_CACHE_ELEMENT_BYTES = 2
_MIB = 1 << 20


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelShape:
    """What a GGUF says about the context: the trained one, and a token's bytes in the KV cache."""

    trained: int | None
    """The context the model was trained with, ``None`` where the GGUF names none."""
    kv_bytes_per_token: int | None
    """A token's keys and values, 16-bit, over every layer; ``None`` where the GGUF does not say."""


def model_shape(metadata: Mapping[str, Any]) -> ModelShape:
    """The :class:`ModelShape` of a GGUF's metadata (``gguf_metadata``)."""
    arch = metadata.get("general.architecture")
    if not isinstance(arch, str):
        return ModelShape(trained=None, kv_bytes_per_token=None)

    def number(key: str) -> int | None:
        value = metadata.get(f"{arch}.{key}")
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    layers = number("block_count")
    heads = _per_layer(metadata.get(f"{arch}.attention.head_count"), layers)
    kv_heads = _per_layer(metadata.get(f"{arch}.attention.head_count_kv"), layers) or heads
    width = number("embedding_length")
    key, value = number("attention.key_length"), number("attention.value_length")
    if layers is None or not heads or not kv_heads:
        return ModelShape(trained=number("context_length"), kv_bytes_per_token=None)
    total = 0
    for heads_here, kv_here in zip(heads, kv_heads, strict=True):
        head = width // heads_here if width is not None and heads_here else None
        sizes = (key or head, value or head)
        if sizes[0] is None or sizes[1] is None:
            return ModelShape(trained=number("context_length"), kv_bytes_per_token=None)
        total += kv_here * (sizes[0] + sizes[1])
    return ModelShape(trained=number("context_length"), kv_bytes_per_token=total * _CACHE_ELEMENT_BYTES)


def _per_layer(value: Any, layers: int | None) -> list[int] | None:
    """A head count for each layer: one number for all, or the GGUF's array of one a layer."""
    if layers is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return [value] * layers
    if isinstance(value, tuple) and len(value) == layers and all(isinstance(v, int) for v in value):
        return [int(v) for v in value]
    return None


def available_memory() -> int | None:
    """The bytes of memory available to this process now, ``None`` where none can be read."""
    found = [room for room in (_meminfo_available(), _cgroup_room()) if room is not None]
    if found:
        return min(found)
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _meminfo_available() -> int | None:
    try:
        lines = Path("/proc/meminfo").read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        name, _, rest = line.partition(":")
        fields = rest.split()
        if name == "MemAvailable" and fields and fields[0].isdigit():
            return int(fields[0]) * 1024  # kB
    return None


def _cgroup_room() -> int | None:
    """What a cgroup v2 memory limit leaves (``memory.max`` less ``memory.current``), if one binds."""
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
        group = next((line[3:] for line in lines if line.startswith("0::")), None)
        if group is None:
            return None
        folder = Path("/sys/fs/cgroup") / group.lstrip("/")
        limit = (folder / "memory.max").read_text(encoding="ascii").strip()
        used = (folder / "memory.current").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not (limit.isdigit() and used.isdigit()):
        return None  # "max": no limit
    return max(0, int(limit) - int(used))


@dataclasses.dataclass(frozen=True, kw_only=True)
class ContextChoice:
    """The embedded model's context and prompt cache, and what they were chosen from."""

    n_ctx: int
    """The context asked of llama.cpp, in tokens."""
    asked: int | None
    """The ``n_ctx`` given, ``None`` for the rule's."""
    trained: int | None
    """The model's trained context, ``None`` where the GGUF names none."""
    kv_bytes_per_token: int | None
    """A token's bytes in the KV cache, ``None`` where the GGUF does not say."""
    available_bytes: int | None
    """The memory available when the model loaded, ``None`` where it could not be read."""
    bound: int | None
    """The most tokens whose KV cache fits its share of that memory, ``None`` where unknown."""
    prompt_cache_mb: int
    """The prompt cache's limit, in megabytes."""
    prompt_cache_asked: bool
    """Whether that limit was given (``prompt_cache_mb=``), not the rule's."""

    def line(self) -> str:
        """What was chosen and why, in one line."""
        return f"context {self.n_ctx:,} tokens: {self._why()}; prompt cache {self._cache_why()}"

    def _why(self) -> str:
        cache = "" if self.kv_bytes_per_token is None else f", a KV cache of {_size(self._kv(self.n_ctx))}"
        share = f"a 1/{EMBEDDED_MEMORY_SHARE} share of {self._room()}"
        trained = self.trained
        if self.asked is not None:
            padded = "" if self.asked == self.n_ctx else f", {self.asked:,} padded as llama.cpp pads it"
            said = f"as asked (n_ctx){padded}{cache}"
            if trained is not None and self.n_ctx > trained:
                said += (
                    f"; past the model's trained context of {trained:,} (llama.cpp runs it, but the model "
                    "was not trained to read that far)"
                )
            if self.bound is not None and self.n_ctx > self.bound:
                said += f"; past the {self.bound:,} tokens {share} holds"
            return said
        if trained is None:
            return f"the least the default takes{cache}: the GGUF names no trained context"
        if self.bound is None:
            unknown = (
                "the GGUF does not give its attention's shape"
                if self.kv_bytes_per_token is None
                else "the available memory could not be read"
            )
            return f"the model's trained context{cache}, not capped by memory: {unknown}"
        if self.n_ctx > self.bound:
            if self.n_ctx == trained:
                return f"the model's trained context{cache}, though {share} holds {self.bound:,} tokens"
            return (
                f"the least the default takes{cache}, though {share} holds {self.bound:,} tokens; the "
                f"model was trained with {trained:,}"
            )
        if self.n_ctx == trained:
            return f"the model's trained context{cache}, within {share}"
        return (
            f"capped by memory{cache}, within {share}; the model was trained with {trained:,} (n_ctx= or "
            "--ctx-size asks for more)"
        )

    def _cache_why(self) -> str:
        limit = f"{self.prompt_cache_mb:,} MiB"
        if self.prompt_cache_asked:
            return f"{limit}, as asked"
        if self.kv_bytes_per_token is None and self.available_bytes is None:
            return f"{limit}, the default where neither the model's nor the memory's size is known"
        per_token = self.kv_bytes_per_token
        if per_token is not None and self.prompt_cache_mb == _cache_states(self.n_ctx, per_token) // _MIB:
            return f"{limit}, {EMBEDDED_PROMPT_CACHE_CONTEXTS} whole contexts"
        return f"{limit}, a 1/{EMBEDDED_MEMORY_SHARE} share of {self._room()}"

    def _kv(self, tokens: int) -> int:
        return tokens * (self.kv_bytes_per_token or 0)

    def _room(self) -> str:
        return "the memory" if self.available_bytes is None else f"{_size(self.available_bytes)} available"


def choose_context(
    shape: ModelShape, available: int | None, n_ctx: int | None = None, prompt_cache_mb: int | None = None
) -> ContextChoice:
    """The context and prompt cache the rule (module docstring) gives a model of ``shape`` on a
    machine with ``available`` bytes free; ``n_ctx`` and ``prompt_cache_mb`` as given where not ``None``."""
    share = None if available is None else available // EMBEDDED_MEMORY_SHARE
    per_token = shape.kv_bytes_per_token
    bound = None
    if share is not None and per_token:
        bound = share // per_token // _STEP * _STEP
    if n_ctx is not None:
        chosen = -(-n_ctx // _STEP) * _STEP  # as llama.cpp pads it
    elif shape.trained is None:
        chosen = EMBEDDED_MIN_N_CTX
    elif bound is None:
        chosen = shape.trained
    else:
        chosen = min(shape.trained, max(bound, EMBEDDED_MIN_N_CTX))
    if prompt_cache_mb is None:
        limits = [] if share is None else [share]
        if per_token:
            limits.append(_cache_states(chosen, per_token))
        cache = min(limits) // _MIB if limits else EMBEDDED_PROMPT_CACHE_MB
    else:
        cache = prompt_cache_mb
    return ContextChoice(
        n_ctx=chosen,
        asked=n_ctx,
        trained=shape.trained,
        kv_bytes_per_token=per_token,
        available_bytes=available,
        bound=bound,
        prompt_cache_mb=cache,
        prompt_cache_asked=prompt_cache_mb is not None,
    )


def model_context(path: Path, n_ctx: int | None, prompt_cache_mb: int | None) -> ContextChoice:
    """:func:`choose_context` for the GGUF at ``path`` on this machine, logged; ``n_ctx`` checked."""
    if n_ctx is not None and (isinstance(n_ctx, bool) or not isinstance(n_ctx, int) or n_ctx < 1):
        raise ValueError(
            f"n_ctx is the context in tokens, a whole number of at least 1 (None: the model's trained "
            f"context, within the memory), not {n_ctx!r}"
        )
    try:
        metadata = gguf_metadata(path)
    except (GGUFError, OSError) as error:
        raise ModelLoadError(
            f"could not load {quoted_cause(path)}: its metadata cannot be read ({quoted_cause(error)}); "
            "is it a GGUF file?"
        ) from error
    choice = choose_context(model_shape(metadata), available_memory(), n_ctx, prompt_cache_mb)
    _LOG.info("%s", choice.line())
    return choice


def _cache_states(n_ctx: int, per_token: int) -> int:
    return EMBEDDED_PROMPT_CACHE_CONTEXTS * n_ctx * per_token


def _size(count: int) -> str:
    if count >= 1 << 30:
        return f"{count / (1 << 30):.1f} GiB"
    return f"{count / _MIB:,.0f} MiB"
