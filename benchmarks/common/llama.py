"""llama.cpp loaded outside the embedded backend, its weight repacking decided as the backend decides
(off where llama.cpp's build uses Intel AMX, whose kernels crash; docs/embedded.md, "Weight
repacking and Intel AMX"): a ``llama_cpp.Llama`` for a benchmark that decodes with it, and
llama-cpp-python's own server."""

from __future__ import annotations

import sys
from typing import Any

from toolrouting._backends import decided_repack, extra_bufts_by_default, load_llama

__all__ = ["LLAMA_CPP_SERVER", "decoding_llama", "serve_llama_cpp"]

#: The command line that starts llama-cpp-python's server through :func:`serve_llama_cpp`, from the
#: repository's root (its own arguments follow).
LLAMA_CPP_SERVER = [
    sys.executable,
    "-c",
    "from benchmarks.common.llama import serve_llama_cpp; serve_llama_cpp()",
]


def decoding_llama(**arguments: Any) -> Any:
    """``llama_cpp.Llama(**arguments)``, loaded with the embedded backend's repacking decision."""
    import llama_cpp

    return load_llama(llama_cpp, use_extra_bufts=decided_repack(llama_cpp, None).on, **arguments)


def serve_llama_cpp() -> None:
    """``python -m llama_cpp.server`` with the command line's arguments, its model loaded with the
    embedded backend's repacking decision, which it prints on stderr first."""
    import llama_cpp
    from llama_cpp.server.__main__ import main

    decided = decided_repack(llama_cpp, None)
    print(f"llama_cpp.server: {decided.line()}", file=sys.stderr, flush=True)
    with extra_bufts_by_default(llama_cpp, decided.on):
        main()
