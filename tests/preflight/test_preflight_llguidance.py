"""The preflight's llguidance rules, each checked against llguidance; and xgrammar's.

xgrammar installs torch, so its rules are checked against its documentation only.
"""

from __future__ import annotations

import pytest
from support.compilers import Llguidance
from support.preflight import Case, proven, reported
from support.preflight_llguidance import LLGUIDANCE_CASES, XGRAMMAR_CASES


@pytest.mark.parametrize("case", LLGUIDANCE_CASES, ids=lambda c: c.id)
def test_llguidance_rule(case: Case, llguidance: Llguidance) -> None:
    reported(case, "llguidance")
    proven(case, llguidance)


@pytest.mark.parametrize("case", XGRAMMAR_CASES, ids=lambda c: c.id)
def test_xgrammar_rule_from_its_documentation(case: Case) -> None:
    assert reported(case, "xgrammar").source.startswith("mlc-ai/xgrammar ")
