"""llama-cpp-python's own server (``python -m llama_cpp.server``) with weight repacking decided as the
embedded backend decides it, so it does not crash where llama.cpp's build uses Intel AMX.

    python tests/support/llama_cpp_server.py --model PATH.gguf --port 8080 ...

Every argument is the server's own. The server loads its model inside its own code, where no
argument reaches ``use_extra_bufts``; so for the whole process the model parameters llama.cpp
starts from carry the decision (``extra_bufts_by_default``), which is printed on stderr first
(docs/embedded.md, "Weight repacking and Intel AMX"). It runs by its path, from any directory.
"""

from __future__ import annotations

import sys


def main() -> None:
    import llama_cpp
    from llama_cpp.server.__main__ import main as serve

    from toolrouting._backends import decided_repack, extra_bufts_by_default

    decided = decided_repack(llama_cpp, None)
    print(f"llama_cpp.server: {decided.line()}", file=sys.stderr, flush=True)
    with extra_bufts_by_default(llama_cpp, decided.on):
        serve()


if __name__ == "__main__":
    main()
