#!/usr/bin/env bash
# A scratch venv for benchmarks/quality/bfcl.py: the Berkeley Function Calling Leaderboard's package
# (bfcl-eval, Apache-2.0) without its long dependency list (torch, vllm, every vendor's SDK),
# plus only what its two OpenAI handlers, its data loader, its AST evaluation and its multi-turn
# categories' simulated classes import.
# Kept out of the project's .venv.
#
#   scripts/bfcl-venv.sh [WHEEL_OR_REQUIREMENT [VENV]]   # default: bfcl-eval==2026.3.23, /tmp/bfclvenv
set -euo pipefail

package="${1:-bfcl-eval==2026.3.23}"
venv="${2:-/tmp/bfclvenv}"

python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --no-deps "$package"
# What the imports ask for, found by trying them: the handler (openai, pydantic, tenacity,
# overrides, python-dotenv), its parsers (tree-sitter and its two grammars, pinned as bfcl-eval
# pins them), the data loader (filelock), the eval runner's helper (pandas, tqdm), the multi-turn
# MathAPI class (mpmath, pinned as bfcl-eval pins it); and httpx for the benchmark's own
# benchmarks/common/servers.py, which starts llama-server.
"$venv/bin/pip" install --quiet openai pydantic tenacity tqdm python-dotenv overrides httpx \
    "numpy==1.26.4" pandas "filelock==3.20.0" "mpmath==1.3.0" \
    "tree_sitter==0.21.3" "tree-sitter-java==0.21.0" "tree-sitter-javascript==0.21.4"
"$venv/bin/python" -c "import bfcl_eval.model_handler.api_inference.openai_response"
"$venv/bin/python" -c "import bfcl_eval.model_handler.api_inference.openai_completion"
# The simulated classes the multi-turn categories (multi_turn_base ...) run calls against.
"$venv/bin/python" -c "
import importlib
from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING as modules
for name in ('GorillaFileSystem', 'MathAPI', 'MessageAPI', 'TwitterAPI', 'TicketAPI', 'TradingBot',
             'TravelAPI', 'VehicleControlAPI'):
    importlib.import_module(modules[name])
"
echo "bfcl-eval's chat completions and Responses handlers and its multi-turn classes import under $venv"
