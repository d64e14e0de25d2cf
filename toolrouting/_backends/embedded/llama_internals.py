"""What the embedded backend reads of llama-cpp-python past its public API: here, and nowhere else.

llama-cpp-python keeps two things the backend needs in private fields only, with no public way
to read them:

- the GBNF text and root rule a ``LlamaGrammar`` will hand to llama.cpp (``_grammar``,
  ``_root``), which the check before sampling must parse (``grammar_check``);
- a token's text as its own chat handler writes it into the GGUF's chat template
  (``Llama._model.token_get_text``), which forced-token decoding needs to format a conversation
  as ``create_chat_completion`` does (``forced_decoding``).

A release that renames or reshapes one is a :class:`ModelLoadError` that names the field, never
a grammar that goes unchecked or a conversation formatted otherwise;
tests/test_backends_embedded_llama_internals.py runs the installed release and fails by the same name.
"""

from __future__ import annotations

import sys
from typing import Any

from ..._errors import ModelLoadError

__all__ = ["llama_grammar_source", "token_text"]

# What brings the llama-cpp-python release this code reads the private fields of.
_EMBEDDED_INSTALL = "pip install 'toolrouting[embedded]'"


def llama_grammar_source(grammar: Any) -> tuple[str, str]:
    """The GBNF text and root rule a llama-cpp-python ``LlamaGrammar`` will hand to llama.cpp.

    llama-cpp-python keeps both only in private fields (``_grammar``, ``_root``) and offers no
    public way to read them, yet the check before sampling needs the very text llama.cpp will
    parse. A release that renames or reshapes them is a :class:`ModelLoadError` that names the
    fields, never a grammar that goes unchecked.
    """
    text = getattr(grammar, "_grammar", None)
    root = getattr(grammar, "_root", None)
    if isinstance(text, str) and isinstance(root, str) and root:
        return text, root
    raise ModelLoadError(
        f"this llama-cpp-python ({_version()}) no longer keeps a LlamaGrammar's GBNF text and root rule in "
        "_grammar and _root, which the embedded backend reads to check a grammar before it samples; "
        f"install the llama-cpp-python this toolrouting is tested with ({_EMBEDDED_INSTALL})"
    )


def token_text(llama: Any, token: int) -> str:
    """A token's text as llama-cpp-python writes it into a chat template (``Llama._model.token_get_text``).

    ``llama`` is the loaded ``llama_cpp.Llama``. A release that moves the reader is a
    :class:`ModelLoadError` that names it.
    """
    reader = getattr(getattr(llama, "_model", None), "token_get_text", None)
    text = reader(token) if callable(reader) else None
    if isinstance(text, str):
        return text
    raise ModelLoadError(
        f"this llama-cpp-python ({_version()}) no longer has Llama._model.token_get_text, which "
        "forced-token decoding reads to write the chat template's tokens as create_chat_completion does; "
        f"install the llama-cpp-python this toolrouting is tested with ({_EMBEDDED_INSTALL}), "
        "or pass forced_tokens=False (toolrouting run --decoding grammar)"
    )


def _version() -> str:
    return str(getattr(sys.modules.get("llama_cpp"), "__version__", "unknown"))
