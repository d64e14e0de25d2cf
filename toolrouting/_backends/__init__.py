"""Backends: the seam every model sits behind, and the implementations that ship.

``base`` holds the protocols (sync, async, streaming), their wire types and the base classes the
implementations share; ``http`` and ``async_http`` speak to OpenAI-compatible servers in the
``dialects`` they know, sharing what they send and how they read it (``endpoint``, and
``streams`` for a streamed answer, ``server_reasoning`` a reply reasoned first on llama-server),
``models`` lists what such a server offers, ``reasoning_tags`` the tags a model reasons between;
the ``embedded`` package runs a GGUF model in-process, for sync and async code, and offers what
llama.cpp is asked before a grammar is sampled under (``check_gbnf``, ``llama_grammar_source``,
to the benchmarks that time it); ``scripted`` holds the fakes that tests and docs drive.
"""

from .async_http import AsyncOpenAICompatible
from .base import (
    ROLES,
    AsyncBackend,
    AsyncBaseBackend,
    AsyncStreamingBackend,
    Backend,
    BaseBackend,
    Completion,
    Message,
    StreamingBackend,
    TextDelta,
    Usage,
    is_truncated,
    wire_text,
)
from .dialects import DIALECTS, DialectName
from .embedded import (
    DEFAULT_INDEX_URL,
    AsyncEmbeddedLlama,
    EmbeddedLlama,
    PromptCacheInfo,
    Repack,
    check_gbnf,
    decided_repack,
    default_model_path,
    extra_bufts_by_default,
    fetch_default_model,
    llama_grammar_source,
    load_llama,
    repack_for,
)
from .http import OpenAICompatible
from .models import list_models, served_reasoning_tags
from .reasoning_tags import ReasoningTags
from .scripted import AsyncScriptedBackend, ScriptedBackend, ScriptedRequest

__all__ = [
    "DEFAULT_INDEX_URL",
    "DIALECTS",
    "ROLES",
    "AsyncBackend",
    "AsyncBaseBackend",
    "AsyncEmbeddedLlama",
    "AsyncOpenAICompatible",
    "AsyncScriptedBackend",
    "AsyncStreamingBackend",
    "Backend",
    "BaseBackend",
    "Completion",
    "DialectName",
    "EmbeddedLlama",
    "Message",
    "OpenAICompatible",
    "PromptCacheInfo",
    "ReasoningTags",
    "Repack",
    "ScriptedBackend",
    "ScriptedRequest",
    "StreamingBackend",
    "TextDelta",
    "Usage",
    "check_gbnf",
    "decided_repack",
    "default_model_path",
    "extra_bufts_by_default",
    "fetch_default_model",
    "is_truncated",
    "list_models",
    "llama_grammar_source",
    "load_llama",
    "repack_for",
    "served_reasoning_tags",
    "wire_text",
]
