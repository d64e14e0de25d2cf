"""A public benchmark's own Responses-API client, pointed at ``toolrouting serve``.

    scripts/bfcl-venv.sh    # the scratch venv: bfcl-eval without its long list of dependencies
    /tmp/bfclvenv/bin/python benchmarks/bfcl_responses.py --model MODEL.gguf   # --cases N

The Berkeley Function Calling Leaderboard (PyPI ``bfcl-eval``, Apache-2.0) ships a handler for
OpenAI's Responses API, ``OpenAIResponsesHandler``, which builds its ``openai`` client from
``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``. This script starts ``toolrouting serve`` in a process
of its own (the project's venv, ``--port 0``), points those two variables at it, and runs the
handler's own ``inference`` on the first ``--cases`` entries of ``simple_python``. Each answer is
scored by the leaderboard's own AST evaluation (``_evaluate_single_ast_entry`` of its eval
runner, which decodes the calls with the handler and runs ``ast_checker``).

One module of bfcl-eval is replaced before the import: ``constants.model_config``, its table of
every model it knows, imports each vendor's SDK (anthropic, cohere, mistralai, google-genai,
boto3, ...). The checker reads one field of it, ``underscore_to_dot``, for the model under test;
the replacement holds that one entry, set as the table sets it for OpenAI's function-calling
models (``True``: a dotted function name is sent as ``math_factorial`` and read back so).

Run it under the scratch venv (it imports bfcl_eval, which the project's venv does not hold);
the server runs under ``--serve-python``, the project's venv.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import types
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: The registry name the checker looks the model up by; "FC": the handler's function-calling mode.
REGISTRY_NAME = "toolrouting-FC"
#: The leaderboard's default sampling temperature for its generation runs.
TEMPERATURE = 0.001
CATEGORY = "simple_python"


@dataclass(frozen=True)
class _ConfigEntry:
    """The one field of bfcl-eval's ModelConfig that its AST checker reads."""

    underscore_to_dot: bool


def _without_vendor_sdks() -> None:
    """Put a one-entry model table where bfcl-eval's own would import every vendor's SDK."""
    table = types.ModuleType("bfcl_eval.constants.model_config")
    vars(table)["MODEL_CONFIG_MAPPING"] = {REGISTRY_NAME: _ConfigEntry(underscore_to_dot=True)}
    sys.modules["bfcl_eval.constants.model_config"] = table


def _start_serve(python: str, model: str) -> tuple[subprocess.Popen[str], str]:
    """``toolrouting serve`` on a free port, and the base URL it says it serves."""
    env = {**os.environ, "OMP_WAIT_POLICY": "passive", "PYTHONPATH": str(ROOT)}
    command = [python, "-m", "toolrouting", "serve", "--model", model, "--port", "0", "--quiet"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert process.stderr is not None
    for line in process.stderr:
        if "serving http://" in line:
            return process, line.split("serving ", 1)[1].strip()
        print(line, end="", file=sys.stderr)
    process.wait()
    raise SystemExit(f"toolrouting serve exited ({process.returncode}) before serving")


@dataclass
class _Case:
    """One case: what the server answered, and the checker's verdict."""

    case_id: str
    outcome: str  # "answered", "404" or "error"
    calls: int
    correct: bool
    note: str


def _run_case(handler: Any, entry: dict[str, Any], prompt: dict[str, Any], answer: dict[str, Any]) -> _Case:
    import openai
    from bfcl_eval.constants.enums import Language, ReturnFormat
    from bfcl_eval.eval_checker.eval_runner import _evaluate_single_ast_entry

    case_id = str(entry["id"])
    try:
        result, _ = handler.inference(entry, include_input_log=False, exclude_state_log=True)
    except openai.NotFoundError as error:
        return _Case(case_id, "404", 0, False, str(error)[:120])
    except openai.APIError as error:
        return _Case(case_id, "error", 0, False, str(error)[:120])
    calls = len(result) if isinstance(result, list) else 0
    verdict = _evaluate_single_ast_entry(
        handler,
        case_id,
        result,
        answer["ground_truth"],
        prompt,
        REGISTRY_NAME,
        CATEGORY,
        Language.PYTHON,
        ReturnFormat.PYTHON,
    )
    correct = bool(verdict["valid"])
    note = "" if correct else f"{verdict.get('error_type', '')}: {result!r}"[:160]
    return _Case(case_id, "answered", calls, correct, note)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--model", required=True, help="the GGUF model serve runs")
    parser.add_argument("--cases", type=int, default=30, help="the first N simple_python cases (default 30)")
    parser.add_argument(
        "--serve-python",
        default=str(ROOT / ".venv" / "bin" / "python"),
        help="the Python that has toolrouting and its serve extra (default: the repository's .venv)",
    )
    args = parser.parse_args()

    process, base_url = _start_serve(args.serve_python, args.model)
    try:
        # The handler builds its client from these two, as a user pointing it at a server would.
        os.environ["OPENAI_BASE_URL"] = base_url
        os.environ["OPENAI_API_KEY"] = "unused"
        _without_vendor_sdks()
        from bfcl_eval.model_handler.api_inference.openai_response import OpenAIResponsesHandler
        from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

        handler = OpenAIResponsesHandler(
            model_name="toolrouting", temperature=TEMPERATURE, registry_name=REGISTRY_NAME, is_fc_model=True
        )
        # As the leaderboard runs them: generation reads the entries with the language hint,
        # evaluation reads the functions without it.
        entries = load_dataset_entry(CATEGORY)[: args.cases]
        prompts = load_dataset_entry(CATEGORY, include_prereq=False, include_language_specific_hint=False)
        answers = {answer["id"]: answer for answer in load_ground_truth_entry(CATEGORY)}
        by_id = {prompt["id"]: prompt for prompt in prompts}
        cases = []
        for entry in entries:
            case = _run_case(handler, entry, by_id[entry["id"]], answers[entry["id"]])
            cases.append(case)
            mark = "correct" if case.correct else "wrong"
            print(f"{case.case_id:18} {case.outcome:8} calls={case.calls} {mark:7} {case.note}", flush=True)
    finally:
        process.terminate()
        process.wait(timeout=30)

    outcomes = Counter(case.outcome for case in cases)
    print(
        f"\n{len(cases)} requests: {outcomes['answered']} answered, {outcomes['404']} 404s, "
        f"{outcomes['error']} other errors; {sum(case.calls > 0 for case in cases)} answered with a call "
        f"({sum(case.calls for case in cases)} calls); {sum(case.correct for case in cases)} checker-correct"
    )


if __name__ == "__main__":
    main()
