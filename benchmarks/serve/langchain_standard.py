"""LangChain's own standard chat model tests, through ``ChatOpenAI``, against ``toolrouting serve``.

    python -m benchmarks.serve.langchain_standard                       # the embedded default model
    python -m benchmarks.serve.langchain_standard --model PATH.gguf     # another GGUF, served in-process

It runs tests/serve/chat/test_serve_chat_langchain_standard.py, which subclasses ``langchain_tests``'
``ChatModelIntegrationTests`` (PyPI ``langchain-tests``) for ``ChatOpenAI`` pointed at a server
of the model on loopback, with ``--runxfail``: the tests the suite sets aside as figures (which
tool the model calls, what it writes into an argument, the keys of a JSON-mode object) run and
count like the rest. Then it prints, for each group (structured output, JSON mode, tool calling,
the others), how many passed, failed and were skipped, and each failure by name with the first
line of what failed.

The server decodes under the tests' own sampling (``--temperature``, default 0, and
``--seed``); the caps are the test module's (an answer under a schema is never cut).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULE = "tests/serve/chat/test_serve_chat_langchain_standard.py"
#: The variable the test module reads for the GGUF it serves (its MODEL_VARIABLE).
MODEL_VARIABLE = "TOOLROUTING_STANDARD_TESTS_MODEL"
GROUPS = ("structured output", "JSON mode", "tool calling", "others")
#: Standard tests about tools that have no "tool" in their name.
_TOOL_TESTS = frozenset(
    {"test_agent_loop", "test_bind_runnables_as_tools", "test_structured_few_shot_examples"}
)
#: The standard tests of an image or a PDF in a tool's result: media, counted with the others.
_MEDIA = ("_image_tool_message", "_pdf_tool_message")
#: Characters of a failure's first line that are printed.
_SHOWN = 110


@dataclass(frozen=True)
class Outcome:
    """One standard test's result: its name (with parameters), ``passed``, ``failed`` or
    ``skipped``, and the first line of the failure or the skip's reason."""

    name: str
    result: str
    why: str

    @property
    def group(self) -> str:
        """The group the test is counted in."""
        base = self.name.split("[", 1)[0]
        if base.startswith("test_structured_output"):
            return "structured output"
        if base == "test_json_mode":
            return "JSON mode"
        if ("tool" in base and not base.endswith(_MEDIA)) or base in _TOOL_TESTS:
            return "tool calling"
        return "others"


def outcomes(report: Path) -> list[Outcome]:
    """Every test case of a JUnit XML report."""
    found = []
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        result, why = "passed", ""
        for tag, name in (("failure", "failed"), ("error", "failed"), ("skipped", "skipped")):
            element = case.find(tag)
            if element is not None:
                result = name
                why = _first_line(element.get("message") or element.text or tag)
                break
        found.append(Outcome(name=case.get("name", "?"), result=result, why=why))
    return found


def _first_line(text: str) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= _SHOWN else line[: _SHOWN - 3] + "..."


def run(model: Path | None, temperature: float, seed: int) -> tuple[list[Outcome], float]:
    """The test module run once with ``--runxfail``: its outcomes and the seconds it took."""
    env = {
        **os.environ,
        "OMP_WAIT_POLICY": "passive",
        "TOOLROUTING_TEST_TEMPERATURE": repr(temperature),
        "TOOLROUTING_TEST_SEED": str(seed),
    }
    if model is not None:
        env[MODEL_VARIABLE] = str(model)
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.xml"
        command = [
            sys.executable, "-m", "pytest", MODULE, "--runxfail", "-q", "-p", "no:cacheprovider",
            f"--junitxml={report}",
        ]  # fmt: skip
        started = time.monotonic()
        done = subprocess.run(command, cwd=ROOT, env=env, check=False, capture_output=True, text=True)
        took = time.monotonic() - started
        if not report.is_file():
            said = (done.stdout + done.stderr)[-3000:]
            raise SystemExit(f"pytest wrote no report (exit {done.returncode}):\n{said}")
        return outcomes(report), took


def table(found: list[Outcome]) -> str:
    """The counts per group, then each failure by name."""
    counts = Counter((outcome.group, outcome.result) for outcome in found)
    lines = [f"{'group':<18} {'passed':>6} {'failed':>6} {'skipped':>7}"]
    for group in (*GROUPS, "all"):
        row = [
            sum(n for (g, r), n in counts.items() if r == result and group in (g, "all"))
            for result in ("passed", "failed", "skipped")
        ]
        lines.append(f"{group:<18} {row[0]:>6} {row[1]:>6} {row[2]:>7}")
    failed = [outcome for outcome in found if outcome.result == "failed"]
    if failed:
        lines.append("")
        lines.append("failed:")
        lines.extend(f"  {outcome.group}: {outcome.name}: {outcome.why}" for outcome in failed)
    return "\n".join(lines)


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=False, capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0] if __doc__ else None)
    parser.add_argument("--model", type=Path, help="a GGUF to serve (default: the embedded default model)")
    parser.add_argument("--temperature", type=float, default=0.0, help="the sampling temperature (default 0)")
    parser.add_argument("--seed", type=int, default=0, help="the sampling seed (default 0)")
    options = parser.parse_args(argv)
    if options.model is not None and not options.model.is_file():
        parser.error(f"--model: no file at {options.model}")
    found, took = run(options.model, options.temperature, options.seed)
    name = options.model.name if options.model is not None else "the default model"
    print("LangChain's standard tests (langchain-tests ChatModelIntegrationTests) through ChatOpenAI")
    print(f"model {name}, temperature {options.temperature:g}, seed {options.seed}, commit {_commit()}")
    print(f"{len(found)} tests in {took:.0f} s")
    print()
    print(table(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
