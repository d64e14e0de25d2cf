"""The preflight's llama.cpp rules, each checked against llama.cpp's own converter and parser.

The compiler needs the default model's vocabulary, so these tests are marked ``model``.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.compilers import LlamaCpp
from support.preflight import OBJECT_A, STRING, Case, proven, reported
from support.preflight_llama_cpp import LLAMA_CASES

from toolrouting import preflight


@pytest.mark.model
@pytest.mark.parametrize("case", LLAMA_CASES, ids=lambda c: c.id)
def test_llama_cpp_rule(case: Case, llama: LlamaCpp) -> None:
    reported(case, "llama.cpp")
    proven(case, llama)


@pytest.mark.model
@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array", "items": STRING, "maxItems": 1000},
        {"type": "object", "properties": {"arr": {"type": "array", "items": OBJECT_A, "maxItems": 1000}}},
        {"type": "string", "minLength": 1, "maxLength": 1001},
        {"enum": ["it's", "a/b", "é", "\u2028", "\x7f"]},
    ],
)
def test_llama_cpp_takes_what_its_rules_let_through(schema: dict[str, Any], llama: LlamaCpp) -> None:
    assert [f for f in preflight(schema, "llama.cpp") if f.severity == "error"] == []
    assert llama.error(schema) is None
