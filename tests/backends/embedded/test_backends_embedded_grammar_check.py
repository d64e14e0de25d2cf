"""The check before sampling: a grammar llama.cpp's parser refuses is a GrammarError, never a crash
of the process, and is not cached; our grammar takes the schemas llama-cpp-python's own conversion
cannot, on the real default model.
"""
# ruff: noqa: F811 - the model imported from support.embedded_cases is the tests' parameter

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from support.embedded_cases import backend  # noqa: F401 - the default model, loaded once for the module
from support.model import TEST_THREADS

from toolrouting import Settings
from toolrouting._backends.embedded.backend import EmbeddedLlama
from toolrouting._errors import GrammarError

# The schemas that crashed the process (SIGSEGV in llama-cpp-python's sampler) in excel-mcp-server's
# catalogue: a grammar llama.cpp refuses, sampled without one; and one nested past its parser's stack.
REFUSED_GRAMMARS: dict[str, dict[str, Any]] = {
    "a quote in an enum": {"type": "object", "properties": {"quote": {"enum": ['"', "'"]}}},
    "a backspace in a const": {"const": "a\bb"},
    "1001 optional items": {"type": "array", "items": {"type": "string"}, "maxItems": 1001},
    "10000 optional items": {"type": "array", "items": {"type": "integer"}, "maxItems": 10000},
    "20000 optional characters": {"type": "string", "maxLength": 20000},
}


@pytest.mark.model
@pytest.mark.parametrize("name", [*REFUSED_GRAMMARS, "no type"])
def test_our_grammar_takes_what_llama_cpp_pythons_conversion_cannot(
    backend: EmbeddedLlama, name: str
) -> None:
    schema = REFUSED_GRAMMARS.get(name, {"type": "object", "properties": {"q": {"description": "words"}}})
    ours = backend.clone(settings=Settings(json_schema=schema, max_tokens=4))  # grammar="ours" by default
    completion = ours.complete([{"role": "user", "content": "Write it."}])
    assert completion.usage.completion_tokens <= 4  # sampled under a grammar llama.cpp accepted


@pytest.mark.model
def test_a_grammar_llama_cpp_refuses_is_a_grammar_error_not_a_crash() -> None:
    # A fresh process, so that a crash fails this test instead of killing pytest.
    code = (
        "import json, sys\n"
        "from toolrouting import GrammarError, Settings\n"
        "from toolrouting._backends.embedded.backend import EmbeddedLlama\n"
        f"backend = EmbeddedLlama(n_ctx=512, n_threads={TEST_THREADS}, forced_tokens=False)\n"
        "for name, schema in json.loads(sys.argv[1]).items():\n"
        "    clone = backend.clone(settings=Settings(json_schema=schema, max_tokens=4, grammar='server'))\n"
        "    try:\n"
        "        clone.complete([{'role': 'user', 'content': 'Write it.'}])\n"
        "        print(name, 'completed')\n"
        "    except GrammarError as error:\n"
        "        print(name, 'GrammarError', error)\n"
    )
    argument = json.dumps(REFUSED_GRAMMARS)
    result = subprocess.run(
        [sys.executable, "-c", code, argument], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert [line.split(" GrammarError ")[0] for line in lines] == list(REFUSED_GRAMMARS)
    said = dict(line.split(" GrammarError ", 1) for line in lines)
    assert "llama.cpp refused the grammar" in said["a quote in an enum"]
    assert "expecting newline or end" in said["a quote in an enum"]  # llama.cpp's own reason
    assert "unknown escape" in said["a backspace in a const"]
    assert "exceeds sane defaults" in said["1001 optional items"]
    assert "nests 10000 groups deep" in said["10000 optional items"]
    assert all('preflight(schema, "llama.cpp")' in message for message in said.values())
    assert "parse: error parsing grammar" not in result.stderr  # held back, quoted in the error instead


@pytest.mark.model
def test_a_refused_grammar_is_not_cached_and_the_backend_still_works(backend: EmbeddedLlama) -> None:
    refused = backend.clone(
        settings=backend.settings.clone(json_schema={"enum": ['say "hi"']}, grammar="server")
    )
    for _ in range(2):
        with pytest.raises(GrammarError, match=r"llama\.cpp refused the grammar"):
            refused.complete([{"role": "user", "content": "hi"}])
    fine = backend.clone(settings=Settings(json_schema={"enum": ["yes", "no"]}, max_tokens=4))
    assert fine.complete([{"role": "user", "content": "Yes or no?"}]).text in ('"yes"', '"no"')
