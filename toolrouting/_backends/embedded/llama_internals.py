"""What the embedded backend reads of llama-cpp-python past its public API: here, and nowhere else.

llama-cpp-python keeps two things the backend needs in private fields only, with no public way
to read them:

- the GBNF text and root rule a ``LlamaGrammar`` will hand to llama.cpp (``_grammar``,
  ``_root``), which the check before sampling must parse (``grammar_check``);
- a token's text as its own chat handler writes it into the GGUF's chat template
  (``Llama._model.token_get_text``), which forced-token decoding needs to format a conversation
  as ``create_chat_completion`` does (``forced_decoding``);
- llama.cpp's ``use_extra_bufts`` model parameter, which ``Llama(...)`` has no argument for: the
  backend loads with it off where llama.cpp's AMX kernels crash (``repack``), so the model
  parameters ``Llama`` starts from are made with it set (``load_llama``).

A release that renames or reshapes one is a :class:`ModelLoadError` that names the field, never
a grammar that goes unchecked or a conversation formatted otherwise;
tests/backends/embedded/test_backends_embedded_llama_internals.py runs the installed release and
fails by the same name.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

from ..._errors import ModelLoadError

__all__ = ["extra_bufts_by_default", "llama_grammar_source", "load_llama", "token_text"]

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


# One load at a time changes where Llama reads its default model parameters from.
_PARAMS_LOCK = threading.Lock()


def load_llama(llama_cpp: Any, *, use_extra_bufts: bool, **arguments: Any) -> Any:
    """``llama_cpp.Llama(**arguments)``, its model loaded with ``use_extra_bufts`` as given.

    ``Llama.__init__`` starts from ``llama_cpp.llama_cpp.llama_model_default_params()`` and offers
    no argument for ``use_extra_bufts``; for the load, that function gives parameters with it
    set (:func:`extra_bufts_by_default`). A release whose ``Llama`` no longer reads that function
    is a :class:`ModelLoadError` that names it: the weights are never repacked against the
    caller's choice.
    """
    with _PARAMS_LOCK, extra_bufts_by_default(llama_cpp, use_extra_bufts) as made:
        llama = llama_cpp.Llama(**arguments)
    if not made or getattr(getattr(llama, "model_params", None), "use_extra_bufts", None) != use_extra_bufts:
        llama.close()
        raise ModelLoadError(
            f"this llama-cpp-python ({_version()}) no longer starts its model parameters from "
            "llama_model_default_params(), through which the embedded backend sets use_extra_bufts; "
            f"install the llama-cpp-python this toolrouting is tested with ({_EMBEDDED_INSTALL})"
        )
    return llama


@contextlib.contextmanager
def extra_bufts_by_default(llama_cpp: Any, use_extra_bufts: bool) -> Iterator[list[Any]]:
    """Within the block, ``llama_cpp.llama_cpp.llama_model_default_params()`` gives parameters with
    ``use_extra_bufts`` as given; it yields the list of parameters made so, and puts the function
    back afterwards. For a process that loads its models elsewhere (llama-cpp-python's own
    server), around all of it; :func:`load_llama` around one load. A release whose parameters
    have no such field is a :class:`ModelLoadError` that names it.
    """
    bindings: Any = getattr(llama_cpp, "llama_cpp", None)
    default_params = getattr(bindings, "llama_model_default_params", None)
    if not callable(default_params) or not hasattr(default_params(), "use_extra_bufts"):
        raise ModelLoadError(
            f"this llama-cpp-python ({_version()}) has no llama_model_params.use_extra_bufts, which the "
            f"embedded backend sets to choose whether the weights are repacked; install the "
            f"llama-cpp-python this toolrouting is tested with ({_EMBEDDED_INSTALL})"
        )
    made: list[Any] = []

    def params() -> Any:
        made.append(default_params())
        made[-1].use_extra_bufts = use_extra_bufts
        return made[-1]

    bindings.llama_model_default_params = params
    try:
        yield made
    finally:
        bindings.llama_model_default_params = default_params


def _version() -> str:
    return str(getattr(sys.modules.get("llama_cpp"), "__version__", "unknown"))
